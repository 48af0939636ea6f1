"""Logging filters shared by every process (configured in ``LOGGING``)."""

import logging
from functools import cache

from django.conf import settings

# What a task that found nothing to do returns (``saferepr`` of it, as Celery logs it).
_NOTHING_DONE = ("0", "None", "[]")


@cache
def _periodic_tasks() -> frozenset[str]:
    return frozenset(entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values())


class PeriodicTaskNoiseFilter(logging.Filter):
    """Keeps beat's periodic tasks (the sweepers, every few seconds) out of the INFO log unless
    they did something.

    Beat's "Sending due task" and a worker's "Task ... received" lines for those tasks are
    dropped, and so is "Task ... succeeded" when the task returned nothing done (0, None or an
    empty list): a sweep that queued work keeps its one "succeeded in ...: <how many>" line.
    With the root logger at DEBUG every line is kept.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or logging.getLogger().isEnabledFor(logging.DEBUG):
            return True
        periodic = _periodic_tasks()
        data = getattr(record, "data", None)
        if isinstance(data, dict):  # the worker's received and succeeded lines
            if data.get("name") not in periodic:
                return True
            return "return_value" in data and data["return_value"] not in _NOTHING_DONE
        arguments = record.args if isinstance(record.args, tuple) else ()
        return not any(isinstance(value, str) and value in periodic for value in arguments)
