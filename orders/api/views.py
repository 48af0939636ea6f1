"""The order endpoints: input serializer validates, a service acts, the representation renders."""

import re
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urlencode

import orjson
from django.http import HttpRequest
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, PolymorphicProxySerializer
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from api.authentication import client_environment
from api.schema import ORDERS, operation
from api.views import ApiViewSet, validated_input
from common.errors import EntityNotFound, ValidationFailed
from common.ids import PREFIXES, format_id, parse_id
from orders import actions, inputs
from orders.api import serializers as s
from orders.creation import order_create, order_validate
from orders.document import order_document_text, orders_documents_texts
from orders.lab_bulkhead import order_lab_web_places
from orders.models import Order, Stage
from orders.selectors import LIST_STATUS_STAGES, OrderFilter, order_get, order_list

CREATE_EXAMPLE = OpenApiExample(
    "A canvas to London",
    request_only=True,
    value={
        "merchantReference": "MR-1001",
        "idempotencyKey": "6f1c3a52-3c1e-4f7e-9b57-1c2d3e4f5a6b",
        "shippingMethod": "Standard",
        "callbackUrl": "https://shop.example.com/hooks/print",
        "recipient": {
            "name": "Ada Lovelace",
            "email": "ada@example.com",
            "address": {
                "line1": "1 Analytical Row",
                "postalOrZipCode": "SW1A 1AA",
                "countryCode": "GB",
                "townOrCity": "London",
            },
        },
        "items": [
            {
                "sku": "GLOBAL-CAN-10X10",
                "copies": 1,
                "sizing": "fillPrintArea",
                "attributes": {"wrap": "ImageWrap"},
                "assets": [{"printArea": "default", "url": "https://images.example.com/cat.jpg"}],
            }
        ],
        "metadata": {"channel": "web"},
    },
)
# The answer to CREATE_EXAMPLE as the service gives it.
CREATED_EXAMPLE = OpenApiExample(
    "The order created",
    response_only=True,
    status_codes=["200"],
    value={
        "outcome": "Created",
        "order": {
            "id": "ord_228581578850473471",
            "omsId": None,
            "created": "2026-11-28T01:26:20.953Z",
            "lastUpdated": "2026-11-28T01:26:20.953Z",
            "callbackUrl": "https://shop.example.com/hooks/print",
            "merchantReference": "MR-1001",
            "shippingMethod": "Standard",
            "idempotencyKey": "6f1c3a52-3c1e-4f7e-9b57-1c2d3e4f5a6b",
            "status": {
                "stage": "InProgress",
                "details": {
                    "downloadAssets": "NotStarted",
                    "allocateProductionLocation": "NotStarted",
                    "printReadyAssetsPrepared": "NotStarted",
                    "inProduction": "NotStarted",
                    "shipping": "NotStarted",
                },
                "issues": [],
            },
            "charges": [],
            "shipments": [],
            "recipient": {
                "name": "Ada Lovelace",
                "email": "ada@example.com",
                "phoneNumber": None,
                "address": {
                    "line1": "1 Analytical Row",
                    "line2": None,
                    "postalOrZipCode": "SW1A 1AA",
                    "countryCode": "GB",
                    "townOrCity": "London",
                    "stateOrCounty": None,
                },
            },
            "items": [
                {
                    "id": "ori_228581578850473472",
                    "omsId": None,
                    "status": "NotYetDownloaded",
                    "merchantReference": None,
                    "sku": "GLOBAL-CAN-10X10",
                    "copies": 1,
                    "sizing": "fillPrintArea",
                    "thumbnailUrl": None,
                    "attributes": {"wrap": "ImageWrap"},
                    "spine": None,
                    "assets": [
                        {
                            "id": "ast_228581578850473473",
                            "omsId": None,
                            "printArea": "default",
                            "status": "InProgress",
                            "url": "https://images.example.com/cat.jpg",
                            "thumbnailUrl": None,
                            "md5Hash": None,
                            "pageCount": None,
                        }
                    ],
                    "recipientCost": None,
                }
            ],
            "packingSlip": None,
            "branding": None,
            "metadata": {"channel": "web"},
            "tag": None,
            "usSalesTaxAlreadyCollected": False,
        },
        "traceParent": "00-44df3f96e56b6184e82d1330c1baae90-a08d7e9e3ba8736e-01",
    },
)
ORDER_ID = OpenApiParameter(
    "orderId", OpenApiTypes.STR, OpenApiParameter.PATH, description="An `ord_` id."
)
_View = TypeVar("_View", bound=Callable[..., Response])


def _order_operation(
    operation_id: str, summary: str, response: type[Serializer], **more: Any
) -> Callable[[_View], _View]:
    """An operation on one order: the ``orderId`` path parameter, one 200 response."""
    return operation(ORDERS, operation_id, summary, response, parameters=[ORDER_ID], **more)


def _base_url(request: HttpRequest | Request) -> str:
    return request.build_absolute_uri("/").rstrip("/")


def _document(request: Request, order_id: int) -> orjson.Fragment:
    """The order's stored document (``orders.document``), sent as it is stored."""
    text = order_document_text(environment_id=client_environment(request).id, order_id=order_id)
    if text is None:
        raise EntityNotFound(f"No order {Order(id=order_id).public_id} in this environment.")
    return orjson.Fragment(text)


def _order(request: Request, order_id: str) -> Order:
    number = parse_id(PREFIXES["order"], order_id, field="orderId")
    return order_get(environment=client_environment(request), order_id=number)


def _flag(value: str | None, *, name: str) -> bool:
    if value is None or value.lower() in ("false", "0", ""):
        return False
    if value.lower() in ("true", "1"):
        return True
    raise ValidationFailed.single(name, "Invalid", "Must be true or false.")


MAX_SKIP = 10**9


def _int(params: Any, name: str, key: str, default: int, low: int, high: int | None) -> int:
    raw = params.get(key)
    if raw is None or raw == "":
        return default
    if not re.fullmatch(r"-?[0-9]{1,18}", raw):
        raise ValidationFailed.single(name, "Invalid", f"'{raw}' is not an integer.")
    value = int(raw)
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ValidationFailed.single(name, "OutOfRange", f"{name} must be {bound}.")
    return value


def _when(params: Any, name: str, key: str) -> datetime | None:
    raw = params.get(key)
    if not raw:
        return None
    invalid = ValidationFailed.single(name, "Invalid", f"'{raw}' is not an ISO 8601 date-time.")
    try:
        value = parse_datetime(raw.replace(" ", "+"))  # a '+' in a query string arrives as ' '
        if value is None:
            raise invalid
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)  # the database takes UTC; odd offsets fail here
    except (ValueError, OverflowError):
        raise invalid from None
    return value


def _list(params: Any, key: str) -> list[str]:
    return [v for raw in params.getlist(key) for v in raw.split(",") if v.strip()]


def parse_list_query(request: Request) -> OrderFilter:
    params = request.query_params
    failures: dict[str, list[tuple[str, str]]] = {}

    def attempt(parse: Callable[[], Any]) -> Any:
        try:
            return parse()
        except ValidationFailed as exc:
            for path, items in exc.failures.items():
                failures.setdefault(path, []).extend(items)
            return None

    top = attempt(lambda: _int(params, "top", "top", 10, 1, 100))
    skip = attempt(lambda: _int(params, "skip", "skip", 0, 0, MAX_SKIP))
    created_from = attempt(lambda: _when(params, "createdFrom", "createdfrom"))
    created_to = attempt(lambda: _when(params, "createdTo", "createdto"))
    status = None
    raw_status = params.get("status")
    if raw_status:
        known = {k.lower(): k for k in LIST_STATUS_STAGES}
        status = known.get(raw_status.lower())
        if status is None:
            failures.setdefault("status", []).append(
                (
                    "InvalidChoice",
                    f"'{raw_status}' is not one of {', '.join(sorted(known.values()))}.",
                )
            )
    order_ids = []
    for index, raw in enumerate(_list(params, "orderids")):
        number = attempt(partial(parse_id, PREFIXES["order"], raw, field=f"orderIds[{index}]"))
        if number is not None:
            order_ids.append(number)
    cursor = params.get("cursor")
    before_id = (
        attempt(lambda: parse_id(PREFIXES["order"], cursor, field="cursor")) if cursor else None
    )
    if failures:
        raise ValidationFailed(failures)
    return OrderFilter(
        top=top,
        skip=skip,
        before_id=before_id,
        created_from=created_from,
        created_to=created_to,
        status=status,
        order_ids=tuple(order_ids),
        merchant_references=tuple(_list(params, "merchantreferences")),
    )


def _next_url(request: Request, filters: OrderFilter, *, last_id: int) -> str:
    query: list[tuple[str, str]] = [
        ("top", str(filters.top)),
        ("skip", str(filters.skip + filters.top)),
    ]
    if filters.created_from:
        query.append(("createdFrom", filters.created_from.isoformat()))
    if filters.created_to:
        query.append(("createdTo", filters.created_to.isoformat()))
    if filters.status:
        query.append(("status", filters.status))
    query += [("orderIds", format_id(PREFIXES["order"], i)) for i in filters.order_ids]
    query += [("merchantReferences", r) for r in filters.merchant_references]
    query.append(("cursor", format_id(PREFIXES["order"], last_id)))
    return f"{_base_url(request)}/v4.0/orders?{urlencode(query)}"


def _action_response(
    request: Request,
    order: Order,
    result: actions.ActionResult,
    results_under: tuple[str, ...] = (),
) -> Response:
    """The outcome and the order as it is after the action, with per-shipment results."""
    body: dict[str, Any] = {"outcome": result.outcome, "order": _document(request, order.id)}
    for key in results_under:
        body[key] = [r.as_dict() for r in result.shipment_results]
    return Response(body)


def _yes(value: bool) -> dict[str, str]:
    return {"isAvailable": "Yes" if value else "No"}


# The specification names the per-shipment array of a shipping method change both ways;
# clients read either.
SHIPPING_RESULTS = ("shipmentUpdateResults", "shippingUpdateResults")


def _shipping_method_update(request: Request, orderId: str) -> Response:
    order = _order(request, orderId)
    data = validated_input(inputs.ShippingMethodInput, request)
    with order_lab_web_places(order=order):
        result = actions.order_update_shipping_method(
            order=order, shipping_method=data["shippingMethod"]
        )
    return _action_response(request, order, result, SHIPPING_RESULTS)


class OrderViewSet(ApiViewSet):
    # GET and POST /v4.0/orders, GET /v4.0/orders/{orderId}, and the order's actions: what is
    # available (GET .../actions, from what is recorded) and the changes (POST
    # .../actions/{action}). Each change validates its body, takes its labs' places in the web
    # tier's bulkhead (orders.lab_bulkhead), calls its service in orders.actions and answers
    # the order as it is after the change. No docstring: the schema would publish it as the
    # operations' description. The route names are the views' names before viewsets (OPTIONS
    # shows them).
    lookup_field = "orderId"
    lookup_value_converter = "str"
    route_options = {
        "list": {"name": "Orders", "body_required": ("POST",)},
        "detail": {"name": "Order Detail"},
    }

    @operation(
        ORDERS,
        "orders_create",
        "Create an order",
        PolymorphicProxySerializer(
            component_name="OrderCreateResult",
            serializers=[s.OrderResponse, s.OnHoldResponse, s.ValidationOnlyResponse],
            resource_type_field_name=None,
        ),
        request=inputs.OrderCreateInput,
        description=(
            "Checks the whole order at once (SKUs, attributes, print areas, the destination and "
            "shipping method) and answers with the order as stored, or `400 ValidationFailed` "
            "listing every problem. Processing starts at once: the assets are downloaded, a lab "
            "is chosen, print-ready files are made and the lab produces and ships; follow it "
            "with `GET /v4.0/orders/{orderId}` or your callbacks. With a pause window set in the "
            "dashboard the answer is `OnHold` with only the order's id. Send an "
            "`idempotencyKey` so that a retried create never makes a second order."
        ),
        parameters=[
            OpenApiParameter(
                "validationOnly",
                OpenApiTypes.BOOL,
                OpenApiParameter.QUERY,
                description="Only validate the order; nothing is stored.",
            )
        ],
        examples=[CREATE_EXAMPLE, CREATED_EXAMPLE],
    )
    def create(self, request: Request) -> Response:
        if not isinstance(request.data, dict):
            raise ValidationFailed.single("body", "Invalid", "The body must be a JSON object.")
        data = validated_input(inputs.OrderCreateInput, request)
        if _flag(request.query_params.get("validationonly"), name="validationOnly"):
            environment = client_environment(request)
            order_validate(
                data=data,
                currency=environment.merchant.billing_currency,
                sandbox=environment.is_sandbox,
            )
            return Response({"outcome": "Ok"})
        result = order_create(environment=client_environment(request), data=data)
        if result.order.stage == Stage.ON_HOLD:
            # A paused order shows only its id, also when an idempotent retry finds it.
            return Response({"outcome": result.outcome, "order": {"id": result.order.public_id}})
        if result.parts is not None:  # just written: its document is in memory
            document = orjson.Fragment(result.order.document)
        else:
            document = _document(request, result.order.id)
        return Response({"outcome": result.outcome, "order": document})

    @operation(
        ORDERS,
        "orders_list",
        "List orders, newest first",
        s.OrderListResponse,
        description=(
            "Your orders in the key's environment, newest first, `top` at a time. When "
            "`hasMore` is true, `nextUrl` fetches the next page (follow it rather than raising "
            "`skip`: it stays fast however deep you go). Filters combine: all must match."
        ),
        parameters=[
            OpenApiParameter(
                "top", OpenApiTypes.INT, description="Page size, 1 to 100 (default 10)."
            ),
            OpenApiParameter("skip", OpenApiTypes.INT, description="Orders to skip (default 0)."),
            OpenApiParameter(
                "createdFrom", OpenApiTypes.DATETIME, description="Placed after this instant."
            ),
            OpenApiParameter(
                "createdTo", OpenApiTypes.DATETIME, description="Placed before this instant."
            ),
            OpenApiParameter(
                "status",
                OpenApiTypes.STR,
                enum=["draft", "awaitingPayment", "inProgress", "complete", "cancelled"],
                description="Only orders at this stage (any letter case).",
            ),
            OpenApiParameter(
                "orderIds", OpenApiTypes.STR, many=True, description="Repeat or use orderIds[]."
            ),
            OpenApiParameter(
                "merchantReferences",
                OpenApiTypes.STR,
                many=True,
                description="Only orders with these references of yours; repeat for several.",
            ),
            OpenApiParameter(
                "cursor",
                OpenApiTypes.STR,
                description="Set by nextUrl: continue after this order id (skip is then ignored).",
            ),
        ],
    )
    def list(self, request: Request) -> Response:
        filters = parse_list_query(request)
        page = orders_documents_texts(
            order_list(environment=client_environment(request), filters=filters)
        )
        has_more = len(page) > filters.top
        page = page[: filters.top]
        next_url = _next_url(request, filters, last_id=page[-1][0]) if has_more else None
        return Response(
            {
                "outcome": "Ok",
                "orders": [orjson.Fragment(text) for _, text in page],
                "hasMore": has_more,
                "nextUrl": next_url,
            }
        )

    @_order_operation(
        "orders_get",
        "Get an order",
        s.OrderResponse,
        description=(
            "The order as it is now: `status.stage`, the progress of each processing step in "
            "`status.details`, any issues, its items with thumbnails, shipments with tracking, "
            "and charges."
        ),
    )
    def retrieve(self, request: Request, orderId: str) -> Response:
        number = parse_id(PREFIXES["order"], orderId, field="orderId")
        return Response({"outcome": "Ok", "order": _document(request, number)})

    @_order_operation(
        "orders_actions",
        "Which actions are available",
        s.ActionsResponse,
        description=(
            "For each action, `Yes` or `No`: orders can be changed while they are on hold or in "
            "progress, and each shipment until its lab starts production (as its lab last "
            "reported; the action itself asks the lab again)."
        ),
    )
    @action(detail=True, methods=["get"], url_path="actions", name="Order Actions")
    def available_actions(self, request: Request, orderId: str) -> Response:
        order = _order(request, orderId)
        available = actions.actions_available(order)  # what is recorded: no lab is asked
        return Response({"outcome": "Ok", **{name: _yes(flag) for name, flag in available.items()}})

    @_order_operation(
        "orders_cancel",
        "Cancel the order",
        s.CancelResponse,
        request=None,
        description=(
            "Before a lab has started on it the order is `Cancelled` and refunded in full "
            "(each refund a `Refund` charge; an order paid by card gets back all it paid, and "
            "a `RequiresPaymentAuthorisation` issue goes); "
            "once a shipment is in production or shipped, `FailedToCancel`; an order already "
            "complete or cancelled, `ActionNotAvailable`. No body."
        ),
        lab_calls=True,
    )
    @action(
        detail=True, methods=["post"], url_path="actions/cancel", name="Cancel", body_required=()
    )
    def cancel(self, request: Request, orderId: str) -> Response:
        order = _order(request, orderId)
        if isinstance(request.data, dict) and request.data:
            raise ValidationFailed({k: [("UnknownField", "Unknown field.")] for k in request.data})
        with order_lab_web_places(order=order):
            result = actions.order_cancel(order=order)
        return _action_response(request, order, result)

    @_order_operation(
        "orders_update_shipping_method",
        "Change the shipping method",
        s.ShippingUpdateResponse,
        request=inputs.ShippingMethodInput,
        description=(
            "Every shipment that has not started production moves to the new method, priced "
            "again; the answer lists each shipment's result. " + s.CARD_COST_CHANGES
        ),
        lab_calls=True,
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="actions/updateShippingMethod",
        name="Update Shipping Method",
    )
    def update_shipping_method(self, request: Request, orderId: str) -> Response:
        return _shipping_method_update(request, orderId)

    @_order_operation(
        "orders_update_shipping",
        "Alias of updateShippingMethod",
        s.ShippingUpdateResponse,
        request=inputs.ShippingMethodInput,
        lab_calls=True,
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="actions/updateShipping",
        name="Update Shipping Alias",
    )
    def update_shipping(self, request: Request, orderId: str) -> Response:
        return _shipping_method_update(request, orderId)

    @_order_operation(
        "orders_update_recipient",
        "Change the recipient",
        s.RecipientUpdateResponse,
        request=inputs.RecipientUpdateInput,
        description=(
            "The body is the new recipient itself (name, email, phone number, address), not "
            "wrapped in another object. Each shipment that has not started production gets it; "
            "the answer lists each shipment's result. " + s.CARD_COST_CHANGES
        ),
        lab_calls=True,
    )
    @action(
        detail=True, methods=["post"], url_path="actions/updateRecipient", name="Update Recipient"
    )
    def update_recipient(self, request: Request, orderId: str) -> Response:
        order = _order(request, orderId)
        data = validated_input(inputs.RecipientUpdateInput, request)
        with order_lab_web_places(order=order):
            result = actions.order_update_recipient(order=order, recipient=dict(data))
        return _action_response(request, order, result, ("shipmentUpdateResults",))

    @_order_operation(
        "orders_update_metadata",
        "Replace the metadata",
        s.MetadataUpdateResponse,
        request=inputs.MetadataInput,
        description="Your own data on the order, replaced whole (at most 2,000 characters).",
    )
    @action(
        detail=True, methods=["post"], url_path="actions/updateMetadata", name="Update Metadata"
    )
    def update_metadata(self, request: Request, orderId: str) -> Response:
        order = _order(request, orderId)
        data = validated_input(inputs.MetadataInput, request)
        result = actions.order_update_metadata(order=order, metadata=data["metadata"])
        return _action_response(request, order, result)
