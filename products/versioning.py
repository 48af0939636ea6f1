"""The triggers that change ``CatalogueVersion.number`` on every write to a catalogue table.

Used by migrations only. PostgreSQL: one statement-level trigger per table (insert, update,
delete, truncate) calling one function; SQLite: a row-level trigger per table and event. Each
writes a new random number to the version row, creating it if it is missing (after a flush).
"""

VERSION_TABLE = "products_catalogueversion"
_FUNCTION = "products_catalogue_version_change"

_POSTGRES_FUNCTION = f"""
CREATE OR REPLACE FUNCTION {_FUNCTION}() RETURNS trigger AS $$
BEGIN
    INSERT INTO {VERSION_TABLE} (id, number)
    VALUES (1, floor(random() * 9.2e18)::bigint - 4600000000000000000)
    ON CONFLICT (id) DO UPDATE SET number = EXCLUDED.number;
    RETURN NULL;
END
$$ LANGUAGE plpgsql
"""
_SQLITE_CHANGE = (
    f"INSERT INTO {VERSION_TABLE} (id, number) VALUES (1, random()) "
    "ON CONFLICT (id) DO UPDATE SET number = excluded.number;"
)
_SQLITE_EVENTS = ("INSERT", "UPDATE", "DELETE")


def create_sql(vendor: str, tables: list[str]) -> list[str]:
    if vendor == "postgresql":
        return [_POSTGRES_FUNCTION] + [
            f"CREATE TRIGGER {table}_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
            f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION {_FUNCTION}()"
            for table in tables
        ]
    if vendor == "sqlite":
        return [
            f"CREATE TRIGGER {table}_version_{event.lower()} AFTER {event} ON {table} "
            f"BEGIN {_SQLITE_CHANGE} END"
            for table in tables
            for event in _SQLITE_EVENTS
        ]
    raise NotImplementedError(f"No catalogue version triggers for {vendor}.")


def drop_sql(vendor: str, tables: list[str]) -> list[str]:
    if vendor == "postgresql":
        return [f"DROP TRIGGER IF EXISTS {table}_version ON {table}" for table in tables]
    return [
        f"DROP TRIGGER IF EXISTS {table}_version_{event.lower()}"
        for table in tables
        for event in _SQLITE_EVENTS
    ]
