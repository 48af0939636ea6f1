"""The production topology's proxy: nginx from the project's own config, in front of gunicorn.

``deploy/nginx.sh`` renders ``deploy/nginx.conf.template`` into a temporary prefix and runs
nginx in the foreground, exactly as ``deploy/programs/proxy.conf`` does.
"""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.env import BASE_DIR
from tests.support.web import free_port, wait_until_listening

NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
needs_nginx = pytest.mark.skipif(
    NGINX is None, reason="nginx is not installed (`make test` installs Debian's nginx)"
)


@contextlib.contextmanager
def nginx_serving(web_port: int, prefix: Path) -> Iterator[int]:
    """nginx in front of the gunicorn on ``web_port`` until the block ends; yields its port."""
    port = free_port()
    env = {
        **os.environ,
        "NGINX_PORT": str(port),
        "WEB_BIND": f"127.0.0.1:{web_port}",
        "NGINX_PREFIX": str(prefix),
        "PATH": f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin",
    }
    process = subprocess.Popen(
        [str(BASE_DIR / "deploy" / "nginx.sh")],
        cwd=BASE_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until_listening(port, process, "nginx", seconds=15)
        yield port
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)


@contextlib.contextmanager
def slow_clients(port: int, count: int, every: float = 1.0, part: str = "header") -> Iterator[None]:
    """``count`` connections that each send one line of a request's header (``part="header"``)
    or one byte of its body (``"body"``) every ``every`` seconds and never finish it, until
    the block ends. The body goes to an endpoint that reads it without a key, so a server
    that hands it on unread holds a worker for it."""
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]
    stop = threading.Event()
    start = {
        "header": b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n",
        "body": (
            b"POST /v4.0/registration/complete HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
        ),
    }[part]

    def trickle() -> None:
        line = 0
        for client in sockets:
            client.sendall(start)
        while not stop.wait(every):
            line += 1
            piece = f"X-Slow-{line}: {line}\r\n".encode() if part == "header" else b" "
            for client in sockets:
                with contextlib.suppress(OSError):
                    client.sendall(piece)

    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    try:
        time.sleep(every / 2)  # the slow clients are in before anyone else
        yield
    finally:
        stop.set()
        sender.join(timeout=10)
        for client in sockets:
            client.close()


def environment_file(path: Path, overrides: dict[str, str]) -> Path:
    """``deploy/production.env.example`` with ``overrides`` in place of its lines (or added)."""
    template = (BASE_DIR / "deploy" / "production.env.example").read_text().splitlines()
    lines, left = [], dict(overrides)
    for line in template:
        key = line.split("=", 1)[0] if "=" in line and not line.startswith("#") else None
        lines.append(f"{key}={left.pop(key)}" if key in left else line)
    lines += [f"{key}={value}" for key, value in left.items()]
    path.write_text("\n".join(lines) + "\n")
    return path
