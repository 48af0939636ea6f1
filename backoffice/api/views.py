"""The micro-ui endpoints: bulk resubmission from a sheet (any staff) and the Site Flow bulk
shipping update (administrators). Staff key or staff admin session (``StaffApiView``)."""

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response

from api.permissions import IsAdministrator, IsStaff
from api.schema import operation
from api.staff import StaffApiView
from api.views import validated_input
from backoffice import services
from backoffice.api import serializers as s
from backoffice.jobs import Source
from backoffice.models import CancelOption
from backoffice.resubmission import rows_assess
from backoffice.rows import SheetRow
from common.errors import ValidationFailed
from common.shipping import ShippingMethod
from labs.allocation import canonical_method
from labs.models import Lab

TAG_NAME = "Administrative operations"
SHEET_PARAMETERS = [
    OpenApiParameter(
        "SpreadsheetId",
        OpenApiTypes.STR,
        OpenApiParameter.QUERY,
        required=True,
        description="The Google spreadsheet's id.",
    ),
    OpenApiParameter(
        "WorksheetName",
        OpenApiTypes.STR,
        OpenApiParameter.QUERY,
        required=True,
        description="The worksheet's title.",
    ),
]


def _query_source(request: Request) -> Source:
    """The spreadsheet named by the query (parameter names in any letter case)."""
    params = {k.lower(): str(v) for k, v in request.query_params.items()}
    failures = {}
    for name in ("spreadsheetId", "worksheetName"):
        if not params.get(name.lower(), "").strip():
            failures[name] = [("Required", "This query parameter is required.")]
    if failures:
        raise ValidationFailed(failures)
    return Source(
        spreadsheet_id=params["spreadsheetid"].strip(),
        worksheet_name=params["worksheetname"].strip(),
    )


def _method(value: str, field: str) -> str:
    if not value:
        return ""
    method = canonical_method(value)
    if method is None:
        choices = ", ".join(ShippingMethod.values)
        raise ValidationFailed.single(field, "Invalid", f"Must be one of {choices}.")
    return method


def row_json(row: SheetRow) -> dict[str, Any]:
    return {
        "rowIndex": row.row_index,
        "labOrderId": row.lab_order_id,
        "message": row.message,
        "newLabOrderId": row.new_lab_order_id,
        "lastActivity": row.last_activity,
        "labs": list(row.labs),
        "cancelOption": row.cancel_option,
        "skipRow": row.skip_row,
    }


class MicroUiView(StaffApiView):
    def audit_target(self, **kwargs: Any) -> str:
        request = getattr(self, "request", None)
        if request is None:
            return ""
        data = request.data if isinstance(request.data, dict) else {}
        params = {k.lower(): v for k, v in request.query_params.items()}
        spreadsheet = data.get("spreadsheetId") or params.get("spreadsheetid") or ""
        worksheet = data.get("worksheetName") or params.get("worksheetname") or ""
        return f"{spreadsheet} / {worksheet}" if spreadsheet or worksheet else ""


class FormOptionsView(MicroUiView):
    audit_operation = "bulkResubmission.formOptions"

    @operation(
        TAG_NAME,
        "bulk_resubmission_form_options",
        "The labs, cancel options and shipping methods the form offers (staff)",
        s.FormOptions,
    )
    def get(self, request: Request) -> Response:
        labs = Lab.objects.filter(is_active=True).order_by("code")
        return Response(
            {
                "labs": [
                    {
                        "alias": lab.code,
                        "name": lab.name,
                        "description": f"{lab.name} ({lab.country_code})",
                    }
                    for lab in labs
                ],
                "cancelOptions": [
                    {"value": value, "label": label} for value, label in CancelOption.choices
                ],
                "shippingMethods": [
                    {"value": value, "label": label} for value, label in ShippingMethod.choices
                ],
            }
        )


class SpreadsheetInfoView(MicroUiView):
    audit_operation = "bulkResubmission.spreadsheetInfo"

    @operation(
        TAG_NAME,
        "bulk_resubmission_spreadsheet_info",
        "How many data rows the worksheet has, and how many can be resubmitted (staff)",
        s.SpreadsheetInfo,
        parameters=SHEET_PARAMETERS,
    )
    def get(self, request: Request) -> Response:
        _, rows = services.sheet_rows(_query_source(request))
        assessments = rows_assess(rows=rows)
        return Response(
            {
                "totalRowCount": len(rows),
                "resubmittableRowCount": sum(1 for a in assessments if a.resubmittable),
            }
        )


class SpreadsheetDataView(MicroUiView):
    audit_operation = "bulkResubmission.spreadsheetData"

    @operation(
        TAG_NAME,
        "bulk_resubmission_spreadsheet_data",
        "The worksheet's rows as parsed (staff)",
        s.SpreadsheetData,
        parameters=SHEET_PARAMETERS,
    )
    def get(self, request: Request) -> Response:
        _, rows = services.sheet_rows(_query_source(request))
        return Response({"rows": [row_json(row) for row in rows]})


def _resubmission_input(request: Request) -> dict[str, Any]:
    data = validated_input(s.ReviewRequest, request)
    return {
        "source": Source(
            spreadsheet_id=data["spreadsheetId"].strip(),
            worksheet_name=data["worksheetName"].strip(),
        ),
        "lab": services.lab_check(data.get("lab", "")),
        "cancel_option": services.cancel_option_check(data.get("cancelOption", "")),
        "shipping_method": _method(
            data.get("preferredGlobalShippingMethod", ""), "preferredGlobalShippingMethod"
        ),
    }


class ReviewView(MicroUiView):
    audit_operation = "bulkResubmission.review"

    @operation(
        TAG_NAME,
        "bulk_resubmission_review",
        "What submit would do, changing nothing (staff)",
        s.ReviewResponse,
        request=s.ReviewRequest,
    )
    def post(self, request: Request) -> Response:
        given = _resubmission_input(request)
        _, review = services.resubmission_review(source=given["source"], lab=given["lab"])
        return Response(
            {
                "isOk": review.is_ok,
                "numberOfLabOrders": len(review.resubmittable),
                "sheetContainsNumberOfLabOrders": review.sheet_row_count,
                "lab": given["lab"],
                "cancelOption": given["cancel_option"],
                "preferredGlobalShippingMethod": given["shipping_method"],
                "statement": review.statement,
            }
        )


class SubmitView(MicroUiView):
    audit_operation = "bulkResubmission.submit"

    @operation(
        TAG_NAME,
        "bulk_resubmission_submit",
        "Queue the resubmittable rows for background resubmission (staff)",
        s.SubmitResponse,
        description="Answers at once; a worker resubmits row by row and writes each row's "
        "`Message`, `New Lab Order Id` and `Last Activity` back to the sheet.",
        request=s.ReviewRequest,
    )
    def post(self, request: Request) -> Response:
        given = _resubmission_input(request)
        job = services.resubmission_submit(user=request.user, **given)
        count = job.rows.count()
        return Response(
            {
                "accepted": True,
                "queuedRowCount": count,
                "message": f"Job {job.id}: {count} row(s) queued for resubmission.",
            }
        )


class SiteflowShippingUpdateView(MicroUiView):
    audit_operation = "siteflowShipping.bulkUpdate"
    permission_classes = [IsStaff, IsAdministrator]

    @operation(
        TAG_NAME,
        "siteflow_shipping_bulk_update",
        "Change the carrier and method of the Site Flow lab orders a sheet names (administrators)",
        s.SiteflowShippingUpdateResponse,
        description="Each row's `Lab Order Id` names a shipment at a Site Flow lab; each not "
        "yet shipped gets `carrierAlias` and `shippingSpeed` through the Site Flow connector. "
        "Per-row results are answered and written back to `Message` and `Last Activity`.",
        request=s.SiteflowShippingUpdateRequest,
    )
    def post(self, request: Request) -> Response:
        data = validated_input(s.SiteflowShippingUpdateRequest, request)
        job = services.shipping_bulk_update(
            user=request.user,
            source=Source(
                spreadsheet_id=data["spreadsheetId"].strip(),
                worksheet_name=data["worksheetName"].strip(),
            ),
            shipping_method=data["shippingSpeed"],
            carrier_alias=data["carrierAlias"].strip(),
        )
        results = [
            {
                "rowIndex": row.row_index,
                "labOrderId": row.lab_order_id,
                "success": row.status == "Succeeded",
                "message": row.message,
            }
            for row in job.rows.all()
        ]
        updated = sum(1 for r in results if r["success"])
        return Response(
            {"results": results, "updatedCount": updated, "failedCount": len(results) - updated}
        )
