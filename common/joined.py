"""Hand-written statements that read whole rows of a few tables joined, and the model
instances they make: for the order reads and the pipeline's claims, where compiling a queryset
cost more than running it (a ``GET`` of an order, every claim of a step).

``JoinedRead(sql, *columns, models=...)``: a statement written once per process, its template
naming tables as ``{<model name>}`` (those of ``columns`` and ``models``), its columns as
``{columns}`` and, for a read by ids, ``{in_ids}`` after the id column. Each result row gives
one instance per ``TableColumns`` (None where a LEFT JOIN found nothing), converted by the
ORM's own value converters and built by ``Model.from_db``, as a queryset builds them; or, for
what only reads the values (the API's representations), a ``Row`` of the same values.

The statements of other modules are described, not written: ``rows_by_ids`` (whole rows of a
table whose key or foreign key is one of some ids, each LEFT JOINed with the rows of further
tables that refer to it), ``UnitedRead`` (several of those by the same ids as one
statement), ``rows_referred_to`` (the rows other rows name by a value) and
``CounterIncrement`` (one more on a counter column, and the row read back) and ``RowsPage``
(a page of a table's rows that meet some conditions, highest key first).

JSON columns are read by orjson where it reads the text as the framework's ``json`` would
(``JSONField.from_db_value`` for the rest: long numbers, NaN, text that is not JSON).

A read for what shows rows (``Table.fields``, ``RowsPage``'s ``fields``) may name only the
fields it shows, and read timestamps as the API shows them (``iso_timestamps``: the text of
``iso_timestamp``, written by PostgreSQL or from SQLite's stored text, not a ``datetime``).
"""

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

import orjson
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import CharField, DateTimeField, Field, JSONField, Model, TextField

from common.db import Statement, ids_condition, update_returning_joined
from common.ids import PREFIXES, format_id

_Converter = Callable[[Any, Any, Any], Any]

# 19 digits in a row may be an integer beyond 64 bits, which orjson reads as a float.
_LONG_NUMBER = re.compile(r"[0-9]{19}")


def _json_converter(field: JSONField) -> _Converter:  # type: ignore[type-arg]
    """``field.from_db_value``, by orjson for the text it reads as ``json`` does."""
    slow = field.from_db_value

    def converted(value: Any, expression: Any, db: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, str) and (len(value) < 19 or not _LONG_NUMBER.search(value)):
            try:
                return orjson.loads(value)
            except orjson.JSONDecodeError:
                pass
        return slow(value, expression, db)

    return converted


def iso_timestamp(value: datetime) -> str:
    """``value`` in ISO 8601, in UTC with a ``Z``, to the millisecond (cut, not rounded)."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# PostgreSQL's text of a timestamp as ``iso_timestamp`` writes it (``MS`` cuts, as Python does).
_POSTGRESQL_ISO = """to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"""
# A timestamp as Django stores it in SQLite when the database's time zone is UTC.
_SQLITE_UTC = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{6})?")


def _iso_converter(functions: list[_Converter], db: BaseDatabaseWrapper) -> _Converter:
    """A timestamp's stored text (or value) made ``iso_timestamp``'s text: SQLite's text in
    UTC rewritten in place, anything else converted by ``functions`` (the field's own
    converters) and formatted."""
    utc_text = db.vendor == "sqlite" and db.timezone == UTC

    def converted(value: Any, expression: Any, connection: Any) -> Any:
        if value is None:
            return None
        if utc_text and isinstance(value, str) and _SQLITE_UTC.fullmatch(value):
            return f"{value[:10]}T{value[11:23] if len(value) > 19 else value[11:] + '.000'}Z"
        for function in functions:
            value = function(value, expression, connection)
        return iso_timestamp(value)

    return converted


class Row:
    """A row of a model's table as plain values: each concrete field's value (or each read
    field's, see ``TableColumns``) under its ``attname`` (``order_id``, not ``order``), as an
    instance read by a queryset holds it, and ``public_id`` for a model that has one
    (``common.models.PublicIdModel``). Not a model instance: it has no methods, relations or
    ``save``; for what only reads the values (the API's representations of a page of orders),
    at a tenth of an instance's making."""

    id_kind: ClassVar[str | None] = None

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__ = values  # the values are the row's own

    @property
    def public_id(self) -> str:
        if self.id_kind is None:
            raise AttributeError("public_id")
        return format_id(PREFIXES[self.id_kind], self.id)

    if TYPE_CHECKING:  # a model's fields, whichever the model

        def __getattr__(self, name: str) -> Any: ...


class TableColumns:
    """Every column of ``model`` under the table alias ``alias`` in a SELECT, and how a row's
    slice becomes a model instance (the converters prepared once per process, on first use,
    for the connection's database).

    For ``Row``s only: ``fields`` (names, the key always first) reads those columns alone, and
    ``iso_timestamps`` reads each timestamp as ``iso_timestamp``'s text."""

    def __init__(
        self,
        model: type[Model],
        alias: str,
        *,
        fields: Sequence[str] = (),
        iso_timestamps: bool = False,
    ) -> None:
        self.model = model
        self.alias = alias
        self.fields: Sequence[Field] = model._meta.concrete_fields  # type: ignore[assignment]
        if fields:
            key = model._meta.pk
            named = [model._meta.get_field(name) for name in fields]
            self.fields = [key, *(f for f in named if f != key and isinstance(f, Field))]
        self.iso_timestamps = iso_timestamps
        self.whole = not fields and not iso_timestamps
        self.attnames = [field.attname for field in self.fields]
        self.width = len(self.attnames)
        self.row_class = type(
            f"{model.__name__}Row", (Row,), {"id_kind": getattr(model, "id_kind", None)}
        )
        self._converters: list[tuple[int, list[_Converter], Any]] | None = None

    def sql(self) -> str:
        quote = connection.ops.quote_name
        columns = []
        for field in self.fields:
            column = f"{self.alias}.{quote(str(field.column))}"
            if self._as_text(field):
                # Text, not the driver's datetime: the PostgreSQL text is the API's already.
                if connection.vendor == "postgresql":
                    column = _POSTGRESQL_ISO.format(column)
                elif connection.vendor == "sqlite":
                    column = f"CAST({column} AS TEXT)"
            columns.append(column)
        return ", ".join(columns)

    def _as_text(self, field: Field) -> bool:  # type: ignore[type-arg]
        return self.iso_timestamps and isinstance(field, DateTimeField)

    def converters(self) -> list[tuple[int, list[_Converter], Any]]:
        if self._converters is None:
            found = []
            for index, field in enumerate(self.fields):
                expression = field.get_col(self.alias)
                functions = connection.ops.get_db_converters(
                    expression
                ) + expression.get_db_converters(connection)
                if isinstance(field, JSONField) and field.decoder is None:
                    functions = [
                        _json_converter(field) if function == field.from_db_value else function
                        for function in functions
                    ]
                if self._as_text(field):
                    functions = (
                        []
                        if connection.vendor == "postgresql"
                        else [_iso_converter(functions, connection)]
                    )
                if functions:
                    found.append((index, functions, expression))
            self._converters = found
        return self._converters

    def instance(self, row: Sequence[Any], start: int, db: BaseDatabaseWrapper) -> Any:
        """The instance in ``row`` from column ``start``; None for a LEFT JOIN's missing row."""
        if not self.whole:
            raise TypeError("An instance is made of whole rows, as the model reads them.")
        if row[start] is None:
            return None
        values = list(row[start : start + self.width])
        converters = self._converters if self._converters is not None else self.converters()
        for index, functions, expression in converters:
            value = values[index]
            for function in functions:
                value = function(value, expression, db)
            values[index] = value
        return self.built(values, db.alias)

    def rows(self, rows: Sequence[Sequence[Any]], start: int = 0) -> list[Row | None]:
        """The ``Row`` in each of ``rows`` from column ``start`` (its values converted as
        ``instance`` converts them), in one loop over the rows: one ``Row`` for the same key on
        consecutive rows (a parent joined with several children), None for a LEFT JOIN's
        missing row."""
        converters = self._converters if self._converters is not None else self.converters()
        db = connections[DEFAULT_DB_ALIAS]
        names, make, end = self.attnames, self.row_class, start + self.width
        made: list[Row | None] = []
        last_key = last = None
        for row in rows:
            key = row[start]
            if key is None:
                made.append(None)
                last_key = None
                continue
            if key != last_key:
                values = row[start:end]
                if converters:
                    values = list(values)
                    for index, functions, expression in converters:
                        value = values[index]
                        for function in functions:
                            value = function(value, expression, db)
                        values[index] = value
                last_key, last = key, make(dict(zip(names, values, strict=True)))
            made.append(last)
        return made

    def built(self, values: Sequence[Any], db: str) -> Any:
        """The instance of converted ``values`` (every concrete field, in order), as a
        queryset builds it (``Model.from_db``)."""
        return self.model.from_db(db, self.attnames, values)


class JoinedRead:
    """A statement of whole rows of a few tables joined, written once per process (see the
    module's docstring); run by the caller, its rows made instances by ``instances``."""

    def __init__(
        self,
        sql: str | Callable[[], str],
        *tables: TableColumns,
        models: Iterable[type[Model]] = (),
        order_by: Sequence[tuple[int, str]] = (),
    ) -> None:
        # A template given as a function is written on first use (it asks the connection).
        self.template = sql if isinstance(sql, str) else ""
        self._writer = None if isinstance(sql, str) else sql
        self.tables = tables
        self.models = (*(table.model for table in tables), *models)
        # The rows' order, written after the template: (position of the table, field name).
        self.order_by = tuple(order_by)
        self._sql: str | None = None
        self._lock = threading.Lock()

    def written(self, columns: str) -> str:
        """The template with ``columns`` and the tables written in (``{in_ids}`` left in),
        without its order."""
        quote = connection.ops.quote_name
        template = self._writer() if self._writer is not None else self.template
        return template.format(
            columns=columns,
            in_ids="{in_ids}",
            **{str(model._meta.model_name): quote(model._meta.db_table) for model in self.models},
        )

    def sql(self) -> str:
        """The statement with its columns and tables written in (``{in_ids}`` left in)."""
        if self._sql is None:
            with self._lock:
                sql = self.written(", ".join(table.sql() for table in self.tables))
                if self.order_by:
                    ordering = (
                        _column(self.tables[at].model, self.tables[at].alias, name)
                        for at, name in self.order_by
                    )
                    sql += " ORDER BY " + ", ".join(ordering)
                self._sql = sql
        return self._sql

    def statement(self, ids: Sequence[int]) -> tuple[str, list[Any]]:
        """The statement for the rows of ``ids``, and its parameters."""
        condition, parameters = ids_condition(ids)
        return self.sql().format(in_ids=condition), parameters

    def instances(
        self, rows: Sequence[Sequence[Any]], *, plain: bool = False
    ) -> list[tuple[Any, ...]]:
        """One tuple of instances per row, one instance per table (with ``plain``, ``Row``s:
        for what only reads their values)."""
        db = connections[DEFAULT_DB_ALIAS]
        starts = []
        start = 0
        for table in self.tables:
            starts.append(start)
            start += len(table.fields)
        if plain:  # a table's Rows in one loop, the tuples zipped
            made = [t.rows(rows, at) for t, at in zip(self.tables, starts, strict=True)]
            return list(zip(*made, strict=True))
        # A parent repeated on consecutive rows (an item with several assets) is one instance.
        # (A row's first column is its key.)
        previous: list[Any] = [None] * len(self.tables)
        previous_keys: list[Any] = [None] * len(self.tables)
        found = []
        for row in rows:
            instances = []
            for position, (table, at) in enumerate(zip(self.tables, starts, strict=True)):
                last = previous[position]
                if last is not None and row[at] == previous_keys[position]:
                    instances.append(last)
                    continue
                previous[position] = instance = table.instance(row, at, db)
                previous_keys[position] = row[at]
                instances.append(instance)
            found.append(tuple(instances))
        return found

    def rows(self, parameters: dict[str, Any] | Sequence[Any]) -> list[tuple[Any, ...]]:
        """Run the statement (without ``{in_ids}``) with ``parameters``: its rows' instances."""
        with connection.cursor() as cursor:
            cursor.execute(self.sql(), parameters)
            return self.instances(cursor.fetchall())


def _quoted(model: type[Model], name: str) -> str:
    """The quoted column of the field ``name`` (or ``pk``) of ``model``."""
    field = model._meta.pk if name == "pk" else model._meta.get_field(name)
    return connection.ops.quote_name(str(getattr(field, "column", "")))


def _column(model: type[Model], alias: str, name: str) -> str:
    """``alias.column`` of the field ``name`` (or ``pk``) of ``model``."""
    return f"{alias}.{_quoted(model, name)}"


def _table(model: type[Model], alias: str) -> str:
    return "{" + str(model._meta.model_name) + "} " + alias


@dataclass(frozen=True)
class Table:
    """One table of ``rows_by_ids``: ``model``'s whole rows, sorted by the fields ``order_by``
    (after the tables before it); ``refers_by`` names this model's foreign key to the previous
    table's model, by which its rows are joined to theirs (not given for the first table).
    ``fields`` reads only those (and the key), for ``Row``s (``TableColumns``)."""

    model: type[Model]
    order_by: tuple[str, ...] = ()
    refers_by: str = ""
    fields: tuple[str, ...] = ()


def rows_by_ids(first: Table, *joined: Table, by: str, iso_timestamps: bool = False) -> JoinedRead:
    """The read of ``first``'s rows whose field ``by`` (``pk``, or a foreign key) is one of the
    ids given to ``statement``, each with the rows of every next table that refer to the
    previous one's row (LEFT JOIN: a row that none refers to gives None), sorted by the tables'
    ``order_by`` in turn (``iso_timestamps``: see ``TableColumns``)."""
    tables = (first, *joined)
    aliases = [f"t{position}" for position in range(len(tables))]

    def sql() -> str:
        text = "SELECT {columns} FROM " + _table(first.model, "t0")
        for position, table in enumerate(joined, 1):
            alias, previous = aliases[position], tables[position - 1].model
            refers = _column(table.model, alias, table.refers_by)
            text += f" LEFT JOIN {_table(table.model, alias)} ON {refers} = "
            text += _column(previous, aliases[position - 1], "pk")
        return text + f" WHERE {_column(first.model, 't0', by)} {{in_ids}}"

    return JoinedRead(
        sql,
        *(
            TableColumns(t.model, alias, fields=t.fields, iso_timestamps=iso_timestamps)
            for t, alias in zip(tables, aliases, strict=True)
        ),
        order_by=[(at, name) for at, table in enumerate(tables) for name in table.order_by],
    )


@dataclass(frozen=True)
class _Branch:
    """A read's part of ``UnitedRead``: its columns (those of its tables, then any it sorts by
    without reading them), a NULL of each one's type, and its ordering by their positions
    (from 0) among them."""

    columns: list[str]  # SQL, a table's or a column's each
    typed_nulls: list[str]
    ordering: list[int]
    read_width: int  # the columns of its tables


def _typed_null(field: "Field[Any, Any]", as_text: bool) -> str:
    """A NULL of the type of ``field``'s column (``as_text``: read as text). Text needs no
    type: the chain's first ``UNION`` makes NULLs text, which any text type joins (and the
    statement stays short enough for the driver to keep it converted)."""
    if as_text or isinstance(field, CharField | TextField):
        return "NULL"
    return f"CAST(NULL AS {field.cast_db_type(connection)})"


def _branch(read: JoinedRead) -> _Branch:
    columns = [table.sql() for table in read.tables]
    nulls = [_typed_null(f, table._as_text(f)) for table in read.tables for f in table.fields]
    offsets = [0]
    for table in read.tables:
        offsets.append(offsets[-1] + table.width)
    ordering = []
    for at, name in read.order_by:
        table = read.tables[at]
        field = table.model._meta.pk if name == "pk" else table.model._meta.get_field(name)
        if isinstance(field, Field) and field in table.fields and not table._as_text(field):
            ordering.append(offsets[at] + list(table.fields).index(field))
        else:  # not read as itself: one more column
            ordering.append(len(nulls))
            columns.append(_column(table.model, table.alias, name))
            nulls.append(_typed_null(field, False))  # type: ignore[arg-type]
    return _Branch(columns, nulls, ordering, offsets[-1])


@dataclass(frozen=True)
class Within:
    """Narrows a read by ids to the ids of ``model`` rows whose ``field`` is ``value`` (an
    order's environment): written into every branch's condition, so that rows of an id outside
    it, and of everything read by that id, are never read, and finding none costs what a
    missing id does."""

    model: type[Model]
    field: str
    value: Any

    def condition(self, ids: Sequence[int]) -> tuple[str, list[Any]]:
        """The condition to write after a column of ids, and its parameters."""
        among, parameters = ids_condition(ids)
        key = _quoted(self.model, "pk")
        narrowing = _quoted(self.model, self.field)
        table = connection.ops.quote_name(self.model._meta.db_table)
        sql = f"IN (SELECT {key} FROM {table} WHERE {key} {among} AND {narrowing} = %s)"
        return sql, [*parameters, self.value]


class UnitedRead:
    """Several reads of ``rows_by_ids`` by the same ids as one statement (``UNION ALL``): one
    execution where each would take its own, and on PostgreSQL one statement where each would
    take a place in a pipeline (a cursor, a result and the pipeline's sync each).

    A row of it holds every read's columns side by side after the number of the read it
    belongs to: that read's filled in, the others' NULL (typed in the first branch, which gives
    the chain of ``UNION``s its types). Rows come read by read, each read's in its own order;
    ``split`` gives each read's rows as its own statement would."""

    def __init__(self, *reads: JoinedRead) -> None:
        self.reads = reads
        self._sql: str | None = None
        self._ordering = ""
        self._one_id: dict[str, str] = {}
        self._one_id_beside: dict[tuple[str, str], str] = {}
        self._slices: list[tuple[int, int]] = []
        self._lock = threading.Lock()

    def sql(self) -> str:
        if self._sql is None:
            with self._lock:
                parts = [_branch(read) for read in self.reads]
                branches, ordering, slices, start = [], ["1"], [], 1
                for position, (read, part) in enumerate(zip(self.reads, parts, strict=True)):
                    columns = [str(position)]
                    for other in parts:  # (NULLs joined tight: the shorter the text, the better)
                        if other is part:
                            columns += part.columns
                        elif position == 0:
                            columns.append(",".join(other.typed_nulls))
                        else:
                            columns.append(",".join(["NULL"] * len(other.typed_nulls)))
                    branches.append(read.written(", ".join(columns)))
                    ordering += [str(start + 1 + at) for at in part.ordering]
                    slices.append((start, start + part.read_width))
                    start += len(part.typed_nulls)
                self._slices = slices
                self._ordering = " ORDER BY " + ", ".join(ordering)
                self._sql = " UNION ALL ".join(branches) + self._ordering
        return self._sql

    def statement(self, ids: Sequence[int], within: Within | None = None) -> Statement:
        """The statement for the rows of ``ids`` of every read (``within`` narrowing the ids),
        and its parameters."""
        condition, parameters = ids_condition(ids) if within is None else within.condition(ids)
        if len(ids) != 1:
            return self.sql().format(in_ids=condition), parameters * len(self.reads)
        key = "" if within is None else f"{within.model._meta.label}.{within.field}"
        sql = self._one_id.get(key)
        if sql is None:  # the same text for every single id: written once
            sql = self._one_id[key] = self.sql().format(in_ids=condition)
        return sql, parameters * len(self.reads)

    def statement_beside(
        self, ids: Sequence[int], row: str, within: Within | None = None
    ) -> Statement:
        """As ``statement`` for one id, each row followed by the columns of ``row`` (a SELECT
        of one row, without parameters); with no rows to read, that row alone (the reads'
        columns NULL, which ``split`` skips): a read and a few values read with it, one
        statement where they would take two."""
        if len(ids) != 1:
            raise ValueError("A read beside another is written for one id.")
        single, parameters = self.statement(ids, within)
        sql = self._one_id_beside.get((row, single))
        if sql is None:  # written once per row read beside
            united = single.removesuffix(self._ordering)
            # The row on the left: there whether the reads find rows or not; the reads'
            # columns first, so the ordering's positions hold.
            sql = self._one_id_beside[(row, single)] = (
                f"SELECT r.*, b.* FROM ({row}) b LEFT JOIN ({united}) r ON 1 = 1{self._ordering}"
            )
        return sql, parameters

    def split(self, rows: Sequence[Sequence[Any]]) -> list[list[Sequence[Any]]]:
        """The statement's rows as each read's own rows, read by read (the columns read beside
        them left out, and the row of those alone skipped)."""
        found: list[list[Sequence[Any]]] = [[] for _ in self.reads]
        slices = self._slices
        for row in rows:
            if row[0] is None:  # the row read beside, alone: the reads found none
                continue
            begin, end = slices[row[0]]
            found[row[0]].append(row[begin:end])
        return found


def rows_referred_to(
    model: type[Model], key: str, *, by: type[Model], naming: str, among: str
) -> JoinedRead:
    """The read of ``model``'s rows whose field ``key`` is named by the field ``naming`` of a
    row of ``by`` whose field ``among`` is one of the ids given to ``statement`` (the labs of
    an order's shipments)."""

    def sql() -> str:
        return (
            f"SELECT {{columns}} FROM {_table(model, 't0')} WHERE {_column(model, 't0', key)} IN "
            f"(SELECT {_column(by, 't1', naming)} FROM {_table(by, 't1')} "
            f"WHERE {_column(by, 't1', among)} {{in_ids}})"
        )

    return JoinedRead(sql, TableColumns(model, "t0"), models=[by])


class CounterIncrement:
    """One added to the integer field ``field`` of a row of ``model`` (by its key), in place:
    the increment locks the row until the transaction ends, so concurrent increments are
    numbered in the order of their commits. ``alias`` names the table in the statement that
    returns the row."""

    def __init__(self, model: type[Model], field: str, *, alias: str = "t0") -> None:
        self.model = model
        self.field = field
        self.alias = alias
        self._returning = JoinedRead(self._returning_sql, TableColumns(model, alias))

    def _returning_sql(self) -> str:
        column, alias = _quoted(self.model, self.field), self.alias
        return (
            f"UPDATE {_table(self.model, alias)} SET {column} = {alias}.{column} + 1 "
            f"WHERE {_column(self.model, alias, 'pk')} {{in_ids}} RETURNING {{columns}}"
        )

    def statement(self, pk: int) -> Statement:
        """The increment alone (no rows), for ``common.db.rows_together``."""
        column, key = _quoted(self.model, self.field), _quoted(self.model, "pk")
        table = connection.ops.quote_name(self.model._meta.db_table)
        return f"UPDATE {table} SET {column} = {column} + 1 WHERE {key} = %s", [pk]

    def row(self, pk: int) -> Any:
        """Increment, then the row as it is now (an instance of ``model``); None without one."""
        if update_returning_joined():
            with connection.cursor() as cursor:
                cursor.execute(*self._returning.statement([pk]))
                rows = self._returning.instances(cursor.fetchall())
            return rows[0][0] if rows else None
        with connection.cursor() as cursor:
            cursor.execute(*self.statement(pk))
        return self.model._default_manager.filter(pk=pk).first()


# The comparisons ``RowsPage`` writes, by lookup name (``in`` is written by ``ids_condition``).
_COMPARISONS = {"exact": "= %s", "gt": "> %s", "lt": "< %s"}


class RowsPage:
    """A page of ``model``'s whole rows (or of its ``fields``) as ``Row``s, highest key first:
    those meeting every condition given to ``rows`` (a field, a lookup among ``exact``, ``in``,
    ``gt`` and ``lt``, and a value, compared as a queryset's ``filter(<field>__<lookup>=value)``
    compares it), ``offset`` rows skipped, at most ``limit`` (``iso_timestamps``: see
    ``TableColumns``)."""

    def __init__(
        self, model: type[Model], *, fields: Sequence[str] = (), iso_timestamps: bool = False
    ) -> None:
        self.model = model
        self.columns = TableColumns(model, "t0", fields=fields, iso_timestamps=iso_timestamps)
        self._select: str | None = None

    def _select_sql(self) -> str:
        if self._select is None:
            table = connection.ops.quote_name(self.model._meta.db_table)
            self._select = f"SELECT {self.columns.sql()} FROM {table} t0"
        return self._select

    def rows(
        self, conditions: Sequence[tuple[str, str, Any]], *, limit: int, offset: int = 0
    ) -> list[Row]:
        where: list[str] = []
        parameters: list[Any] = []
        for name, lookup, value in conditions:
            field = self.model._meta.pk if name == "pk" else self.model._meta.get_field(name)
            if not isinstance(field, Field):
                raise TypeError(f"{name} is not a column of {self.model.__name__}.")
            column = _column(self.model, "t0", name)
            if lookup == "in":
                values = [field.get_db_prep_value(one, connection) for one in value]
                if not values:
                    return []
                condition, more = ids_condition(values)
                where.append(f"{column} {condition}")
                parameters.extend(more)
            else:
                where.append(f"{column} {_COMPARISONS[lookup]}")
                parameters.append(field.get_db_prep_value(value, connection))
        sql = self._select_sql()
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY {_column(self.model, 't0', 'pk')} DESC LIMIT %s"
        parameters.append(limit)
        if offset:
            sql += " OFFSET %s"
            parameters.append(offset)
        with connection.cursor() as cursor:
            cursor.execute(sql, parameters)
            # (No None among them: a page's rows are its table's own, each with its key.)
            return self.columns.rows(cursor.fetchall())  # type: ignore[return-value]
