"""The triggers that change ``AccountsVersion.number`` on every write to merchants,
environments and API keys (``common.versioning`` writes them)."""

from common import versioning

VERSION_TABLE = "merchants_accountsversion"
_FUNCTION = "merchants_accounts_version_change"
TABLES = ["merchants_merchant", "merchants_environment", "merchants_apikey"]
# A key's last-used time is written once a minute per key and changes nothing kept in memory.
_UPDATE_COLUMNS = {"merchants_apikey": ["digest", "revoked_at", "environment_id"]}

ACCOUNTS_TRIGGERS = versioning.VersionTriggers(
    version_table=VERSION_TABLE,
    function=_FUNCTION,
    tables=tuple(TABLES),
    update_columns=_UPDATE_COLUMNS,
)


def create_sql(vendor: str) -> list[str]:
    return ACCOUNTS_TRIGGERS.create_sql(vendor, TABLES)


def drop_sql(vendor: str) -> list[str]:
    return versioning.drop_sql(vendor, tables=TABLES)
