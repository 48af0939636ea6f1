"""The error envelope: ``{outcome, statusCode, statusText, data, traceParent}``."""

from typing import Any

from django.http import JsonResponse

from api.trace import current_trace_parent

STATUS_TEXTS = {
    "ValidationFailed": "The request could not be validated.",
    "PayloadTooLarge": "The request body is larger than this service accepts.",
    "LengthRequired": "The request body needs a Content-Length.",
    "Unauthorized": "Credentials are missing or incorrect.",
    "EntityNotFound": "The entity was not found.",
    "EndpointDoesNotExist": "The endpoint does not exist.",
    "MethodNotAllowed": "The HTTP method is not supported by this endpoint.",
    "InvalidContentType": "The request body must be sent as application/json.",
    "TooManyRequests": "Too many requests; slow down and retry later.",
    "InternalServerError": "An unexpected error occurred.",
    "TimedOut": "The request was not processed within the time limit and was aborted.",
    "ServiceUnavailable": "The service cannot do this now; try again shortly.",
}


def error_body(
    outcome: str, status: int, data: dict[str, Any] | None = None, text: str | None = None
) -> dict[str, Any]:
    return {
        "outcome": outcome,
        "statusCode": status,
        "statusText": text or STATUS_TEXTS.get(outcome, outcome),
        "data": data or {},
        "traceParent": current_trace_parent(),
    }


def error_response(
    outcome: str, status: int, data: dict[str, Any] | None = None, text: str | None = None
) -> JsonResponse:
    return JsonResponse(error_body(outcome, status, data, text), status=status)


def failure(code: str, description: str) -> dict[str, str]:
    return {"code": code, "description": description}
