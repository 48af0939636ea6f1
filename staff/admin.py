from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.http import HttpRequest

from staff.models import AuditEntry, StaffApiKey
from staff.services import staff_api_key_create, staff_api_key_revoke


class StaffApiKeyIssueForm(forms.ModelForm):
    """Issuing a key: whose and what for; the key itself is made by the service."""

    class Meta:
        model = StaffApiKey
        fields = ("user", "name")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        users = get_user_model().objects.filter(is_staff=True, is_active=True)
        self.fields["user"].queryset = users.order_by("username")  # type: ignore[attr-defined]


@admin.register(StaffApiKey)
class StaffApiKeyAdmin(admin.ModelAdmin):
    list_display = ("prefix", "user", "name", "created", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("prefix", "user__username", "name")
    readonly_fields = ("user", "name", "prefix", "created", "last_used_at", "revoked_at")
    actions = ["revoke"]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any):  # type: ignore[no-untyped-def]
        if obj is None:
            kwargs["form"] = StaffApiKeyIssueForm
        return super().get_form(request, obj, change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return self.readonly_fields if obj is not None else ()

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if obj is None:
            return ("user", "name")
        return ("user", "name", "prefix", "created", "last_used_at", "revoked_at")

    def save_model(self, request: HttpRequest, obj: StaffApiKey, form: Any, change: bool) -> None:
        if change:
            return  # keys are never edited, only revoked
        api_key, clear = staff_api_key_create(
            user=obj.user, name=obj.name or f"issued by {request.user}"
        )
        obj.pk = api_key.pk
        obj.prefix, obj.digest, obj.created = api_key.prefix, api_key.digest, api_key.created
        self.message_user(
            request,
            f"New staff key for {obj.user}: {clear} (copy it now, it is not shown again)",
            messages.WARNING,
        )

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoked keys stay, so the audit log can name them

    @admin.action(description="Revoke selected staff keys", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[StaffApiKey]) -> None:
        for api_key in queryset:
            staff_api_key_revoke(staff_api_key=api_key)
        self.message_user(request, f"Revoked {queryset.count()} staff key(s).")


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ("created", "username", "operation", "target", "success", "status_code")
    list_filter = ("success", "operation")
    search_fields = ("username", "operation", "target", "path", "message")
    date_hierarchy = "created"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
