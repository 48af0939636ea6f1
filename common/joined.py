"""Hand-written statements that read whole rows of a few tables joined, and the model
instances they make: for the order reads and the pipeline's claims, where compiling a queryset
cost more than running it (a ``GET`` of an order, every claim of a step).

``JoinedRead(sql, *columns, models=...)``: a statement written once per process, its template
naming tables as ``{<model name>}`` (those of ``columns`` and ``models``), its columns as
``{columns}`` and, for a read by ids, ``{in_ids}`` after the id column. Each result row gives
one instance per ``TableColumns`` (None where a LEFT JOIN found nothing), converted by the
ORM's own value converters and built by ``Model.from_db``, as a queryset builds them.
"""

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model

from common.db import ids_condition

_Converter = Callable[[Any, Any, Any], Any]


class TableColumns:
    """Every column of ``model`` under the table alias ``alias`` in a SELECT, and how a row's
    slice becomes a model instance (the converters prepared once per process, on first use,
    for the connection's database)."""

    def __init__(self, model: type[Model], alias: str) -> None:
        self.model = model
        self.alias = alias
        self.fields = model._meta.concrete_fields
        self.attnames = [field.attname for field in self.fields]
        self._converters: list[tuple[int, list[_Converter], Any]] | None = None

    def sql(self) -> str:
        quote = connection.ops.quote_name
        return ", ".join(f"{self.alias}.{quote(str(field.column))}" for field in self.fields)

    def converters(self) -> list[tuple[int, list[_Converter], Any]]:
        if self._converters is None:
            found = []
            for index, field in enumerate(self.fields):
                expression = field.get_col(self.alias)
                functions = connection.ops.get_db_converters(
                    expression
                ) + expression.get_db_converters(connection)
                if functions:
                    found.append((index, functions, expression))
            self._converters = found
        return self._converters

    def instance(self, row: Sequence[Any], start: int, db: BaseDatabaseWrapper) -> Any:
        """The instance in ``row`` from column ``start``; None for a LEFT JOIN's missing row."""
        values = list(row[start : start + len(self.fields)])
        if values[0] is None:
            return None
        for index, functions, expression in self.converters():
            value = values[index]
            for function in functions:
                value = function(value, expression, db)
            values[index] = value
        return self.built(values, db.alias)

    def built(self, values: Sequence[Any], db: str) -> Any:
        """The instance of converted ``values`` (every concrete field, in order), as a
        queryset builds it (``Model.from_db``)."""
        return self.model.from_db(db, self.attnames, values)


class JoinedRead:
    """A statement of whole rows of a few tables joined, written once per process (see the
    module's docstring); run by the caller, its rows made instances by ``instances``."""

    def __init__(self, sql: str, *tables: TableColumns, models: Iterable[type[Model]] = ()) -> None:
        self.template = sql
        self.tables = tables
        self.models = (*(table.model for table in tables), *models)
        self._sql: str | None = None
        self._lock = threading.Lock()

    def sql(self) -> str:
        """The statement with its columns and tables written in (``{in_ids}`` left in)."""
        if self._sql is None:
            with self._lock:
                quote = connection.ops.quote_name
                self._sql = self.template.format(
                    columns=", ".join(table.sql() for table in self.tables),
                    in_ids="{in_ids}",
                    **{
                        str(model._meta.model_name): quote(model._meta.db_table)
                        for model in self.models
                    },
                )
        return self._sql

    def statement(self, ids: Sequence[int]) -> tuple[str, list[Any]]:
        """The statement for the rows of ``ids``, and its parameters."""
        condition, parameters = ids_condition(ids)
        return self.sql().format(in_ids=condition), parameters

    def instances(self, rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
        """One tuple of instances per row, one instance per table."""
        db = connections[DEFAULT_DB_ALIAS]
        starts = []
        start = 0
        for table in self.tables:
            starts.append(start)
            start += len(table.fields)
        # A parent repeated on consecutive rows (an item with several assets) is one instance.
        previous: list[Any] = [None] * len(self.tables)
        found = []
        for row in rows:
            instances = []
            for position, (table, at) in enumerate(zip(self.tables, starts, strict=True)):
                last = previous[position]
                if last is not None and row[at] == last.pk:
                    instances.append(last)
                    continue
                previous[position] = instance = table.instance(row, at, db)
                instances.append(instance)
            found.append(tuple(instances))
        return found

    def rows(self, parameters: dict[str, Any] | Sequence[Any]) -> list[tuple[Any, ...]]:
        """Run the statement (without ``{in_ids}``) with ``parameters``: its rows' instances."""
        with connection.cursor() as cursor:
            cursor.execute(self.sql(), parameters)
            return self.instances(cursor.fetchall())
