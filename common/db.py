"""Statements for the hot paths, where building them through the ORM costs more than running
them, and every difference between the databases the service runs on (PostgreSQL, SQLite),
behind functions named for what they answer: no other module asks which database it has.

``rows_new`` and ``rows_insert``: instances made as a stored row is, and inserted as
``bulk_create`` inserts them, several models' rows all or none, their SQL built once per process
(on PostgreSQL one statement: an order with its items and assets).

``row_insert_or_count``: a row inserted once per key, a later insert of the same key counted
on it instead, whatever the concurrency.

``durations_percentiles``: percentiles of the time between two timestamps of the rows of a
queryset, by group (PostgreSQL's ``percentile_cont``; read and computed alike elsewhere).

``row_values``: some values of the one row with given values, in a statement written once
(the ORM's build of so small a read costs several times running it).

``database_reachable``: whether the database answers a statement now.

``server_side_binding`` and ``insert_returning``: what the database can take, for the
statements written here.

``dropped_connections_closed``: a kept connection the server has dropped is closed before the
next request or task uses it, which then opens a new one.
"""

import functools
import logging
import select
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.models import Aggregate, Count, F, Field, FloatField, Model, QuerySet

Statement = tuple[str, Sequence[Any]]
M = TypeVar("M", bound=Model)

logger = logging.getLogger(__name__)


def _postgresql() -> bool:
    return connection.vendor == "postgresql"


def server_side_binding() -> bool:
    """Whether values go apart from the statements (PostgreSQL with prepared statements)."""
    return _postgresql() and connection.settings_dict["OPTIONS"].get("server_side_binding") is True


def insert_returning() -> bool:
    """Whether an INSERT can return the columns of the row it wrote (or left)."""
    return bool(connection.features.can_return_columns_from_insert)


def dropped_connections_closed(**_signal: Any) -> None:
    """Close every kept PostgreSQL connection the server has dropped (restarted, terminated
    the session, a proxy's idle timeout): Django opens a new one at its next use.

    Between requests (and tasks) a kept connection has nothing to read; once the server has
    ended it, its socket has (the server's notice, then the end of the stream). Asking the
    socket costs no round trip, where Django's ``CONN_HEALTH_CHECKS`` sends ``SELECT 1`` before
    the first query of every request. Call it where no transaction is open: at the start of a
    request (a ``request_started`` receiver) or around a task."""
    for wrapper in connections.all(initialized_only=True):
        raw = wrapper.connection
        if raw is None or wrapper.vendor != "postgresql" or wrapper.in_atomic_block:
            continue
        try:
            readable, _, _ = select.select([raw.fileno()], [], [], 0)
        except Exception:  # closed already (psycopg's OperationalError), or no socket
            readable = [True]
        if readable:
            wrapper.close()


def _column(model: type[Model], name: str) -> "tuple[Field[Any, Any], str]":
    """The model's field ``name`` (or its attname) and its column, in the model's own table."""
    field = model._meta.get_field(name)
    if (
        not isinstance(field, Field)
        or not field.column
        or field.model is not model._meta.concrete_model
    ):
        raise ValueError(f"{model.__name__}.{name} is not a column of its table.")
    return field, field.column


# ``rows_new``'s plan of each model: its concrete fields' attnames, and each name a row may
# give (a field's name or attname) with the field's position and whether it is given as the
# related object.
_NewPlan = tuple[list[str], dict[str, tuple[int, bool]]]
_NEW: dict[type[Model], _NewPlan] = {}


def rows_new(model: type[M], rows: Sequence[Mapping[str, Any]]) -> list[M]:
    """``[model(**row) for row in rows]`` to be stored by ``rows_insert``: each field given by
    its name or attname (a related object by the field's name, set as ``model(**row)`` sets
    it), the others their defaults; made as ``Model.from_db`` makes a stored row: the state
    ``bulk_create`` leaves its instances in, reached through public API only (and a tenth
    cheaper than the keyword ``__init__``)."""
    plan = _NEW.get(model)
    if plan is None:
        fields = model._meta.concrete_fields
        names = {field.attname: (position, False) for position, field in enumerate(fields)}
        for position, field in enumerate(fields):
            names.setdefault(field.name, (position, field.is_relation))
        plan = _NEW[model] = ([field.attname for field in fields], names)
    attnames, names = plan
    fields = model._meta.concrete_fields
    made = []
    for row in rows:
        values: list[Any] = [_NOT_GIVEN] * len(attnames)
        related = []
        for name, value in row.items():
            try:
                position, by_object = names[name]
            except KeyError:
                raise TypeError(f"{model.__name__} has no field {name!r}.") from None
            if by_object:
                related.append((name, value))
                value = None  # its attname is set with the object below
            values[position] = value
        for position, value in enumerate(values):
            if value is _NOT_GIVEN:
                values[position] = fields[position].get_default()
        instance = model.from_db(DEFAULT_DB_ALIAS, attnames, values)
        for name, value in related:
            setattr(instance, name, value)
        made.append(instance)
    return made


_NOT_GIVEN = object()
# The protocol's limit of parameters in one PostgreSQL statement.
_MAX_PARAMETERS = 65535
# ``rows_insert``'s INSERT of so many rows of a model, and the model's concrete fields.
_INSERTS: dict[tuple[type[Model], int], tuple[str, "list[Field[Any, Any]]"]] = {}


def rows_insert(*groups: Sequence[Model]) -> None:
    """Store each group's instances (of one model a group, primary keys set: ``rows_new``'s)
    as ``bulk_create`` stores them: each field's value as its ``pre_save`` and
    ``get_db_prep_save`` give it, in one multi-row INSERT a group whose SQL is built once per
    process for each model and number of rows. All or none: on PostgreSQL the groups go as one
    statement (data-modifying WITH clauses, atomic by itself: no BEGIN and COMMIT of their
    own outside a transaction), elsewhere one statement a group in a transaction."""
    database = transaction.get_connection()  # not the proxy: asked once per value below
    statements: list[Statement] = []
    for group in groups:
        if not group:
            continue
        model = type(group[0])
        columns = len(model._meta.concrete_fields)
        size = min(
            database.ops.bulk_batch_size(model._meta.concrete_fields, group),
            _MAX_PARAMETERS // columns,
        )
        for start in range(0, len(group), max(1, size)):
            batch = group[start : start + max(1, size)]
            sql, fields = _insert_built(model, len(batch))
            params = []
            for instance in batch:
                for field in fields:
                    value = field.pre_save(instance, True)
                    if hasattr(value, "resolve_expression"):
                        raise ValueError("rows_insert takes plain values, not expressions.")
                    params.append(field.get_db_prep_save(value, database))
            statements.append((sql, params))
    together = sum(len(params) for _, params in statements) <= _MAX_PARAMETERS
    if len(statements) > 1 and _postgresql() and together:
        *first, (last, _) = statements
        clauses = ", ".join(f"i{number} AS ({sql})" for number, (sql, _) in enumerate(first))
        joined = [param for _, params in statements for param in params]
        statements = [(f"WITH {clauses} {last}", joined)]
    with ExitStack() as stack:
        if len(statements) > 1:
            stack.enter_context(transaction.atomic(savepoint=False))
        stack.enter_context(transaction.mark_for_rollback_on_error())
        cursor = stack.enter_context(connection.cursor())
        for sql, values in statements:
            cursor.execute(sql, values)


def _insert_built(model: type[Model], rows: int) -> "tuple[str, list[Field[Any, Any]]]":
    """``rows_insert``'s INSERT of ``rows`` rows of ``model``, and the fields of each row's
    values in order."""
    built = _INSERTS.get((model, rows))
    if built is None:
        fields: list[Field[Any, Any]] = list(model._meta.concrete_fields)
        quote = connection.ops.quote_name
        columns = ", ".join(quote(field.column or "") for field in fields)
        row = f"({', '.join(['%s'] * len(fields))})"
        sql = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES "
        built = _INSERTS[(model, rows)] = (sql + ", ".join([row] * rows), fields)
    return built


def row_insert_or_count(instance: Model, *, key: str, counter: str, answer: str) -> Any:
    """``instance`` inserted as ``save()`` would insert it (its defaults and ``auto_now_add``
    times filled in), unless a row with the same value of its unique field ``key`` is stored:
    then that row's ``counter`` goes up by one and nothing else of it changes. Either way, the
    stored row's ``answer`` column (the first insert's) as the database driver returns it.

    Concurrent calls with the same key store one row whose counter counts them all (the unique
    key settles the race in the database, a second insert waiting for the first to commit or
    roll back); ``instance`` itself is not marked saved and its primary key stays unset."""
    # Hand-built: one statement where get_or_create and an F() update take three or more.
    model = type(instance)
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns, params = [], []
    for field in model._meta.get_fields():
        if (
            not isinstance(field, Field)
            or not field.column
            or field.model is not model._meta.concrete_model
            or (field.primary_key and instance.pk is None)
        ):
            continue
        columns.append(quote(field.column))
        params.append(field.get_db_prep_save(field.pre_save(instance, True), connection))
    key_field, key_column = _column(model, key)
    key_column = quote(key_column)
    count = quote(_column(model, counter)[1])
    answered = quote(_column(model, answer)[1])
    returning = insert_returning()
    sql = (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))}) "
        f"ON CONFLICT ({key_column}) DO UPDATE SET {count} = {table}.{count} + 1"
    )
    with transaction.mark_for_rollback_on_error(), connection.cursor() as cursor:
        if returning:
            cursor.execute(f"{sql} RETURNING {answered}", params)
        else:  # SQLite before 3.35: read after (an answer once stored never changes)
            cursor.execute(sql, params)
            value = key_field.get_db_prep_value(getattr(instance, key_field.attname), connection)
            cursor.execute(f"SELECT {answered} FROM {table} WHERE {key_column} = %s", [value])
        (stored,) = cursor.fetchone()
    return stored


@functools.cache
def _row_read(
    model: type[Model], fields: tuple[str, ...], keys: tuple[str, ...]
) -> tuple[str, list[tuple[Any, list[Any]]]]:
    """``row_values``' statement, and each selected column with the converters the ORM applies
    to its values (the backend's, then the field's: aware datetimes, JSON)."""
    quote = connection.ops.quote_name
    meta = model._meta
    converters = []
    for name in fields:
        column = meta.get_field(name).get_col(meta.db_table)  # type: ignore[union-attr]
        converters.append(
            (
                column,
                [*connection.ops.get_db_converters(column), *column.get_db_converters(connection)],
            )
        )
    selected = ", ".join(quote(str(column.target.column)) for column, _ in converters)
    where = " AND ".join(f"{quote(str(meta.get_field(name).column))} = %s" for name in keys)  # type: ignore[union-attr]
    return f"SELECT {selected} FROM {quote(meta.db_table)} WHERE {where}", converters


def row_values(model: type[Model], fields: tuple[str, ...], **exact: Any) -> tuple[Any, ...] | None:
    """The values of ``fields`` of the row of ``model`` whose fields equal ``exact`` (plain
    values; at most one row matches: a key among them), as the ORM's ``values_list`` gives
    them, or None."""
    sql, converters = _row_read(model, fields, tuple(exact))
    with connection.cursor() as cursor:
        cursor.execute(sql, list(exact.values()))
        row = cursor.fetchone()
    if row is None:
        return None
    values = []
    for value, (column, convert) in zip(row, converters, strict=True):
        for converter in convert:
            value = converter(value, column, connection)
        values.append(value)
    return tuple(values)


def database_reachable() -> bool:
    """Whether the database answers a statement now; a failure is logged, never raised."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return bool(cursor.fetchone() == (1,))
    except Exception:
        logger.warning("Database unreachable", exc_info=True)
        return False


class _PercentileSeconds(Aggregate):
    """PostgreSQL's continuous percentile of an interval, in seconds."""

    function = "percentile_cont"
    template = (
        "EXTRACT(EPOCH FROM %(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s))"
    )
    output_field = FloatField()

    def __init__(self, expression: Any, *, fraction: float) -> None:
        super().__init__(expression, fraction=f"{float(fraction):.6f}")


def percentile(values: Sequence[float], fraction: float) -> float:
    """The continuous percentile of sorted ``values`` (not empty), as ``percentile_cont``: the
    value at ``fraction * (n - 1)``, interpolated between its neighbours."""
    at = fraction * (len(values) - 1)
    below = int(at)
    above = min(below + 1, len(values) - 1)
    return values[below] + (values[above] - values[below]) * (at - below)


def durations_percentiles(
    rows: QuerySet[Any], *, group: str, start: str, end: str, fractions: Sequence[float]
) -> dict[Any, tuple[int, list[float]]]:
    """For each value of the field ``group`` among ``rows``: how many rows, and the
    ``fractions``' percentiles (continuous, as ``percentile_cont``) of ``end - start`` in
    seconds. On PostgreSQL one aggregate query; elsewhere the durations are read and the
    percentiles computed here, alike."""
    if _postgresql():
        spans = F(end) - F(start)
        named = {f"p{index}": fraction for index, fraction in enumerate(fractions)}
        grouped = (
            rows.order_by()
            .values(group)
            .annotate(
                rows=Count("pk"),
                **{name: _PercentileSeconds(spans, fraction=f) for name, f in named.items()},
            )
        )
        return {
            found[group]: (found["rows"], [float(found[name]) for name in named])
            for found in grouped
        }
    durations: dict[Any, list[float]] = {}
    for key, started, ended in rows.order_by().values_list(group, start, end):
        durations.setdefault(key, []).append((ended - started).total_seconds())
    return {
        key: (len(spans_of), [percentile(sorted(spans_of), f) for f in fractions])
        for key, spans_of in durations.items()
    }
