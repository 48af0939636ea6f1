"""A request body the view never read is read before the answer goes.

gunicorn closes a connection after each answer; closing it with the body's bytes still unread
makes the kernel send a reset, which nginx can see before it has read the answer: it then
answers 503 "try again" instead of, say, the 401 of a wrong key on a large body. So whatever
of the body is left (up to ``DRAINED_BYTES_MAX``; nginx refuses anything larger at the API's
limit) is read and dropped once the answer is made.
"""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase

DRAIN_CHUNK_BYTES = 64 * 1024
DRAINED_BYTES_MAX = 32 * 1024 * 1024


class UnreadBodyDrainMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if request.META.get("CONTENT_LENGTH") not in (None, "", "0"):
            body_rest_drop(request)
        return response


def body_rest_drop(request: HttpRequest) -> None:
    """Read what is left of the request's body (nothing when the view read it all)."""
    drained = 0
    try:
        while drained < DRAINED_BYTES_MAX:
            chunk = request.read(DRAIN_CHUNK_BYTES)
            if not chunk:
                return
            drained += len(chunk)
    except OSError:  # the client went away: nothing left to protect
        return
