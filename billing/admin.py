"""Staff views of billing's own rows: the Stripe events taken and the monthly invoices.

Both are records the services write (``billing.stripe``, ``billing.services``), so they are
read-only here for every role."""

from django.contrib import admin
from django.http import HttpRequest

from billing.models import Invoice, StripeEvent
from common.admin_mixins import NoAddOrDelete


class ReadOnly(NoAddOrDelete):
    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(StripeEvent)
class StripeEventAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("event_id", "type", "outcome", "received")
    list_filter = ("type", "outcome")
    search_fields = ("event_id", "message")
    date_hierarchy = "received"
    fields = ("event_id", "type", "received", "outcome", "message")
    readonly_fields = fields


@admin.register(Invoice)
class InvoiceAdmin(ReadOnly, admin.ModelAdmin):
    list_display = (
        "number",
        "merchant",
        "period_start",
        "period_end",
        "currency",
        "total_cost",
        "total_tax",
        "charge_count",
        "issued",
    )
    list_filter = ("currency",)
    list_select_related = ("merchant",)
    search_fields = ("number", "merchant__name")
    date_hierarchy = "period_start"
    fields = readonly_fields = list_display
