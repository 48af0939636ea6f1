"""Prometheus metrics (prometheus-client): what each process measures itself, and how the
scrape endpoint renders them with the figures read at scrape time.

Measured in process: requests by route (rate and latency) and tasks by name (duration and
outcome). With ``PROMETHEUS_MULTIPROC_DIR`` set before the process starts (a folder per
machine, emptied when the machine's processes start), every gunicorn and Celery process of
the machine writes there and a scrape of any web process sums them; without it a scrape sees
its own process only. Read at scrape time, so the same whatever process answers: figures of
the database and the broker (``orders.metrics``), registered with ``scrape_collector_add``;
they are read at most once every ``METRICS_FIGURES_SECONDS`` over all processes (kept in the
default cache), so scrapes, however many, do not load the database.
"""

import logging
import os
from collections.abc import Callable, Iterable

from django.conf import settings
from django.core.cache import cache
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import Metric
from prometheus_client.registry import REGISTRY, Collector

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
TASK_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)

HTTP_REQUESTS = Counter(
    "printapi_http_requests_total",
    "HTTP requests answered, by route pattern, method and status code.",
    ["route", "method", "status"],
)
HTTP_LATENCY = Histogram(
    "printapi_http_request_duration_seconds",
    "Time to answer an HTTP request, by route pattern and method.",
    ["route", "method"],
    buckets=LATENCY_BUCKETS,
)
TASK_RUNS = Counter(
    "printapi_task_runs_total",
    "Celery task runs, by task name and outcome (succeeded, failed, retried).",
    ["task", "outcome"],
)
TASK_DURATION = Histogram(
    "printapi_task_duration_seconds",
    "Time a Celery task ran, by task name.",
    ["task"],
    buckets=TASK_BUCKETS,
)

CONTENT_TYPE = CONTENT_TYPE_LATEST
FIGURES_KEY = "metrics:figures"
logger = logging.getLogger(__name__)
_scrape_collectors: list[Callable[[], Iterable[Metric]]] = []


class _ScrapeTime(Collector):
    def collect(self) -> Iterable[Metric]:
        for collect in _scrape_collectors:
            yield from collect()


def scrape_collector_add(collect: Callable[[], Iterable[Metric]]) -> None:
    """Add figures read at every scrape (each call of ``collect`` yields metric families)."""
    _scrape_collectors.append(collect)


def figures_text() -> bytes:
    """The figures read at scrape time, in Prometheus' text format: as kept by a scrape of the
    last ``METRICS_FIGURES_SECONDS`` (any process), else read now and kept. Without the cache
    they are read each time (logged)."""
    seconds = settings.METRICS_FIGURES_SECONDS
    try:
        kept = cache.get(FIGURES_KEY) if seconds > 0 else None
    except Exception:
        logger.warning("Metrics figures not kept (cache unreachable)", exc_info=True)
        kept, seconds = None, 0
    if isinstance(kept, bytes):
        return kept
    scrape = CollectorRegistry()
    scrape.register(_ScrapeTime())
    text = generate_latest(scrape)
    if seconds > 0:
        try:
            cache.set(FIGURES_KEY, text, seconds)
        except Exception:
            logger.warning("Metrics figures not kept (cache unreachable)", exc_info=True)
    return text


def metrics_text() -> bytes:
    """Every metric in Prometheus' text format: this machine's processes' (or this process's)
    measurements and the figures read at scrape time (``figures_text``)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    return generate_latest(registry) + figures_text()
