"""Reads for merchant accounts and keys."""

from common.keys import key_use_record
from merchants.keys import api_key_digest
from merchants.models import ApiKey


def api_key_authenticate(*, key: str) -> ApiKey | None:
    """The active key with this clear text, with its environment and merchant, or None."""
    api_key = (
        ApiKey.objects.select_related("environment__merchant")
        .filter(digest=api_key_digest(key), revoked_at__isnull=True)
        .first()
    )
    if api_key is not None:
        key_use_record(key=api_key)
    return api_key
