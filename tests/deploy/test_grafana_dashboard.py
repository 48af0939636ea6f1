"""deploy/grafana-dashboard.json is a Grafana dashboard model over the service's Prometheus
metrics: every panel has queries, and every metric a query names is one a live ``/metrics``
scrape of the service exports; it draws what the admin's overview draws."""

import json
import re
from pathlib import Path
from typing import Any

import pytest
import requests
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from common.metrics import FIGURES_KEY
from tests.support.overview import overview_made

DASHBOARD = Path(settings.BASE_DIR) / "deploy" / "grafana-dashboard.json"
TOKEN = "grafana-test-metrics-token-0123456789"
# The sample names each metric type of Prometheus' text format exposes for the name of its TYPE
# line (a counter's ends in _total there already).
SUFFIXES = {
    "counter": ("",),
    "gauge": ("",),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "summary": ("", "_count", "_sum", "_created"),
    "untyped": ("",),
}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "inf", "nan"}  # fmt: skip


def exported_names(text: str) -> set[str]:
    """The metric names a scrape exposes: its samples', and those its TYPE lines declare (a
    labelled metric with no series yet has no sample)."""
    names = set()
    for line in text.splitlines():
        if typed := re.match(r"^# TYPE (\S+) (\S+)$", line):
            names |= {typed.group(1) + suffix for suffix in SUFFIXES[typed.group(2)]}
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: its identifiers once strings, label
    matchers, ranges and ``by``/``without`` lists are set aside, but functions and keywords."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    bare = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", bare)
    bare = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", bare)
    found = re.findall(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*(\()?", bare)
    return {name for name, call in found if not call and name.lower() not in KEYWORDS}


def test_the_metric_names_of_an_expression_are_found() -> None:
    assert metric_names(
        'histogram_quantile(0.9, sum by (route, le) (rate(x_bucket{a="b", c=~"d"}[5m]))) * 60'
    ) == {"x_bucket"}
    assert metric_names('sum without (merchant) (y) / on (lab) z{quantile="0.5"}') == {"y", "z"}


@pytest.fixture
def scraped(live_server: Any, settings: Any) -> str:
    """The text of a live scrape of the service (its bearer token), with orders, shipments and
    callbacks in every figure."""
    settings.METRICS_TOKEN = TOKEN
    overview_made(timezone.now())
    cache.delete(FIGURES_KEY)
    response = requests.get(
        f"{live_server.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
    )
    assert response.status_code == 200
    return response.text


@pytest.mark.django_db(transaction=True)
def test_the_dashboard_names_only_metrics_the_service_exports(scraped: str) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exported = exported_names(scraped)

    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    assert dashboard["title"] and dashboard["uid"]
    assert {v["name"] for v in dashboard["templating"]["list"]} >= {"datasource"}
    panels = dashboard["panels"]
    assert len({panel["id"] for panel in panels}) == len(panels) >= 7
    named = set()
    for panel in panels:
        assert panel["type"] in {"timeseries", "bargauge", "stat", "table"}
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"}
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = metric_names(target["expr"])
            assert names, target["expr"]
            assert names <= exported, (panel["title"], names - exported)
            named |= names
    # What the admin's overview draws, over time.
    assert named >= {
        "printapi_orders_in_step",
        "printapi_orders_in_stage",
        "printapi_orders_needing_attention",
        "printapi_orders_ended_last_hour",
        "printapi_callbacks_failing",
        "printapi_lab_shipment_seconds",
        "printapi_queue_messages",
    }


@pytest.mark.django_db(transaction=True)
def test_the_scrape_shows_the_figures_the_overview_shows(scraped: str) -> None:
    def value(name: str, **labels: str) -> float:
        for line in scraped.splitlines():
            match = re.match(rf"^{name}(?:\{{(.*)\}})? (\S+)$", line)
            if match and dict(re.findall(r'(\w+)="([^"]*)"', match.group(1) or "")) == labels:
                return float(match.group(2))
        raise AssertionError(f"{name} {labels} not in the scrape")

    assert value("printapi_orders_in_step", step="Download") == 2
    assert value("printapi_orders_in_stage", stage="InProgress") == 5
    assert value("printapi_orders_in_stage", stage="Complete") == 3
    assert value("printapi_orders_needing_attention", cause="any") == 3
    assert value("printapi_orders_needing_attention", cause="lab") == 2
    assert value("printapi_orders_ended_last_hour", outcome="Failed") == 1
    assert value("printapi_orders_ended_last_hour", outcome="Complete") == 0
    assert value("printapi_callbacks_failing", merchant="Acme Prints", environment="Sandbox") == 2
    assert value("printapi_callbacks_failing", merchant="Blue Frames", environment="Live") == 1
    assert value("printapi_lab_shipment_seconds", lab="gb1", quantile="0.5") == 20 * 3600
    assert value("printapi_lab_shipment_seconds", lab="gb1", quantile="0.9") == 28 * 3600
    assert value("printapi_queue_messages", queue="labs") >= 0
