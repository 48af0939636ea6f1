"""OpenAPI document additions: the introduction and the tags (in the order a merchant reads
them), the error envelope on every API operation, the trace header.

Every text of the document is written for the API's reader: the operations' summaries and
descriptions, fields' help texts, the tags' descriptions below and ``introduction.md``.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from drf_spectacular.utils import extend_schema

_Handler = TypeVar("_Handler", bound=Callable[..., Any])

INTRODUCTION = Path(__file__).with_name("introduction.md")

# The tags, merchants' first; an operation names one of these.
ORDERS = "Orders"
QUOTES = "Quotes"
PRODUCTS = "Products"
REGISTRATION = "Registration"
SERVICE = "Service"
STAFF_SHIPMENTS = "Staff: shipments and labs"
STAFF_BACKOFFICE = "Staff: back-office tools"
TAGS = [
    {
        "name": ORDERS,
        "description": "Create orders, list and follow them, and change or cancel them while "
        "they can still be changed (`GET .../actions` says which actions are open).",
    },
    {
        "name": QUOTES,
        "description": "What a basket costs to a destination, per shipping method: the same "
        "prices and lab plan an order of that basket gets.",
    },
    {
        "name": PRODUCTS,
        "description": "The catalogue: SKUs, their attributes and allowed values, print areas, "
        "and where each ships; the spine width of photobooks.",
    },
    {
        "name": REGISTRATION,
        "description": "Finishing a sign-up from your own integration, with the token of the "
        "verification mail.",
    },
    {"name": SERVICE, "description": "Whether the service is up (no key needed)."},
    {
        "name": STAFF_SHIPMENTS,
        "description": "For the service's staff (a staff API key or a signed-in staff user): "
        "what each lab can do, and changes to one shipment at its lab.",
    },
    {
        "name": STAFF_BACKOFFICE,
        "description": "For the service's staff: resubmitting lab orders listed in a "
        "spreadsheet, and changing the carrier of Site Flow lab orders in bulk.",
    },
]


def add_introduction_and_tags(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    result.setdefault("info", {})["description"] = INTRODUCTION.read_text()
    result["tags"] = TAGS
    return result


ERROR_ENVELOPE = {
    "type": "object",
    "description": "Every error response has this shape.",
    "properties": {
        "outcome": {
            "type": "string",
            "example": "ValidationFailed",
            "description": (
                "ValidationFailed, Unauthorized, EntityNotFound, EndpointDoesNotExist, "
                "MethodNotAllowed, InvalidContentType, TooManyRequests, InternalServerError "
                "or TimedOut."
            ),
        },
        "statusCode": {"type": "integer", "example": 400},
        "statusText": {"type": "string"},
        "data": {
            "type": "object",
            "additionalProperties": {},
            "description": "Details; for ValidationFailed, `failures` maps each field path to "
            "a list of `{code, description}`.",
            "properties": {
                "failures": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "code": {"type": "string"},
                                "description": {"type": "string"},
                            },
                            "required": ["code", "description"],
                        },
                    },
                }
            },
        },
        "traceParent": {
            "type": "string",
            "example": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        },
    },
    "required": ["outcome", "statusCode", "statusText", "data", "traceParent"],
}

_ERRORS = {
    "400": "ValidationFailed: the request could not be validated.",
    "401": "Unauthorized: the X-API-Key header is missing or not valid.",
    "404": "EntityNotFound or EndpointDoesNotExist.",
    "405": "MethodNotAllowed.",
    "415": "InvalidContentType: a body must be sent as application/json.",
    "429": "TooManyRequests.",
    "500": "InternalServerError or TimedOut.",
}

_TRACE_HEADER = {
    "traceParent": {
        "description": "W3C trace context of this request (also in the JSON body).",
        "schema": {"type": "string"},
    }
}


def add_error_responses(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["ErrorEnvelope"] = ERROR_ENVELOPE
    ref = {"$ref": "#/components/schemas/ErrorEnvelope"}
    for path, operations in result.get("paths", {}).items():
        if not path.startswith("/v4.0"):
            continue
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            for code, text in _ERRORS.items():
                if code == "415" and method not in ("post", "put", "patch"):
                    continue
                if code not in responses:
                    responses[code] = {
                        "description": text,
                        "content": {"application/json": {"schema": ref}},
                    }
            for response in responses.values():
                response.setdefault("headers", {}).update(_TRACE_HEADER)
    return result


def operation(
    tag: str, operation_id: str, summary: str, response: Any, **more: Any
) -> Callable[[_Handler], _Handler]:
    """The schema of an operation with one success response; the error envelope is added later."""
    return extend_schema(
        tags=[tag], operation_id=operation_id, summary=summary, responses={200: response}, **more
    )
