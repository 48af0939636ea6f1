"""Triggers that give a random new number to a one-row version table on every write to the
tables whose data processes keep in memory (the catalogue, the API keys).

PostgreSQL: one statement-level trigger per table (insert, update, delete, truncate) calling
one function per version table; SQLite: a row-level trigger per table and event. Each writes a
new random number to the version row (id 1), creating it if it is missing (after a flush).
``update_columns`` limits the update trigger of a table to writes of those columns (a key's
last-used time changes nothing a process keeps).

Migrations wrote them first; each app registers its tables (``version_triggers_register``) and
``version_triggers_ensure`` puts back any that is missing after every ``migrate``: on SQLite a
migration that alters a table rebuilds it, without its triggers.

The number is random rather than counted, so that a version undone by a rollback is never
reused for different data.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

from django.db.backends.base.base import BaseDatabaseWrapper

_EVENTS = ("INSERT", "UPDATE", "DELETE")


def _postgres_function(function: str, version_table: str) -> str:
    return f"""
CREATE OR REPLACE FUNCTION {function}() RETURNS trigger AS $$
BEGIN
    INSERT INTO {version_table} (id, number)
    VALUES (1, floor(random() * 9.2e18)::bigint - 4600000000000000000)
    ON CONFLICT (id) DO UPDATE SET number = EXCLUDED.number;
    RETURN NULL;
END
$$ LANGUAGE plpgsql
"""


def _update_event(table: str, update_columns: Mapping[str, list[str]]) -> str:
    columns = update_columns.get(table)
    return f"UPDATE OF {', '.join(columns)}" if columns else "UPDATE"


def create_sql(
    vendor: str,
    *,
    version_table: str,
    function: str,
    tables: list[str],
    trigger_suffix: str = "version",
    update_columns: Mapping[str, list[str]] | None = None,
) -> list[str]:
    """The statements that (re)create the triggers of ``tables``: each table's are dropped
    first, so that running them again (a migration run again after ``version_triggers_ensure``
    put its triggers back) replaces them."""
    columns = update_columns or {}
    dropped = drop_sql(vendor, tables=tables, trigger_suffix=trigger_suffix)
    if vendor == "postgresql":
        return [_postgres_function(function, version_table), *dropped] + [
            f"CREATE TRIGGER {table}_{trigger_suffix} AFTER INSERT OR "
            f"{_update_event(table, columns)} OR DELETE OR TRUNCATE "
            f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
            for table in tables
        ]
    if vendor == "sqlite":
        change = (
            f"INSERT INTO {version_table} (id, number) VALUES (1, random()) "
            "ON CONFLICT (id) DO UPDATE SET number = excluded.number;"
        )
        return dropped + [
            f"CREATE TRIGGER {table}_{trigger_suffix}_{event.lower()} AFTER "
            f"{_update_event(table, columns) if event == 'UPDATE' else event} ON {table} "
            f"BEGIN {change} END"
            for table in tables
            for event in _EVENTS
        ]
    raise NotImplementedError(f"No version triggers for {vendor}.")


def drop_sql(vendor: str, *, tables: list[str], trigger_suffix: str = "version") -> list[str]:
    """The statements that drop the triggers of ``tables`` where they exist."""
    if vendor == "postgresql":
        return [f"DROP TRIGGER IF EXISTS {table}_{trigger_suffix} ON {table}" for table in tables]
    return [
        f"DROP TRIGGER IF EXISTS {table}_{trigger_suffix}_{event.lower()}"
        for table in tables
        for event in _EVENTS
    ]


@dataclass(frozen=True)
class VersionTriggers:
    """The triggers that renumber ``version_table`` (through the PostgreSQL ``function``) on
    every write to ``tables``; ``update_columns`` as for ``create_sql``."""

    version_table: str
    function: str
    tables: tuple[str, ...]
    update_columns: Mapping[str, list[str]] = field(default_factory=dict)
    trigger_suffix: str = "version"

    def trigger_names(self, vendor: str, table: str) -> list[str]:
        """The names of ``table``'s triggers on ``vendor``'s database."""
        if vendor == "postgresql":
            return [f"{table}_{self.trigger_suffix}"]
        return [f"{table}_{self.trigger_suffix}_{event.lower()}" for event in _EVENTS]

    def create_sql(self, vendor: str, tables: list[str]) -> list[str]:
        return create_sql(
            vendor,
            version_table=self.version_table,
            function=self.function,
            tables=tables,
            trigger_suffix=self.trigger_suffix,
            update_columns=self.update_columns,
        )


_registered: list[VersionTriggers] = []


def version_triggers_register(triggers: VersionTriggers) -> None:
    """Keep ``triggers`` on the database after every ``migrate`` (``version_triggers_ensure``);
    each app registers its own tables when Django starts."""
    if triggers not in _registered:
        _registered.append(triggers)


def version_triggers_registered() -> list[VersionTriggers]:
    return list(_registered)


def version_triggers_present(connection: BaseDatabaseWrapper) -> set[tuple[str, str]]:
    """(table, trigger name) of every trigger of our own on the connection's database."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT c.relname, t.tgname FROM pg_trigger t "
                "JOIN pg_class c ON c.oid = t.tgrelid "
                "WHERE NOT t.tgisinternal AND pg_table_is_visible(c.oid)"
            )
        elif connection.vendor == "sqlite":
            cursor.execute("SELECT tbl_name, name FROM sqlite_master WHERE type = 'trigger'")
        else:
            raise NotImplementedError(f"No version triggers for {connection.vendor}.")
        return {(str(table), str(name)) for table, name in cursor.fetchall()}


def version_triggers_ensure(connection: BaseDatabaseWrapper) -> list[str]:
    """Create every registered trigger that is missing from the connection's database, and
    answer their names. Run after every ``migrate`` (``common.apps``): SQLite has no ``ALTER
    TABLE`` for most changes, so a migration that alters a table rebuilds it, and the rebuilt
    table has no triggers; a migration written later cannot forget them. Triggers already there
    are left alone (no statement, no lock); tables not created yet (a partial migrate) and
    versions whose table is missing are skipped."""
    existing = set(connection.introspection.table_names())
    present = version_triggers_present(connection)
    created: list[str] = []
    for triggers in _registered:
        if triggers.version_table not in existing:
            continue
        missing = [
            table
            for table in triggers.tables
            if table in existing
            and any(
                (table, name) not in present
                for name in triggers.trigger_names(connection.vendor, table)
            )
        ]
        if not missing:
            continue
        with connection.cursor() as cursor:
            for statement in triggers.create_sql(connection.vendor, missing):
                cursor.execute(statement)
        created += [n for t in missing for n in triggers.trigger_names(connection.vendor, t)]
    return created
