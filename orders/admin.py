"""Admin registrations of the orders app (Django imports this module to find them).

Orders are read-only here: their rows belong to the API and the pipeline, and a form saving a
whole order row could overwrite a step that committed meanwhile. Staff act through services
(``order_submit_now`` submits held orders; ``order_enqueue_on_commit`` rings the pipeline).
"""

from datetime import datetime

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from common.admin_mixins import NoAddOrDelete, PublicIdColumn
from orders.models import (
    Asset,
    Charge,
    Order,
    OrderIssue,
    OrderItem,
    PipelineStep,
    Shipment,
)
from orders.pipeline.claims import ACTIVE_STEPS
from orders.pipeline.scheduling import order_enqueue_on_commit
from orders.pipeline.state_machine import order_submit_now


class ReadOnlyInline(NoAddOrDelete, admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class OrderItemInline(PublicIdColumn, ReadOnlyInline):
    model = OrderItem
    fields = ("public_id", "position", "sku", "copies", "sizing", "attributes", "status",
              "availability", "shipment")  # fmt: skip
    readonly_fields = fields


class ShipmentInline(PublicIdColumn, ReadOnlyInline):
    model = Shipment
    fields = ("public_id", "lab_code", "status", "shipping_method", "carrier_name",
              "carrier_service", "tracking_number", "dispatch_date", "lab_order_reference",
              "submit_attempts", "submitted_at", "in_production_at")  # fmt: skip
    readonly_fields = fields


class ChargeInline(PublicIdColumn, ReadOnlyInline):
    model = Charge
    fields = ("public_id", "charge_type", "currency", "total_cost", "total_tax",
              "service_invoice_number", "created")  # fmt: skip
    readonly_fields = fields


class OrderIssueInline(ReadOnlyInline):
    model = OrderIssue
    fields = ("object_id", "error_code", "description", "created")
    readonly_fields = fields


def pipeline_state(order: Order, now: datetime | None = None) -> str:
    """Where the state machine stands, in words: the step and what it waits for."""
    now = now or timezone.now()
    step = order.pipeline_step
    if step not in ACTIVE_STEPS:
        return f"{step} (finished)"
    if order.claimed_until is not None and order.claimed_until > now:
        seconds = (order.claimed_until - now).total_seconds()
        return f"{step}: being worked on (claim ends in {seconds:.0f} s)"
    if order.due_at is None:
        if step == PipelineStep.HELD:
            return f"{step}: held until submitted by hand"
        return f"{step}: waiting for the lab"
    if order.due_at <= now:
        return f"{step}: due now"
    return f"{step}: due in {(order.due_at - now).total_seconds():.0f} s"


@admin.register(Order)
class OrderAdmin(PublicIdColumn, NoAddOrDelete, admin.ModelAdmin):
    list_display = ("public_id", "environment", "merchant_reference", "stage", "pipeline_step",
                    "due_at", "pipeline_state", "created")  # fmt: skip
    list_filter = ("stage", "pipeline_step", "environment__kind", "download_assets",
                   "print_ready_assets_prepared", "in_production")  # fmt: skip
    list_select_related = ("environment__merchant",)
    search_fields = ("merchant_reference", "environment__merchant__name")
    date_hierarchy = "created"
    actions = ["submit_held_orders_now", "ring_pipeline"]
    inlines = [OrderItemInline, ShipmentInline, ChargeInline, OrderIssueInline]
    fieldsets = (
        (None, {"fields": ("public_id", "environment", "merchant_reference", "idempotency_key",
                           "shipping_method", "callback_url", "currency", "created",
                           "last_updated")}),
        ("Status", {"fields": ("stage", "download_assets", "allocate_production_location",
                               "print_ready_assets_prepared", "in_production", "shipping")}),
        ("Pipeline", {"fields": ("pipeline_state", "pipeline_step", "due_at", "claimed_until",
                                 "held_until", "submitted_at", "files_deleted_at",
                                 "callback_sequence")}),
        ("Recipient", {"fields": ("recipient_name", "recipient_email", "recipient_phone",
                                  "address_line1", "address_line2", "address_postal_or_zip_code",
                                  "address_town_or_city", "address_state_or_county",
                                  "address_country_code")}),
        ("Assets", {"fields": ("assets_table",)}),
        ("Other", {"fields": ("metadata", "branding", "packing_slip_url", "tag")}),
    )  # fmt: skip
    readonly_fields = [str(name) for _, group in fieldsets for name in group["fields"]]

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # an order's page is a view, never a form; staff act through services

    def has_act_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("orders.act_on_order")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Order], search_term: str
    ) -> tuple[QuerySet[Order], bool]:
        """``ord_…`` (or the digits alone) finds the order; other text the merchant reference."""
        digits = search_term.strip().lower().removeprefix("ord_")
        if digits.isdigit() and int(digits) < 2**63:
            return queryset.filter(id=int(digits)), False
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="pipeline state")
    def pipeline_state(self, order: Order) -> str:
        return pipeline_state(order)

    @admin.display(description="assets")
    def assets_table(self, order: Order) -> str:
        assets = Asset.objects.filter(item__order=order).select_related("item")
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td><td>{}</td></tr>",
            (
                (a.public_id, a.item.public_id, a.print_area, a.status, a.download_attempts,
                 a.url, a.print_file or "-", a.last_error or "-")
                for a in assets.order_by("item__position", "position")
            ),
        )  # fmt: skip
        return format_html(
            "<table><tr><th>id</th><th>item</th><th>print area</th><th>status</th>"
            "<th>attempts</th><th>url</th><th>print file</th><th>last error</th></tr>{}</table>",
            rows,
        )

    @admin.action(description="Submit held orders now", permissions=["act"])
    def submit_held_orders_now(self, request: HttpRequest, queryset: QuerySet[Order]) -> None:
        submitted = sum(order_submit_now(order=order) for order in queryset)
        skipped = queryset.count() - submitted
        self.message_user(request, f"{submitted} held order(s) submitted.", level=messages.SUCCESS)
        if skipped:
            self.message_user(
                request,
                f"{skipped} order(s) were not on hold or already due; left as they are.",
                level=messages.WARNING,
            )

    @admin.action(description="Run the due pipeline step now", permissions=["act"])
    def ring_pipeline(self, request: HttpRequest, queryset: QuerySet[Order]) -> None:
        """A doorbell only: the step runs if the order is due and not owned by a worker."""
        for order_id, step in queryset.values_list("id", "pipeline_step"):
            order_enqueue_on_commit(order_id=order_id, step=step)
        self.message_user(request, f"{queryset.count()} order(s) queued for their due step.")
