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
"""

from collections.abc import Sequence
from typing import Any

from django.db.backends.postgresql import base, operations

# Written again by ``post_migrate`` after every flush (contenttypes' and auth's handlers), and
# the groups of staff's roles migration with their permissions.
KEPT = {"django_content_type", "auth_permission", "auth_group", "auth_group_permissions"}


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(
        self, style: Any, tables: Sequence[str], *, reset_sequences: bool = False,
        allow_cascade: bool = False,
    ) -> list[str]:  # fmt: skip
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
