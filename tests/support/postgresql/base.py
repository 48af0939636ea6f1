"""Django's PostgreSQL backend, but a transactional test's database is emptied by DELETE.

Between transactional tests Django empties every table (``flush``). Its one ``TRUNCATE`` of
every table gives each table and index new files, which costs the server about a second on a
busy machine; ``DELETE`` of the few rows a test leaves costs milliseconds. The same end state:
every table is locked first as ``TRUNCATE`` locks it (so a worker's open transaction is waited
for, not raced), then emptied in one transaction, and the tables with triggers (the version
triggers of ``common.versioning``, which fire on either statement) last, so that the version
rows they write exist after the flush as after ``TRUNCATE``. The content types and permissions
are kept: the flush's ``post_migrate`` would write the same rows again (under new ids), which
costs more than the rest of the flush. So are the roles' groups and their permissions, made by
a migration (staff): every test finds them as deployed, whatever ran before it on its process.

After such a flush the ``post_migrate`` signal is not sent at all (``flush_post_migrate``):
what its receivers make (content types, permissions, the version triggers) is all still there,
and asking each app for it again took about a fifth of a second a transactional test.
"""

import time
from collections.abc import Callable, Sequence
from typing import Any

from django.core.management.base import CommandError
from django.core.management.sql import emit_post_migrate_signal
from django.db import connections
from django.db.backends.postgresql import base, operations

# Written again by ``post_migrate`` after every flush (contenttypes' and auth's handlers), and
# the groups of staff's roles migration with their permissions.
KEPT = {"django_content_type", "auth_permission", "auth_group", "auth_group_permissions"}


class DatabaseOperations(operations.DatabaseOperations):
    # Whether the last flush kept the rows and triggers post_migrate's receivers make.
    flush_kept_migrated = False

    def sql_flush(
        self, style: Any, tables: Sequence[str], *, reset_sequences: bool = False,
        allow_cascade: bool = False,
    ) -> list[str]:  # fmt: skip
        self.flush_kept_migrated = not (reset_sequences or allow_cascade)
        if not tables or reset_sequences or allow_cascade:
            return super().sql_flush(
                style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        with self.connection.cursor() as cursor:
            cursor.execute(
                "SELECT DISTINCT tgrelid::regclass::text FROM pg_trigger WHERE NOT tgisinternal"
            )
            triggered = {name.strip('"') for (name,) in cursor.fetchall()}
        ordered = sorted((t for t in tables if t not in KEPT), key=lambda t: t in triggered)
        names = ", ".join(self.quote_name(table) for table in ordered)
        return [
            f"LOCK TABLE {names} IN ACCESS EXCLUSIVE MODE",
            *(f"DELETE FROM {self.quote_name(table)}" for table in ordered),
        ]


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations


def flush_post_migrate(verbosity: int, interactive: bool, db: str, **kwargs: Any) -> None:
    """The ``flush`` command's ``post_migrate`` signal, sent unless the flush kept what its
    receivers make (tests/conftest.py puts this in the command's place)."""
    if getattr(connections[db].ops, "flush_kept_migrated", False):
        return
    emit_post_migrate_signal(verbosity, interactive, db, **kwargs)


def flush_retried_on_deadlock(handle: Callable[..., Any]) -> Callable[..., Any]:
    """``flush``'s ``handle``, run again (up to twice more) when its TRUNCATE was chosen as a
    deadlock's victim: the flush runs in one transaction, so a failed one changed nothing."""

    def retried(command: Any, **options: Any) -> Any:
        for attempt in range(3):
            try:
                return handle(command, **options)
            except CommandError as failed:
                if attempt == 2 or "deadlock detected" not in str(failed.__cause__):
                    raise
                time.sleep(0.2 * (attempt + 1))
        return None

    return retried
