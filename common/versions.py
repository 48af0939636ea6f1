"""Version numbers of data that processes keep in memory (the catalogue, the API keys), read
together, once per request: whatever a request uses is checked against the same numbers.

Each kept kind of data has a one-row table whose number triggers change in the transaction of
every write to that data (``common.versioning``); its app registers the table here when Django
starts (``version_register``). A process reuses what it keeps while the number is the one it
loaded the data with.

Inside ``versions_request_scope`` (one per web request, and one per run of a pipeline task:
``orders.tasks``) the numbers are read once, at the first ``version_current``, and reused for
the rest of the request or run; outside it (other tasks, commands) every call reads them
afresh. A request that has a read to make before anything asks for a version (one that needs
nothing the versions decide: ``GET`` of an order, read before its key is checked) reads the
versions in the same statement (``versions_read_with``).
"""

import functools
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from django.db import connection, models

from common.db import rows_together
from common.joined import UnitedRead, Within
from common.scopes import ContextVarScope

_tables: dict[str, str] = {}  # name -> version table
_request_versions: ContextVar[dict[str, int | None] | None] = ContextVar(
    "request_versions", default=None
)


def version_register(name: str, model: type[models.Model]) -> None:
    """Read ``model``'s row 1 ``number`` as the version called ``name``."""
    _tables[name] = model._meta.db_table


def versions_read() -> dict[str, int | None]:
    """Every registered version, all read at the same moment (None for a row missing after a
    flush)."""
    names = sorted(_tables)
    with connection.cursor() as cursor:
        cursor.execute(_versions_sql(tuple(names)))
        return dict(zip(names, cursor.fetchone(), strict=True))


@functools.cache
def _versions_sql(names: tuple[str, ...]) -> str:
    """One row of the versions ``names``, in order: a statement without parameters, written
    once (a NULL for a missing row)."""
    quote = connection.ops.quote_name
    numbers = (f"(SELECT number FROM {quote(_tables[name])} WHERE id = 1)" for name in names)
    return "SELECT " + ", ".join(numbers)


def versions_read_with(
    read: UnitedRead, pk: int, within: Within | None = None
) -> list[Sequence[Any]]:
    """The rows of ``read`` for the id ``pk`` (``within`` narrowing it), read in one statement
    with the versions when this request has yet to read them (``UnitedRead.statement_beside``);
    the request then uses those versions. Outside a request, or once its versions are read,
    ``read`` alone."""
    memo = _request_versions.get()
    names = sorted(_tables)
    if memo is None or memo or not names:
        (rows,) = rows_together([read.statement([pk], within)])
        return rows
    (rows,) = rows_together([read.statement_beside([pk], _versions_sql(tuple(names)), within)])
    memo.update(zip(names, rows[0][-len(names) :], strict=True))
    return rows


def version_current(name: str) -> int | None:
    """The version ``name`` as of this request's first read (or of now, outside a request)."""
    memo = _request_versions.get()
    if memo is None:
        return versions_read()[name]
    if not memo:
        memo.update(versions_read())
    return memo[name]


def versions_request_scope() -> ContextVarScope[dict[str, int | None] | None]:
    return ContextVarScope(_request_versions, {})
