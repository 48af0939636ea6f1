"""``deploy/start.sh`` runs the whole production topology under supervisord.

The environment file is the template, ``deploy/production.env.example``, with this session's
test database and Redis database, free ports and a temporary ``VAR_DIR``: the production
settings are in force (a plain http request is redirected, except the health check).
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from django.conf import settings

from config.env import BASE_DIR
from tests.support.database import ON_POSTGRES
from tests.support.proxy import needs_nginx
from tests.support.topology import READY, topology_running

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,
    pytest.mark.django_db,
    needs_nginx,
    pytest.mark.skipif(
        not (ON_POSTGRES and settings.REDIS_URL), reason="production needs PostgreSQL and Redis"
    ),
]
# Each worker consumes its own queue and only that one, the callbacks worker also the sweeps
# (its start-up banner lists them).
QUEUES = {"downloads": ["downloads"], "images": ["images"], "labs": ["labs"]}
QUEUES["callbacks"] = ["callbacks", "sweeps"]
QUEUE_LINE = re.compile(r"^ *\.> (\w+) +exchange=", re.MULTILINE)


def test_start_runs_every_program_behind_nginx(tmp_path: Path) -> None:
    with topology_running(tmp_path) as topology:
        states = {name: info["statename"] for name, info in topology.programs().items()}
        assert states == dict.fromkeys(READY, "RUNNING")
        assert {name: QUEUE_LINE.findall(topology.log(name)) for name in QUEUES} == QUEUES

        health = requests.get(f"{topology.url}/healthz", timeout=10)
        assert (health.status_code, health.json()["status"]) == (200, "ok")
        plain = requests.get(f"{topology.url}/v4.0/orders", timeout=10, allow_redirects=False)
        assert (plain.status_code, plain.headers["Location"]) == (
            301,
            f"https://127.0.0.1:{topology.proxy_port}/v4.0/orders",
        )
        behind_tls = requests.get(
            f"{topology.url}/v4.0/orders", headers={"X-Forwarded-Proto": "https"}, timeout=10
        )
        assert (behind_tls.status_code, behind_tls.json()["outcome"]) == (401, "Unauthorized")
        assert behind_tls.headers["Strict-Transport-Security"].startswith("max-age=31536000")

        # deploy/ctl.sh shows the same states with the same environment file
        status = subprocess.run(
            [str(BASE_DIR / "deploy" / "ctl.sh"), str(topology.env_file), "status"],
            cwd=BASE_DIR,
            env={"PATH": "/usr/bin:/bin", "VENV": str(Path(sys.executable).parent.parent)},
            capture_output=True,
            text=True,
            timeout=30,
        )
        shown = dict(re.findall(r"^(\w+) +([A-Z]+) ", status.stdout, re.MULTILINE))
        assert shown == dict.fromkeys(READY, "RUNNING"), status.stdout + status.stderr

    stopped = topology.log("supervisord")
    assert all(f"stopped: {name} " in stopped for name in READY), stopped[-3000:]
    assert "waiting for" in stopped


def test_a_program_that_keeps_failing_to_start_is_given_up_on_and_the_others_run_on(
    tmp_path: Path,
) -> None:
    # gunicorn refuses a worker count that is not a number, at once, every time
    with topology_running(
        tmp_path, ["web", "beat"], awaited=["beat"], WEB_CONCURRENCY="many"
    ) as topology:
        beat = topology.pids()["beat"]

        def web_fatal() -> bool:
            return bool(topology.programs()["web"]["statename"] == "FATAL")

        topology.wait("web given up on", web_fatal, timeout=90)
        states = {name: info["statename"] for name, info in topology.programs().items()}
        assert states == {"web": "FATAL", "beat": "RUNNING"}
        assert topology.pids()["beat"] == beat
        log = topology.log("supervisord")
        # six starts: the first and the five retries of the budget, then FATAL
        assert log.count("spawned: 'web'") == 6, log
        assert "gave up: web entered FATAL state, too many start retries too quickly" in log
        assert "invalid literal for int() with base 10: 'many'" in topology.log("web")
