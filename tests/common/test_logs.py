import logging

import pytest

from common.logs import PeriodicTaskNoiseFilter

SWEEP = "orders.tasks.orders_sweep_task"
LOG_RECEIVED = "Task %(name)s[%(id)s] received"
LOG_SUCCESS = "Task %(name)s[%(id)s] succeeded in %(runtime)ss: %(return_value)s"


def record(
    name: str, msg: str, args: object, *, level: int = logging.INFO, data: object = None
) -> logging.LogRecord:
    made = logging.LogRecord(name, level, __file__, 1, msg, args, None)  # type: ignore[arg-type]
    if data is not None:
        made.data = data
    return made


def worker_line(message: str, task: str, **context: object) -> logging.LogRecord:
    data = {"id": "abc", "name": task, **context}
    return record("celery.app.trace", message, (data,), data=data)


@pytest.fixture
def quiet() -> PeriodicTaskNoiseFilter:
    logging.getLogger().setLevel(logging.INFO)
    return PeriodicTaskNoiseFilter()


def test_beat_sending_a_periodic_task_is_dropped_at_info(quiet: PeriodicTaskNoiseFilter) -> None:
    sending = "Scheduler: Sending due task %s (%s)"
    assert not quiet.filter(record("celery.beat", sending, ("orders-sweep", SWEEP)))
    assert quiet.filter(record("celery.beat", sending, ("other", "other.task")))
    assert quiet.filter(record("celery.beat", "beat: Starting...", ()))


def test_a_sweep_shows_one_line_only_when_it_did_something(quiet: PeriodicTaskNoiseFilter) -> None:
    assert not quiet.filter(worker_line(LOG_RECEIVED, SWEEP, eta=None))
    assert not quiet.filter(worker_line(LOG_SUCCESS, SWEEP, runtime=0.01, return_value="0"))
    assert quiet.filter(worker_line(LOG_SUCCESS, SWEEP, runtime=0.01, return_value="3"))
    purge = "orders.tasks.images_purge_expired_task"
    assert not quiet.filter(worker_line(LOG_SUCCESS, purge, runtime=0.01, return_value="0"))


def test_other_tasks_and_other_levels_are_untouched(quiet: PeriodicTaskNoiseFilter) -> None:
    advance = "orders.tasks.order_advance_task"
    assert quiet.filter(worker_line(LOG_RECEIVED, advance, eta=None))
    assert quiet.filter(worker_line(LOG_SUCCESS, advance, runtime=0.01, return_value="None"))
    failed = record("celery.app.trace", "Task %(name)s failed", None, level=logging.ERROR)
    assert quiet.filter(failed)


def test_at_debug_every_line_is_kept(quiet: PeriodicTaskNoiseFilter) -> None:
    root = logging.getLogger()
    try:
        root.setLevel(logging.DEBUG)
        assert quiet.filter(worker_line(LOG_RECEIVED, SWEEP, eta=None))
    finally:
        root.setLevel(logging.INFO)
