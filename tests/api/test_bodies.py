"""A body the view never read is read before the answer goes (api/bodies.py)."""

from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory

from api.bodies import UnreadBodyDrainMiddleware


def answered_without_reading(request: HttpRequest) -> HttpResponse:
    return HttpResponse(status=401)


def test_a_body_left_unread_by_the_view_is_read_once_answered() -> None:
    body = b"{" + b" " * 300_000 + b"}"
    request = RequestFactory().post("/v4.0/orders", body, content_type="application/json")

    response = UnreadBodyDrainMiddleware(answered_without_reading)(request)

    assert response.status_code == 401
    assert request.read() == b""  # nothing left for gunicorn to close the connection on


def test_a_body_the_view_read_is_left_alone() -> None:
    seen: list[bytes] = []

    def reading(request: HttpRequest) -> HttpResponse:
        seen.append(request.body)
        return HttpResponse()

    request = RequestFactory().post("/v4.0/orders", b'{"a": 1}', content_type="application/json")

    UnreadBodyDrainMiddleware(reading)(request)

    assert seen == [b'{"a": 1}']


@pytest.mark.django_db
def test_a_wrong_key_with_a_large_body_is_answered_401(api: Any) -> None:
    body = b"{" + b" " * 2_000_000 + b"}"

    response = api.post("/v4.0/orders", body, content_type="application/json")

    assert response.status_code == 401
