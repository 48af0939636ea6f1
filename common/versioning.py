"""Triggers that give a random new number to a one-row version table on every write to the
tables whose data processes keep in memory (the catalogue, the API keys).

Used by migrations only. PostgreSQL: one statement-level trigger per table (insert, update,
delete, truncate) calling one function per version table; SQLite: a row-level trigger per table
and event. Each writes a new random number to the version row (id 1), creating it if it is
missing (after a flush). ``update_columns`` limits the update trigger of a table to writes of
those columns (a key's last-used time changes nothing a process keeps).

The number is random rather than counted, so that a version undone by a rollback is never
reused for different data.
"""

from collections.abc import Mapping

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
    columns = update_columns or {}
    if vendor == "postgresql":
        return [_postgres_function(function, version_table)] + [
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
        return [
            f"CREATE TRIGGER {table}_{trigger_suffix}_{event.lower()} AFTER "
            f"{_update_event(table, columns) if event == 'UPDATE' else event} ON {table} "
            f"BEGIN {change} END"
            for table in tables
            for event in _EVENTS
        ]
    raise NotImplementedError(f"No version triggers for {vendor}.")


def drop_sql(vendor: str, *, tables: list[str], trigger_suffix: str = "version") -> list[str]:
    if vendor == "postgresql":
        return [f"DROP TRIGGER IF EXISTS {table}_{trigger_suffix} ON {table}" for table in tables]
    return [
        f"DROP TRIGGER IF EXISTS {table}_{trigger_suffix}_{event.lower()}"
        for table in tables
        for event in _EVENTS
    ]
