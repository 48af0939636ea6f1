"""The two OpenAPI documents and their additions.

``/v4.0/schema`` (drf-spectacular's settings) is the merchants' document: every operation but
the staff endpoints (``api.staff.StaffApiView``). ``/v4.0/staff/schema`` (``STAFF_DOCUMENT``,
drf-spectacular's custom settings) is the staff document: those endpoints only. Each opens with
its introduction (``introduction.md``, ``staff_introduction.md``) and lists its tags in the
order its reader reads them; both carry the error envelope on every operation and the trace
header.

Every text of the documents is written for the API's reader: the operations' summaries and
descriptions, fields' help texts, the tags' descriptions below and the introductions.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from drf_spectacular.utils import OpenApiResponse, extend_schema

from api.envelope import STATUS_TEXTS
from api.serializers import TRACE_PARENT_EXAMPLE
from api.staff import StaffApiView

_Handler = TypeVar("_Handler", bound=Callable[..., Any])

INTRODUCTION = Path(__file__).with_name("introduction.md")
STAFF_INTRODUCTION = Path(__file__).with_name("staff_introduction.md")

# The tags, merchants' first; an operation names one of these.
ORDERS = "Orders"
QUOTES = "Quotes"
PRODUCTS = "Products"
REGISTRATION = "Registration"
SERVICE = "Service"
STAFF_SHIPMENTS = "Staff: shipments and labs"
STAFF_BACKOFFICE = "Staff: back-office tools"
MERCHANT_TAGS = [
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
]
STAFF_TAGS = [
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


def _is_staff_endpoint(endpoint: tuple[str, str, str, Any]) -> bool:
    _path, _regex, _method, callback = endpoint
    return issubclass(getattr(callback, "cls", type(None)), StaffApiView)


def merchant_endpoints(
    endpoints: list[tuple[str, str, str, Any]], **kwargs: Any
) -> list[tuple[str, str, str, Any]]:
    """The merchants' document: every endpoint but the staff ones."""
    return [endpoint for endpoint in endpoints if not _is_staff_endpoint(endpoint)]


def staff_endpoints(
    endpoints: list[tuple[str, str, str, Any]], **kwargs: Any
) -> list[tuple[str, str, str, Any]]:
    """The staff document: the staff endpoints only."""
    return [endpoint for endpoint in endpoints if _is_staff_endpoint(endpoint)]


def add_introduction_and_tags(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    result.setdefault("info", {})["description"] = INTRODUCTION.read_text()
    result["tags"] = MERCHANT_TAGS
    return result


def add_staff_introduction_and_tags(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    result.setdefault("info", {})["description"] = STAFF_INTRODUCTION.read_text()
    result["tags"] = STAFF_TAGS
    return result


# The staff document: the settings that differ from the merchants' (``spectacular
# --custom-settings api.schema.STAFF_DOCUMENT`` writes it).
STAFF_DOCUMENT: dict[str, Any] = {
    "TITLE": "Print Fulfilment Staff API",
    "PREPROCESSING_HOOKS": ["api.schema.staff_endpoints"],
    "APPEND_COMPONENTS": {
        "securitySchemes": {"staffApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}}
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.add_error_responses",
        "api.schema.add_staff_introduction_and_tags",
    ],
}


ERROR_ENVELOPE = {
    "type": "object",
    "description": "Every error response has this shape.",
    "properties": {
        "outcome": {
            "type": "string",
            "enum": list(STATUS_TEXTS),
            "description": "What went wrong, in one word.",
        },
        "statusCode": {"type": "integer", "description": "The HTTP status, repeated."},
        "statusText": {"type": "string", "description": "What went wrong, for a person to read."},
        "data": {
            "type": "object",
            "additionalProperties": {},
            "description": "Details; for ValidationFailed, `failures` maps each field path to "
            "a list of `{code, description}`.",
            "properties": {
                "failures": {
                    "type": "object",
                    "description": "ValidationFailed only: each field path that failed (e.g. "
                    "`items[0].copies`) to what is wrong with it.",
                    "additionalProperties": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "code": {
                                    "type": "string",
                                    "description": "What is wrong, in one word, e.g. `Required`.",
                                },
                                "description": {
                                    "type": "string",
                                    "description": "What is wrong, for a person to read.",
                                },
                            },
                            "required": ["code", "description"],
                        },
                    },
                }
            },
        },
        "traceParent": {
            "type": "string",
            "description": "The W3C trace context of this request, also sent as the "
            "`traceParent` header: quote it when you ask about a request.",
        },
    },
    "required": ["outcome", "statusCode", "statusText", "data", "traceParent"],
    # A real answer: an order with an unknown shipping method and an item without copies.
    "example": {
        "outcome": "ValidationFailed",
        "statusCode": 400,
        "statusText": STATUS_TEXTS["ValidationFailed"],
        "data": {
            "failures": {
                "shippingMethod": [
                    {"code": "InvalidChoice", "description": '"Slow" is not a valid choice.'}
                ],
                "items[0].copies": [
                    {
                        "code": "MinValue",
                        "description": "Ensure this value is greater than or equal to 1.",
                    }
                ],
            }
        },
        "traceParent": TRACE_PARENT_EXAMPLE,
    },
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

# An operation that may ask a lab (``operation(..., lab_calls=True)``) can also be refused at
# once while that lab is busy with other requests.
LAB_BUSY = (
    "ServiceUnavailable: a lab this operation must ask is busy with other requests, and "
    "nothing was done; try again after the seconds of the `Retry-After` header."
)
_RETRY_AFTER_HEADER = {
    "Retry-After": {
        "description": "Seconds to wait before trying again.",
        "schema": {"type": "integer"},
    }
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
            busy = responses.get("503")
            if busy is not None and "content" not in busy:
                busy["content"] = {"application/json": {"schema": ref}}
                busy.setdefault("headers", {}).update(_RETRY_AFTER_HEADER)
            for response in responses.values():
                response.setdefault("headers", {}).update(_TRACE_HEADER)
    return result


def operation(
    tag: str,
    operation_id: str,
    summary: str,
    response: Any,
    *,
    lab_calls: bool = False,
    **more: Any,
) -> Callable[[_Handler], _Handler]:
    """The schema of an operation with one success response; the error envelope is added later.
    ``lab_calls``: the operation may ask a lab, so it may be refused with 503 (``LAB_BUSY``)."""
    responses: dict[int, Any] = {200: response}
    if lab_calls:
        responses[503] = OpenApiResponse(description=LAB_BUSY)
    return extend_schema(
        tags=[tag], operation_id=operation_id, summary=summary, responses=responses, **more
    )
