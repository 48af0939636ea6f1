"""One HTTP delivery attempt of a callback, and when to try again.

Deliveries are I/O-bound and frequent, so each worker process keeps one long-lived guarded
session (its connection pool gives keep-alive to merchants' servers). Every request goes through
``common.http``: addresses are checked against the SSRF guard, a timeout always applies and
redirects are never followed, so a 3xx is a failed attempt and its ``Location`` is never fetched.

This module classifies an attempt; it does not touch the database. The outbox records the
result and sets the due time from ``retry_due_at``.
"""

import datetime as dt
import email.utils
import enum
import os
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import requests
from django.conf import settings

from common.http import OutboundError, OutboundRefused, guarded_session, post_json_bytes
from webhooks.envelope import CONTENT_TYPE
from webhooks.signing import signature_headers

RESPONSE_EXCERPT_CHARS = 2048  # the receiver's answer as the dashboard's callback log shows it

# Delay after the Nth failed attempt (index N-1). Eleven attempts spread over about three days
# (nominal sum 70h 42m 30s); after the eleventh failure the event is given up.
RETRY_DELAYS: tuple[dt.timedelta, ...] = (
    dt.timedelta(seconds=30),
    dt.timedelta(minutes=2),
    dt.timedelta(minutes=10),
    dt.timedelta(minutes=30),
    dt.timedelta(hours=1),
    dt.timedelta(hours=3),
    dt.timedelta(hours=6),
    dt.timedelta(hours=12),
    dt.timedelta(hours=24),
    dt.timedelta(hours=24),
)
# Each delay is scaled by a factor in this range so that events failing together (a merchant's
# server down) do not come back as one burst.
JITTER = (0.9, 1.1)
# A receiver's Retry-After is honoured up to this; a larger value would silently end retries.
MAX_RETRY_AFTER = dt.timedelta(hours=24)


class Outcome(enum.StrEnum):
    DELIVERED = "Delivered"  # 2xx
    GONE = "Gone"  # 410: the URL is retired; stop delivering to it for this environment
    RETRY_AFTER = "RetryAfter"  # 429 with a usable Retry-After
    RETRY = "Retry"  # any other status (3xx included), a timeout or a connection error
    REFUSED = "Refused"  # the SSRF guard refused the URL or its address; permanent


@dataclass(frozen=True)
class AttemptResult:
    outcome: Outcome
    status_code: int | None
    duration_ms: int
    response_excerpt: str = ""
    error: str = ""
    retry_after: dt.timedelta | None = None


_session: requests.Session | None = None
_session_key: tuple[int, bool] | None = None


def delivery_session() -> requests.Session:
    """This process's session, created on first use and again in a forked child.

    A pooled connection must not be shared between a parent and its forked worker processes,
    so the session belongs to the process that created it; it is also rebuilt when
    ``ALLOW_PRIVATE_URLS`` changes, because the address filter is fixed at creation.
    """
    global _session, _session_key
    key = (os.getpid(), bool(settings.ALLOW_PRIVATE_URLS))
    if _session is None or _session_key != key:
        if _session is not None and _session_key is not None and _session_key[0] == key[0]:
            _session.close()
        _session = guarded_session()
        _session_key = key
    return _session


def deliver(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> AttemptResult:
    """POST ``body`` to ``url`` once and classify what happened; never raises for the network."""
    started = time.monotonic()

    def elapsed_ms() -> int:
        return round((time.monotonic() - started) * 1000)

    try:
        response = post_json_bytes(delivery_session(), url, body, headers, timeout)
    except OutboundRefused as exc:
        return AttemptResult(Outcome.REFUSED, None, elapsed_ms(), error=str(exc) or "Refused")
    except OutboundError as exc:
        return AttemptResult(Outcome.RETRY, None, elapsed_ms(), error=str(exc) or repr(exc))
    with response:
        excerpt = _excerpt(response)
        status = response.status_code
        duration = elapsed_ms()
        if 200 <= status < 300:
            return AttemptResult(Outcome.DELIVERED, status, duration, excerpt)
        if status == 410:
            return AttemptResult(Outcome.GONE, status, duration, excerpt)
        if status == 429:
            wait = parse_retry_after(response.headers.get("Retry-After"), now=_utcnow())
            if wait is not None:
                return AttemptResult(Outcome.RETRY_AFTER, status, duration, excerpt, "", wait)
        error = f"HTTP {status}"
        if 300 <= status < 400:
            error += " (redirects are not followed)"
        return AttemptResult(Outcome.RETRY, status, duration, excerpt, error)


def _excerpt(response: requests.Response) -> str:
    try:
        return response.text[:RESPONSE_EXCERPT_CHARS]
    except (requests.RequestException, UnicodeDecodeError, OutboundError) as exc:
        return f"(response body unreadable: {exc})"


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def parse_retry_after(value: str | None, *, now: dt.datetime) -> dt.timedelta | None:
    """``Retry-After`` as delta-seconds or an HTTP date, capped; None when absent or invalid."""
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        wait = dt.timedelta(seconds=int(text))
    else:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        wait = max(when - now, dt.timedelta(0))
    return min(wait, MAX_RETRY_AFTER)


def next_attempt_at(
    attempt_number: int, now: dt.datetime, rng: random.Random
) -> dt.datetime | None:
    """When to try again after failed attempt ``attempt_number`` (1-based); None: give up.
    The delay is the schedule's, jittered, times ``CALLBACK_RETRY_SCALE`` (1 but in tests)."""
    if attempt_number < 1:
        raise ValueError("Attempts are numbered from 1.")
    if attempt_number > len(RETRY_DELAYS):
        return None
    scale = float(settings.CALLBACK_RETRY_SCALE)
    return now + RETRY_DELAYS[attempt_number - 1] * (scale * rng.uniform(*JITTER))


def retry_due_at(
    result: AttemptResult, attempt_number: int, now: dt.datetime, rng: random.Random
) -> dt.datetime | None:
    """The next due time after ``result``, or None when there is nothing more to try.

    A Retry-After pushes the next attempt back but never earlier than the schedule, so a
    receiver answering 429 with ``Retry-After: 1`` cannot use up all attempts in seconds.
    """
    if result.outcome not in (Outcome.RETRY, Outcome.RETRY_AFTER):
        return None
    scheduled = next_attempt_at(attempt_number, now, rng)
    if scheduled is None or result.retry_after is None:
        return scheduled
    return max(scheduled, now + result.retry_after)


def signed_headers(
    *,
    msg_id: str,
    secret: str,
    body: bytes,
    timestamp: int | None = None,
    also: Sequence[str] = (),
) -> dict[str, str]:
    """Content-Type and the Standard Webhooks headers of one attempt (``also``: further
    secrets that sign it too, as during a rotation)."""
    return {
        "Content-Type": CONTENT_TYPE,
        **signature_headers(
            secret=secret, msg_id=msg_id, body=body, timestamp=timestamp, also=also
        ),
    }
