"""The code leans on no private attribute of Django (nor of another library, but for those
named below), and asks which database it runs on or sends a statement built by hand only in
``common/`` (and the benchmarks, ``bench/``, which are no part of the service).

Private attributes break on an upgrade without warning: every ``x._name`` in the project's
Python files (migrations aside) must be a name the project defines itself, or one that its
library documents as public despite the underscore."""

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Documented API despite the underscore: Django's model ``_meta`` and default managers, the
# named tuple's methods.
DOCUMENTED = {"_meta", "_default_manager", "_base_manager", "_replace", "_asdict", "_fields"}
# Not Django's, each the one way to do what it does: the body of a ``requests`` response read
# within its size and time limits (common/http.py); kombu's Redis channel making its client,
# in the subclass that keeps one (common/broker.py), and dropping its pools as after a
# connection error (its test).
OTHER_LIBRARIES = {"_content", "_create_client", "_disconnect_pools"}


def _python_files() -> list[Path]:
    return [
        path
        for path in ROOT.rglob("*.py")
        if path.relative_to(ROOT).parts[0] not in (".venv", "var", "node_modules")
        and "migrations" not in path.relative_to(ROOT).parts
    ]


@functools.cache  # parsed once for the module's tests, which only read them
def _trees() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(), filename=str(path)) for path in _python_files()}


def _defined_here(trees: dict[Path, ast.Module]) -> set[str]:
    """Every underscored name the project defines: functions, classes, module and class
    variables, and attributes it sets on its own objects."""
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            ):
                names.add(node.attr)
    return {name for name in names if name.startswith("_")}


def test_no_private_attribute_of_django_or_another_library_is_used() -> None:
    trees = _trees()
    assert len(trees) > 200
    ours = _defined_here(trees)
    used = [
        f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}"
        for path, tree in trees.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and node.attr not in ours | DOCUMENTED | OTHER_LIBRARIES
    ]
    assert used == []


def test_the_private_names_django_code_leaned_on_are_gone() -> None:
    text = {path: path.read_text() for path in _python_files() if path != Path(__file__)}
    for banned in ("ModelState", "fields_cache", "_execute_with_wrappers", "._state", "._mutable"):
        assert [str(p.relative_to(ROOT)) for p, t in text.items() if banned in t] == [], banned


def test_only_common_asks_which_database_it_runs_on() -> None:
    asking = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _python_files()
        if path.relative_to(ROOT).parts[0] not in ("common", "tests", "bench")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "connection.vendor" in line or "connection.features" in line or ".vendor ==" in line
    ]
    assert asking == []


def _statement_built_by_hand(node: ast.AST) -> str | None:
    """What ``node`` does that only ``common/`` may: open a cursor, ask the database's vendor,
    or send SQL through the ORM's raw doors."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("cursor", "raw", "extra")
    ):
        return f".{node.func.attr}()"
    if isinstance(node, ast.Attribute) and node.attr == "vendor":
        return ".vendor"
    if isinstance(node, ast.Attribute | ast.Name) and "RawSQL" in (
        getattr(node, "attr", None),
        getattr(node, "id", None),
    ):
        return "RawSQL"
    if isinstance(node, ast.alias) and node.name.rsplit(".", 1)[-1] == "RawSQL":
        return "RawSQL"
    return None


def test_only_common_sends_statements_built_by_hand() -> None:
    outside = {
        str(path.relative_to(ROOT)): tree
        for path, tree in _trees().items()
        if path.relative_to(ROOT).parts[0] not in ("common", "tests", "bench")
    }
    found = [
        f"{name}:{getattr(node, 'lineno', '?')} {what}"
        for name, tree in outside.items()
        for node in ast.walk(tree)
        if (what := _statement_built_by_hand(node))
    ]
    assert found == []


def test_the_pipeline_claims_write_no_sql_of_their_own() -> None:
    """``orders/pipeline/claims.py`` claims through the ORM: none of its strings, docstrings
    aside, is SQL."""
    tree = ast.parse((ROOT / "orders/pipeline/claims.py").read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    sql = re.compile(r"\b(SELECT|UPDATE|INSERT|DELETE|WHERE|RETURNING)\b")
    found = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and sql.search(node.value)
    ]
    assert found == []
