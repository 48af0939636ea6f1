"""``GET /healthz``: the state of the database and the broker, without a key."""

import logging

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from config.api.trace import current_trace_parent
from config.celery_app import app as celery_app

logger = logging.getLogger(__name__)


def database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except Exception:
        logger.warning("Health check: database unreachable", exc_info=True)
        return False


def broker_ok() -> bool:
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=0, timeout=2)
            return True
    except Exception:
        logger.warning("Health check: broker unreachable", exc_info=True)
        return False


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    checks = {"database": database_ok(), "broker": broker_ok()}
    healthy = all(checks.values())
    return JsonResponse(
        {
            "status": "ok" if healthy else "unavailable",
            **{name: "ok" if up else "down" for name, up in checks.items()},
            "traceParent": current_trace_parent(),
        },
        status=200 if healthy else 503,
    )
