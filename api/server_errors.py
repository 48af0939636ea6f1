"""Errors the HTTP server answers before Django sees the request, in the error envelope.

Gunicorn refuses some requests itself (a request line over its limit: 414, too many or too
large header fields: 431, a malformed request: 400) and writes an HTML page for them.
``gunicorn.conf.py`` installs :func:`write_error` in its place, so no error is ever HTML
(decisions.md), whether or not a proxy stands in front.
"""

import json
import socket
from typing import Any

from api.trace import new_trace_parent

# Outcomes for the statuses the server itself answers (the application's own are in envelope).
SERVER_OUTCOMES = {
    400: ("ValidationFailed", "The request could not be parsed as HTTP."),
    403: ("Forbidden", "The request is not allowed."),
    414: ("UriTooLong", "The request line is longer than this service accepts."),
    417: ("ExpectationFailed", "The Expect header is not supported."),
    431: (
        "RequestHeaderFieldsTooLarge",
        "The request headers are larger than this service accepts.",
    ),
    501: ("NotImplemented", "The request uses a transfer coding this service does not support."),
}
INTERNAL = ("InternalServerError", "An unexpected error occurred.")


def server_error_body(status: int, detail: str) -> dict[str, Any]:
    outcome, text = SERVER_OUTCOMES.get(status, INTERNAL)
    failures = {"request": [{"code": outcome, "description": detail}]} if detail else {}
    return {
        "outcome": outcome,
        "statusCode": status,
        "statusText": text,
        "data": {"failures": failures} if failures else {},
        "traceParent": new_trace_parent(),
    }


def write_error(sock: socket.socket, status_int: int, reason: str, mesg: str) -> None:
    """Gunicorn's ``util.write_error`` signature: answer on the raw socket and close."""
    envelope = server_error_body(status_int, mesg)
    trace_parent = envelope["traceParent"]
    body = json.dumps(envelope).encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        f"traceParent: {trace_parent}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode("latin-1")
    timeout = sock.gettimeout()
    try:
        sock.settimeout(5.0)  # a client that reads nothing cannot hold the worker
        sock.sendall(head + body)
    finally:
        sock.settimeout(timeout)
