"""Who writes an order's step, stage, due time and claim: only the state machine may.

``StateWrites`` is a database execute wrapper. For every UPDATE of the order table that sets
``pipeline_step``, ``stage``, ``due_at`` or the claim (``claimed_until``, ``claim_token``) it
finds the writer, the innermost frame of the project's own code that sent it
(``common/db.py``, which only builds and runs statements for its
callers, and the frameworks are passed over), and records it as refused unless it is one of
``WRITERS`` (the state machine and its claims) or a test arranging its data. Inserts are
creations (their first state comes from ``order_first_state``) and are not checked.
"""

import inspect
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
WRITERS = ("orders/pipeline/state_machine.py", "orders/pipeline/claims.py")
STATE_COLUMNS = frozenset({"pipeline_step", "stage", "due_at", "claimed_until", "claim_token"})
# Frames of the project that send statements for others (the writer is their caller).
PASSED_OVER = (
    "common/db.py",
    "tests/support/state_writes.py",
)

# Each UPDATE of the order table and its SET list (up to its WHERE or RETURNING).
_UPDATE = re.compile(
    r'UPDATE\s+"?orders_order"?\s+SET\s+(.*?)(?=\s+WHERE\s|\s+RETURNING\s|$)',
    re.IGNORECASE | re.DOTALL,
)
# The columns assigned in a SET list (``CASE WHEN col = ...`` inside a value is no assignment).
_ASSIGNED = re.compile(r'(?:^|,)\s*"?(\w+)"?\s*=(?!=)')


def state_columns_set(sql: str) -> set[str]:
    """The order's state columns an SQL statement assigns."""
    found: set[str] = set()
    for update in _UPDATE.finditer(sql):
        found |= {column for column in _ASSIGNED.findall(update.group(1))} & STATE_COLUMNS
    return found


def _project_path(filename: str) -> str | None:
    try:
        relative = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    if relative.parts and relative.parts[0] in (".venv", "var"):
        return None
    return relative.as_posix()


def writer_of_statement() -> str | None:
    """The project file (relative to the repository) whose code sent the current statement."""
    frame = inspect.currentframe()
    while frame is not None:
        path = _project_path(frame.f_code.co_filename)
        if path is not None and path not in PASSED_OVER:
            return path
        frame = frame.f_back
    return None


@dataclass
class StateWrites:
    """Every write of the order's state seen, as (writer, columns); the refused ones apart."""

    seen: list[tuple[str, frozenset[str]]] = field(default_factory=list)
    refused: list[tuple[str, frozenset[str], str]] = field(default_factory=list)

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        if "orders_order" in sql and "UPDATE" in sql.upper():
            columns = state_columns_set(sql)
            if columns:
                writer = writer_of_statement() or "?"
                self.seen.append((writer, frozenset(columns)))
                if writer not in WRITERS and not writer.startswith("tests/"):
                    self.refused.append((writer, frozenset(columns), sql[:200]))
        return execute(sql, params, many, context)


@contextmanager
def state_writes_watched() -> Iterator[StateWrites]:
    """Watch the default connection's statements (in this thread) while the block runs."""
    watch = StateWrites()
    with connection.execute_wrapper(watch):
        yield watch
