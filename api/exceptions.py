"""One handler maps every exception an API view raises to the error envelope."""

import logging
import math
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response

from api.envelope import error_body, failure
from common.errors import EntityNotFound, LabBusy, ValidationFailed

logger = logging.getLogger(__name__)

BODY_PATH = "body"


class RequestTimedOut(BaseException):
    """Raised inside a request that has run past its deadline.

    A ``BaseException`` so that no ``except Exception`` on the way (robust on-commit hooks,
    retry loops) swallows it; ``RequestDeadlineMiddleware`` turns it into the envelope.
    """


class RoleRequired(drf.PermissionDenied):
    """Authenticated, but without the role the operation needs: 401 whose text says which."""


class PermissionRequired(drf.PermissionDenied):
    """Staff whose role does not allow the operation: 403 whose text says which role does."""


def _pascal(code: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in str(code).split("_"))


def _join(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    key = str(key)
    if key in ("non_field_errors", "__all__"):
        return path or BODY_PATH
    return f"{path}.{key}" if path else key


def flatten_failures(detail: Any, path: str = "") -> dict[str, list[dict[str, str]]]:
    """Turn DRF's nested error detail into ``{"items[0].copies": [{code, description}]}``."""
    failures: dict[str, list[dict[str, str]]] = {}

    def visit(node: Any, at: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                visit(value, _join(at, key))
        elif isinstance(node, list):
            if all(not isinstance(v, dict | list) for v in node):
                for leaf in node:
                    visit(leaf, at)
            else:
                for index, value in enumerate(node):
                    if value:
                        visit(value, f"{at}[{index}]")
        else:
            code = getattr(node, "code", None) or "Invalid"
            failures.setdefault(at or BODY_PATH, []).append(failure(_pascal(code), str(node)))

    visit(detail, path)
    return failures


def _service_failures(exc: ValidationFailed) -> dict[str, list[dict[str, str]]]:
    return {path: [failure(c, d) for c, d in items] for path, items in exc.failures.items()}


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    headers: dict[str, str] = {}
    if isinstance(exc, ValidationFailed):
        body = error_body("ValidationFailed", 400, {"failures": _service_failures(exc)})
    elif isinstance(exc, drf.ParseError):
        body = error_body(
            "ValidationFailed",
            400,
            {"failures": {BODY_PATH: [failure("MalformedJson", str(exc.detail))]}},
        )
    elif isinstance(exc, drf.ValidationError):
        body = error_body("ValidationFailed", 400, {"failures": flatten_failures(exc.detail)})
    elif isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        body = error_body("Unauthorized", 401, {"reason": str(exc.detail)})
        headers["WWW-Authenticate"] = 'ApiKey header="X-API-Key"'
    elif isinstance(exc, RoleRequired):
        body = error_body("Unauthorized", 401, {"reason": str(exc.detail)}, text=str(exc.detail))
        headers["WWW-Authenticate"] = 'ApiKey header="X-API-Key"'
    elif isinstance(exc, PermissionRequired):
        body = error_body("Unauthorized", 403, {"reason": str(exc.detail)}, text=str(exc.detail))
    elif isinstance(exc, drf.PermissionDenied | DjangoPermissionDenied):
        body = error_body("Unauthorized", 401, {"reason": str(getattr(exc, "detail", exc))})
        headers["WWW-Authenticate"] = 'ApiKey header="X-API-Key"'
    elif isinstance(exc, EntityNotFound):
        body = error_body("EntityNotFound", 404, {"reason": exc.description})
    elif isinstance(exc, drf.NotFound | Http404):
        body = error_body("EntityNotFound", 404)
    elif isinstance(exc, drf.MethodNotAllowed):
        body = error_body("MethodNotAllowed", 405, {"method": context["request"].method})
    elif isinstance(exc, drf.UnsupportedMediaType):
        body = error_body("InvalidContentType", 415, {"reason": str(exc.detail)})
    elif isinstance(exc, RequestDataTooBig):
        body = error_body(
            "PayloadTooLarge", 413, {"maxBytes": settings.DATA_UPLOAD_MAX_MEMORY_SIZE}
        )
    elif isinstance(exc, LabBusy):
        seconds = max(1, math.ceil(exc.retry_after_seconds))
        data = {"labCode": exc.lab_code, "retryAfterSeconds": seconds}
        body = error_body("ServiceUnavailable", 503, data, text=str(exc))
        headers["Retry-After"] = str(seconds)
    elif isinstance(exc, drf.Throttled):
        wait = getattr(exc, "wait", None)
        body = error_body("TooManyRequests", 429, {"retryAfterSeconds": wait})
        if wait is not None:
            headers["Retry-After"] = str(max(1, int(wait)))
    else:
        logger.exception("Unhandled error in %s", context.get("view").__class__.__name__)
        body = error_body("InternalServerError", 500)
    return Response(body, status=body["statusCode"], headers=headers)
