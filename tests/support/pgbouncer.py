"""PgBouncer in transaction mode in front of a PostgreSQL server, on a free loopback port.

``pgbouncer_in_front_of(url)`` serves every database of the server at ``url`` (the same user
and password) until the block ends and yields the URL to reach the same database through it.
Run as a module it wraps a command: the command runs with ``DATABASE_URL`` pointing through
PgBouncer and ``DATABASE_PREPARED_STATEMENTS=0``, as a deployment behind it does
(``make test`` runs its tests of pooling so, the Makefile's ``POOLED_TESTS``):

    python -m tests.support.pgbouncer .venv/bin/pytest -q tests/api
"""

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

# Set for the wrapped command: PgBouncer's admin console (tests/conftest.py closes its server
# connections to the test database at the end, so that the database can be dropped).
POOLER_ADMIN_URL = "PGBOUNCER_ADMIN_URL"


def pooled_database_released(name: str) -> None:
    """Drop PgBouncer's connections to the database ``name`` (its admin console's ``KILL``)."""
    import psycopg

    admin = os.environ.get(POOLER_ADMIN_URL)
    if admin:
        with psycopg.connect(admin, autocommit=True, prepare_threshold=None) as console:
            console.execute(f"KILL {name}")


def pooled_clients(application: str) -> int | None:
    """Behind PgBouncer: its client connections whose ``application_name`` starts with
    ``application`` (its admin console's ``SHOW CLIENTS``); None when not behind it.

    These, not PostgreSQL's sessions, are a process's connections there: PgBouncer keeps its
    server connections after their clients have gone, under the last client's name."""
    import psycopg

    admin = os.environ.get(POOLER_ADMIN_URL)
    if not admin:
        return None
    with psycopg.connect(admin, autocommit=True, prepare_threshold=None) as console:
        cursor = console.execute("SHOW CLIENTS")
        column = [d.name for d in cursor.description or ()].index("application_name")
        return sum(1 for row in cursor.fetchall() if str(row[column]).startswith(application))


# No Django here: run as a module, this starts before any settings are read.


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int, process: subprocess.Popen[bytes], log: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                error = log.read_text(errors="replace")
                raise RuntimeError(f"pgbouncer did not start: {error}") from None
            time.sleep(0.05)


def pgbouncer_binary() -> str:
    found = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    if not Path(found).exists():
        raise RuntimeError("pgbouncer is not installed (make test installs Debian's)")
    return found


@contextlib.contextmanager
def pgbouncer_in_front_of(url: str, *, pool_size: int = 20) -> Iterator[str]:
    parts = urlsplit(url)
    user = unquote(parts.username or "postgres")
    password = unquote(parts.password or "")
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="pgbouncer-") as folder:
        config = Path(folder) / "pgbouncer.ini"
        users = Path(folder) / "userlist.txt"
        server = f"host={parts.hostname or '127.0.0.1'} port={parts.port or 5432} user={user}"
        if password:
            server += f" password={password}"
        users.write_text(f'"{user}" ""\n')
        config.write_text(
            "[databases]\n"
            f"* = {server}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {users}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {pool_size}\n"
            "max_client_conn = 1000\n"
            "ignore_startup_parameters = extra_float_digits,options\n"
            f"admin_users = {user}\n"
        )
        command = [pgbouncer_binary(), str(config)]
        if os.geteuid() == 0:  # PgBouncer refuses to run as root
            os.chmod(folder, 0o755)
            command[1:1] = ["-u", "nobody"]
        # Its log goes to a file: a pipe nobody reads would fill up with a long run's
        # connection lines and stall PgBouncer on its next write.
        log = Path(folder) / "pgbouncer.log"
        with log.open("wb") as log_file:
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log_file)
        try:
            _listening(port, process, log, 15)
            netloc = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
            yield urlunsplit(parts._replace(netloc=f"{netloc}127.0.0.1:{port}"))
        finally:
            process.kill()  # no need for its graceful shutdown, which waits for clients
            process.wait(timeout=10)


def main(command: list[str]) -> int:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        raise SystemExit("DATABASE_URL must name a PostgreSQL server to put PgBouncer in front of")
    with pgbouncer_in_front_of(url) as pooled:
        admin = urlunsplit(urlsplit(pooled)._replace(path="/pgbouncer"))
        env = {
            **os.environ,
            "DATABASE_URL": pooled,
            "DATABASE_PREPARED_STATEMENTS": "0",
            POOLER_ADMIN_URL: admin,
        }
        print(f"through PgBouncer (transaction mode) at {urlsplit(pooled).netloc.split('@')[-1]}")
        return subprocess.call(command, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
