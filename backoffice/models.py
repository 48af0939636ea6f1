from django.conf import settings
from django.db import models
from django.utils import timezone

from orders.models import CancelOption


class JobKind(models.TextChoices):
    RESUBMISSION = "Resubmission", "Bulk resubmission"
    SHIPPING = "SiteflowShipping", "Site Flow shipping update"


class JobStatus(models.TextChoices):
    QUEUED = "Queued"
    RUNNING = "Running"
    DONE = "Done"


class RowStatus(models.TextChoices):
    PENDING = "Pending"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    SKIPPED = "Skipped"


class BulkJob(models.Model):
    """A bulk operation over the rows of a worksheet (or an uploaded file), run row by row by
    a worker. The rows and their results are ``BulkJobRow``s, so a job survives a restart:
    the sweeper queues it again until every row is done and written back."""

    kind = models.CharField(max_length=20, choices=JobKind.choices)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="bulk_jobs"
    )
    created = models.DateTimeField(default=timezone.now)
    spreadsheet_id = models.CharField(max_length=200, blank=True)
    worksheet_name = models.CharField(max_length=200, blank=True)
    file_name = models.CharField(
        max_length=200, blank=True, help_text="The uploaded file's name (no spreadsheet)."
    )
    file_values = models.JSONField(
        null=True, blank=True, help_text="The uploaded file's cells, to give back with results."
    )
    header_row = models.PositiveIntegerField(default=1)
    columns = models.JSONField(
        default=dict, help_text="Written-back column title → 0-based column index."
    )
    lab = models.CharField(max_length=20, blank=True)
    cancel_option = models.CharField(
        max_length=20, choices=CancelOption.choices, default=CancelOption.CANCEL_ORIGINAL
    )
    shipping_method = models.CharField(max_length=16, blank=True)
    carrier_alias = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    due_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    claim_token = models.BigIntegerField(
        null=True, blank=True, help_text="Names the worker's claim while it runs the job."
    )
    swept_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    queued_rows = models.PositiveIntegerField(
        default=0, help_text="Rows queued for the worker at submit (the others were recorded)."
    )
    write_back_error = models.TextField(
        blank=True,
        help_text="Why the last write-back to the sheet failed (the results are kept and "
        "written again); empty once written.",
    )

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            # One job at a time per worksheet: a second submit is answered with the running job.
            models.UniqueConstraint(
                fields=["spreadsheet_id", "worksheet_name"],
                condition=~models.Q(status="Done") & ~models.Q(spreadsheet_id=""),
                name="bulk_job_one_running_per_sheet",
            )
        ]
        permissions = [
            ("run_resubmission", "Can run the bulk resubmission tool"),
            ("run_siteflow_shipping", "Can run the Site Flow shipping update tool"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.id}"

    @property
    def source(self) -> str:
        if self.file_name:
            return self.file_name
        return f"{self.spreadsheet_id} / {self.worksheet_name}"


class BulkJobRow(models.Model):
    """One row of a job: its sheet row number, what it names, and its result once done."""

    job = models.ForeignKey(BulkJob, on_delete=models.CASCADE, related_name="rows")
    row_index = models.PositiveIntegerField(help_text="The sheet's row number.")
    lab_order_text = models.CharField(
        max_length=200, blank=True, help_text="The row's Lab Order Id cell as the sheet has it."
    )
    lab_order_id = models.BigIntegerField(help_text="The shipment the row names; 0 for none.")
    labs = models.JSONField(default=list, blank=True)
    cancel_option = models.CharField(max_length=20, blank=True)
    status = models.CharField(max_length=10, choices=RowStatus.choices, default=RowStatus.PENDING)
    message = models.TextField(blank=True)
    new_lab_order_id = models.BigIntegerField(null=True, blank=True)
    last_activity = models.DateTimeField(null=True, blank=True)
    written_back = models.BooleanField(default=False)

    class Meta:
        ordering = ["row_index"]
        constraints = [
            models.UniqueConstraint(fields=["job", "row_index"], name="bulk_job_row_unique")
        ]

    def __str__(self) -> str:
        return f"row {self.row_index}"
