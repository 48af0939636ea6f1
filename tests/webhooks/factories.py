import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from common.ids import new_id
from tests.merchants.factories import EnvironmentFactory
from webhooks.envelope import envelope_bytes
from webhooks.models import CallbackEvent, CallbackState


class CallbackEventFactory(DjangoModelFactory[CallbackEvent]):
    """A pending event, due now, about an order; its body is the CloudEvent ``event_create``
    would write for it (with only the order's id as data)."""

    class Meta:
        model = CallbackEvent

    id = factory.LazyFunction(new_id)
    environment = factory.SubFactory(EnvironmentFactory)
    subject = factory.Sequence(lambda n: f"ord_{n + 1}")
    sequence = 1
    event_type = "com.service.order.status.stage.changed#Complete"
    target_url = "https://hooks.example.com/callbacks"
    state = CallbackState.PENDING
    created = factory.LazyFunction(timezone.now)
    next_attempt_at = factory.LazyAttribute(lambda e: e.created)
    body = factory.LazyAttribute(
        lambda e: envelope_bytes(
            event_id=e.id,
            event_type=e.event_type,
            source=f"{e.environment.base_url.rstrip('/')}/v4.0/Orders/",
            subject=e.subject,
            data={"order": {"id": e.subject}},
            sequence=e.sequence,
            time=e.created,
        )
    )
