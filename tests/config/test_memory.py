"""Worker processes freeze their start-up objects out of the garbage collector's way
(``common.memory``): gunicorn once a worker has loaded the app, Celery once a worker is ready
and in each prefork child. A prefork child also renders with ``RENDER_THREADS`` libvips
threads."""

import gc
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import signals

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the test process's objects stay collectable


def test_a_gunicorn_worker_freezes_what_it_loaded() -> None:
    spec = importlib.util.spec_from_file_location("gunicorn_conf", ROOT / "gunicorn.conf.py")
    assert spec is not None and spec.loader is not None
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    assert gc.get_freeze_count() == 0

    conf.post_worker_init(worker=None)

    assert gc.get_freeze_count() > 10_000  # the interpreter, Django and the project


@pytest.mark.parametrize("signal", [signals.worker_ready, signals.worker_process_init])
def test_a_celery_worker_freezes_what_it_loaded(signal: object) -> None:
    import config.celery_app  # noqa: F401 -- connects the receivers

    signal.send(sender=None)  # type: ignore[attr-defined]

    assert gc.get_freeze_count() > 10_000


@pytest.fixture
def vips_threads() -> Iterator[None]:
    import pyvips

    before = pyvips.vips_lib.vips_concurrency_get()
    yield
    pyvips.vips_lib.vips_concurrency_set(before)


@pytest.mark.usefixtures("vips_threads")
def test_a_prefork_child_renders_with_render_threads_libvips_threads(settings: Any) -> None:
    import pyvips

    import config.celery_app  # noqa: F401 -- connects the receivers

    pyvips.vips_lib.vips_concurrency_set(3)
    settings.RENDER_THREADS = 1
    signals.worker_process_init.send(sender=None)
    assert pyvips.vips_lib.vips_concurrency_get() == 1

    pyvips.vips_lib.vips_concurrency_set(3)
    settings.RENDER_THREADS = 0  # libvips' own default left as it is
    signals.worker_process_init.send(sender=None)
    assert pyvips.vips_lib.vips_concurrency_get() == 3
