"""The micro-ui endpoints: bulk resubmission from a sheet (operators) and the Site Flow bulk
shipping update (administrators). Staff key or staff admin session (``StaffApiViewSet``)."""

from typing import Any, Literal

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.decorators import action
from rest_framework.exceptions import ParseError
from rest_framework.request import Request
from rest_framework.response import Response

from api.schema import STAFF_BACKOFFICE, operation
from api.staff import StaffApiViewSet
from api.views import validated_input
from backoffice import services
from backoffice.api import serializers as s
from backoffice.jobs import JobRunning, Source, job_rows_wait
from backoffice.models import RowStatus
from backoffice.resubmission import rows_assess
from backoffice.rows import SheetRow
from common.errors import ValidationFailed
from common.shipping import ShippingMethod, shipping_method_parse
from labs.models import Lab
from orders.models import CancelOption

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
    method = shipping_method_parse(value)
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


class MicroUiViewSet(StaffApiViewSet):
    # The base of the micro-ui viewsets: the audit target is the spreadsheet and worksheet
    # named by the body or the query.
    def audit_target(self, **kwargs: Any) -> str:
        request = getattr(self, "request", None)
        if request is None:
            return ""
        try:
            data = request.data if isinstance(request.data, dict) else {}
        except ParseError:  # a malformed body no handler read (wrong method, not allowed)
            data = {}
        params = {k.lower(): v for k, v in request.query_params.items()}
        spreadsheet = data.get("spreadsheetId") or params.get("spreadsheetid") or ""
        worksheet = data.get("worksheetName") or params.get("worksheetname") or ""
        return f"{spreadsheet} / {worksheet}" if spreadsheet or worksheet else ""


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


def _micro_ui_action(
    url_path: str, name: str, audit_operation: str, method: Literal["get", "post"]
) -> Any:
    """The route ``{prefix}/{url_path}``; ``name`` is its view's name (OPTIONS shows it)."""
    return action(
        detail=False,
        methods=[method],
        url_path=url_path,
        name=name,
        audit_operation=audit_operation,
    )


class BulkResubmissionViewSet(MicroUiViewSet):
    # /v4.0/micro-ui/bulk-resubmission/...: the form's options, the sheet's counts and rows,
    # review (changes nothing) and submit (queues a job); whoever may run the admin's tool.
    staff_permissions = ("backoffice.run_resubmission",)

    @operation(
        STAFF_BACKOFFICE,
        "bulk_resubmission_form_options",
        "The labs, cancel options and shipping methods the form offers (staff)",
        s.FormOptions,
    )
    @_micro_ui_action("form-options", "Form Options", "bulkResubmission.formOptions", "get")
    def form_options(self, request: Request) -> Response:
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

    @operation(
        STAFF_BACKOFFICE,
        "bulk_resubmission_spreadsheet_info",
        "How many data rows the worksheet has, and how many can be resubmitted (staff)",
        s.SpreadsheetInfo,
        parameters=SHEET_PARAMETERS,
    )
    @_micro_ui_action(
        "spreadsheet-info", "Spreadsheet Info", "bulkResubmission.spreadsheetInfo", "get"
    )
    def spreadsheet_info(self, request: Request) -> Response:
        _, rows = services.sheet_rows(_query_source(request))
        assessments = rows_assess(rows=rows)
        return Response(
            {
                "totalRowCount": len(rows),
                "resubmittableRowCount": sum(1 for a in assessments if a.queued),
            }
        )

    @operation(
        STAFF_BACKOFFICE,
        "bulk_resubmission_spreadsheet_data",
        "The worksheet's rows as parsed (staff)",
        s.SpreadsheetData,
        parameters=SHEET_PARAMETERS,
    )
    @_micro_ui_action(
        "spreadsheet-data", "Spreadsheet Data", "bulkResubmission.spreadsheetData", "get"
    )
    def spreadsheet_data(self, request: Request) -> Response:
        _, rows = services.sheet_rows(_query_source(request))
        return Response({"rows": [row_json(row) for row in rows]})

    @operation(
        STAFF_BACKOFFICE,
        "bulk_resubmission_review",
        "What submit would do, changing nothing (staff)",
        s.ReviewResponse,
        request=s.ReviewRequest,
    )
    @_micro_ui_action("review", "Review", "bulkResubmission.review", "post")
    def review(self, request: Request) -> Response:
        given = _resubmission_input(request)
        _, review = services.resubmission_review(**given)
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

    @operation(
        STAFF_BACKOFFICE,
        "bulk_resubmission_submit",
        "Queue the resubmittable rows for background resubmission (staff)",
        s.SubmitResponse,
        description="Answers at once; a worker resubmits row by row and writes each row's "
        "`Message`, `New Lab Order Id` and `Last Activity` back to the sheet.",
        request=s.ReviewRequest,
    )
    @_micro_ui_action("submit", "Submit", "bulkResubmission.submit", "post")
    def submit(self, request: Request) -> Response:
        given = _resubmission_input(request)
        try:
            job = services.resubmission_submit(user=request.user, **given)
        except JobRunning as running:
            return Response(
                {
                    "accepted": False,
                    "queuedRowCount": running.job.queued_rows,
                    "message": f"Job {running.job.id} is still running over this worksheet; "
                    "it goes on, and nothing more was queued.",
                    "jobId": running.job.id,
                }
            )
        count = job.queued_rows
        recorded = job.rows.count() - count
        return Response(
            {
                "accepted": True,
                "queuedRowCount": count,
                "message": f"Job {job.id}: {count} row(s) queued for resubmission, "
                f"{recorded} other row(s) answered with why not.",
                "jobId": job.id,
            }
        )


class SiteflowShippingViewSet(MicroUiViewSet):
    # POST /v4.0/micro-ui/siteflow-shipping/bulk-update; administrators only (the admin's tool
    # needs the same permission).
    staff_permissions = ("backoffice.run_siteflow_shipping",)

    @operation(
        STAFF_BACKOFFICE,
        "siteflow_shipping_bulk_update",
        "Change the carrier and method of the Site Flow lab orders a sheet names (administrators)",
        s.SiteflowShippingUpdateResponse,
        description="Each row's `Lab Order Id` (`shp_123`, `123` or the lab's own order "
        "reference) names a shipment at a Site Flow lab; each not yet shipped gets "
        "`carrierAlias` and `shippingSpeed` through the Site Flow connector. The update is a "
        "job (as in the admin's tool): rows not at a Site Flow lab, shipped, cancelled or "
        "unknown are answered at once with why; a worker updates the others row by row and "
        "writes every row's `Message` and `Last Activity` back to the sheet. The answer waits "
        "for the job up to `SITEFLOW_SHIPPING_WAIT_SECONDS` (20 s by default) and lists the "
        "rows done by then; `pending` counts the rows still queued (0 when the job is done), "
        "whose results follow in the sheet and on the job's admin page (`jobId`). Rows with "
        "`Skip Row` are written back as skipped and not listed.",
        request=s.SiteflowShippingUpdateRequest,
    )
    @_micro_ui_action(
        "bulk-update", "Siteflow Shipping Update", "siteflowShipping.bulkUpdate", "post"
    )
    def bulk_update(self, request: Request) -> Response:
        data = validated_input(s.SiteflowShippingUpdateRequest, request)
        try:
            job = services.shipping_job_create(
                user=request.user,
                source=Source(
                    spreadsheet_id=data["spreadsheetId"].strip(),
                    worksheet_name=data["worksheetName"].strip(),
                ),
                shipping_method=data["shippingSpeed"],
                carrier_alias=data["carrierAlias"].strip(),
            )
        except JobRunning as running:  # answered with the running job's rows
            job = running.job
        rows = job_rows_wait(job_id=job.id, seconds=settings.SITEFLOW_SHIPPING_WAIT_SECONDS)
        results = [
            {
                "rowIndex": row.row_index,
                "labOrderId": row.lab_order_id or None,
                "success": row.status == RowStatus.SUCCEEDED,
                "message": row.message,
            }
            for row in rows
            if row.status in (RowStatus.SUCCEEDED, RowStatus.FAILED)
        ]
        updated = sum(1 for r in results if r["success"])
        return Response(
            {
                "results": results,
                "updatedCount": updated,
                "failedCount": len(results) - updated,
                "jobId": job.id,
                "pending": sum(1 for row in rows if row.status == RowStatus.PENDING),
            }
        )
