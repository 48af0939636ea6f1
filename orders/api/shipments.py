"""Staff endpoints on one shipment: its lab's capabilities, the five lab operations and the
JSON its lab is sent. Authenticated by a staff key or a staff admin session (``StaffApiView``)."""

from collections.abc import Callable
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from api.schema import operation
from api.staff import StaffApiView
from common.errors import ValidationFailed
from common.ids import PREFIXES, parse_id
from orders import shipments
from orders.api import serializers as s
from orders.models import Shipment
from orders.representation import shipment_representation
from orders.selectors import shipment_get

TAG_NAME = "Lab capabilities and shipment operations"
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


class ShipmentStaffView(StaffApiView):
    def audit_target(self, **kwargs: Any) -> str:
        return f"order {kwargs.get('orderId', '')} shipment {kwargs.get('shipmentId', '')}"


class ShipmentCapabilitiesView(ShipmentStaffView):
    audit_operation = "shipment.fulfilmentLocationCapabilities"

    @operation(
        TAG_NAME,
        "shipments_fulfilment_location_capabilities",
        "What the shipment's lab can do to it (staff)",
        s.ShipmentCapabilitiesResponse,
        parameters=PATH_IDS,
    )
    def get(self, request: Request, orderId: str, shipmentId: str) -> Response:
        shipment = _shipment(orderId, shipmentId)
        result = {
            "labCode": shipment.lab_code,
            "countryCode": shipment.lab_country_code,
            "capabilities": shipments.shipment_capabilities(shipment),
        }
        return Response({"success": True, "result": result, "message": ""})


class ExactJsonRenderer(JSONRenderer):
    """The body exactly as given: no ``traceParent`` added (it is in the response header)."""

    charset = "utf-8"


class ShipmentLabJsonView(ShipmentStaffView):
    audit_operation = "shipment.maptojson"
    renderer_classes = [ExactJsonRenderer]

    @operation(
        TAG_NAME,
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
    def get(self, request: Request, orderId: str, shipmentId: str) -> Response:
        shipment = _shipment(orderId, shipmentId)
        value = request.query_params.get("includenulls")
        if value is None or value.lower() in ("true", "1"):
            include_nulls = True
        elif value.lower() in ("false", "0"):
            include_nulls = False
        else:
            raise ValidationFailed.single("includeNulls", "Invalid", "Must be true or false.")
        return Response(shipments.shipment_lab_json(shipment=shipment, include_nulls=include_nulls))


def _operation_response(
    operation: str, run: Callable[[], shipments.ShipmentOperationResult]
) -> Response:
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
        TAG_NAME,
        f"shipments_{name}",
        f"{summary} (staff)",
        s.ShipmentOperationResponse,
        description="Always 200 for a valid request: `success` says whether the lab made the "
        "change, `message` why not (capability missing, not at a lab yet, shipped or "
        "cancelled, refused by the lab).",
        request=request,
        parameters=PATH_IDS,
    )


def _bodyless_operation_view(
    operation: str, summary: str, service: Callable[..., Any]
) -> type[ShipmentStaffView]:
    """The view of an operation that takes no body: cancel, hold, unhold."""

    class View(ShipmentStaffView):
        audit_operation = f"shipment.{operation}"
        body_required = ()

        @_operation_schema(operation, summary)
        def post(self, request: Request, orderId: str, shipmentId: str) -> Response:
            shipment = _shipment(orderId, shipmentId)
            _no_body(request)
            return _operation_response(operation, lambda: service(shipment=shipment))

    View.__name__ = View.__qualname__ = f"Shipment{operation.capitalize()}View"
    return View


ShipmentCancelView = _bodyless_operation_view(
    "cancel", "Cancel the shipment at its lab", shipments.shipment_cancel
)
ShipmentHoldView = _bodyless_operation_view(
    "hold", "Stop the shipment's production until unhold", shipments.shipment_hold
)
ShipmentUnholdView = _bodyless_operation_view(
    "unhold", "Release the shipment's hold", shipments.shipment_unhold
)


class ShipmentUpdateAddressView(ShipmentStaffView):
    audit_operation = "shipment.updateAddress"

    @_operation_schema(
        "updateAddress", "Change the lab order's address", request=s.ShipmentAddressInput
    )
    def post(self, request: Request, orderId: str, shipmentId: str) -> Response:
        shipment = _shipment(orderId, shipmentId)
        address = dict(_input(s.ShipmentAddressInput, request)["address"])
        return _operation_response(
            "updateAddress",
            lambda: shipments.shipment_update_address(shipment=shipment, address=address),
        )


class ShipmentUpdateShippingMethodView(ShipmentStaffView):
    audit_operation = "shipment.updateShippingMethod"

    @_operation_schema(
        "updateShippingMethod",
        "Change the lab order's shipping method and carrier",
        request=s.ShippingMethodInput,
    )
    def post(self, request: Request, orderId: str, shipmentId: str) -> Response:
        shipment = _shipment(orderId, shipmentId)
        method = _input(s.ShippingMethodInput, request)["shippingMethod"]
        return _operation_response(
            "updateShippingMethod",
            lambda: shipments.shipment_update_shipping_method(
                shipment=shipment, shipping_method=method
            ),
        )
