"""Staff endpoints on one shipment: its lab's capabilities, the five lab operations and the
JSON its lab is sent. Authenticated by a staff key or a staff admin session
(``StaffApiViewSet``)."""

from collections.abc import Callable
from typing import Any, Literal

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.decorators import action
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from api.schema import STAFF_SHIPMENTS, operation
from api.staff import StaffApiViewSet
from common.errors import ValidationFailed
from common.ids import PREFIXES, parse_id
from orders import inputs, shipments
from orders.api import serializers as s
from orders.lab_bulkhead import shipment_lab_web_places
from orders.models import Shipment
from orders.representation import shipment_representation
from orders.selectors import shipment_get

PATH_IDS = [
    OpenApiParameter(
        "orderId", OpenApiTypes.STR, OpenApiParameter.PATH, description="`ord_123` or `123`."
    ),
    OpenApiParameter(
        "shipmentId", OpenApiTypes.STR, OpenApiParameter.PATH, description="`shp_456` or `456`."
    ),
]


def _shipment(orderId: str, shipmentId: str) -> Shipment:
    order_id = parse_id(PREFIXES["order"], orderId, field="orderId", allow_bare=True)
    shipment_id = parse_id(PREFIXES["shipment"], shipmentId, field="shipmentId", allow_bare=True)
    return shipment_get(order_id=order_id, shipment_id=shipment_id)


def _no_body(request: Request) -> None:
    """``cancel``, ``hold`` and ``unhold`` take no body, or ``{}``."""
    if request.data in (None, {}) or (isinstance(request.data, dict) and not request.data):
        return
    if not isinstance(request.data, dict):
        raise ValidationFailed.single("body", "Invalid", "The body must be empty or {}.")
    raise ValidationFailed({k: [("UnknownField", "Unknown field.")] for k in request.data})


def _input(serializer_class: type[s.StrictSerializer], request: Request) -> Any:
    if not isinstance(request.data, dict):
        raise ValidationFailed.single("body", "Invalid", "The body must be a JSON object.")
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class ExactJsonRenderer(JSONRenderer):
    """The body exactly as given: no ``traceParent`` added (it is in the response header)."""

    charset = "utf-8"


def _operation_response(
    operation: str, shipment: Shipment, run: Callable[[], shipments.ShipmentOperationResult]
) -> Response:
    """Run the operation holding its lab's place in the web tier's bulkhead (``LabBusy``, a
    503, when the lab's places are taken) and answer what it did."""
    with shipment_lab_web_places(shipment=shipment):
        outcome = run()
    shipment = outcome.shipment
    return Response(
        {
            "success": outcome.successful,
            "message": outcome.message,
            "result": {
                "shipmentId": shipment.public_id,
                "labCode": shipment.lab_code,
                "labOrderReference": shipment.lab_order_reference,
                "operation": operation,
                "shipment": shipment_representation(shipment),
            },
        }
    )


def _operation_schema(name: str, summary: str, request: Any = None) -> Any:
    return operation(
        STAFF_SHIPMENTS,
        f"shipments_{name}",
        f"{summary} (staff)",
        s.ShipmentOperationResponse,
        description="200 for a valid request: `success` says whether the lab made the "
        "change, `message` why not (capability missing, not at a lab yet, shipped or "
        "cancelled, refused by the lab). While the shipment's lab is busy with other requests "
        "(a slow site), `503 ServiceUnavailable` at once, nothing sent to the lab.",
        request=request,
        parameters=PATH_IDS,
        lab_calls=True,
    )


# What the admin needs to show a shipment and its order (the recipient), and to operate on it.
VIEW_SHIPMENT = ("orders.view_order", "orders.view_shipment")
OPERATE_SHIPMENT = (*VIEW_SHIPMENT, "orders.operate_shipment")


def _shipment_action(
    url_path: str,
    name: str,
    method: Literal["get", "post"] = "post",
    staff_permissions: tuple[str, ...] = OPERATE_SHIPMENT,
    **more: Any,
) -> Any:
    """The route ``orders/{orderId}/shipments/{shipmentId}/{url_path}``, audited as
    ``shipment.{url_path}``, for staff with ``staff_permissions``; ``name`` is its view's name
    (OPTIONS shows it)."""
    return action(
        detail=True,
        methods=[method],
        url_path=url_path,
        name=name,
        audit_operation=f"shipment.{url_path}",
        staff_permissions=staff_permissions,
        **more,
    )


def _bodyless_operation(
    request: Request,
    orderId: str,
    shipmentId: str,
    operation: str,
    service: Callable[..., shipments.ShipmentOperationResult],
) -> Response:
    """``cancel``, ``hold`` and ``unhold``: no body, or ``{}``."""
    shipment = _shipment(orderId, shipmentId)
    _no_body(request)
    return _operation_response(operation, shipment, lambda: service(shipment=shipment))


class ShipmentViewSet(StaffApiViewSet):
    # /v4.0/orders/{orderId}/shipments/{shipmentId}/...: the lab's capabilities, the JSON it
    # is sent, and the five operations at the lab (shipment services in orders.shipments).
    lookup_field = "shipmentId"
    lookup_value_converter = "str"

    def audit_target(self, **kwargs: Any) -> str:
        return f"order {kwargs.get('orderId', '')} shipment {kwargs.get('shipmentId', '')}"

    @operation(
        STAFF_SHIPMENTS,
        "shipments_fulfilment_location_capabilities",
        "What the shipment's lab can do to it (staff)",
        s.ShipmentCapabilitiesResponse,
        parameters=PATH_IDS,
    )
    @_shipment_action(
        "fulfilmentLocationCapabilities",
        "Shipment Capabilities",
        method="get",
        staff_permissions=VIEW_SHIPMENT,
    )
    def capabilities(self, request: Request, orderId: str, shipmentId: str) -> Response:
        shipment = _shipment(orderId, shipmentId)
        result = {
            "labCode": shipment.lab_code,
            "countryCode": shipment.lab_country_code,
            "capabilities": shipments.shipment_capabilities(shipment),
        }
        return Response({"success": True, "result": result, "message": ""})

    @operation(
        STAFF_SHIPMENTS,
        "shipments_maptojson",
        "The JSON the shipment's lab connector sends to submit it (staff)",
        s.LabOrderJson,
        description="Exactly the connector's JSON (no `traceParent` in the body; it is in the "
        "`traceParent` header). Its shape is the connector's: the simulator's is shown.",
        parameters=[
            *PATH_IDS,
            OpenApiParameter(
                "includeNulls",
                OpenApiTypes.BOOL,
                OpenApiParameter.QUERY,
                description="false removes null-valued keys at every depth (default true).",
            ),
        ],
    )
    @_shipment_action(
        "maptojson",
        "Shipment Lab Json",
        method="get",
        staff_permissions=VIEW_SHIPMENT,
        renderer_classes=[ExactJsonRenderer],
    )
    def lab_json(self, request: Request, orderId: str, shipmentId: str) -> Response:
        shipment = _shipment(orderId, shipmentId)
        value = request.query_params.get("includenulls")
        if value is None or value.lower() in ("true", "1"):
            include_nulls = True
        elif value.lower() in ("false", "0"):
            include_nulls = False
        else:
            raise ValidationFailed.single("includeNulls", "Invalid", "Must be true or false.")
        return Response(shipments.shipment_lab_json(shipment=shipment, include_nulls=include_nulls))

    @_operation_schema("cancel", "Cancel the shipment at its lab")
    @_shipment_action("cancel", "Shipment Cancel", body_required=())
    def cancel(self, request: Request, orderId: str, shipmentId: str) -> Response:
        return _bodyless_operation(
            request, orderId, shipmentId, "cancel", shipments.shipment_cancel
        )

    @_operation_schema("hold", "Stop the shipment's production until unhold")
    @_shipment_action("hold", "Shipment Hold", body_required=())
    def hold(self, request: Request, orderId: str, shipmentId: str) -> Response:
        return _bodyless_operation(request, orderId, shipmentId, "hold", shipments.shipment_hold)

    @_operation_schema("unhold", "Release the shipment's hold")
    @_shipment_action("unhold", "Shipment Unhold", body_required=())
    def unhold(self, request: Request, orderId: str, shipmentId: str) -> Response:
        return _bodyless_operation(
            request, orderId, shipmentId, "unhold", shipments.shipment_unhold
        )

    @_operation_schema(
        "updateAddress", "Change the lab order's address", request=s.ShipmentAddressInput
    )
    @_shipment_action("updateAddress", "Shipment Update Address")
    def update_address(self, request: Request, orderId: str, shipmentId: str) -> Response:
        shipment = _shipment(orderId, shipmentId)
        address = dict(_input(s.ShipmentAddressInput, request)["address"])
        return _operation_response(
            "updateAddress",
            shipment,
            lambda: shipments.shipment_update_address(shipment=shipment, address=address),
        )

    @_operation_schema(
        "updateShippingMethod",
        "Change the lab order's shipping method and carrier",
        request=inputs.ShippingMethodInput,
    )
    @_shipment_action("updateShippingMethod", "Shipment Update Shipping Method")
    def update_shipping_method(self, request: Request, orderId: str, shipmentId: str) -> Response:
        shipment = _shipment(orderId, shipmentId)
        method = _input(inputs.ShippingMethodInput, request)["shippingMethod"]
        return _operation_response(
            "updateShippingMethod",
            shipment,
            lambda: shipments.shipment_update_shipping_method(
                shipment=shipment, shipping_method=method
            ),
        )
