"""Secrets shown once and stored as digests: merchant API keys and staff API keys share this.

Keys are 256-bit random strings (or at least ``MIN_KEY_LENGTH`` characters when given), so a
plain SHA-256 can be neither reversed nor guessed: only the digest and a short recognisable
prefix are stored.
"""

import hashlib
import secrets

from django.db import models
from django.utils import timezone

from common.errors import ValidationFailed

MIN_KEY_LENGTH = 24
# ``last_used_at`` is written at most once a minute per key (and process that keeps it), not
# on every request.
LAST_USED_RESOLUTION_SECONDS = 60


def key_generate(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_prefix(key: str) -> str:
    """What the admin shows to recognise a key: at most a quarter of it (and 12 characters),
    so the stored part never narrows the rest down to something guessable."""
    return key[: min(12, len(key) // 4)]


class HashedKey(models.Model):
    """A key of which only the digest is kept; revocable, several active at once."""

    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, help_text="First characters, to recognise the key.")
    digest = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created"]

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


def key_digest_new(model: type[HashedKey], *, clear: str, label: str) -> str:
    """The digest of a key about to be stored in ``model``; ``ValidationFailed`` when the key
    is too short or already in use (``label`` names the kind of key in the message)."""
    if len(clear) < MIN_KEY_LENGTH:
        raise ValidationFailed.single(
            "key", "TooShort", f"{label} must have at least {MIN_KEY_LENGTH} characters."
        )
    digest = key_digest(clear)
    if model._default_manager.filter(digest=digest).exists():
        raise ValidationFailed.single("key", "AlreadyExists", "This API key is already in use.")
    return digest


def key_revoke(*, key: HashedKey) -> None:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])


def key_use_record(*, key: HashedKey) -> None:
    """Note that the key was used now (at most once per ``LAST_USED_RESOLUTION_SECONDS`` after
    ``key.last_used_at``, which is set to the time written)."""
    now = timezone.now()
    last = key.last_used_at
    if last is None or (now - last).total_seconds() > LAST_USED_RESOLUTION_SECONDS:
        type(key)._default_manager.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
