import re

import pytest
from django.test import Client

from config.celery_app import app as celery_app


@pytest.mark.django_db
def test_healthz_reports_database_and_broker_without_a_key() -> None:
    response = Client().get("/healthz")

    assert response.status_code == 200
    body = response.json()
    assert {k: body[k] for k in ("status", "database", "broker")} == {
        "status": "ok",
        "database": "ok",
        "broker": "ok",
    }
    assert re.match(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$", body["traceParent"])
    assert response["traceParent"] == body["traceParent"]


@pytest.mark.django_db
def test_healthz_is_503_when_the_broker_is_down() -> None:
    original = celery_app.conf.broker_url
    celery_app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        response = Client().get("/healthz")
    finally:
        celery_app.conf.broker_url = original

    assert response.status_code == 503
    assert response.json()["broker"] == "down"
    assert response.json()["database"] == "ok"
    assert response.json()["status"] == "unavailable"


@pytest.mark.django_db
@pytest.mark.documents_unchecked  # the database is still "down" when the check would run
def test_healthz_is_503_when_the_database_is_down(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import OperationalError, connection

    def refuse(*args: object, **kwargs: object) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "cursor", refuse)
    response = Client().get("/healthz")

    assert response.status_code == 503
    assert response.json()["database"] == "down"


@pytest.mark.django_db
def test_a_healthz_get_without_a_body_answers_as_the_framework_would() -> None:
    # A GET with a JSON body goes through the framework's request handling; one without is
    # answered directly (api.health.HealthView.dispatch): the same headers and body
    direct = Client().get("/healthz")
    framework = Client().generic("GET", "/healthz", b"{}", content_type="application/json")

    assert direct.status_code == framework.status_code == 200
    assert direct.headers.keys() == framework.headers.keys()
    for name in direct.headers.keys() - {"traceParent", "Content-Length"}:
        assert direct[name] == framework[name], name
    assert direct.json().keys() == framework.json().keys()
    assert direct.json()["traceParent"] == direct["traceParent"]
