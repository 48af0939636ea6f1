"""Public identifiers: a type prefix followed by decimal digits (``ord_1234``).

Primary keys are 63-bit numbers made of the creation time in milliseconds and random bits, so
they sort by creation time (lists are ordered by id) without revealing how many rows exist.
"""

import re
import secrets
import time

from common.errors import ValidationFailed

_EPOCH_MS = 1_577_836_800_000  # 2020-01-01T00:00:00Z
_RANDOM_BITS = 20

PREFIXES = {
    "order": "ord_",
    "order_item": "ori_",
    "charge": "chg_",
    "charge_item": "chi_",
    "shipment": "shp_",
    "asset": "ast_",
    "event": "evt_",
}


def new_id() -> int:
    """A time-ordered random 63-bit primary key."""
    ms = int(time.time() * 1000) - _EPOCH_MS
    return (ms << _RANDOM_BITS) | secrets.randbits(_RANDOM_BITS)


def format_id(prefix: str, number: int) -> str:
    return f"{prefix}{number}"


_DIGITS = re.compile(r"[0-9]{1,19}")


def parse_id(prefix: str, value: str, *, field: str = "id", allow_bare: bool = False) -> int:
    """The number inside a public id, or ``ValidationFailed`` when its form is wrong."""
    text = value.strip()
    if text.lower().startswith(prefix):
        text = text[len(prefix) :]
    elif not allow_bare:
        raise ValidationFailed.single(
            field, "InvalidId", f"'{value}' is not a valid id; expected '{prefix}' and digits."
        )
    if not _DIGITS.fullmatch(text) or int(text) >= 2**63:
        raise ValidationFailed.single(
            field, "InvalidId", f"'{value}' is not a valid id; expected '{prefix}' and digits."
        )
    return int(text)


def new_hex_id(prefix: str) -> str:
    """Prefix and 32 hexadecimal characters (quote item ids)."""
    return f"{prefix}{secrets.token_hex(16)}"
