"""``common/`` holds primitives only: no table or column name of any of the project's apps.

The names come from the app registry: the table of every model of the project's own apps
(``common`` aside), and the column and attribute name of each of their fields, but for those
that common's own abstract models declare (``PublicIdModel.id``, ``HashedKey``'s). A module of
``common/`` that needs an app's table or column takes it from its caller (``common.sweeping``
is given its fields, ``common.db.row_insert_or_count`` its key and counter).

What counts as naming one, in a module's code (docstrings and comments may name columns):

- a table name, anywhere;
- a column name made of several words (``order_id``, ``claimed_until``), as a word of a string
  (a field name, a lookup, a line of SQL);
- any column name as a keyword of a query (``filter(status=...)``, ``Q(swept_at__lt=...)``).

A column named by one plain word (``status``, ``name``, ``key``) is also that word, so it is
refused in queries only, not in the strings of messages and metric labels.
"""

import ast
import re
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parents[2]
COMMON = ROOT / "common"
# The calls whose keywords name fields of a model.
QUERIES = {
    "Q", "filter", "exclude", "get", "update", "create", "get_or_create", "update_or_create",
    "annotate", "alias", "aggregate",
}  # fmt: skip


def _apps_names() -> tuple[dict[str, str], dict[str, str]]:
    """The apps' table names and column names, each with the model it belongs to."""
    tables: dict[str, str] = {}
    columns: dict[str, str] = {}
    common_own: set[str] = set()
    for config in apps.get_app_configs():
        path = Path(config.path).resolve()
        # The project's apps are its top-level folders (a virtualenv inside the checkout
        # holds Django's own, which are not the project's).
        if path.parent != ROOT or path == COMMON:
            continue
        for model in config.get_models(include_auto_created=True):
            tables[model._meta.db_table] = model._meta.label
            for base in model.__mro__:
                meta = getattr(base, "_meta", None)
                if meta is not None and meta.abstract and base.__module__.startswith("common."):
                    common_own |= {n for f in meta.local_fields for n in (f.column, f.attname)}
            for field in model._meta.concrete_fields:
                for name in (field.column or field.attname, field.attname):
                    columns.setdefault(name, model._meta.label)
    return tables, {name: label for name, label in columns.items() if name not in common_own}


def _docstrings(tree: ast.Module) -> set[int]:
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }


def _offences(source: str, tables: dict[str, str], columns: dict[str, str]) -> list[str]:
    """Where ``source`` names an app's table or column: ``line word (model)`` each."""
    found = [
        f"{number} {table} ({tables[table]})"
        for number, line in enumerate(source.splitlines(), 1)
        for table in re.findall(r"\w+", line)
        if table in tables
    ]
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        words: list[str] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                words = [w for w in re.findall(r"[a-z]\w*", node.value) if "_" in w.strip("_")]
                words = [lookup for w in words for lookup in w.split("__")]
        elif isinstance(node, ast.Call):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else None
            name = function.id if isinstance(function, ast.Name) else name
            if name in QUERIES:
                words = [k.arg.split("__")[0] for k in node.keywords if k.arg is not None]
        line = getattr(node, "lineno", 0)
        found += [f"{line} {word} ({columns[word]})" for word in words if word in columns]
    return sorted(found, key=lambda offence: int(offence.split()[0]))


def test_no_module_of_common_names_a_table_or_a_column_of_an_app() -> None:
    tables, columns = _apps_names()
    offences = [
        f"common/{path.name}:{offence}"
        for path in sorted(COMMON.glob("*.py"))
        for offence in _offences(path.read_text(), tables, columns)
    ]
    assert offences == []


def test_the_names_are_the_apps_and_each_way_of_naming_one_is_found() -> None:
    tables, columns = _apps_names()
    assert tables["orders_order"] == "orders.Order"
    assert {"pipeline_step", "claimed_until", "environment_id", "status"} <= set(columns)
    assert "id" not in columns and "revoked_at" not in columns  # common's own abstract models
    source = '''"""A docstring may name claimed_until."""
rows = Order.objects.filter(status="Complete", swept_at__lt=now)  # in a query
sql = "SELECT order_id FROM orders_orderitem"  # a column and a table in SQL
label = ("status", "claim_token__isnull")  # a plain word alone, a lookup
error = OutboundError(status_code=500)  # no query: a keyword of its own
'''
    assert [o.split(" (")[0] for o in _offences(source, tables, columns)] == [
        "2 status",
        "2 swept_at",
        "3 orders_orderitem",
        "3 order_id",
        "4 claim_token",
    ]
