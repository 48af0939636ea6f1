"""Prometheus metrics (prometheus-client): what each process measures itself, and how the
scrape endpoint renders them with the figures read at scrape time.

Measured in process: requests by route (rate and latency) and tasks by name (duration and
outcome). With ``PROMETHEUS_MULTIPROC_DIR`` set before the process starts (a folder per
machine, emptied when the machine's processes start), every gunicorn and Celery process of
the machine writes there and a scrape of any web process sums them; without it a scrape sees
its own process only. Read at scrape time, so the same whatever process answers: figures of
the database and the broker (``orders.metrics``), registered with ``scrape_collector_add``.
"""

import os
from collections.abc import Callable, Iterable

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
_scrape_collectors: list[Callable[[], Iterable[Metric]]] = []


class _ScrapeTime(Collector):
    def collect(self) -> Iterable[Metric]:
        for collect in _scrape_collectors:
            yield from collect()


def scrape_collector_add(collect: Callable[[], Iterable[Metric]]) -> None:
    """Add figures read at every scrape (each call of ``collect`` yields metric families)."""
    _scrape_collectors.append(collect)


def metrics_text() -> bytes:
    """Every metric in Prometheus' text format: this machine's processes' (or this process's)
    measurements and the figures read now."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    scrape = CollectorRegistry()
    scrape.register(_ScrapeTime())
    return generate_latest(registry) + generate_latest(scrape)
