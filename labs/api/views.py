"""Staff endpoint: what a lab's connector can do to lab orders after submission."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response

from api.schema import operation
from api.staff import StaffApiView
from common.errors import EntityNotFound
from labs.api.serializers import LabCapabilitiesResponse
from labs.capabilities import capabilities_listed
from labs.selectors import lab_get

LAB_CODE = OpenApiParameter(
    "labCode", OpenApiTypes.STR, OpenApiParameter.PATH, description="A lab code, e.g. `gb1`."
)


class LabCapabilitiesView(StaffApiView):
    audit_operation = "fulfilmentLocation.capabilities"

    @operation(
        "Lab capabilities and shipment operations",
        "fulfilment_locations_capabilities",
        "What a lab can do to its lab orders (staff)",
        LabCapabilitiesResponse,
        parameters=[LAB_CODE],
    )
    def get(self, request: Request, labCode: str) -> Response:
        lab = lab_get(code=labCode)
        if lab is None:
            raise EntityNotFound(f"No lab {labCode}.")
        capabilities = capabilities_listed(lab.capabilities)
        return Response({"success": True, "result": {"capabilities": capabilities}, "message": ""})
