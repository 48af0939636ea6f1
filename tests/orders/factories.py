"""Orders and their parts as the pipeline leaves them.

``OrderFactory`` makes an order just created (in progress, due at the Download step) with one
item of one asset; its traits put it where the pipeline puts an order at each step
(``OrderFactory(submitting=True)``, ``OrderFactory(complete=True)``, ...). Shipments, charges
and issues are made apart, as allocation and the steps make them.

Each factory writes its order's document once it has made its row (``DocumentWritten``), as
the service writes it with every change.
"""

from decimal import Decimal
from typing import Any

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from orders.models import (
    Asset,
    AssetStatus,
    Charge,
    ChargeItem,
    ChargeType,
    DetailState,
    ItemStatus,
    Order,
    OrderIssue,
    OrderItem,
    PipelineStep,
    Shipment,
    ShipmentStatus,
    ShippingMethod,
    Stage,
)
from tests.merchants.factories import EnvironmentFactory
from tests.support.documents import document_rewritten

COMPLETE, IN_PROGRESS, ERROR = DetailState.COMPLETE, DetailState.IN_PROGRESS, DetailState.ERROR
# The details each step leaves Complete, step after step.
DOWNLOADED: dict[str, Any] = {"download_assets": COMPLETE}
ALLOCATED: dict[str, Any] = {**DOWNLOADED, "allocate_production_location": COMPLETE}
PREPARED: dict[str, Any] = {**ALLOCATED, "print_ready_assets_prepared": COMPLETE}
STOPPED: dict[str, Any] = {"due_at": None, "claimed_until": None}


class DocumentWritten:
    """A factory of a row an order's document shows: the document written once it is made."""

    @classmethod
    def _after_postgeneration(cls, instance: Any, create: bool, results: Any = None) -> None:
        super()._after_postgeneration(instance, create, results)  # type: ignore[misc]
        if create:
            document_rewritten(_order_id(instance))


def _order_id(instance: Any) -> int:
    if isinstance(instance, Order):
        return int(instance.id)
    if isinstance(instance, Asset):
        return int(instance.item.order_id)
    if isinstance(instance, ChargeItem):
        return int(instance.charge.order_id)
    return int(instance.order_id)


class OrderFactory(DocumentWritten, DjangoModelFactory[Order]):
    """Traits, one per place in the pipeline: ``on_hold`` (until submitted by hand),
    ``downloading``, ``allocating``, ``preparing``, ``submitting``, ``producing``,
    ``partly_shipped``, ``complete``, ``cancelled`` and ``failed`` (at the download; pass the
    details as well for a later step)."""

    class Meta:
        model = Order
        skip_postgeneration_save = True

    class Params:
        on_hold = factory.Trait(
            stage=Stage.ON_HOLD, pipeline_step=PipelineStep.HELD, held_until=None, due_at=None
        )
        downloading = factory.Trait(download_assets=IN_PROGRESS)
        allocating = factory.Trait(pipeline_step=PipelineStep.ALLOCATE, **DOWNLOADED)
        preparing = factory.Trait(pipeline_step=PipelineStep.PREPARE, **ALLOCATED)
        submitting = factory.Trait(pipeline_step=PipelineStep.SUBMIT, **PREPARED)
        producing = factory.Trait(
            pipeline_step=PipelineStep.PRODUCTION,
            in_production=IN_PROGRESS,
            submitted_at=factory.LazyFunction(timezone.now),
            **PREPARED,
        )
        partly_shipped = factory.Trait(
            pipeline_step=PipelineStep.PRODUCTION,
            in_production=IN_PROGRESS,
            shipping=IN_PROGRESS,
            submitted_at=factory.LazyFunction(timezone.now),
            **PREPARED,
        )
        complete = factory.Trait(
            stage=Stage.COMPLETE,
            pipeline_step=PipelineStep.DONE,
            in_production=COMPLETE,
            shipping=COMPLETE,
            submitted_at=factory.LazyFunction(timezone.now),
            **PREPARED,
            **STOPPED,
        )
        cancelled = factory.Trait(
            stage=Stage.CANCELLED, pipeline_step=PipelineStep.CANCELLED, **STOPPED
        )
        failed = factory.Trait(pipeline_step=PipelineStep.FAILED, download_assets=ERROR, **STOPPED)

    environment = factory.SubFactory(EnvironmentFactory)
    shipping_method = ShippingMethod.STANDARD
    recipient_name = "Ada Lovelace"
    address_line1 = "1 Analytical Row"
    address_postal_or_zip_code = "SW1A 1AA"
    address_country_code = "GB"
    address_town_or_city = "London"
    currency = factory.LazyAttribute(lambda o: o.environment.merchant.billing_currency)
    stage = Stage.IN_PROGRESS
    pipeline_step = PipelineStep.DOWNLOAD
    due_at = factory.LazyFunction(timezone.now)
    item = factory.RelatedFactory(
        "tests.orders.factories.OrderItemFactory", factory_related_name="order"
    )


class OrderItemFactory(DocumentWritten, DjangoModelFactory[OrderItem]):
    """An item of one 4x6 print, with one asset; the next position in its order."""

    class Meta:
        model = OrderItem
        skip_postgeneration_save = True

    class Params:
        downloaded = factory.Trait(
            status=ItemStatus.OK,
            thumbnail=factory.LazyAttribute(lambda i: f"orders/{i.order.id}/thumbnail.jpg"),
        )

    order = factory.SubFactory(OrderFactory, item=None)
    position = factory.LazyAttribute(lambda i: i.order.items.count())
    sku = "GLOBAL-PHO-4X6"
    copies = 1
    asset = factory.RelatedFactory(
        "tests.orders.factories.AssetFactory", factory_related_name="item"
    )


class AssetFactory(DocumentWritten, DjangoModelFactory[Asset]):
    """The item's ``default`` print area, not yet downloaded."""

    class Meta:
        model = Asset

    class Params:
        downloaded = factory.Trait(
            status=AssetStatus.COMPLETE,
            download_attempts=1,
            source_size=123_456,
            source_file=factory.LazyAttribute(lambda a: f"orders/{a.item.order_id}/source.jpg"),
            thumbnail=factory.LazyAttribute(lambda a: f"orders/{a.item.order_id}/thumbnail.jpg"),
        )

    item = factory.SubFactory(OrderItemFactory, asset=None)
    position = factory.LazyAttribute(lambda a: a.item.assets.count())
    print_area = "default"
    url = factory.Sequence(lambda n: f"https://images.example.com/photo-{n}.jpg")


class ShipmentFactory(DocumentWritten, DjangoModelFactory[Shipment]):
    """A shipment from lab gb1, as allocation plans it; it takes the order's items that have no
    shipment yet (or ``items=[...]``)."""

    class Meta:
        model = Shipment
        skip_postgeneration_save = True

    class Params:
        submitted = factory.Trait(
            submitted_at=factory.LazyFunction(timezone.now),
            lab_order_reference=factory.Sequence(lambda n: f"SIM-{n:08d}"),
        )
        shipped = factory.Trait(
            submitted=True,
            status=ShipmentStatus.SHIPPED,
            in_production_at=factory.LazyFunction(timezone.now),
            dispatch_date=factory.LazyFunction(timezone.now),
            tracking_number=factory.Sequence(lambda n: f"SIM{n:012d}"),
            tracking_url=factory.LazyAttribute(
                lambda s: f"https://tracking.example.com/{s.tracking_number}"
            ),
        )
        cancelled = factory.Trait(status=ShipmentStatus.CANCELLED)

    order = factory.SubFactory(OrderFactory, allocating=True)
    lab_code = "gb1"
    lab_country_code = "GB"
    shipping_method = factory.LazyAttribute(lambda s: s.order.shipping_method)
    carrier_name = "Royal Mail"
    carrier_service = "Tracked 48"

    @factory.post_generation
    def items(
        self: Shipment, create: bool, extracted: list[OrderItem] | None, **kwargs: object
    ) -> None:
        if not create:
            return
        chosen = self.order.items.filter(shipment=None) if extracted is None else extracted
        OrderItem.objects.filter(id__in=[item.id for item in chosen]).update(shipment=self)


class ChargeFactory(DocumentWritten, DjangoModelFactory[Charge]):
    """A charge without lines; ``charges_write_for`` makes them as allocation does."""

    class Meta:
        model = Charge

    order = factory.SubFactory(OrderFactory, allocating=True)
    charge_type = ChargeType.ITEM
    currency = factory.LazyAttribute(lambda c: c.order.currency)
    total_cost = Decimal("10.00")
    total_tax = Decimal("2.00")


class ChargeItemFactory(DocumentWritten, DjangoModelFactory[ChargeItem]):
    class Meta:
        model = ChargeItem

    charge = factory.SubFactory(ChargeFactory)
    charge_type = factory.LazyAttribute(lambda line: line.charge.charge_type)
    cost = Decimal("10.00")
    tax = Decimal("2.00")


class OrderIssueFactory(DocumentWritten, DjangoModelFactory[OrderIssue]):
    """An issue about the order itself; ``payment`` makes it one that needs authorisation."""

    class Meta:
        model = OrderIssue

    class Params:
        payment = factory.Trait(
            authorisation_url="https://pay.example.com/authorise/1",
            payment_amount=Decimal("12.50"),
            payment_currency="GBP",
        )

    order = factory.SubFactory(OrderFactory)
    object_id = factory.LazyAttribute(lambda issue: issue.order.public_id)
    error_code = "order.items.ItemUnavailable"
    description = "GLOBAL-PHO-4X6 is temporarily unavailable."


def charges_write_for(
    order: Order, *, item_cost: Decimal = Decimal("10.00"), shipping_cost: Decimal = Decimal("4.00")
) -> list[Charge]:
    """The Item and Shipping charges allocation writes: a line per item and per shipment, 20%
    tax, totals the sums of the lines."""
    charges = []
    for charge_type, parts, cost in (
        (ChargeType.ITEM, [{"item": i} for i in order.items.all()], item_cost),
        (ChargeType.SHIPPING, [{"shipment": s} for s in order.shipments.all()], shipping_cost),
    ):
        tax = (cost / 5).quantize(Decimal("0.01"))
        charge = ChargeFactory.create(
            order=order,
            charge_type=charge_type,
            total_cost=cost * len(parts),
            total_tax=tax * len(parts),
        )
        for part in parts:
            ChargeItemFactory.create(charge=charge, cost=cost, tax=tax, **part)
        charges.append(charge)
    return charges
