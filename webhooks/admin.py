"""Staff views of the callback outbox: every event with its attempts, and replay.

Events and attempts are a record of what was sent, so they are read-only here; the only write
is the Replay action, which goes through ``event_replay`` (same id, same bytes).
"""

import json

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from common.admin_mixins import NoAddOrDelete, PublicIdColumn
from common.ids import PREFIXES, id_number
from webhooks.models import CallbackAttempt, CallbackEvent, GoneCallbackUrl
from webhooks.services import event_replay


class CallbackAttemptInline(admin.TabularInline):
    model = CallbackAttempt
    extra = 0
    can_delete = False
    fields = (
        "number",
        "started",
        "url",
        "outcome",
        "status_code",
        "duration_ms",
        "response_excerpt",
        "error",
    )
    readonly_fields = fields
    ordering = ("number",)

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(CallbackEvent)
class CallbackEventAdmin(PublicIdColumn, NoAddOrDelete, admin.ModelAdmin):
    list_display = (
        "public_id",
        "subject",
        "environment",
        "event_type",
        "sequence",
        "state",
        "attempts",
        "next_attempt_at",
        "created",
    )
    list_filter = ("state", "environment__kind")
    list_select_related = ("environment__merchant",)
    search_fields = ("target_url", "environment__merchant__name")
    date_hierarchy = "created"
    actions = ["replay"]
    inlines = [CallbackAttemptInline]
    fields = (
        "public_id",
        "environment",
        "subject",
        "sequence",
        "event_type",
        "target_url",
        "state",
        "attempts",
        "next_attempt_at",
        "claimed_until",
        "delivered_at",
        "created",
        "body_json",
    )
    readonly_fields = fields

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[CallbackEvent], search_term: str
    ) -> tuple[QuerySet[CallbackEvent], bool]:
        """``evt_…`` finds the event, ``ord_…`` (any subject) the subject's events; else text."""
        term = search_term.strip().lower()
        number = id_number(PREFIXES["event"], term)
        if number is not None:
            return queryset.filter(id=number), False
        if term.startswith("ord_"):
            return queryset.filter(subject=term), False
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="body (as sent)")
    def body_json(self, event: CallbackEvent) -> str:
        raw = bytes(event.body)
        try:
            text = json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
        except ValueError:
            text = raw.decode("utf-8", errors="replace")
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', text)

    @admin.action(
        description="Replay: send again with the same id and bytes", permissions=["change"]
    )
    def replay(self, request: HttpRequest, queryset: QuerySet[CallbackEvent]) -> None:
        count = 0
        for event in queryset:
            event_replay(event=event)
            count += 1
        self.message_user(
            request, f"{count} event(s) queued to be sent again.", level=messages.SUCCESS
        )


@admin.register(GoneCallbackUrl)
class GoneCallbackUrlAdmin(admin.ModelAdmin):
    """URLs that answered 410; deleting one lets later events be delivered to it again."""

    list_display = ("url", "environment", "created")
    list_select_related = ("environment__merchant",)
    search_fields = ("url", "environment__merchant__name")
    readonly_fields = ("environment", "url", "created")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
