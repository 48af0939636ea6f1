"""The triggers that change ``CatalogueVersion.number`` on every write to a catalogue table
(``common.versioning`` writes them). Used by migrations only."""

from common import versioning

VERSION_TABLE = "products_catalogueversion"
_FUNCTION = "products_catalogue_version_change"


def create_sql(vendor: str, tables: list[str]) -> list[str]:
    return versioning.create_sql(
        vendor, version_table=VERSION_TABLE, function=_FUNCTION, tables=tables
    )


def drop_sql(vendor: str, tables: list[str]) -> list[str]:
    return versioning.drop_sql(vendor, tables=tables)
