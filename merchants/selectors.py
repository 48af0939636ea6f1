"""Reads for merchant accounts and keys."""

import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import models

from common.keys import key_use_record
from common.versions import version_current
from merchants.keys import api_key_digest
from merchants.models import ApiKey, Environment, Merchant

# Beyond this many kept keys a process starts again from none (they are read again on use).
KEPT_KEYS_MAX = 10_000


def _attnames(model: type[models.Model]) -> list[str]:
    return [field.attname for field in model._meta.concrete_fields]


_KEY_FIELDS = _attnames(ApiKey)
_ENVIRONMENT_FIELDS = _attnames(Environment)
_MERCHANT_FIELDS = _attnames(Merchant)


def _values(row: models.Model, names: list[str]) -> tuple[Any, ...]:
    return tuple(getattr(row, name) for name in names)


@dataclass
class _KeptKey:
    """An active key's rows as read (plain values: every request builds its own objects)."""

    key: tuple[Any, ...]
    environment: tuple[Any, ...]
    merchant: tuple[Any, ...]
    # When this process last wrote or read the key's last-used time.
    last_used_at: datetime | None

    def rows(self) -> ApiKey:
        merchant = Merchant.from_db("default", _MERCHANT_FIELDS, self.merchant)
        environment = Environment.from_db("default", _ENVIRONMENT_FIELDS, self.environment)
        api_key = ApiKey.from_db("default", _KEY_FIELDS, self.key)
        environment.merchant = merchant
        api_key.environment = environment
        api_key.last_used_at = self.last_used_at
        return api_key


class ApiKeyCache:
    """The active keys one process has seen, kept while the accounts version
    (``merchants.models.AccountsVersion``) is the one they were read under: a revoked key, or
    a changed environment or merchant, is read afresh by the very next request. One instance
    per process; tests make more to stand in for other processes."""

    def __init__(self) -> None:
        self._version: int | None = None
        self._keys: dict[str, _KeptKey] = {}
        self._lock = threading.Lock()

    def authenticate(self, *, key: str) -> ApiKey | None:
        version = version_current("accounts")
        digest = api_key_digest(key)
        kept = self._keys.get(digest) if version is not None and version == self._version else None
        if kept is None:
            api_key = (
                ApiKey.objects.select_related("environment__merchant")
                .filter(digest=digest, revoked_at__isnull=True)
                .first()
            )
            if api_key is None:
                self._forget(digest)  # revoked (or never a key): no longer "kept"
                return None
            kept = _KeptKey(
                key=_values(api_key, _KEY_FIELDS),
                environment=_values(api_key.environment, _ENVIRONMENT_FIELDS),
                merchant=_values(api_key.environment.merchant, _MERCHANT_FIELDS),
                last_used_at=api_key.last_used_at,
            )
            self._keep(version, digest, kept)
        api_key = kept.rows()
        key_use_record(key=api_key)
        kept.last_used_at = api_key.last_used_at
        return api_key

    def _forget(self, digest: str) -> None:
        if digest in self._keys:
            with self._lock:
                self._keys.pop(digest, None)

    def _keep(self, version: int | None, digest: str, kept: _KeptKey) -> None:
        # A version of None (the row missing after a flush) could come back for other data.
        if version is None:
            return
        with self._lock:
            if version != self._version or len(self._keys) >= KEPT_KEYS_MAX:
                self._keys = {}
                self._version = version
            self._keys[digest] = kept


_process_keys = ApiKeyCache()


def api_key_authenticate(*, key: str) -> ApiKey | None:
    """The active key with this clear text, with its environment and merchant, or None: from
    this process's kept keys while the accounts version read for the request (the one the
    catalogue is checked against) stands, else from the database."""
    return _process_keys.authenticate(key=key)
