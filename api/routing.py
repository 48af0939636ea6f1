"""Case-insensitive API paths: ``/v4.0/Orders`` and ``/v4.0/orders`` reach the same view.

Each path segment whose lower-case form is a literal segment of a ``/v4.0`` route is rewritten
to that route's spelling before URL resolution, so routes (and the OpenAPI document) keep the
specification's camelCase while clients may use any case. A trailing slash is ignored.
"""

import re
from collections.abc import Callable, Iterable
from functools import cache
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse, QueryDict
from django.urls import URLPattern, URLResolver, get_resolver

from api.envelope import error_response, failure

if TYPE_CHECKING:
    from django.http.request import _ImmutableQueryDict

API_PREFIX = "/v4.0"
_PARAM = re.compile(r"<[^>]+>")


def _route_texts(patterns: Iterable[URLPattern | URLResolver], prefix: str = "") -> Iterable[str]:
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _route_texts(pattern.url_patterns, route)
        else:
            yield route


@cache
def _literal_segments(urlconf: str) -> dict[str, str]:
    literals: dict[str, str] = {}
    for route in _route_texts(get_resolver(urlconf).url_patterns):
        if not route.lower().startswith("v4.0/"):
            continue
        for segment in route.strip("^$").split("/"):
            if segment and not _PARAM.search(segment) and not re.search(r"[\\()\[\]*+?]", segment):
                literals.setdefault(segment.lower(), segment)
    return literals


def canonical_api_path(path: str, urlconf: str) -> str:
    """``path`` with its known literal segments in route spelling and no trailing slash."""
    literals = _literal_segments(urlconf)
    return "/".join(literals.get(s.lower(), s) for s in path.rstrip("/").split("/"))


def _canonical_query(query: QueryDict) -> "_ImmutableQueryDict":
    """Lower-case parameter names, with the bracket form ``orderIds[]`` folded into ``orderids``
    (immutable, as Django gives ``request.GET``)."""
    pairs = [
        (key.lower().removesuffix("[]"), value) for key, values in query.lists() for value in values
    ]
    return QueryDict(urlencode(pairs), encoding=query.encoding)  # type: ignore[return-value]


def _nul_failures(request: HttpRequest) -> dict[str, list[dict[str, str]]]:
    """U+0000 in the path or a query value: no id, SKU or filter can hold it (and PostgreSQL
    text cannot), so the request is refused before any view reads it."""
    text = "must not contain U+0000."
    failures = {}
    if "\x00" in request.path_info:
        failures["path"] = [failure("Invalid", f"The path {text}")]
    for name, values in request.GET.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            failures[name.replace("\x00", "")] = [failure("Invalid", f"A query value {text}")]
    return failures


def _chunked_without_length(request: HttpRequest) -> bool:
    """A chunked body Django would read as empty (it reads Content-Length bytes): refused
    rather than answered as if no field had been sent."""
    encoding = request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    return "chunked" in encoding and not request.META.get("CONTENT_LENGTH")


class CaseInsensitiveApiPathMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        if path.lower() == API_PREFIX or path.lower().startswith(API_PREFIX + "/"):
            refused = _nul_failures(request)
            if refused:
                return error_response("ValidationFailed", 400, {"failures": refused})
            if _chunked_without_length(request):
                return error_response(
                    "LengthRequired", 411, {"reason": "Send the body with a Content-Length."}
                )
            urlconf = getattr(request, "urlconf", None) or settings.ROOT_URLCONF
            request.path_info = canonical_api_path(path, urlconf) or API_PREFIX
            if request.META.get("QUERY_STRING"):  # else it is empty already
                request.GET = _canonical_query(request.GET)
        return self.get_response(request)
