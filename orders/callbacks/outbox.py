"""Writing callback events into the outbox, inside the transaction of the change they report."""

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from orders.callbacks.envelope import envelope_bytes
from orders.models import CallbackEvent, CallbackState, GoneCallbackUrl, Order


def callback_target(order: Order) -> str:
    """The order's callback URL, else its environment's default; blank when neither is set."""
    return order.callback_url or order.environment.callback_url


def callback_event_record(*, order: Order, event_type: str) -> CallbackEvent:
    """Write the event with the order as ``GET`` shows it now; deliver once the change commits.

    The order row's sequence counter is incremented in place, which also serialises concurrent
    events of one order, so their numbers follow the order of their commits.
    """
    from orders.labs import environment_base_url
    from orders.representation import order_representation
    from orders.selectors import order_get

    assert transaction.get_connection().in_atomic_block, (
        "record events inside the change's transaction"
    )
    Order.objects.filter(id=order.id).update(callback_sequence=F("callback_sequence") + 1)
    sequence = Order.objects.values_list("callback_sequence", flat=True).get(id=order.id)
    environment = order.environment
    current = order_get(environment=environment, order_id=order.id)
    now = timezone.now()
    event = CallbackEvent(
        environment=environment, order=order, sequence=sequence, event_type=event_type, created=now
    )
    event.body = envelope_bytes(
        event_id=event.id,
        event_type=event_type,
        environment_kind=environment.kind,
        order_public_id=order.public_id,
        order=order_representation(
            current, base_url=environment_base_url(sandbox=environment.is_sandbox)
        ),
        sequence=sequence,
        time=now,
    )
    event.target_url = callback_target(order)
    if not event.target_url:
        event.state = CallbackState.NO_DESTINATION
    elif GoneCallbackUrl.objects.filter(environment=environment, url=event.target_url).exists():
        event.state = CallbackState.STOPPED
    else:
        event.next_attempt_at = now
    event.save()
    if event.state == CallbackState.PENDING:
        from orders.callbacks.tasks import deliver_callback

        # robust: with the broker down the change has committed all the same; the error is
        # logged, not raised to the caller, and the sweeper sends the event once it is back.
        transaction.on_commit(lambda: deliver_callback.delay(event.id), robust=True)
    return event
