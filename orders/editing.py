"""A held order from the dashboard: its changes (recipient, shipping method, copies and
metadata, checked by the rules that check a new order, then priced again) and its submission."""

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from common.errors import ValidationFailed
from orders.actions import RECIPIENT_FIELDS
from orders.creation import order_validate
from orders.document import order_document_write
from orders.models import Order, OrderItem, PipelineStep
from orders.payment_balance import order_payment_settle
from orders.pipeline.state_machine import order_submit_now
from orders.pipeline.steps.allocate import order_cost
from orders.representation import order_recipient


def order_request(order: Order) -> dict[str, Any]:
    """The stored order written as the create request that would make it (to validate)."""
    return {
        "shippingMethod": order.shipping_method,
        "recipient": order_recipient(order),
        "items": [
            {
                "sku": item.sku,
                "copies": item.copies,
                "attributes": item.attributes,
                "assets": [
                    {"printArea": a.print_area, "pageCount": a.page_count}
                    for a in item.assets.all()
                ],
            }
            for item in order.items.all()
        ],
        "metadata": order.metadata,
    }


@transaction.atomic
def order_held_update(
    *,
    order: Order,
    recipient: Mapping[str, Any],
    shipping_method: str,
    copies: list[int],
    metadata: dict[str, Any],
) -> Order:
    """Apply the changes to a held order (shape-validated by the order serializers) after the
    whole order passes ``order_validate``; a payment waiting for authorisation is priced again,
    and a paid order whose cost changed asks for the difference or is refunded it
    (``orders.payment_balance``).

    Raises ``ValidationFailed`` (paths as in the create request) and leaves the order as it was.
    """
    locked = (
        Order.objects.select_for_update(of=("self",))
        .select_related("environment__merchant")
        .get(pk=order.pk)
    )
    if locked.pipeline_step != PipelineStep.HELD:
        raise ValidationFailed.single(
            "order", "NotHeld", "The order is no longer on hold and cannot be edited here."
        )
    items = list(locked.items.prefetch_related("assets").order_by("position"))
    if len(copies) != len(items):
        raise ValidationFailed.single("items", "Invalid", "One number of copies per item.")
    request = order_request(locked)
    request.update(shippingMethod=shipping_method, recipient=dict(recipient), metadata=metadata)
    for entry, number in zip(request["items"], copies, strict=True):
        entry["copies"] = number
    order_validate(data=request, currency=locked.currency, sandbox=locked.environment.is_sandbox)

    for column, path in RECIPIENT_FIELDS.items():
        value: Any = recipient
        for key in path:
            value = (value or {}).get(key)
        setattr(locked, column, value or "")
    locked.shipping_method = shipping_method
    locked.metadata = metadata
    locked.last_updated = timezone.now()
    locked.save(update_fields=[*RECIPIENT_FIELDS, "shipping_method", "metadata", "last_updated"])
    for item, number in zip(items, copies, strict=True):
        if item.copies != number:
            OrderItem.objects.filter(pk=item.pk).update(copies=number)
    order_payment_settle(order=locked, cost=order_cost(locked))
    order_document_write(locked.id)
    return locked


def order_held_submit(*, order: Order) -> bool:
    """Submit a held order at once (its pause window cut short): True when this call did;
    False when the order is not held or is already due (``order_submit_now``)."""
    return order_submit_now(order=order)
