"""The triggers that change ``CatalogueVersion.number`` on every write to a catalogue table
(``common.versioning`` writes them): the products' tables here, the labs' (prices, shipping,
money) registered by ``labs``."""

from common import versioning

VERSION_TABLE = "products_catalogueversion"
_FUNCTION = "products_catalogue_version_change"
TABLES = [
    "products_paper",
    "products_product",
    "products_productattribute",
    "products_printarea",
    "products_variant",
]


def catalogue_triggers(tables: list[str]) -> versioning.VersionTriggers:
    """The catalogue version's triggers on ``tables`` (kept after every migrate once
    registered)."""
    return versioning.VersionTriggers(
        version_table=VERSION_TABLE, function=_FUNCTION, tables=tuple(tables)
    )


def create_sql(vendor: str, tables: list[str]) -> list[str]:
    return versioning.create_sql(
        vendor, version_table=VERSION_TABLE, function=_FUNCTION, tables=tables
    )


def drop_sql(vendor: str, tables: list[str]) -> list[str]:
    return versioning.drop_sql(vendor, tables=tables)
