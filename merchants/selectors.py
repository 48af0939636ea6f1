"""Reads for merchant accounts and keys."""

from django.utils import timezone

from merchants.keys import api_key_digest
from merchants.models import ApiKey

_LAST_USED_RESOLUTION_SECONDS = 60


def api_key_authenticate(*, key: str) -> ApiKey | None:
    """The active key with this clear text, with its environment and merchant, or None."""
    api_key = (
        ApiKey.objects.select_related("environment__merchant")
        .filter(digest=api_key_digest(key), revoked_at__isnull=True)
        .first()
    )
    if api_key is not None:
        now = timezone.now()
        if (
            api_key.last_used_at is None
            or (now - api_key.last_used_at).total_seconds() > _LAST_USED_RESOLUTION_SECONDS
        ):
            ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    return api_key
