"""A shipment that kept an address of its own keeps, after the migration to the whole recipient
its lab holds, that address with the order's name, email and phone; the others follow the
order's as before."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.state import StateApps

from orders.document import order_documents_rebuild

BEFORE = [("orders", "0018_order_claim_token")]
AFTER = [("orders", "0019_shipment_recipient")]
KEPT_ADDRESS = {
    "line1": "2 Compiler Close",
    "line2": "",
    "postalOrZipCode": "M1 1AA",
    "countryCode": "GB",
    "townOrCity": "Manchester",
    "stateOrCounty": "",
}


def _migrate(targets: list[tuple[str, str]]) -> StateApps:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _latest() -> list[tuple[str, str]]:
    return list(MigrationExecutor(connection).loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_a_kept_address_becomes_the_whole_recipient_with_the_orders_name_email_and_phone() -> None:
    old = _migrate(BEFORE)
    try:
        merchant = old.get_model("merchants", "Merchant").objects.create(name="Before")
        environment = old.get_model("merchants", "Environment").objects.create(
            merchant=merchant, kind="Sandbox", callback_signing_secret="whsec_AAAA"
        )
        order = old.get_model("orders", "Order").objects.create(
            environment=environment,
            shipping_method="Standard",
            recipient_name="Ada Lovelace",
            recipient_email="ada@example.com",
            recipient_phone="+44 7700 900123",
            address_line1="1 Analytical Row",
            address_postal_or_zip_code="SW1A 1AA",
            address_country_code="GB",
            address_town_or_city="London",
        )
        shipments = old.get_model("orders", "Shipment").objects
        kept = shipments.create(
            order=order, lab_code="gb1", lab_country_code="GB", address=KEPT_ADDRESS
        )
        following = shipments.create(order=order, lab_code="gb3", lab_country_code="GB")
        new = _migrate(AFTER)
    finally:
        _migrate(_latest())
    # The order made before orders had documents gets its own, as after a deploy that adds them
    # (``manage.py order_documents``).
    assert order_documents_rebuild() == 1

    migrated = new.get_model("orders", "Shipment").objects
    assert migrated.get(id=kept.id).recipient == {
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "phoneNumber": "+44 7700 900123",
        "address": KEPT_ADDRESS,
    }
    assert migrated.get(id=following.id).recipient is None
