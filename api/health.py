"""``GET /healthz``: the state of the database and the broker, without a key."""

import logging
import time
from typing import Any

from celery import current_app
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.renderers import ApiJsonRenderer
from api.schema import SERVICE
from api.serializers import TraceParentField
from api.views import ApiView, declares_body
from common.db import database_reachable

logger = logging.getLogger(__name__)


# A broker that answered is taken as up for this long (per process and broker URL), so that
# frequent health checks do not each open a broker connection; a failure is never reused.
BROKER_OK_SECONDS = 1.0
_broker_ok_until: dict[str | None, float] = {}


def broker_ok() -> bool:
    # Keyed by the URL set on the app while it runs (None: none was, the settings' URL holds,
    # and settings do not change while a process runs): a URL set at run time is checked at
    # once. Resolving the URL itself walks Celery's chain of settings, a tenth of a check.
    url = current_app.conf.changes.get("broker_url")
    if time.monotonic() < _broker_ok_until.get(url, 0.0):
        return True
    try:
        with current_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=0, timeout=2)
    except Exception:
        _broker_ok_until.pop(url, None)
        logger.warning("Health check: broker unreachable", exc_info=True)
        return False
    _broker_ok_until[url] = time.monotonic() + BROKER_OK_SECONDS
    return True


COMPONENT_STATES = ("ok", "down")


class HealthOutput(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=["ok", "unavailable"], help_text="ok when the service can take requests."
    )
    database = serializers.ChoiceField(choices=COMPONENT_STATES, help_text="The database's state.")
    broker = serializers.ChoiceField(
        choices=COMPONENT_STATES, help_text="The state of the queue that runs orders."
    )
    traceParent = TraceParentField()


class HealthView(ApiView):
    authentication_classes = []
    permission_classes = []
    throttle_classes = []

    @extend_schema(
        tags=[SERVICE],
        operation_id="healthz",
        summary="Database and broker reachability (no key needed)",
        responses={200: HealthOutput, 503: HealthOutput},
    )
    def get(self, request: Request) -> Response:
        body, status = health_report()
        return Response(body, status=status)

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        """A GET without a body is answered here with the bytes and headers the framework's
        way gives it, without that way's request wrapping, negotiation and rendering (a fifth
        of the check's time): it has no key, permission, throttle or body to look at. Any other
        request takes the framework's way."""
        if request.method != "GET" or declares_body(request.META):
            return super().dispatch(request, *args, **kwargs)
        body, status = health_report()
        response = HttpResponse(_RENDERER.render(body), status=status, content_type=_CONTENT_TYPE)
        for name, value in self.default_response_headers.items():
            response[name] = value
        return response


_RENDERER = ApiJsonRenderer()
_CONTENT_TYPE = f"{ApiJsonRenderer.media_type}; charset={ApiJsonRenderer.charset}"


def health_report() -> tuple[dict[str, str], int]:
    """The body and status of ``GET /healthz``."""
    checks = {"database": database_reachable(), "broker": broker_ok()}
    healthy = all(checks.values())
    body = {
        "status": "ok" if healthy else "unavailable",
        **{name: "ok" if up else "down" for name, up in checks.items()},
    }
    return body, 200 if healthy else 503
