"""The version triggers (common.versioning) are on every table whose data processes keep in
memory, on both databases, after every migrate: on SQLite the migrations that alter a table
rebuild it without its triggers, and the ones lost are put back after the migrate.

SQLite is the embedded default of ``make run`` (``config.settings.local`` without
``DATABASE_URL``), migrated here in a folder of its own by ``manage.py`` in another process."""

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from tests.support.database import ON_POSTGRES

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE_TABLES = [
    "products_paper",
    "products_product",
    "products_productattribute",
    "products_printarea",
    "products_variant",
    "labs_lab",
    "labs_labproduct",
    "labs_shippingzone",
    "labs_shippingrate",
    "labs_exchangerate",
    "labs_taxrule",
]
ACCOUNTS_TABLES = ["merchants_merchant", "merchants_environment", "merchants_apikey"]
VERSIONED_TABLES = CATALOGUE_TABLES + ACCOUNTS_TABLES
SQLITE_TRIGGERS = {
    (table, f"{table}_version_{event}")
    for table in VERSIONED_TABLES
    for event in ("insert", "update", "delete")
}
POSTGRES_TRIGGERS = {(table, f"{table}_version") for table in VERSIONED_TABLES}

# A process that keeps the catalogue in memory as workers do: each line read, the codes of the
# active labs in the snapshot it holds (reloaded only when the catalogue version moved).
SNAPSHOT_READER = """
import sys
import django
django.setup()
from labs.catalogue import catalogue_snapshot
for _ in sys.stdin:
    print(",".join(catalogue_snapshot().lab_codes), flush=True)
"""


def _embedded_env(var: Path) -> dict[str, str]:
    """``make run``'s settings on a database of its own: SQLite and the file broker in ``var``."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL") and not k.startswith("DJANGO_")
    }
    return {**clean, "VAR_DIR": str(var), "DJANGO_SETTINGS_MODULE": "config.settings.local"}


def _manage(var: Path, *args: str) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=_embedded_env(var),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr


def _sqlite_triggers(database: Path) -> set[tuple[str, str]]:
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT tbl_name, name FROM sqlite_master WHERE type = 'trigger'")
        return {(table, name) for table, name in rows}


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[Path]:
    """A migrated embedded database's folder (``VAR_DIR``)."""
    _manage(tmp_path, "migrate", "--no-input")
    yield tmp_path


def test_every_versioned_table_has_its_triggers_after_migrate_on_sqlite(embedded: Path) -> None:
    database = embedded / "db.sqlite3"
    assert _sqlite_triggers(database) == SQLITE_TRIGGERS

    # Back before the labs' triggers were made, and forward again through the migrations that
    # rebuild labs_lab and labs_labproduct: still every trigger, once.
    _manage(embedded, "migrate", "labs", "0003", "--no-input")
    assert _sqlite_triggers(database) == SQLITE_TRIGGERS
    _manage(embedded, "migrate", "--no-input")
    assert _sqlite_triggers(database) == SQLITE_TRIGGERS


@pytest.mark.skipif(not ON_POSTGRES, reason="the PostgreSQL triggers need DATABASE_URL")
@pytest.mark.django_db
def test_every_versioned_table_has_its_trigger_after_migrate_on_postgresql() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE NOT t.tgisinternal AND c.relname = ANY(%s)",
            [VERSIONED_TABLES],
        )
        assert set(cursor.fetchall()) == POSTGRES_TRIGGERS


def test_a_lab_changed_in_another_process_is_used_by_a_running_process_on_sqlite(
    embedded: Path,
) -> None:
    _manage(embedded, "load_catalogue")
    reader = subprocess.Popen(
        [sys.executable, "-c", SNAPSHOT_READER],
        cwd=ROOT,
        env=_embedded_env(embedded),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdin is not None and reader.stdout is not None
    try:
        reader.stdin.write("\n")
        reader.stdin.flush()
        before = reader.stdout.readline().strip().split(",")
        assert "gb1" in before

        _manage(
            embedded,
            "shell",
            "-c",
            "from labs.models import Lab; Lab.objects.filter(code='gb1').update(is_active=False)",
        )
        reader.stdin.write("\n")
        reader.stdin.flush()
        after = reader.stdout.readline().strip().split(",")
    finally:
        reader.stdin.close()
        reader.wait(timeout=30)

    assert after == [code for code in before if code != "gb1"]
