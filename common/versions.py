"""Version numbers of data that processes keep in memory (the catalogue, the API keys), read
together, once per request: whatever a request uses is checked against the same numbers.

Each kept kind of data has a one-row table whose number triggers change in the transaction of
every write to that data (``common.versioning``); its app registers the table here when Django
starts (``version_register``). A process reuses what it keeps while the number is the one it
loaded the data with.

Inside ``versions_request_scope`` (one per web request, and one per run of a pipeline task:
``orders.tasks``) the numbers are read once, at the first ``version_current``, and reused for
the rest of the request or run; outside it (other tasks, commands) every call reads them
afresh.
"""

import functools
from contextvars import ContextVar

from django.db import connection, models

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
