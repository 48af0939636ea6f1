"""The suite's flush between transactional tests is tried again when PostgreSQL made its
TRUNCATE a deadlock's victim, and only then (``tests.support.postgresql.base``)."""

from typing import Any

import pytest
from django.core.management.base import CommandError
from django.db.utils import OperationalError

from tests.support.postgresql.base import flush_retried_on_deadlock


def _failing(causes: list[str]) -> tuple[Any, list[int]]:
    calls: list[int] = []

    def handle(command: Any, **options: Any) -> str:
        calls.append(1)
        if causes:
            cause = causes.pop(0)
            raise CommandError("Database test couldn't be flushed.") from OperationalError(cause)
        return "flushed"

    return handle, calls


def test_a_deadlocked_flush_is_run_again() -> None:
    handle, calls = _failing(["deadlock detected\nDETAIL: Process 1 waits for ..."])
    assert flush_retried_on_deadlock(handle)(object()) == "flushed"
    assert len(calls) == 2


def test_any_other_failure_is_raised_at_once_and_a_deadlock_after_three_tries() -> None:
    handle, calls = _failing(["relation does not exist"])
    with pytest.raises(CommandError):
        flush_retried_on_deadlock(handle)(object())
    assert len(calls) == 1
    handle, calls = _failing(["deadlock detected"] * 3)
    with pytest.raises(CommandError):
        flush_retried_on_deadlock(handle)(object())
    assert len(calls) == 3
