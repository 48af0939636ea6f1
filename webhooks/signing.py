"""Standard Webhooks signatures (https://www.standardwebhooks.com/).

A receiver verifies ``webhook-signature`` against ``"{webhook-id}.{webhook-timestamp}.{body}"``
with the environment's secret, so the body must be signed as the exact bytes that are sent. The
id is the event id and stays the same on every retry (receivers deduplicate on it); the
timestamp is the attempt's own, because receivers reject signatures older than a few minutes.
"""

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Sequence

SECRET_PREFIX = "whsec_"


class InvalidSigningSecret(ValueError):
    """The stored secret is not ``whsec_`` followed by non-empty base64."""


def signing_key(secret: str) -> bytes:
    """The HMAC key: the base64 part of a ``whsec_`` secret, decoded."""
    encoded = secret.removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(encoded, validate=True)
    except binascii.Error as exc:
        raise InvalidSigningSecret("The signing secret is not valid base64.") from exc
    if not key:
        raise InvalidSigningSecret("The signing secret is empty.")
    return key


def signature(*, secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """``v1,`` and the base64 HMAC-SHA256 of ``"{msg_id}.{timestamp}.{body}"``."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(signing_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signature_headers(
    *,
    secret: str,
    msg_id: str,
    body: bytes,
    timestamp: int | None = None,
    also: Sequence[str] = (),
) -> dict[str, str]:
    """The three Standard Webhooks headers for one delivery attempt (timestamp: now).

    ``also`` are further secrets (the previous one during a rotation): the scheme allows several
    space-separated signatures, and a receiver accepts the delivery if any of them verifies.
    """
    ts = int(time.time()) if timestamp is None else timestamp
    signatures = [
        signature(secret=key, msg_id=msg_id, timestamp=ts, body=body) for key in (secret, *also)
    ]
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(ts),
        "webhook-signature": " ".join(signatures),
    }
