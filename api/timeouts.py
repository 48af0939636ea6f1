"""Answer ``TimedOut`` (500) for a request that runs past ``REQUEST_TIMEOUT_SECONDS``.

The deadline is a real-time interval timer in the serving thread (gunicorn's sync workers serve
each request in the main thread): when it fires, ``RequestTimedOut`` is raised inside the
request, its transaction rolls back, and the envelope is returned instead of a hang.
"""

import signal
import threading
from collections.abc import Callable
from types import FrameType

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from api.envelope import error_response
from api.exceptions import RequestTimedOut


def _raise_timed_out(signum: int, frame: FrameType | None) -> None:
    raise RequestTimedOut()


class RequestDeadlineMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        seconds = float(settings.REQUEST_TIMEOUT_SECONDS)
        if seconds <= 0 or threading.current_thread() is not threading.main_thread():
            return self.get_response(request)
        previous = signal.signal(signal.SIGALRM, _raise_timed_out)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return self.get_response(request)
        except RequestTimedOut:
            return error_response("TimedOut", 500)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
