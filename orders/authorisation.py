"""Authorising an order's payment: the provider is asked, and a waiting order starts."""

from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from common.errors import ValidationFailed
from labs.allocation import Infeasible
from orders.events import order_stage_changed
from orders.models import Order, PipelineStep, Stage
from orders.payments import PaymentResult, payment_issue, payment_provider
from orders.pipeline.scheduling import order_enqueue_on_commit
from orders.pipeline.steps.allocate import order_plan


def order_payment_amount(*, order: Order) -> tuple[Decimal | None, str]:
    """What the order costs now (as a quote for it gives), else what its issue says."""
    try:
        return order_plan(order).total_cost, order.currency
    except Infeasible:
        issue = payment_issue(order)
        return (issue.payment_amount if issue else None), order.currency


@transaction.atomic
def order_payment_authorise(*, order: Order) -> PaymentResult:
    """Authorise the order's cost with ``PAYMENT_PROVIDER``; once authorised the issue goes
    and an order waiting for payment starts fulfilment (a held one starts when released).

    Raises ``ValidationFailed`` when the order has nothing to pay.
    """
    locked = (
        Order.objects.select_for_update(of=("self",))
        .select_related("environment__merchant")
        .get(pk=order.pk)
    )
    issue = payment_issue(locked)
    if issue is None or locked.stage not in (Stage.ON_HOLD, Stage.AWAITING_PAYMENT):
        raise ValidationFailed.single(
            "order", "NotAwaitingPayment", "This order has no payment to authorise."
        )
    amount, currency = order_payment_amount(order=locked)
    if amount is None:
        raise ValidationFailed.single(
            "order", "NotPriced", "The order cannot be priced right now; try again later."
        )
    result = payment_provider().authorise(
        order_reference=locked.public_id,
        amount=amount,
        currency=currency,
        merchant_email=locked.environment.merchant.email,
    )
    if not result.authorised:
        return result
    issue.delete()
    now = timezone.now()
    locked.payment_reference = result.reference
    locked.payment_authorised_at = now
    locked.last_updated = now
    fields = ["payment_reference", "payment_authorised_at", "last_updated"]
    if locked.pipeline_step == PipelineStep.AWAITING_PAYMENT:
        locked.pipeline_step = PipelineStep.DOWNLOAD
        locked.stage = Stage.IN_PROGRESS
        locked.due_at = now
        locked.claimed_until = None
        fields += ["pipeline_step", "stage", "due_at", "claimed_until"]
    locked.save(update_fields=fields)
    if locked.pipeline_step == PipelineStep.DOWNLOAD:
        order_stage_changed(order=locked)
        order_enqueue_on_commit(order_id=locked.id, step=PipelineStep.DOWNLOAD)
    return result
