"""Statements sent to the database together: one round trip for several reads on PostgreSQL.

With prepared statements on (``DATABASE_PREPARED_STATEMENTS``, server-side binding) they go
through psycopg's pipeline mode, each prepared as any other statement; without, as one query
of statements joined by semicolons. Django counts and logs them as one query either way.
"""

from collections.abc import Sequence
from contextlib import ExitStack, nullcontext
from typing import Any

from django.db import connection

Statement = tuple[str, Sequence[Any]]


def _rows(cursor: Any) -> list[Any]:
    """The rows of the cursor's current result; [] for a statement that returns none. (Asked
    of the result's status: psycopg builds ``description`` anew, an object per column.)"""
    if not hasattr(cursor, "pgresult"):  # not psycopg
        return list(cursor.fetchall()) if cursor.description else []
    result = cursor.pgresult
    return list(cursor.fetchall()) if result is not None and result.nfields else []


def server_side_binding() -> bool:
    """Whether values go apart from the statements (PostgreSQL with prepared statements)."""
    return (
        connection.vendor == "postgresql"
        and connection.settings_dict["OPTIONS"].get("server_side_binding") is True
    )


def rows_together(statements: Sequence[Statement]) -> list[list[Any]]:
    """The rows of each statement in turn ([] for one that returns none), run in order in the
    current transaction; on PostgreSQL in one round trip, elsewhere one query each.

    Each statement still runs with a snapshot of its own, taken when it starts: SELECTs after
    an UPDATE that waited for a row lock see what the lock's holder committed, as they would
    sent one by one."""
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql" or len(statements) < 2:
            results = []
            for sql, params in statements:
                cursor.execute(sql, params)
                results.append(_rows(cursor))
            return results
        sql = ";\n".join(statement for statement, _ in statements)
        params = [param for _, statement_params in statements for param in statement_params]
        if not server_side_binding():
            cursor.execute(sql, params)
            results = [_rows(cursor)]
            while cursor.nextset():
                results.append(_rows(cursor))
            return results

        def pipelined(sql: str, params: Any, many: bool, context: Any) -> list[list[Any]]:
            connection.validate_no_broken_transaction()  # as Django's own execute does
            raw = context["cursor"].cursor.connection
            with connection.wrap_database_errors, ExitStack() as cursors:
                opened = [cursors.enter_context(raw.cursor()) for _ in statements]
                with raw.pipeline():
                    for each, (statement, statement_params) in zip(opened, statements, strict=True):
                        each.execute(statement, statement_params)
                return [_rows(each) for each in opened]

        # Logged as one query where Django logs queries (DEBUG, the tests' query counts).
        debug = getattr(cursor, "debug_sql", None)
        with debug(sql, params) if debug else nullcontext():
            return cursor._execute_with_wrappers(sql, params, many=False, executor=pipelined)
