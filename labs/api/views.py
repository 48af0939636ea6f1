"""Staff endpoint: what a lab's connector can do to lab orders after submission."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.schema import STAFF_SHIPMENTS, operation
from api.staff import StaffApiViewSet
from common.errors import EntityNotFound
from labs.api.serializers import LabCapabilitiesResponse
from labs.capabilities import capabilities_listed
from labs.selectors import lab_get

LAB_CODE = OpenApiParameter(
    "labCode", OpenApiTypes.STR, OpenApiParameter.PATH, description="A lab code, e.g. `gb1`."
)


class FulfilmentLocationViewSet(StaffApiViewSet):
    # GET /v4.0/fulfilmentLocations/{labCode}/capabilities: whoever may view labs.
    staff_permissions = ("labs.view_lab",)
    lookup_field = "labCode"
    lookup_value_converter = "str"

    @operation(
        STAFF_SHIPMENTS,
        "fulfilment_locations_capabilities",
        "What a lab can do to its lab orders (staff)",
        LabCapabilitiesResponse,
        parameters=[LAB_CODE],
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="capabilities",
        name="Lab Capabilities",
        audit_operation="fulfilmentLocation.capabilities",
    )
    def capabilities(self, request: Request, labCode: str) -> Response:
        lab = lab_get(code=labCode)
        if lab is None:
            raise EntityNotFound(f"No lab {labCode}.")
        capabilities = capabilities_listed(lab.capabilities)
        return Response({"success": True, "result": {"capabilities": capabilities}, "message": ""})
