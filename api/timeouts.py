"""Answer ``TimedOut`` (500) for a request that runs past ``REQUEST_TIMEOUT_SECONDS``.

The deadline is a real-time interval timer in the serving thread (gunicorn's sync workers serve
each request in the main thread): when a request's deadline has passed, ``RequestTimedOut`` is
raised inside it, its transaction rolls back, and the envelope is returned instead of a hang.

The timer is one per process, not one per request: a request only notes its deadline. When
the timer fires it raises if the request being served is past its deadline, else sets itself
for that request's deadline; with no request in flight it stops, and the next request sets it
again. So a request asks the kernel for nothing as long as requests keep coming.
"""

import atexit
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from api.envelope import error_response
from api.exceptions import RequestTimedOut
from common.http import outbound_budget

# A timer that fires up to this early still counts as on time (clocks differ in rounding).
_SLACK_SECONDS = 0.001


class _Deadline:
    """The serving thread's deadline and when the process's timer is set to fire."""

    request_ends_by: float | None = None  # the request in flight's deadline (monotonic)
    timer_fires_at: float | None = None  # None: the timer is stopped


@atexit.register
def _timer_stop() -> None:
    """At exit the timer is stopped: once the interpreter has put SIGALRM back to its default,
    a timer still set would end the process ("Alarm clock") and its exit status with it."""
    if _Deadline.timer_fires_at is not None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _Deadline.timer_fires_at = None


def _on_timer(signum: int, frame: FrameType | None) -> None:
    ends_by = _Deadline.request_ends_by
    if ends_by is None:  # nothing in flight: stop until the next request
        _Deadline.timer_fires_at = None
        return
    remaining = ends_by - time.monotonic()
    if remaining <= _SLACK_SECONDS:
        _Deadline.request_ends_by = None
        _Deadline.timer_fires_at = None
        raise RequestTimedOut()
    signal.setitimer(signal.ITIMER_REAL, remaining)
    _Deadline.timer_fires_at = ends_by


class OutboundBudgetMiddleware:
    """The calls a request makes through the guarded client (a lab's, for staff operations and
    order actions) share ``LAB_CALLS_BUDGET_SECONDS`` in all, well inside the request's own
    deadline: a site that hangs makes the request answer that the lab could not be reached,
    never time out."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with outbound_budget(float(settings.LAB_CALLS_BUDGET_SECONDS)):
            return self.get_response(request)


class RequestDeadlineMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        seconds = float(settings.REQUEST_TIMEOUT_SECONDS)
        if seconds <= 0 or threading.current_thread() is not threading.main_thread():
            return self.get_response(request)
        now = time.monotonic()
        ends_by = now + seconds
        fires_at = _Deadline.timer_fires_at
        # Set the timer when it is stopped, would fire too late for this request, or should
        # have fired already (something else stopped it); and take SIGALRM back if needed.
        if (
            fires_at is None
            or not now < fires_at <= ends_by
            or signal.getsignal(signal.SIGALRM) is not _on_timer
        ):
            signal.signal(signal.SIGALRM, _on_timer)
            signal.setitimer(signal.ITIMER_REAL, seconds)
            _Deadline.timer_fires_at = ends_by
        _Deadline.request_ends_by = ends_by
        try:
            return self.get_response(request)
        except RequestTimedOut:
            return error_response("TimedOut", 500)
        finally:
            _Deadline.request_ends_by = None
