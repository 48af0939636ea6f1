"""Stored files (downloads, print files, thumbnails): putting a local file into the storage,
and the files' URLs, signed and expiring.

A file made or downloaded locally is moved into the file system storage, not copied: a rename
on the same file system, so a 10 MB print file costs no second read and write.

Files are served by ``api.media`` only with a valid signature for that very file and an
expiry not yet passed, so neither a customer's original nor a print file can be fetched by
guessing or editing a URL. The expiry is rounded up to a whole day so the same file shows the
same URL all day (order bodies, callbacks and retries agree). The same holds on an S3 bucket:
the URL is still the service's, and ``api.media`` answers it with a redirect to a short-lived
presigned URL, since a presigned URL cannot be valid longer than 7 days nor stay the same all
day.
"""

import hmac
import math
import time
from pathlib import Path
from typing import IO
from urllib.parse import urlencode

from django.conf import settings
from django.core import signing
from django.core.files import File
from django.core.files.storage import default_storage
from django.utils.encoding import filepath_to_uri

_SALT = "common.files"
_DAY = 24 * 3600


class _LocalFile(File):
    """A local file handed to the storage. ``FileSystemStorage`` moves content that names its
    ``temporary_file_path`` into place (a rename on the same file system, else a copy) instead
    of reading and writing its bytes again; other storages read it like any file."""

    def __init__(self, handle: IO[bytes], path: Path) -> None:
        super().__init__(handle)
        self.path = path

    def temporary_file_path(self) -> str:
        return str(self.path)


def file_store(path: Path, name: str) -> str:
    """Put the local file ``path`` in the default storage at ``name``, replacing a file stored
    there before; the name it is stored under. ``path`` is gone afterwards: moved on the file
    system storage, uploaded and removed on a bucket."""
    if default_storage.exists(name):
        default_storage.delete(name)
    with path.open("rb") as handle:
        stored = default_storage.save(name, _LocalFile(handle, path))
    path.unlink(missing_ok=True)
    return stored


def _signature(name: str, expires: int) -> str:
    return signing.Signer(salt=_SALT).signature(f"{name}\n{expires}")


def url_expiry(max_age_seconds: float) -> int:
    """The expiry (Unix time) of URLs made now to be valid for at least ``max_age_seconds``:
    rounded up to a whole day."""
    return math.ceil((time.time() + max_age_seconds) / _DAY) * _DAY


def file_url(
    name: str, base_url: str, *, max_age_seconds: float = 0, expires: int | None = None
) -> str | None:
    """A URL of the stored file ``name`` valid for at least ``max_age_seconds``, or until
    ``expires`` (Unix time, from ``url_expiry``) when given."""
    if not name:
        return None
    url = settings.MEDIA_URL + filepath_to_uri(name)
    if expires is None:
        expires = url_expiry(max_age_seconds)
    query = urlencode({"expires": expires, "signature": _signature(name, expires)})
    return f"{base_url.rstrip('/')}{url}?{query}"


def file_signature_valid(name: str, *, expires: str, signature: str) -> bool:
    """Whether a URL's ``expires`` and ``signature`` open ``name`` now."""
    if not (expires.isascii() and expires.isdigit()) or int(expires) < time.time():
        return False
    return hmac.compare_digest(_signature(name, int(expires)), signature)
