"""The one guarded outbound HTTP client: asset downloads, merchant callbacks, Site Flow labs.

Most URLs here come from a merchant, so every request goes through requests-hardened's IP
filter: the host is resolved once, the resolved address is checked (private, loopback,
link-local and cloud metadata, multicast, reserved, carrier-grade NAT ...) and the connection is
pinned to that address, so DNS rebinding cannot swap in an internal one afterwards. Redirects
are never followed by requests itself: a download follows a few by hand, each target going
through the same filter before anything is sent to it; a callback follows none.

``settings.ALLOW_PRIVATE_URLS`` (local development and tests only) switches the address filter
off for sessions created while it is on; the scheme check and the limits stay.

Errors carry a sentence that is shown to merchants as an order issue description, and say
whether trying again can help (``retryable``).
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from http.cookiejar import DefaultCookiePolicy
from pathlib import Path
from types import UnionType
from urllib.parse import urljoin, urlsplit

import requests
import urllib3.exceptions
from django.conf import settings
from requests_hardened import Config, HTTPSession
from requests_hardened.ip_filter import InvalidIPAddress

from common.scopes import ContextVarScope

USER_AGENT = "print-api/4.0 (+fulfilment)"
ALLOWED_SCHEMES = frozenset({"http", "https"})
CONNECT_TIMEOUT_SECONDS = 10.0
# Longest wait for one socket read before the total deadline gives a shorter one.
READ_TIMEOUT_SECONDS = 30.0
# The most one read passes on: it returns whatever the socket has, so a slow server still gives
# small chunks; a fast one fills fewer, bigger ones (a quarter of the Python work of 64 KiB).
CHUNK_BYTES = 256 * 1024
# Idle download sessions kept for reuse (``borrowed_session``); more are closed when returned.
MAX_IDLE_SESSIONS = 32
# A callback receiver's answer is only recorded, never trusted; more than this is cut off.
MAX_CALLBACK_RESPONSE_BYTES = 64 * 1024
# Statuses that say "try later" although they are 4xx.
_RETRYABLE_CLIENT_STATUSES = frozenset({408, 425, 429})


class OutboundRefused(Exception):
    """The URL or the address it resolves to is not allowed; trying again cannot help."""

    retryable = False


logger = logging.getLogger(__name__)


class OutboundError(Exception):
    """The request was allowed but failed: network, timeout, size, or an unwanted status.

    ``retryable`` is False when the same request would fail the same way (a 404, a file over the
    size cap); ``status_code`` is the HTTP status when one was received. ``sent`` is False when
    the request certainly never left (no time was left for it, or no connection was made): the
    other side cannot have acted on it.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status_code: int | None = None,
        sent: bool = True,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status_code = status_code
        self.sent = sent


class TransferTooSlow(OutboundError):
    """A download stopped because its bytes arrive more slowly than its ``Pace`` asks (its
    answer's headers included); trying again can help, elsewhere or later."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


@dataclass(frozen=True)
class Pace:
    """The least a download must average: every ``check_seconds`` from its start (headers
    awaited included) it must have received at least ``min_bytes_per_second`` on average, or it
    stops with ``TransferTooSlow``."""

    check_seconds: float
    min_bytes_per_second: float


# When the requests of the current budget must have ended (monotonic), or None: no budget.
_budget_ends: ContextVar[float | None] = ContextVar("outbound_budget_ends", default=None)


def outbound_budget(seconds: float) -> ContextVarScope[float | None]:
    """Every request sent through this client inside the block shares ``seconds`` in all: each
    one's timeout is cut to what is left, and one with nothing left is not sent (``OutboundError``,
    retryable). A web request's lab calls run under one (``api.timeouts``), so a site that hangs
    costs the request at most that long, well inside its own deadline."""
    return ContextVarScope(_budget_ends, time.monotonic() + seconds)


def _within_budget(timeout: float, url: str) -> float:
    """``timeout`` cut to what is left of the current budget; raises when nothing is."""
    ends = _budget_ends.get()
    if ends is None:
        return timeout
    left = ends - time.monotonic()
    if left <= 0:
        raise OutboundError(
            f"No time was left to request {_redact(url)}: the earlier calls of this request "
            "used all the time allowed for them.",
            retryable=True,
            sent=False,
        )
    return min(timeout, left)


@dataclass(frozen=True)
class DownloadedFile:
    path: Path
    size: int
    md5: str | None  # None when the download was asked not to hash (``md5=False``)
    content_type: str | None


def guarded_session() -> requests.Session:
    """A new session with the address filter and without automatic redirects.

    Callers keep one per process for keep-alive. The environment is ignored (``trust_env``):
    a proxy from ``HTTP_PROXY`` would be the address checked instead of the real target, and
    ``.netrc`` credentials must never be sent to a merchant's host.
    """
    allow_private = bool(settings.ALLOW_PRIVATE_URLS)
    config = Config(
        ip_filter_enable=not allow_private,
        ip_filter_allow_loopback_ips=allow_private,
        never_redirect=True,
        default_timeout=(CONNECT_TIMEOUT_SECONDS, READ_TIMEOUT_SECONDS),
        user_agent_override=USER_AGENT,
    )
    session = HTTPSession(config)
    session.trust_env = False
    return session


_idle_sessions: list[requests.Session] = []
_idle_key: tuple[int, bool] | None = None
_idle_lock = threading.Lock()


@contextmanager
def borrowed_session() -> Iterator[requests.Session]:
    """A guarded session for one download at a time, kept for the next when it ends, so a
    download from a host this process has just fetched from reuses the connection (no TCP or
    TLS handshake again). Each session has one borrower at a time, however many threads
    download at once.

    The sessions keep no cookies: what one merchant's host sets must never be sent with
    another order's download. They belong to the process that made them and to the
    ``ALLOW_PRIVATE_URLS`` they were made with (the address filter is fixed at creation): a
    forked child or a changed setting starts afresh. A download that raised closes its session.
    """
    global _idle_key
    key = (os.getpid(), bool(settings.ALLOW_PRIVATE_URLS))
    with _idle_lock:
        if _idle_key != key:
            stale = list(_idle_sessions)
            _idle_sessions.clear()
            if _idle_key is not None and _idle_key[0] == key[0]:
                for old in stale:  # this process's own: another process's are left to it
                    old.close()
            _idle_key = key
        session = _idle_sessions.pop() if _idle_sessions else None
    if session is None:
        session = guarded_session()
        session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
    try:
        yield session
    except BaseException:
        session.close()
        raise
    with _idle_lock:
        if _idle_key == key and len(_idle_sessions) < MAX_IDLE_SESSIONS:
            _idle_sessions.append(session)
            return
    session.close()


def post_json_bytes(
    session: requests.Session,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    timeout: float,
) -> requests.Response:
    """POST the exact ``body`` bytes and return the response, whatever its status.

    No redirect is followed (a 3xx comes back as the response). The caller decides what a
    status means (410 stops callbacks, other non-2xx are retried); ``OutboundError`` means no
    complete response arrived within ``timeout`` seconds in total. The response body is read
    here, at most ``MAX_CALLBACK_RESPONSE_BYTES`` of it, so ``response.content`` is safe to use.
    """
    return send_json_bytes(session, "POST", url, body, headers, timeout)


def send_json_bytes(
    session: requests.Session,
    method: str,
    url: str,
    body: bytes | None,
    headers: Mapping[str, str],
    timeout: float,
    *,
    max_response_bytes: int = MAX_CALLBACK_RESPONSE_BYTES,
) -> requests.Response:
    """Send ``method`` with the exact ``body`` bytes (JSON, or none) and return the response,
    whatever its status, as ``post_json_bytes`` does (at most ``max_response_bytes`` read)."""
    _check_url(url)
    timeout = _within_budget(timeout, url)
    deadline = time.monotonic() + timeout
    send_headers = {"Content-Type": "application/json", **headers} if body is not None else headers
    response = _send(
        session,
        method,
        url,
        deadline=deadline,
        data=body,
        headers=dict(send_headers),
        stream=True,
    )
    kept = bytearray()
    try:
        _read_body(
            response,
            deadline=deadline,
            deadline_seconds=timeout,
            max_bytes=max_response_bytes,
            sink=kept.extend,
            on_too_large=None,
        )
    finally:
        # urllib3 has already put a connection read to the end back in the pool; this closes
        # one whose answer was cut short, the only way to stop the rest arriving.
        response.close()
    response._content = bytes(kept)
    return response


def download_to_file(
    url: str,
    destination: Path,
    *,
    max_bytes: int,
    deadline_seconds: float,
    session: requests.Session | None = None,
    max_redirects: int = 3,
    md5: bool = True,
    pace: Pace | None = None,
) -> DownloadedFile:
    """Stream ``url`` into ``destination``, hashing as it goes, within a size cap and a deadline.

    Without ``md5`` nothing is hashed and ``DownloadedFile.md5`` is None: hashing every byte
    costs CPU that a caller with no hash to compare against has no use for.

    The deadline covers the whole download (connects, redirects and every byte), so a server
    that dribbles a byte a second is cut off like one that stalls. Redirects are followed by
    hand, at most ``max_redirects``, and each target passes the same scheme and address checks
    before any request is sent to it. On any failure ``destination`` does not exist afterwards.

    With a ``pace``, a download whose answer has not begun within its ``check_seconds``, or
    that averages fewer bytes a second than it asks at any of its checks, stops with
    ``TransferTooSlow`` as soon as that is known, not at the deadline.
    """
    deadline_seconds = _within_budget(deadline_seconds, url)
    own_session = session is None
    http = guarded_session() if session is None else session
    started = time.monotonic()
    deadline = started + deadline_seconds
    # The answer's headers are awaited until the first check at most.
    headers_by = deadline if pace is None else min(deadline, started + pace.check_seconds)
    current = url
    try:
        for _hop in range(max_redirects + 1):
            _check_url(current)
            try:
                response = _send(
                    http,
                    "GET",
                    current,
                    deadline=headers_by,
                    stream=True,
                    headers={"Accept-Encoding": "identity"},
                )
            except OutboundError as exc:
                if headers_by < deadline and exc.retryable and time.monotonic() >= headers_by:
                    raise TransferTooSlow(
                        f"{_redact(current)} did not begin to answer within "
                        f"{pace.check_seconds if pace else 0:g} seconds."
                    ) from exc
                raise
            try:
                if response.is_redirect:
                    target = response.headers.get("Location", "")
                    current = urljoin(current, target)
                    continue
                if response.status_code != 200:
                    raise status_error(response)
                return _save_body(
                    response,
                    destination=destination,
                    deadline=deadline,
                    deadline_seconds=deadline_seconds,
                    max_bytes=max_bytes,
                    md5=md5,
                    pace=None if pace is None else (pace, started),
                )
            finally:
                response.close()
        raise OutboundError(
            f"The download was redirected more than {max_redirects} times.", retryable=False
        )
    finally:
        if own_session:
            http.close()


def status_error(response: requests.Response) -> OutboundError:
    """The error for an unwanted status: 5xx, 408, 425 and 429 retryable, other 4xx not."""
    code = response.status_code
    reason = f" {response.reason}" if response.reason else ""
    retryable = code >= 500 or code in _RETRYABLE_CLIENT_STATUSES
    return OutboundError(
        f"The server answered HTTP {code}{reason} for {_redact(response.url)}.",
        retryable=retryable,
        status_code=code,
    )


def url_refusal(url: str) -> str | None:
    """Why ``url`` is never requested, whatever its host resolves to (a malformed URL or port,
    port 0, a scheme other than http(s), no host, credentials); None when it may be."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError on a malformed port or one beyond 65535
    except ValueError:
        return f"'{_redact(url)}' is not a valid URL."
    if port == 0:
        return f"'{_redact(url)}' is not a valid URL: port 0 cannot be connected to."
    if parts.scheme.lower() not in ALLOWED_SCHEMES:
        return f"'{_redact(url)}' is refused: only http and https URLs can be fetched."
    if not parts.hostname:
        return f"'{_redact(url)}' is refused: the URL has no host."
    if parts.username or parts.password:
        return f"'{_redact(url)}' is refused: URLs with credentials are not fetched."
    return None


def _check_url(url: str) -> None:
    refusal = url_refusal(url)
    if refusal is not None:
        raise OutboundRefused(refusal)


def unreachable_error(url: str, host: str) -> OutboundError:
    """The one answer for a host that cannot be reached: its name does not resolve, or resolves
    to an address that is never connected to (private, loopback, metadata ...). Both say the
    same and are retried alike, so naming hosts tells a merchant nothing about our network."""
    return OutboundError(
        f"Could not reach '{host}' for {_redact(url)}: the host cannot be reached from the "
        "service (its name does not resolve to a public internet address).",
        retryable=True,
    )


def _failure_chain(exc: BaseException) -> Iterator[BaseException]:
    """The failure and every one it came from (causes, contexts, wrapped arguments, urllib3's
    ``reason``), each once. ``ssl.SSLError``'s ``reason`` is text, not a failure: not followed."""
    seen: set[int] = set()
    todo: list[object] = [exc]
    while todo:
        current = todo.pop()
        if not isinstance(current, BaseException) or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [current.__cause__, current.__context__, *current.args]
        todo.append(getattr(current, "reason", None))


def _caused_by(exc: BaseException, kinds: type | UnionType) -> bool:
    """Whether the failure, or one it came from, is of ``kinds``."""
    return any(isinstance(current, kinds) for current in _failure_chain(exc))


def _name_unresolved(exc: BaseException) -> bool:
    """Whether the failure (or one it came from) is a host name that did not resolve."""
    return _caused_by(exc, socket.gaierror | urllib3.exceptions.NameResolutionError)


def _never_connected(exc: BaseException) -> bool:
    """Whether the failure is one of connecting (refused, timed out): nothing was sent."""
    return isinstance(exc, requests.exceptions.ConnectTimeout) or _caused_by(
        exc, urllib3.exceptions.NewConnectionError
    )


def _send(
    session: requests.Session,
    method: str,
    url: str,
    *,
    deadline: float,
    **kwargs: object,
) -> requests.Response:
    remaining = _remaining(deadline)
    if remaining <= 0:
        raise OutboundError(
            f"The time allowed ran out before {_redact(url)} could be requested.",
            retryable=True,
            sent=False,
        )
    timeout = (min(CONNECT_TIMEOUT_SECONDS, remaining), min(READ_TIMEOUT_SECONDS, remaining))
    host = urlsplit(url).hostname or ""
    try:
        return session.request(method, url, timeout=timeout, allow_redirects=False, **kwargs)  # type: ignore[arg-type]
    except InvalidIPAddress as exc:
        address = exc.args[0] if exc.args else "?"
        # What the host resolves to is for the operators' log, never for the caller: a
        # merchant must not learn the addresses of our network by naming hosts.
        logger.info("Refused %s: %s resolves to %s", _redact(url), host, _describe_address(address))
        raise unreachable_error(url, host) from exc
    except requests.exceptions.InvalidSchema as exc:
        raise OutboundRefused(
            f"'{_redact(url)}' is refused: only http and https URLs can be fetched."
        ) from exc
    except (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema) as exc:
        raise OutboundRefused(f"'{_redact(url)}' is not a valid URL.") from exc
    except requests.exceptions.RequestException as exc:
        if _name_unresolved(exc):
            logger.info("Refused %s: %s does not resolve", _redact(url), host)
            raise unreachable_error(url, host) from exc
        raise OutboundError(
            _failure(exc, url=url, host=host), retryable=True, sent=not _never_connected(exc)
        ) from exc


def _failure(exc: requests.exceptions.RequestException, *, url: str, host: str) -> str:
    """What went wrong, most specific first: a connect timeout is a timeout, not a refusal."""
    if isinstance(exc, requests.exceptions.Timeout):
        return f"Requesting {_redact(url)} timed out (no answer from '{host}')."
    if isinstance(exc, requests.exceptions.SSLError):
        return f"The TLS connection to '{host}' for {_redact(url)} failed: {_tls_reason(exc)}."
    if isinstance(exc, requests.exceptions.ConnectionError):
        return f"Could not connect to '{host}' for {_redact(url)}: {_reason(exc)}."
    return f"Requesting {_redact(url)} failed: {_reason(exc)}."


def _save_body(
    response: requests.Response,
    *,
    destination: Path,
    deadline: float,
    deadline_seconds: float,
    max_bytes: int,
    md5: bool,
    pace: tuple[Pace, float] | None = None,
) -> DownloadedFile:
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise _too_large(max_bytes, f"the server declares {int(declared)} bytes")
    digest = hashlib.md5(usedforsecurity=False)
    size = 0
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(destination.name + ".part")
    try:
        with partial.open("wb") as out:

            def write_hashed(chunk: bytes) -> None:
                digest.update(chunk)
                out.write(chunk)

            size = _read_body(
                response,
                deadline=deadline,
                deadline_seconds=deadline_seconds,
                max_bytes=max_bytes,
                sink=write_hashed if md5 else out.write,
                on_too_large=lambda: _too_large(max_bytes, "the body is longer"),
                pace=pace,
            )
        os.replace(partial, destination)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return DownloadedFile(
        path=destination,
        size=size,
        md5=digest.hexdigest() if md5 else None,
        content_type=response.headers.get("Content-Type"),
    )


def _read_body(
    response: requests.Response,
    *,
    deadline: float,
    deadline_seconds: float,
    max_bytes: int,
    sink: Callable[[bytes], object],
    on_too_large: Callable[[], Exception] | None,
    pace: tuple[Pace, float] | None = None,
) -> int:
    """Pass the body to ``sink`` chunk by chunk; the number of bytes passed.

    ``read1`` returns whatever one socket read brings, and the socket's timeout is cut to the
    time left before every read, so the deadline holds however slowly the bytes arrive. Over
    ``max_bytes`` the error from ``on_too_large`` is raised, or (without one) reading stops.
    ``pace`` (the least average, and when the download started): checked every
    ``check_seconds``, each check ending a socket wait, so a slow body stops at the first check
    it fails (``TransferTooSlow``).
    """
    raw = response.raw
    size = 0
    url = _redact(response.url)
    check_at = math.inf if pace is None else pace[1] + pace[0].check_seconds
    try:
        while True:
            now = time.monotonic()
            if now >= check_at:
                assert pace is not None
                rule, started = pace
                if size < rule.min_bytes_per_second * (now - started):
                    raise _too_slow(url, size, now - started)
                check_at = now + rule.check_seconds
            remaining = _remaining(deadline)
            if remaining <= 0:
                raise TimeoutError
            wait = min(remaining, READ_TIMEOUT_SECONDS, max(check_at - now, 0.001))
            _limit_socket_wait(response, wait)
            try:
                chunk = raw.read1(CHUNK_BYTES)
            except (TimeoutError, urllib3.exceptions.TimeoutError):
                if pace is not None and time.monotonic() >= check_at:
                    # Nothing arrived before the check: slow whatever came before (a socket
                    # that timed out cannot be read on).
                    raise _too_slow(url, size, time.monotonic() - pace[1]) from None
                raise
            if not chunk:
                return size
            if size + len(chunk) > max_bytes:
                if on_too_large is None:
                    sink(chunk[: max_bytes - size])
                    return max_bytes
                raise on_too_large()
            size += len(chunk)
            sink(chunk)
    except (TimeoutError, urllib3.exceptions.TimeoutError) as exc:
        raise OutboundError(
            f"Reading {url} did not finish within {deadline_seconds:g} seconds "
            f"({size} bytes received).",
            retryable=True,
        ) from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise OutboundError(
            f"The connection broke while reading {url} after {size} bytes: {_reason(exc)}.",
            retryable=True,
        ) from exc


def _too_slow(url: str, size: int, seconds: float) -> TransferTooSlow:
    return TransferTooSlow(f"Reading {url} was too slow: {size} bytes in {seconds:.0f} seconds.")


def _limit_socket_wait(response: requests.Response, seconds: float) -> None:
    connection = getattr(response.raw, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        sock.settimeout(max(seconds, 0.001))


def _too_large(max_bytes: int, detail: str) -> OutboundError:
    return OutboundError(
        f"The file is too large: the limit is {max_bytes} bytes and {detail}.", retryable=False
    )


def _remaining(deadline: float) -> float:
    return deadline - time.monotonic()


def _describe_address(address: object) -> str:
    try:
        ip = ipaddress.ip_address(str(address))
    except ValueError:
        return f"a forbidden address ({address})"
    if ip.is_loopback:
        kind = "a loopback address"
    elif str(ip) in {"169.254.169.254", "100.100.100.200", "fd00:ec2::254"}:
        kind = "a cloud metadata address"
    elif ip.is_link_local:
        kind = "a link-local address"
    elif ip.is_multicast:
        kind = "a multicast address"
    elif ip.is_reserved or ip.is_unspecified:
        kind = "a reserved address"
    else:
        kind = "a private or internal address"
    return f"{kind} ({ip})"


def _reason(exc: BaseException) -> str:
    """The innermost cause's message, which names the real problem (refused, reset, DNS)."""
    inner: BaseException = exc
    while True:
        nested = inner.args[0] if inner.args and isinstance(inner.args[0], BaseException) else None
        reason = getattr(inner, "reason", None)
        following = nested or (reason if isinstance(reason, BaseException) else None)
        if following is None or following is inner:
            break
        inner = following
    text = str(inner) or type(inner).__name__
    if "HTTPConnection" in text or "HTTPSConnection" in text:
        text = text.split(": ", 1)[-1]
    return text.rstrip(".")


def _tls_reason(exc: BaseException) -> str:
    """What the TLS handshake refused, in words: the certificate check's own message (an
    untrusted, expired or misnamed certificate), else the TLS library's reason."""
    for current in _failure_chain(exc):
        if isinstance(current, ssl.SSLCertVerificationError):
            return f"its certificate could not be verified ({current.verify_message})"
        if isinstance(current, ssl.SSLError) and current.reason:
            return f"the TLS handshake failed ({current.reason})"
    return _reason(exc)


def _redact(url: str | None) -> str:
    """The URL without its query string, which may carry a signed token."""
    if not url:
        return "the URL"
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the URL"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}{parts.path}"
