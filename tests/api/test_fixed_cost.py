"""What an API call does not pay for: browser middleware, a timer per request, a broker check
per health check."""

import signal
from collections import Counter
from typing import Any

import pytest
from celery import current_app
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.middleware.csrf import CsrfViewMiddleware
from django.test import Client
from rest_framework.test import APIClient

from api import health, timeouts

BROWSER_HOOKS = [
    (SessionMiddleware, "process_request"),
    (CsrfViewMiddleware, "process_view"),
    (AuthenticationMiddleware, "process_request"),
    (MessageMiddleware, "process_request"),
]


@pytest.fixture
def browser_work(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each browser middleware's hook ran."""
    calls: Counter[str] = Counter()
    for cls, name in BROWSER_HOOKS:
        original = getattr(cls, name)

        def counted(self: Any, *args: Any, _original: Any = original) -> Any:
            calls[type(self).__name__] += 1
            return _original(self, *args)

        monkeypatch.setattr(cls, name, counted)
    return calls


def test_a_key_authenticated_call_and_the_health_check_pay_for_no_browser_middleware(
    sandbox_api: APIClient, browser_work: Counter[str]
) -> None:
    assert sandbox_api.get("/v4.0/orders").status_code == 200
    assert sandbox_api.get("/V4.0/Orders/").status_code == 200
    assert Client().get("/healthz").status_code == 200
    assert Client().get("/v4.0/orders").status_code == 401  # no credential: no session either

    assert browser_work == Counter()


def test_a_staff_session_call_and_the_admin_go_through_every_browser_middleware(
    staff_session: APIClient, browser_work: Counter[str]
) -> None:
    # A staff session on an API path: the session is read, the user signed in
    response = staff_session.get(
        "/v4.0/orders/ord_1/shipments/shp_1/fulfilmentLocationCapabilities"
    )
    assert response.status_code == 404  # authenticated (not 401): no such shipment
    assert browser_work == Counter(
        SessionMiddleware=1,
        CsrfViewMiddleware=1,
        AuthenticationMiddleware=1,
        MessageMiddleware=1,
        CSRFCheck=1,  # the session authentication's own check (rest_framework)
    )

    # The admin's sign-in page: a CSRF cookie set, as before
    browser_work.clear()
    page = Client().get("/admin/login/")
    assert page.status_code == 200
    assert "csrftoken" in page.cookies
    # (the CSRF check runs twice: the middleware's and the view's own csrf_protect)
    assert browser_work == Counter(
        SessionMiddleware=1, CsrfViewMiddleware=2, AuthenticationMiddleware=1, MessageMiddleware=1
    )


def test_the_admin_still_refuses_a_post_without_its_csrf_token(db: None) -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post("/admin/login/", {"username": "x", "password": "y"})
    assert response.status_code == 403


def test_requests_one_after_another_set_the_deadline_timer_once(
    sandbox_api: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a stopped timer
    set_calls: list[float] = []
    original = signal.setitimer

    def setitimer(which: int, seconds: float, interval: float = 0.0) -> Any:
        set_calls.append(seconds)
        return original(which, seconds, interval)

    original(signal.ITIMER_REAL, 0)
    timeouts._Deadline.timer_fires_at = None
    monkeypatch.setattr(timeouts.signal, "setitimer", setitimer)

    # When ten requests are served one after another
    for _ in range(10):
        assert sandbox_api.get("/v4.0/orders").status_code == 200

    # Then the timer was set by the first only, and nothing stays in flight
    assert len(set_calls) == 1
    assert timeouts._Deadline.request_ends_by is None


def test_health_checks_in_a_row_reach_the_broker_once(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[int] = []
    original = current_app.connection_for_write

    def connection_for_write(*args: Any, **kwargs: Any) -> Any:
        opened.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(current_app, "connection_for_write", connection_for_write)
    monkeypatch.setattr(health, "_broker_ok_until", {})

    for _ in range(20):
        assert Client().get("/healthz").status_code == 200

    assert len(opened) == 1


def test_the_deployment_check_of_the_csrf_cookie_still_runs(settings) -> None:  # type: ignore[no-untyped-def]
    from django.core import checks

    settings.CSRF_COOKIE_SECURE = False
    found = [m.id for m in checks.run_checks(include_deployment_checks=True)]
    assert "api.W001" in found
    settings.CSRF_COOKIE_SECURE = True
    found = [m.id for m in checks.run_checks(include_deployment_checks=True)]
    assert "api.W001" not in found
