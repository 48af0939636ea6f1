"""Orders change while the broker is down; once it is back, the sweeper delivers every event.

The changes are made by a separate process whose broker address has nothing listening (the
broker is stopped), against the same PostgreSQL test database. Its messages are lost; its
transactions must still commit without an error reaching the caller, and the outbox rows they
wrote are what the sweeper finds when the broker works again.
"""

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from config.env import BASE_DIR
from merchants.models import EnvironmentKind
from merchants.services import CreatedMerchant
from orders.models import Order, Stage
from tests.orders.factories import OrderFactory
from tests.support.database import ON_POSTGRES, database_url
from tests.support.servers import closed_port
from webhooks.models import CallbackEvent, CallbackState
from webhooks.tasks import events_sweep_task

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not ON_POSTGRES,
        reason="another process shares the test database only on PostgreSQL (DATABASE_URL)",
    ),
]

CHANGE_ORDERS = """
import sys
import django
django.setup()
from django.db import transaction
from orders.events import order_stage_changed
from orders.models import Order, Stage
for order_id in map(int, sys.argv[1:]):
    with transaction.atomic():
        order = Order.objects.select_for_update().get(id=order_id)
        order.stage = Stage.COMPLETE
        order.save(update_fields=["stage"])
        order_stage_changed(order=order)
print("committed", len(sys.argv) - 1)
"""


def test_events_written_while_the_broker_is_down_are_all_delivered_when_it_is_back(
    merchant: CreatedMerchant,
    httpserver: HTTPServer,
    settings: Any,
    eager_tasks: None,
    tmp_path: Any,
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    httpserver.expect_request("/hook").respond_with_data("ok")
    environment = merchant.merchant.environments.get(kind=EnvironmentKind.SANDBOX)
    environment.callback_url = httpserver.url_for("/hook")
    environment.save(update_fields=["callback_url"])
    orders = OrderFactory.create_batch(2, environment=environment)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.local",
        DATABASE_URL=database_url(),
        DATABASE_CONN_MAX_AGE="0",
        REDIS_URL=f"redis://127.0.0.1:{closed_port()}/0",
        VAR_DIR=str(tmp_path / "var"),
        LOG_LEVEL="ERROR",
    )

    changer = subprocess.run(
        [sys.executable, "-c", CHANGE_ORDERS, *(str(o.id) for o in orders)],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert changer.returncode == 0, changer.stderr[-3000:]
    assert changer.stdout.strip() == "committed 2"
    assert "Error 111 connecting" in changer.stderr  # the broker really was unreachable
    assert {o.stage for o in Order.objects.filter(id__in=[o.id for o in orders])} == {
        Stage.COMPLETE
    }
    events = list(CallbackEvent.objects.order_by("subject"))
    assert [(e.subject, e.state, e.attempts) for e in events] == [
        (o.public_id, CallbackState.PENDING, 0) for o in sorted(orders, key=lambda o: o.id)
    ]
    assert httpserver.log == []

    assert events_sweep_task() == 2

    assert set(CallbackEvent.objects.values_list("state", flat=True)) == {CallbackState.DELIVERED}
    delivered = sorted(json.loads(r.get_data())["subject"] for r, _ in httpserver.log)
    assert delivered == sorted(o.public_id for o in orders)
