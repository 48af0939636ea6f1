"""``deploy/start.sh`` runs the whole production topology of ``deploy/Procfile``.

The environment file is the template, ``deploy/production.env.example``, with this session's
test database and Redis database, free ports and a temporary ``VAR_DIR``: the production
settings are in force (a plain http request is redirected, except the health check).
"""

import os
import re
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings

from config.env import BASE_DIR
from tests.support.database import ON_POSTGRES, database_url
from tests.support.proxy import environment_file, needs_nginx
from tests.support.web import free_port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,
    pytest.mark.django_db,
    needs_nginx,
    pytest.mark.skipif(
        not (ON_POSTGRES and settings.REDIS_URL), reason="production needs PostgreSQL and Redis"
    ),
]
# What each process of the Procfile says once it serves (honcho prefixes its name).
READY = {
    "proxy": None,  # nginx says nothing: the health check through it is its proof
    "web": re.compile(r"web\.1 .*Booting worker with pid"),
    "downloads": re.compile(r"downloads\.1 .*downloads\.\d+@\S+ ready\."),
    "images": re.compile(r"images\.1 .*images\.\d+@\S+ ready\."),
    "labs": re.compile(r"labs\.1 .*labs\.\d+@\S+ ready\."),
    "callbacks": re.compile(r"callbacks\.1 .*callbacks\.\d+@\S+ ready\."),
    "beat": re.compile(r"beat\.1 .*beat: Starting\.\.\."),
}
# Each worker consumes its own queue and only that one, the callbacks worker also the sweeps
# (its start-up banner lists them).
QUEUES = {("downloads", "downloads"), ("images", "images"), ("labs", "labs")}
QUEUES.add(("callbacks", "callbacks"))
QUEUES.add(("callbacks", "sweeps"))
QUEUE_LINE = re.compile(r"^\S+ (\w+)\.1 +\| +\.> (\w+) +exchange=", re.MULTILINE)


def test_start_runs_every_process_of_the_procfile_behind_nginx(tmp_path: Path) -> None:
    proxy_port = free_port()
    env_file = environment_file(
        tmp_path / "test.env",
        {
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "METRICS_TOKEN": secrets.token_urlsafe(32),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "DATABASE_URL": database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "NGINX_PORT": str(proxy_port),
            "WEB_BIND": f"127.0.0.1:{free_port()}",
            "WEB_CONCURRENCY": "1",
            "IMAGES_CONCURRENCY": "1",
            "CALLBACKS_CONCURRENCY": "1",
            "LABS_CONCURRENCY": "1",
            "VAR_DIR": str(tmp_path / "var"),
            "MEDIA_ROOT": str(tmp_path / "media"),
        },
    )
    log_path = tmp_path / "topology.log"
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_"))}
    with log_path.open("wb") as log:
        topology = subprocess.Popen(
            [str(BASE_DIR / "deploy" / "start.sh"), str(env_file)],
            cwd=BASE_DIR,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            text = log_path.read_text(errors="replace")
            waiting = [name for name, ready in READY.items() if ready and not ready.search(text)]
            if not waiting or time.monotonic() > deadline or topology.poll() is not None:
                break
            time.sleep(0.5)
        assert waiting == [], text[-3000:]
        assert sorted(QUEUE_LINE.findall(text)) == sorted(QUEUES), text[-3000:]

        health = requests.get(f"http://127.0.0.1:{proxy_port}/healthz", timeout=10)
        assert (health.status_code, health.json()["status"]) == (200, "ok")
        plain = requests.get(
            f"http://127.0.0.1:{proxy_port}/v4.0/orders", timeout=10, allow_redirects=False
        )
        assert (plain.status_code, plain.headers["Location"]) == (
            301,
            f"https://127.0.0.1:{proxy_port}/v4.0/orders",
        )
        behind_tls = requests.get(
            f"http://127.0.0.1:{proxy_port}/v4.0/orders",
            headers={"X-Forwarded-Proto": "https"},
            timeout=10,
        )
        assert (behind_tls.status_code, behind_tls.json()["outcome"]) == (401, "Unauthorized")
        assert behind_tls.headers["Strict-Transport-Security"].startswith("max-age=31536000")
    finally:
        os.killpg(topology.pid, signal.SIGINT)
        topology.wait(timeout=60)
    stopped = log_path.read_text(errors="replace")
    assert all(f"{name}.1 stopped" in stopped for name in READY), stopped[-3000:]
