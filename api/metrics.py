"""Requests counted and timed by route, and the scrape endpoint ``GET /metrics``.

The endpoint answers a staff user signed in to the admin, or a scrape sending
``Authorization: Bearer {METRICS_TOKEN}`` (production requires the token); without a token
(local and test settings), a client whose address (``common.addresses``, through
``NUM_PROXIES``) is in ``METRICS_ALLOWED_NETWORKS`` instead. Anyone else gets the JSON 404, as
for an unknown path. At most ``METRICS_CONCURRENT_SCRAPES`` scrapes run at once over all
processes; one more is answered 429 at once.
"""

import hmac
import ipaddress
import time
from collections.abc import Callable
from functools import cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from prometheus_client import Counter, Histogram

from api.envelope import error_response
from common.addresses import client_address
from common.concurrency import places_held
from common.metrics import CONTENT_TYPE, HTTP_LATENCY, HTTP_REQUESTS, metrics_text

# A scrape holds its place this long at most (one that died frees it so).
SCRAPE_SECONDS = 30


class RequestMetricsMiddleware:
    """Counts and times every request under its route pattern (``v4.0/orders/<str:order_id>``:
    never the path itself, so ids do not make new series); unmatched paths count as
    ``unmatched``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None and match.route else "unmatched"
        method = request.method if request.method in _METHODS else "other"
        _latency(route, method).observe(time.perf_counter() - started)
        _requests(route, method, response.status_code).inc()
        return response


_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})


# Each series' child kept per process, as the metric keeps it, without asking the metric
# (its lock and label checks) on every request; routes, methods and statuses are few.
@cache
def _latency(route: str, method: str) -> Histogram:
    return HTTP_LATENCY.labels(route, method)


@cache
def _requests(route: str, method: str, status: int) -> Counter:
    return HTTP_REQUESTS.labels(route, method, str(status))


def _token_sent(request: HttpRequest, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


def _allowed(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and user.is_staff:
        return True
    if settings.METRICS_TOKEN:
        return _token_sent(request, settings.METRICS_TOKEN)
    try:
        address = ipaddress.ip_address(client_address(request))
    except ValueError:
        return False
    return any(
        address in ipaddress.ip_network(network, strict=False)
        for network in settings.METRICS_ALLOWED_NETWORKS
    )


def metrics(request: HttpRequest) -> HttpResponse:
    if not _allowed(request):
        return error_response("EndpointDoesNotExist", 404, {"path": request.path})
    with places_held(
        {"metrics-scrapes": settings.METRICS_CONCURRENT_SCRAPES}, seconds=SCRAPE_SECONDS
    ) as placed:
        if not placed:
            refused = error_response("TooManyRequests", 429, {"retryAfterSeconds": 1})
            refused["Retry-After"] = "1"
            return refused
        return HttpResponse(metrics_text(), content_type=CONTENT_TYPE)
