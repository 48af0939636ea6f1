"""W3C trace context: every response carries ``traceParent`` (header, and body when JSON)."""

import contextvars
import re
import secrets
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("trace_parent", default=None)

RESPONSE_HEADER = "traceParent"


def new_trace_parent(incoming: str | None = None) -> str:
    """Continue a valid incoming trace id with a new span, or start a new trace."""
    trace_id = None
    if incoming:
        match = _TRACEPARENT.match(incoming.strip().lower())
        if match and match.group(1) != "0" * 32:
            trace_id = match.group(1)
    if trace_id is None:
        fresh = secrets.token_hex(24)  # one read of the system's randomness for both ids
        return f"00-{fresh[:32]}-{fresh[32:]}-01"
    return f"00-{trace_id}-{secrets.token_hex(8)}-01"


def current_trace_parent() -> str:
    """The trace parent of the request being served (a fresh one outside a request)."""
    value = _current.get()
    if value is None:
        value = new_trace_parent()
        _current.set(value)
    return value


class TraceParentMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # From META: ``request.headers`` would build a map of every header first.
        trace_parent = new_trace_parent(request.META.get("HTTP_TRACEPARENT"))
        token = _current.set(trace_parent)
        try:
            response = self.get_response(request)
        finally:
            _current.reset(token)
        response[RESPONSE_HEADER] = trace_parent
        return response
