"""The service's URLs plus ``/bench/bare``: the ceiling of the stack for the benchmarks.

A plain Django view doing one ``SELECT 1`` and answering JSON, served by the same gunicorn
against the same database as the API, so that a path's rate divided by this one's means the
same on any machine. Only ``bench.settings`` routes here.
"""

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.urls import path

from config.urls import handler400, handler403, handler404, handler500  # noqa: F401
from config.urls import urlpatterns as service_patterns


def bare(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        (one,) = cursor.fetchone()
    return JsonResponse({"status": "ok", "one": one})


urlpatterns = [path("bench/bare", bare), *service_patterns]
