"""Public identifiers: a type prefix followed by decimal digits (``ord_1234``).

Primary keys are 63-bit numbers made of the creation time in milliseconds and random bits, so
they sort by creation time (lists are ordered by id) without revealing how many rows exist.
Within a process they only grow: the first key of a millisecond starts at a random point, the
next ones of the same millisecond count on from it. Drawing again for each key would let two
keys of one millisecond come out equal (an order's hundred items, inserted together, would
then fail one time in two hundred, by the birthday bound of 20 bits); processes still draw
their own starting points, and a forked process forgets its parent's last key.
"""

import os
import re
import secrets
import threading
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


_lock = threading.Lock()
_last = 0  # the last key this process made


def new_id() -> int:
    """A time-ordered random 63-bit primary key, greater than any this process made before."""
    global _last
    ms = int(time.time() * 1000) - _EPOCH_MS
    with _lock:
        if ms << _RANDOM_BITS > _last:
            _last = (ms << _RANDOM_BITS) | secrets.randbits(_RANDOM_BITS)
        else:  # the same millisecond (or the clock went back): the next key on
            _last += 1
        return _last


def _forget_last() -> None:
    """In a forked child: start from the clock again, not from the parent's last key (which a
    sibling forked alongside would count on from too)."""
    global _last, _lock
    _last = 0
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_last)


def format_id(prefix: str, number: int) -> str:
    return f"{prefix}{number}"


_DIGITS = re.compile(r"[0-9]{1,19}")


def id_number(prefix: str, value: str, *, allow_bare: bool = False) -> int | None:
    """The number inside a public id (``prefix`` in any letter case, or none at all when
    ``allow_bare``), else None: ASCII digits only (full-width or other Unicode digits are no
    id), below 2**63."""
    text = value.strip()
    if text.lower().startswith(prefix):
        text = text[len(prefix) :]
    elif not allow_bare:
        return None
    if not _DIGITS.fullmatch(text) or int(text) >= 2**63:
        return None
    return int(text)


def parse_id(prefix: str, value: str, *, field: str = "id", allow_bare: bool = False) -> int:
    """The number inside a public id (as ``id_number`` reads it), or ``ValidationFailed``
    naming ``field`` when its form is wrong."""
    number = id_number(prefix, value, allow_bare=allow_bare)
    if number is None:
        raise ValidationFailed.single(
            field, "InvalidId", f"'{value}' is not a valid id; expected '{prefix}' and digits."
        )
    return number


def new_hex_id(prefix: str) -> str:
    """Prefix and 32 hexadecimal characters (quote item ids)."""
    return f"{prefix}{secrets.token_hex(16)}"
