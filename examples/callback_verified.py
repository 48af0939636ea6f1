"""The signature check of the API documentation's "Verifying a callback's signature", as it is
there (``tests/config/test_examples.py`` keeps the two the same): standard library only."""

import base64
import hashlib
import hmac
import time


def callback_verified(secret: str, headers: dict[str, str], body: bytes) -> bool:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    event_id, timestamp = headers["webhook-id"], headers["webhook-timestamp"]
    if abs(time.time() - int(timestamp)) > 300:
        return False
    signed = f"{event_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    expected = "v1," + base64.b64encode(digest).decode()
    return any(
        hmac.compare_digest(expected, signature)
        for signature in headers["webhook-signature"].split(" ")
    )
