"""The in-memory data versions read once per request (``common.versions``): the API key and
the catalogue snapshot a request uses are checked against the same numbers."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from common.versions import versions_request_scope


class RequestVersionsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with versions_request_scope():
            return self.get_response(request)
