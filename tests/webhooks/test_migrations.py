"""Moving the callback outbox into its own app keeps every row: the tables stay, and each
event's order becomes its subject."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.state import StateApps

from orders.document import order_documents_rebuild

BEFORE = [
    ("orders", "0004_swept_at"),
    ("merchants", "0001_initial"),
    ("labs", "0002_simulated_lab_order"),
]


def _migrate(targets: list[tuple[str, str | None]]) -> StateApps:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    nodes = [(app, name) for app, name in targets if name is not None]
    return executor.loader.project_state(nodes).apps


def _latest() -> list[tuple[str, str | None]]:
    executor = MigrationExecutor(connection)
    return list(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_events_and_attempts_survive_the_move_with_their_order_as_subject() -> None:
    old = _migrate([("webhooks", None), *BEFORE])
    try:
        merchant = old.get_model("merchants", "Merchant").objects.create(name="Before")
        environment = old.get_model("merchants", "Environment").objects.create(
            merchant=merchant, kind="Sandbox", callback_signing_secret="whsec_AAAA"
        )
        order = old.get_model("orders", "Order").objects.create(
            environment=environment,
            shipping_method="Standard",
            recipient_name="Ada",
            address_line1="1 Road",
            address_postal_or_zip_code="N1",
            address_country_code="GB",
            address_town_or_city="London",
        )
        event = old.get_model("orders", "CallbackEvent").objects.create(
            environment=environment,
            order=order,
            sequence=1,
            event_type="com.service.order.status.stage.changed#InProgress",
            body=b'{"id": "evt_1"}',
            target_url="https://merchant.example/hook",
            state="Delivered",
            attempts=1,
        )
        old.get_model("orders", "CallbackAttempt").objects.create(
            event=event, number=1, url=event.target_url, outcome="Delivered", status_code=200
        )
    finally:
        new = _migrate(_latest())
    # The order made before orders had documents gets its own, as after a deploy that adds them
    # (``manage.py order_documents``).
    assert order_documents_rebuild() == 1

    moved = new.get_model("webhooks", "CallbackEvent").objects.get(id=event.id)
    assert (moved.subject, moved.sequence, moved.state, bytes(moved.body)) == (
        f"ord_{order.id}",
        1,
        "Delivered",
        b'{"id": "evt_1"}',
    )
    attempts = new.get_model("webhooks", "CallbackAttempt").objects.filter(event_id=event.id)
    assert [(a.number, a.status_code) for a in attempts] == [(1, 200)]
