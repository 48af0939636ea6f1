"""URLs of stored files (downloads, print files, thumbnails): signed and expiring.

Files on the local default storage are served by ``api.media`` only with a valid signature
for that very file and an expiry not yet passed, so neither a customer's original nor a print
file can be fetched by guessing or editing a URL. The expiry is rounded up to a whole day so
the same file shows the same URL all day (order bodies, callbacks and retries agree).
Storages that hand out absolute URLs of their own (django-storages: S3 presigned URLs) are
used as they are.
"""

import hmac
import math
import time
from urllib.parse import urlencode

from django.core import signing
from django.core.files.storage import default_storage

_SALT = "common.files"
_DAY = 24 * 3600


def _signature(name: str, expires: int) -> str:
    return signing.Signer(salt=_SALT).signature(f"{name}\n{expires}")


def file_url(name: str, base_url: str, *, max_age_seconds: float) -> str | None:
    """A URL of the stored file ``name`` valid for at least ``max_age_seconds``."""
    if not name:
        return None
    url = default_storage.url(name)
    if url.startswith(("http://", "https://")):
        return url
    expires = math.ceil((time.time() + max_age_seconds) / _DAY) * _DAY
    query = urlencode({"expires": expires, "signature": _signature(name, expires)})
    return f"{base_url.rstrip('/')}{url}?{query}"


def file_signature_valid(name: str, *, expires: str, signature: str) -> bool:
    """Whether a URL's ``expires`` and ``signature`` open ``name`` now."""
    if not expires.isdigit() or int(expires) < time.time():
        return False
    return hmac.compare_digest(_signature(name, int(expires)), signature)
