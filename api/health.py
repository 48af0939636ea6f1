"""``GET /healthz``: the state of the database and the broker, without a key."""

import logging
import time

from celery import current_app
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.schema import SERVICE
from api.views import ApiView
from common.db import database_reachable

logger = logging.getLogger(__name__)


# A broker that answered is taken as up for this long (per process and broker URL), so that
# frequent health checks do not each open a broker connection; a failure is never reused.
BROKER_OK_SECONDS = 1.0
_broker_ok_until: dict[str, float] = {}


def broker_ok() -> bool:
    url = str(current_app.conf.broker_url)
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
    status = serializers.ChoiceField(choices=["ok", "unavailable"])
    database = serializers.ChoiceField(choices=COMPONENT_STATES)
    broker = serializers.ChoiceField(choices=COMPONENT_STATES)
    traceParent = serializers.CharField()


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
        checks = {"database": database_reachable(), "broker": broker_ok()}
        healthy = all(checks.values())
        return Response(
            {
                "status": "ok" if healthy else "unavailable",
                **{name: "ok" if up else "down" for name, up in checks.items()},
            },
            status=200 if healthy else 503,
        )
