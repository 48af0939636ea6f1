"""The order as the API and callbacks show it has the documented shape (``OrderOutput``, the
OpenAPI schema) in every state an order can be in: no undocumented key, no documented
required key missing, every value of its documented JSON type. What they show is the order's
stored document (``orders.document``): exactly ``order_representation`` of the order as
stored, its file URLs under its environment's base URL."""

import json
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import orjson
import pytest
from django.utils import timezone
from rest_framework import serializers

from orders.api.serializers import DetailsOutput, OrderOutput
from orders.document import order_document_text, orders_documents_texts
from orders.issues import (
    ASSET_FAILED_TO_DOWNLOAD,
    ASSET_NOT_DOWNLOADED,
    ITEM_UNAVAILABLE,
    PRINT_READY_FAILED,
    SUBMISSION_FAILED,
)
from orders.models import (
    AssetStatus,
    ChargeItem,
    ChargeType,
    DetailState,
    ItemAvailability,
    ItemStatus,
    Order,
    OrderItem,
)
from orders.representation import Urls, order_representation
from orders.selectors import OrderFilter, order_list, orders_with_parts
from tests.orders.factories import (
    ALLOCATED,
    PREPARED,
    AssetFactory,
    ChargeFactory,
    ChargeItemFactory,
    OrderFactory,
    OrderIssueFactory,
    OrderItemFactory,
    ShipmentFactory,
    charges_write_for,
)

pytestmark = pytest.mark.django_db
BASE_URL = "https://sandbox.print.test"
# The child of a DictField declared without one: any JSON value.
ANY_VALUE = type(serializers.DictField().child)


def mismatches(value: Any, field: serializers.Field, path: str = "order") -> list[str]:
    """Where ``value`` (decoded JSON) departs from what ``field`` documents, one line each."""
    if value is None:
        return [] if field.allow_null else [f"{path} is null"]
    if isinstance(field, serializers.ListSerializer):
        if not isinstance(value, list):
            return [f"{path} is not a list"]
        item = field.child
        assert item is not None
        return [m for n, v in enumerate(value) for m in mismatches(v, item, f"{path}[{n}]")]
    if isinstance(field, serializers.Serializer):
        if not isinstance(value, dict):
            return [f"{path} is not an object"]
        declared = field.fields
        found = [f"{path}.{key} is not documented" for key in value if key not in declared]
        for name, child in declared.items():
            if name in value:
                found += mismatches(value[name], child, f"{path}.{name}")
            elif child.required:
                found.append(f"{path}.{name} is missing")
        return found
    if isinstance(field, serializers.DictField):
        if not isinstance(value, dict):
            return [f"{path} is not an object"]
        if type(field.child) is ANY_VALUE:
            return []
        return [m for k, v in value.items() for m in mismatches(v, field.child, f"{path}.{k}")]
    if isinstance(field, serializers.DateTimeField):
        if not isinstance(value, str):
            return [f"{path} is not a string"]
        try:
            datetime.fromisoformat(value)
        except ValueError:
            return [f"{path} is not an ISO 8601 date and time"]
        return []
    if isinstance(field, serializers.BooleanField):
        return [] if isinstance(value, bool) else [f"{path} is not a boolean"]
    if isinstance(field, serializers.IntegerField):
        is_integer = isinstance(value, int) and not isinstance(value, bool)
        return [] if is_integer else [f"{path} is not an integer"]
    if isinstance(field, serializers.CharField):
        return [] if isinstance(value, str) else [f"{path} is not a string"]
    if isinstance(field, serializers.ChoiceField):  # an enumeration: one of its documented values
        if value is None:
            return [] if field.allow_null else [f"{path} is null"]
        return [] if value in field.choices else [f"{path}: {value!r} is not one of its values"]
    return [f"{path}: {type(field).__name__} is not a type this check knows"]


@pytest.fixture(autouse=True)
def base_url(settings: Any) -> None:
    """The environments' base URL, under which their documents' file URLs are made."""
    settings.SANDBOX_BASE_URL = settings.LIVE_BASE_URL = BASE_URL


def shown(order: Order) -> dict[str, Any]:
    """The order as ``GET`` sends it: its stored document."""
    text = order_document_text(environment_id=order.environment_id, order_id=order.id)
    assert text is not None
    return dict(json.loads(text))


def loaded(order: Order) -> Order:
    """The order as stored, with its environment and the parts its representation shows."""
    return orders_with_parts(Order.objects.select_related("environment").filter(id=order.id)).get()


def urls_expiry(order: Order) -> int | None:
    """When the signed URLs of the order's stored document expire (Unix time; None: none)."""
    expires = Order.objects.get(id=order.id).document_urls_expire
    return None if expires is None else int(expires.timestamp())


# --- An order in each state, as the pipeline and the actions leave it ------------------------


def on_hold() -> Order:
    return OrderFactory.create(on_hold=True)


def on_hold_until_its_window_ends() -> Order:
    until = timezone.now() + timedelta(minutes=30)
    return OrderFactory.create(on_hold=True, held_until=until, due_at=until)


def downloading_with_a_retry() -> Order:
    order = OrderFactory.create(downloading=True)
    asset = AssetFactory.create(
        item=OrderItemFactory.create(order=order, asset=None), download_attempts=3
    )
    OrderIssueFactory.create(
        order=order,
        object_id=asset.item.public_id,
        asset=asset,
        error_code=ASSET_NOT_DOWNLOADED,
        description=f"Asset {asset.public_id}: attempt 3 of 10 failed (HTTP 500).",
    )
    return order


def allocating() -> Order:
    return OrderFactory.create(allocating=True, item__downloaded=True, item__asset__downloaded=True)


def waiting_for_stock() -> Order:
    order = allocating()
    item = order.items.get()
    OrderItem.objects.filter(id=item.id).update(availability=ItemAvailability.UNAVAILABLE)
    OrderIssueFactory.create(order=order, object_id=item.public_id, error_code=ITEM_UNAVAILABLE)
    return order


def allocated(*, shipment: Mapping[str, Any] | None = None, **state: Any) -> Order:
    """Downloaded, planned into one shipment (made with ``shipment``) and charged; ``state`` says
    where the order is now."""
    order = OrderFactory.create(**state, item__downloaded=True, item__asset__downloaded=True)
    ShipmentFactory.create(order=order, **(shipment or {}))
    charges_write_for(order)
    return order


def preparing() -> Order:
    return allocated(preparing=True)


def submitting() -> Order:
    return allocated(submitting=True)


def in_production() -> Order:
    return allocated(producing=True, shipment={"submitted": True})


def partly_shipped() -> Order:
    order = OrderFactory.create(
        partly_shipped=True, item__downloaded=True, item__asset__downloaded=True
    )
    book = OrderItemFactory.create(order=order, sku="BOOK-A4-L-HARD-M", downloaded=True)
    ShipmentFactory.create(order=order, shipped=True, items=[order.items.get(position=0)])
    ShipmentFactory.create(order=order, submitted=True, lab_code="gb3", items=[book])
    charges_write_for(order)
    return order


def complete() -> Order:
    return allocated(complete=True, shipment={"shipped": True})


def cancelled_before_allocation() -> Order:
    return OrderFactory.create(cancelled=True)


def cancelled_after_allocation() -> Order:
    order = allocated(cancelled=True, shipment={"cancelled": True})
    charged = list(ChargeItem.objects.filter(charge__order=order))
    refund = ChargeFactory.create(
        order=order,
        charge_type=ChargeType.REFUND,
        total_cost=-sum(line.cost for line in charged),
        total_tax=-sum(line.tax for line in charged),
    )
    for line in charged:
        ChargeItemFactory.create(
            charge=refund,
            item=line.item,
            shipment=line.shipment,
            cost=-line.cost,
            tax=-line.tax,
        )
    return order


def failed_to_download() -> Order:
    order = OrderFactory.create(
        failed=True,
        item__status=ItemStatus.INVALID,
        item__asset__status=AssetStatus.ERROR,
        item__asset__download_attempts=10,
    )
    item = order.items.get()
    asset = item.assets.get()
    OrderIssueFactory.create(
        order=order,
        object_id=item.public_id,
        asset=asset,
        error_code=ASSET_FAILED_TO_DOWNLOAD,
        description=f"Asset {asset.public_id} failed after 10 attempt(s): HTTP 404.",
    )
    return order


def failed_to_prepare() -> Order:
    order = allocated(**ALLOCATED, failed=True, print_ready_assets_prepared=DetailState.ERROR)
    item = order.items.get()
    OrderIssueFactory.create(
        order=order,
        object_id=item.public_id,
        asset=item.assets.get(),
        error_code=PRINT_READY_FAILED,
        description="The image is 15000x15000 pixels (225 megapixels).",
    )
    return order


def failed_at_its_lab() -> Order:
    order = allocated(
        **PREPARED, failed=True, in_production=DetailState.ERROR, shipment={"submit_attempts": 3}
    )
    shipment = order.shipments.get()
    OrderIssueFactory.create(
        order=order,
        object_id=shipment.public_id,
        error_code=SUBMISSION_FAILED,
        description=f"Lab gb1 refused shipment {shipment.public_id} after 3 attempt(s).",
    )
    return order


def waiting_for_payment() -> Order:
    order = OrderFactory.create()
    OrderIssueFactory.create(order=order, payment=True, error_code="order.PaymentRequired")
    return order


def with_every_optional_field() -> Order:
    order = OrderFactory.create(
        oms_id=2**62,
        merchant_reference="MR-1001",
        idempotency_key="key-1",
        callback_url="https://hooks.example.com/in",
        recipient_email="ada@example.com",
        recipient_phone="+44 7700 900123",
        address_line2="Flat 2",
        address_state_or_county="Greater London",
        metadata={"channel": "web", "nested": {"list": [1, 2]}},
        branding={"postcard": {"url": "https://images.example.com/p.jpg", "status": "Complete"}},
        packing_slip_url="https://images.example.com/slip.pdf",
        packing_slip_status="Complete",
        tag="spring",
        us_sales_tax_already_collected=True,
        item=None,
    )
    item = OrderItemFactory.create(
        order=order,
        oms_id=7,
        merchant_reference="item-1",
        sku="BOOK-A4-L-HARD-M",
        attributes={"finish": "gloss"},
        spine={"text": "Ada", "textSizePx": 12},
        recipient_cost_amount=Decimal("30"),
        recipient_cost_currency="GBP",
        downloaded=True,
        asset__oms_id=8,
        asset__md5_hash="0" * 32,
        asset__page_count=40,
        asset__downloaded=True,
    )
    AssetFactory.create(item=item, print_area="spine")
    return order


STATES: dict[str, Callable[[], Order]] = {
    builder.__name__: builder
    for builder in (
        on_hold,
        on_hold_until_its_window_ends,
        downloading_with_a_retry,
        allocating,
        waiting_for_stock,
        preparing,
        submitting,
        in_production,
        partly_shipped,
        complete,
        cancelled_before_allocation,
        cancelled_after_allocation,
        failed_to_download,
        failed_to_prepare,
        failed_at_its_lab,
        waiting_for_payment,
        with_every_optional_field,
    )
}


@pytest.mark.parametrize("state", STATES)
def test_the_order_has_the_documented_shape(state: str) -> None:
    order = STATES[state]()

    representation = shown(order)

    assert mismatches(representation, OrderOutput()) == []


@pytest.mark.parametrize("state", STATES)
def test_the_stored_document_is_the_representation_and_get_and_the_list_send_it(
    state: str,
) -> None:
    order = STATES[state]()
    other = OrderFactory.create(environment=order.environment)  # a neighbour on the list page
    AssetFactory.create(item=OrderItemFactory.create(order=other, position=1), position=1)

    text = Order.objects.get(id=order.id).document
    urls = Urls(BASE_URL, urls_expiry(order))
    representation = order_representation(loaded(order), urls=urls)

    assert text == orjson.dumps(representation).decode()  # byte for byte
    assert order_document_text(environment_id=order.environment_id, order_id=order.id) == text
    page = order_list(environment=order.environment, filters=OrderFilter())
    assert orders_documents_texts(page) == [
        (other.id, Order.objects.get(id=other.id).document),
        (order.id, text),
    ]


def test_the_document_keeps_items_and_assets_in_position_order() -> None:
    order = OrderFactory.create(item=None)
    second = OrderItemFactory.create(order=order, position=1, asset=None)
    first = OrderItemFactory.create(order=order, position=0, asset=None)
    AssetFactory.create(item=second, position=1, print_area="back")
    AssetFactory.create(item=second, position=0, print_area="front")

    items = shown(order)["items"]

    assert [item["id"] for item in items] == [first.public_id, second.public_id]
    assert items[0]["assets"] == []
    assert [asset["printArea"] for asset in items[1]["assets"]] == ["front", "back"]


def test_the_states_show_every_stage_every_detail_state_and_every_part() -> None:
    orders = [shown(build()) for build in STATES.values()]

    assert {o["status"]["stage"] for o in orders} == {
        "OnHold", "InProgress", "Complete", "Cancelled",
    }  # fmt: skip
    for detail in DetailsOutput().fields:
        assert {o["status"]["details"][detail] for o in orders} >= {"NotStarted", "Complete"}
    assert {"InProgress", "Error"} <= {
        state for o in orders for state in o["status"]["details"].values()
    }
    assert {s["status"] for o in orders for s in o["shipments"]} == {
        "Processing", "Shipped", "Cancelled",
    }  # fmt: skip
    assert {c["chargeType"] for o in orders for c in o["charges"]} == {"Item", "Shipping", "Refund"}
    assert any("authorisationDetails" in i for o in orders for i in o["status"]["issues"])
    assert any(o["packingSlip"] is not None for o in orders)


def test_the_check_finds_undocumented_missing_and_mistyped_keys() -> None:
    representation = shown(complete())
    representation["surprise"] = 1
    del representation["recipient"]["address"]["line1"]
    representation["items"][0]["copies"] = "1"
    representation["shipments"][0]["tracking"]["number"] = None
    representation["created"] = "yesterday"

    assert sorted(mismatches(representation, OrderOutput())) == [
        "order.created is not an ISO 8601 date and time",
        "order.items[0].copies is not an integer",
        "order.recipient.address.line1 is missing",
        "order.shipments[0].tracking.number is null",
        "order.surprise is not documented",
    ]


def test_the_document_shows_the_stored_values_exactly() -> None:
    order = with_every_optional_field()
    stored = Order.objects.get(id=order.id)
    item = order.items.get()

    document = shown(order)

    assert document["id"] == order.public_id
    assert document["omsId"] == str(2**62)  # a string: no JSON reader rounds it
    assert (document["merchantReference"], document["idempotencyKey"]) == ("MR-1001", "key-1")
    assert document["callbackUrl"] == "https://hooks.example.com/in"
    assert document["created"] == stored.created.isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )
    assert document["recipient"]["address"]["line2"] == "Flat 2"
    assert document["metadata"] == {"channel": "web", "nested": {"list": [1, 2]}}
    assert document["branding"] == stored.branding
    assert document["packingSlip"] == {
        "url": "https://images.example.com/slip.pdf",
        "status": "Complete",
    }
    assert (document["tag"], document["usSalesTaxAlreadyCollected"]) == ("spring", True)
    [shown_item] = document["items"]
    assert (shown_item["id"], shown_item["omsId"]) == (item.public_id, "7")
    assert shown_item["recipientCost"] == {"amount": "30.00", "currency": "GBP"}
    assert shown_item["spine"] == {"text": "Ada", "textSizePx": 12}
    assert shown_item["thumbnailUrl"].startswith(f"{BASE_URL}/media/{item.thumbnail}?expires=")
    assert [a["pageCount"] for a in shown_item["assets"]] == [40, None]
