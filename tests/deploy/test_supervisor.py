"""supervisord restarts a process of the topology that dies, and never stops the others for it.

The whole of ``deploy/start.sh`` runs (nginx, gunicorn, the four Celery workers, beat) with
Sandbox orders going through it (their assets on a local host, the lab simulator making them).
Each process in turn, nginx's master, gunicorn's master, each worker and beat, is killed with
SIGKILL (its pid as supervisord reports it, the real process: ``sh -c 'exec ...'``): every time
``/healthz`` through nginx answers 200 again within 5 s, the process is RUNNING again under a
new pid and every other process keeps its pid. At the end every order in flight is Complete.
"""

import os
import secrets
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from django.conf import settings as django_settings
from pytest_httpserver import HTTPServer

from merchants.services import CreatedMerchant
from orders.models import Order, Stage
from tests.support.database import ON_POSTGRES
from tests.support.images import jpeg_bytes
from tests.support.orders import order_body, pk
from tests.support.proxy import needs_nginx
from tests.support.servers import serve
from tests.support.topology import Topology, topology_running

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,  # its bounds are minutes; it kills its own workers only
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue"),
    needs_nginx,
    pytest.mark.skipif(
        not (ON_POSTGRES and django_settings.REDIS_URL),
        reason="production needs PostgreSQL and Redis",
    ),
]
# Each program, and what its process's command line says (the real process, not a shell).
KILLED = {
    "proxy": "nginx: master process",
    "web": "gunicorn config.wsgi:application",
    "downloads": "celery -A config worker --queues downloads",
    "images": "celery -A config worker --queues images",
    "labs": "celery -A config worker --queues labs",
    "callbacks": "celery -A config worker --queues callbacks,sweeps",
    "beat": "celery -A config beat",
}
HEALTHY_WITHIN = 5.0
# The topology's base URLs (those of deploy/production.env.example) and secret key, this
# process's too: the documents its workers write show file URLs under them, signed with it.
SHARED = {
    "SANDBOX_BASE_URL": "https://sandbox.api.example.com",
    "LIVE_BASE_URL": "https://api.example.com",
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
}


def command_line(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def healthz_until_ok(topology: Topology, since: float) -> list[tuple[int, float]]:
    """Ask ``/healthz`` until it answers 200 or ``HEALTHY_WITHIN`` seconds from ``since``
    pass; each answer's status and its time since ``since`` (a request unanswered in 5 s
    fails the test)."""
    answers: list[tuple[int, float]] = []
    while not answers or (answers[-1][0] != 200 and answers[-1][1] < HEALTHY_WITHIN):
        status = requests.get(f"{topology.url}/healthz", timeout=HEALTHY_WITHIN).status_code
        answers.append((status, time.monotonic() - since))
        if status != 200:
            time.sleep(0.2)
    return answers


def test_each_process_killed_comes_back_alone_and_the_orders_complete(
    merchant: CreatedMerchant, httpserver: HTTPServer, tmp_path: Path, settings: Any
) -> None:
    settings.SANDBOX_BASE_URL = SHARED["SANDBOX_BASE_URL"]
    settings.LIVE_BASE_URL = SHARED["LIVE_BASE_URL"]
    settings.SECRET_KEY = SHARED["DJANGO_SECRET_KEY"]
    photo = serve(httpserver, "/photo.jpg", jpeg_bytes(), "image/jpeg")
    api = requests.Session()
    api.headers.update({"X-API-Key": merchant.sandbox_api_key, "X-Forwarded-Proto": "https"})
    orders: list[str] = []
    with topology_running(
        tmp_path,
        **SHARED,
        ALLOW_PRIVATE_URLS="1",
        LAB_SIMULATOR_SECONDS="2",
        PIPELINE_SWEEP_SECONDS="1",
        PIPELINE_CLAIM_SECONDS="3",
        ASSET_RETRY_BASE_SECONDS="0.5",
        ASSET_RETRY_MAX_SECONDS="2",
    ) as topology:
        for name, command in KILLED.items():
            # Given two orders just created, in flight
            for number in range(2):
                body = order_body(
                    merchantReference=f"{name}-{number}",
                    items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": photo}]}],
                )
                created = api.post(f"{topology.url}/v4.0/orders", json=body, timeout=30)
                assert created.status_code == 200, created.text
                orders.append(created.json()["order"]["id"])
            before = topology.pids()
            victim = before[name]
            assert command in command_line(victim), command_line(victim)

            # When the process is killed outright
            os.kill(victim, signal.SIGKILL)
            killed_at = time.monotonic()

            # Then /healthz through nginx answers 200 again within 5 s
            answers = healthz_until_ok(topology, killed_at)
            assert answers[-1][0] == 200, (name, answers)
            assert answers[-1][1] < HEALTHY_WITHIN, (name, answers)

            # And supervisord starts it again, and it alone
            def restarted(name: str = name, victim: int = victim) -> bool:
                info = topology.programs()[name]
                return info["statename"] == "RUNNING" and info["pid"] != victim

            topology.wait(f"{name} running again", restarted, timeout=90)
            after = topology.pids()
            assert command in command_line(after[name])
            assert {k: v for k, v in after.items() if k != name} == {
                k: v for k, v in before.items() if k != name
            }
            assert f"exited: {name} (terminated by SIGKILL; not expected)" in topology.log(
                "supervisord"
            )

        # Every order in flight through all of it completes
        def all_complete() -> bool:
            stages = Order.objects.filter(id__in=[pk(order) for order in orders])
            return list(stages.values_list("stage", flat=True)) == [Stage.COMPLETE] * len(orders)

        topology.wait("every order to complete", all_complete, timeout=180)
        health = requests.get(f"{topology.url}/healthz", timeout=HEALTHY_WITHIN)
        assert (health.status_code, health.json()["status"]) == (200, "ok")
