"""Stripe's webhook: ``POST /payments/stripe/webhook``, signed by Stripe, never by a browser
(no session, no CSRF token: the signature is the proof)."""

import logging

import stripe
from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from billing.services import stripe_event_take
from billing.stripe import EventUnreadable, stripe_event_read, stripe_event_verify

logger = logging.getLogger(__name__)


@csrf_exempt
@require_POST
def stripe_webhook(request: HttpRequest) -> JsonResponse:
    """200 once the event is taken (or was taken before: a redelivery changes nothing); 400
    for a payload whose ``Stripe-Signature`` does not verify, or a signed event without the
    fields this service reads (nothing is recorded: Stripe sends it again); 404 without Stripe
    configured."""
    if not settings.STRIPE_WEBHOOK_SECRET:
        return JsonResponse({"error": "Stripe is not configured here."}, status=404)
    try:
        event = stripe_event_read(
            stripe_event_verify(
                payload=request.body, signature=request.headers.get("Stripe-Signature")
            )
        )
    except (ValueError, stripe.SignatureVerificationError) as problem:
        logger.warning("Stripe webhook refused: %s", problem)
        return JsonResponse({"error": "The Stripe-Signature does not verify."}, status=400)
    except EventUnreadable as problem:
        logger.warning("Stripe webhook refused: %s", problem)
        return JsonResponse({"error": f"The event cannot be read: {problem}"}, status=400)
    taken = stripe_event_take(event=event)
    return JsonResponse({"received": True, "outcome": taken.outcome})
