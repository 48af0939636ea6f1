"""The back-office tools in the admin: bulk resubmission (staff) and the Site Flow shipping
update (administrators), each form -> review -> submit -> a job page that follows the job."""

import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from backoffice import services
from backoffice.jobs import JobRunning, Source, job_file
from backoffice.models import BulkJob, BulkJobRow, JobKind, JobStatus, RowStatus
from backoffice.rows import (
    RESUBMISSION_COLUMNS,
    SHIPPING_COLUMNS,
    TEMPLATE_FORMATS,
    template_file,
)
from common.errors import ValidationFailed
from common.shipping import ShippingMethod
from labs.models import Lab
from orders.models import CancelOption
from staff.services import audit_entry_record

RUN_RESUBMISSION = "backoffice.run_resubmission"
RUN_SITEFLOW_SHIPPING = "backoffice.run_siteflow_shipping"


@dataclass(frozen=True)
class Tool:
    permission: str
    columns: tuple[tuple[str, str], ...]


TOOLS = {
    "resubmission": Tool(RUN_RESUBMISSION, RESUBMISSION_COLUMNS),
    "shipping": Tool(RUN_SITEFLOW_SHIPPING, SHIPPING_COLUMNS),
}


class BulkJobRowInline(admin.TabularInline):
    model = BulkJobRow
    extra = 0
    can_delete = False
    fields = ("row_index", "lab_order_id", "status", "message", "new_lab_order_id", "last_activity")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def progress(job: BulkJob) -> tuple[int, int, int]:
    """(rows done, rows in all, percent done)."""
    total = job.rows.count()
    done = job.rows.exclude(status=RowStatus.PENDING).count()
    percent = 100 if job.status == JobStatus.DONE or not total else done * 100 // total
    return done, total, percent


@admin.register(BulkJob)
class BulkJobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "source", "created_by", "created", "status", "rows_done"]
    list_filter = ["kind", "status"]
    readonly_fields = [f.name for f in BulkJob._meta.fields if f.name != "file_values"]
    exclude = ["file_values"]
    inlines = [BulkJobRowInline]
    change_list_template = "admin/backoffice/bulkjob/change_list.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="rows done")
    def rows_done(self, job: BulkJob) -> str:
        done, total, percent = progress(job)
        return f"{done}/{total} ({percent}%)"

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        return [
            path("resubmission/", view(self.resubmission_view), name="backoffice_resubmission"),
            path("shipping/", view(self.shipping_view), name="backoffice_shipping"),
            path("<int:job_id>/progress/", view(self.job_view), name="backoffice_job"),
            path("<int:job_id>/download/", view(self.download_view), name="backoffice_download"),
            path(
                "template/<str:kind>.<str:extension>",
                view(self.template_view),
                name="backoffice_template",
            ),
            *super().get_urls(),
        ]

    # --- the tools ----------------------------------------------------------------------------

    def _context(self, request: HttpRequest, **extra: Any) -> dict[str, Any]:
        return {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "labs": Lab.objects.filter(is_active=True).order_by("code"),
            "cancel_options": CancelOption.choices,
            "shipping_methods": ShippingMethod.choices,
            "template_formats": TEMPLATE_FORMATS,
            **extra,
        }

    def _source(self, request: HttpRequest) -> Source:
        upload = request.FILES.get("file")
        if upload is not None:
            # One byte more than is taken tells a file too large without reading all of it.
            content = upload.read(int(settings.BULK_UPLOAD_MAX_BYTES) + 1)
            return Source.upload(upload.name or "upload.csv", content)
        carried = request.POST.get("file_values")
        if carried:
            return Source.carried(request.POST.get("file_name"), carried)
        spreadsheet_id = request.POST.get("spreadsheetId", "").strip()
        worksheet_name = request.POST.get("worksheetName", "").strip()
        failures = {}
        if not spreadsheet_id:
            failures["spreadsheetId"] = [("Required", "Give a spreadsheet id, or upload a file.")]
        if not worksheet_name:
            failures["worksheetName"] = [("Required", "Give the worksheet's name.")]
        if failures:
            raise ValidationFailed(failures)
        return Source(spreadsheet_id=spreadsheet_id, worksheet_name=worksheet_name)

    def _form(self, request: HttpRequest, tool: dict[str, str], **extra: Any) -> HttpResponse:
        """A tool's form: empty, or again with the failures of what was posted (400)."""
        columns = TOOLS[tool["kind"]].columns
        return TemplateResponse(
            request,
            "admin/backoffice/form.html",
            self._context(request, **tool, columns=columns, **extra),
            status=400 if extra.get("failures") else 200,
        )

    def _review(
        self,
        request: HttpRequest,
        tool: dict[str, str],
        source: Source,
        choices: dict[str, str],
        **extra: Any,
    ) -> HttpResponse:
        """What submitting would do, with the source and choices carried to the confirmation."""
        return TemplateResponse(
            request,
            "admin/backoffice/review.html",
            self._context(
                request,
                **tool,
                **extra,
                source=source,
                file_values=json.dumps(source.file_values) if source.file_name else "",
                choices=choices,
            ),
        )

    def _running(self, request: HttpRequest, job: BulkJob) -> HttpResponse:
        """A submit over a worksheet whose job is still running: that job's page, saying so."""
        messages.warning(
            request, f"Job {job.id} is still running over this worksheet; nothing more was queued."
        )
        return HttpResponseRedirect(reverse("admin:backoffice_job", args=[job.id]))

    def _audit(self, request: HttpRequest, operation: str, target: str, message: str) -> None:
        assert isinstance(request.user, User)
        audit_entry_record(
            user=request.user,
            api_key=None,
            operation=operation,
            method=request.method or "",
            path=request.get_full_path(),
            target=target,
            success=True,
            status_code=200,
            message=message,
        )

    def resubmission_view(self, request: HttpRequest) -> HttpResponse:
        if not request.user.has_perm(RUN_RESUBMISSION):
            raise PermissionDenied("Your role does not allow running the bulk resubmission.")
        tool = {"title": "Bulk resubmission", "kind": "resubmission"}
        if request.method != "POST":
            return self._form(request, tool)
        posted = request.POST
        try:
            source = self._source(request)
            lab = services.lab_check(posted.get("lab", ""))
            option = services.cancel_option_check(posted.get("cancelOption", ""))
            method = posted.get("shippingMethod", "")
            if method and method not in ShippingMethod.values:
                raise ValidationFailed.single("shippingMethod", "Invalid", "Unknown method.")
            if posted.get("confirm"):
                job = services.resubmission_submit(
                    user=request.user,
                    source=source,
                    lab=lab,
                    cancel_option=option,
                    shipping_method=method,
                )
                self._audit(request, "bulkResubmission.submit", job.source, f"job {job.id} queued")
                return HttpResponseRedirect(reverse("admin:backoffice_job", args=[job.id]))
            _, review = services.resubmission_review(
                source=source, lab=lab, shipping_method=method, cancel_option=option
            )
        except JobRunning as running:
            return self._running(request, running.job)
        except ValidationFailed as failed:
            return self._form(request, tool, failures=failed.failures, posted=posted)
        choices = {"lab": lab, "cancelOption": option, "shippingMethod": method}
        return self._review(
            request, tool, source, choices, review=review, can_submit=bool(review.resubmittable)
        )

    def shipping_view(self, request: HttpRequest) -> HttpResponse:
        if not request.user.has_perm(RUN_SITEFLOW_SHIPPING):
            raise PermissionDenied("The administrator role is required for this tool.")
        tool = {"title": "Site Flow shipping update", "kind": "shipping"}
        if request.method != "POST":
            return self._form(request, tool)
        posted = request.POST
        try:
            source = self._source(request)
            method = posted.get("shippingSpeed", "")
            alias = posted.get("carrierAlias", "").strip()
            if method not in ShippingMethod.values:
                raise ValidationFailed.single("shippingSpeed", "Invalid", "Choose a method.")
            if not alias:
                raise ValidationFailed.single("carrierAlias", "Required", "Give a carrier alias.")
            if posted.get("confirm"):
                job = services.shipping_job_create(
                    user=request.user, source=source, shipping_method=method, carrier_alias=alias
                )
                self._audit(request, "siteflowShipping.submit", job.source, f"job {job.id}")
                return HttpResponseRedirect(reverse("admin:backoffice_job", args=[job.id]))
            _, assessments = services.shipping_review(source)
        except JobRunning as running:
            return self._running(request, running.job)
        except ValidationFailed as failed:
            return self._form(request, tool, failures=failed.failures, posted=posted)
        choices = {"shippingSpeed": method, "carrierAlias": alias}
        queued = sum(1 for a in assessments if a.queued)
        return self._review(
            request,
            tool,
            source,
            choices,
            shipping_rows=assessments,
            queued=queued,
            can_submit=bool(queued),
            statement=f"{queued} of {len(assessments)} lab orders will get carrier {alias} "
            f"({method}).",
        )

    def job_view(self, request: HttpRequest, job_id: int) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        job = get_object_or_404(BulkJob.objects.select_related("created_by"), id=job_id)
        done, total, percent = progress(job)
        return TemplateResponse(
            request,
            "admin/backoffice/job.html",
            self._context(
                request,
                title=f"{job}",
                job=job,
                rows=job.rows.all(),
                done=done,
                total=total,
                percent=percent,
                finished=job.status == JobStatus.DONE,
                is_resubmission=job.kind == JobKind.RESUBMISSION,
            ),
        )

    def template_view(self, request: HttpRequest, kind: str, extension: str) -> HttpResponse:
        """An empty sheet with a tool's columns (.csv or .xlsx), to fill in and upload."""
        tool = TOOLS.get(kind)
        if tool is None or extension not in TEMPLATE_FORMATS:
            raise Http404("No such template.")
        if not request.user.has_perm(tool.permission):
            raise PermissionDenied("Your role does not allow this tool.")
        name = f"{kind}-template.{extension}"
        content, content_type = template_file(name=name, columns=tool.columns)
        response = HttpResponse(content, content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response

    def download_view(self, request: HttpRequest, job_id: int) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        job = get_object_or_404(BulkJob, id=job_id)
        if not job.file_name:
            raise PermissionDenied("Only a job from an uploaded file has a file to download.")
        content, content_type, name = job_file(job)
        response = HttpResponse(content, content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
