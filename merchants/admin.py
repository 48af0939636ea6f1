"""Merchants, their environments and API keys in the admin.

Secrets (decisions.md, "Staff, wave 4"): Operators never see a signing secret, a previous
secret or an API key; Administrators see an environment's signing secret masked, and its
"Reveal" (a POST) shows it and writes the audit log; rotation is an action, never a field.
A merchant's owner is never a staff account (``Merchant.user``'s choices)."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html

from common.countries import validate_currency_code
from common.http import url_refusal
from labs.selectors import currencies_supported
from merchants.forms import MerchantAddForm
from merchants.keys import key_prefix
from merchants.models import ApiKey, Environment, Merchant
from merchants.services import (
    STAFF_ISSUED_KEY_NAME,
    api_key_create,
    api_key_revoke,
    merchant_create,
    signing_secret_rotate,
)
from staff.services import audit_entry_record

# A masked secret keeps its last characters, enough to tell two secrets apart.
SHOWN_TAIL = 4


def secret_masked(secret: str) -> str:
    """``whsec_••••••••1a2B``: the secret's scheme and its last characters only."""
    if not secret:
        return ""
    scheme, _, _ = secret.rpartition("_")
    return f"{scheme + '_' if scheme else ''}{'•' * 12}{secret[-SHOWN_TAIL:]}"


def _audit(request: HttpRequest, operation: str, environment: Environment, message: str) -> None:
    audit_entry_record(
        user=request.user,  # type: ignore[arg-type]
        operation=operation,
        method=request.method or "",
        path=request.get_full_path(),
        target=f"environment {environment.pk} ({environment})",
        success=True,
        status_code=200,
        message=message,
    )


class EnvironmentForm(forms.ModelForm):
    """An environment's settings as the dashboard takes them: a callback URL the outbound
    client would send to (http or https, a host, no credentials, a port it can connect to)."""

    def clean_callback_url(self) -> str:
        url = str(self.cleaned_data.get("callback_url") or "")
        refusal = url_refusal(url) if url else None
        if refusal is not None:
            raise forms.ValidationError(refusal)
        return url


class MerchantForm(forms.ModelForm):
    """A merchant as staff edit it: billed only in a currency quotes and orders can be priced
    in (an upper-case ASCII ISO 4217 code the catalogue has a rate for), as the dashboard
    offers."""

    def clean_billing_currency(self) -> str:
        currency = str(self.cleaned_data.get("billing_currency") or "")
        validate_currency_code(currency)
        supported = currencies_supported()
        if currency not in supported:
            raise forms.ValidationError(
                f"'{currency}' is not a currency orders can be priced in; use one of "
                f"{', '.join(sorted(supported))}."
            )
        return currency


class EnvironmentInline(admin.TabularInline):
    model = Environment
    form = EnvironmentForm
    extra = 0
    can_delete = False
    max_num = 2
    fields = ("kind", "callback_url", "pause_mode", "pause_minutes")
    readonly_fields = ("kind",)
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}  # as Django 6 will


@admin.register(Merchant)
class MerchantAdmin(admin.ModelAdmin):
    form = MerchantForm
    list_display = ("name", "email", "billing_currency", "billing_mode", "created")
    search_fields = ("name", "email")
    list_filter = ("billing_mode", "billing_currency")
    inlines = [EnvironmentInline]

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["form"] = MerchantAddForm
        return super().get_form(request, obj, change, **kwargs)

    def get_inlines(self, request: HttpRequest, obj: Any) -> Any:
        return self.inlines if obj is not None else []  # environments come with the merchant

    def save_model(self, request: HttpRequest, obj: Merchant, form: Any, change: bool) -> None:
        """A new merchant through ``merchant_create``: its Sandbox and Live environments and a
        key for each, issued by the service's staff, shown once and written to the audit log."""
        if change:
            super().save_model(request, obj, form, change)
            return
        created = merchant_create(
            name=obj.name,
            email=obj.email,
            currency=obj.billing_currency,
            billing_mode=obj.billing_mode,
            owner=obj.user,
            key_name=STAFF_ISSUED_KEY_NAME,
        )
        obj.pk, obj.created = created.merchant.pk, created.merchant.created
        for environment in created.merchant.environments.all():
            clear = created.sandbox_api_key if environment.is_sandbox else created.live_api_key
            _audit(request, "environment.apiKey.issue", environment, f"Key {key_prefix(clear)}…")
            self.message_user(
                request,
                f"New key for {environment}: {clear} (copy it now, it is not shown again)",
                messages.WARNING,
            )


@admin.register(Environment)
class EnvironmentAdmin(admin.ModelAdmin):
    form = EnvironmentForm
    list_display = ("merchant", "kind", "callback_url", "pause_mode", "pause_minutes")
    list_filter = ("kind", "pause_mode")
    search_fields = ("merchant__name",)
    readonly_fields = ("merchant", "kind", "signing_secret", "previous_signing_secret_until")
    actions = ["issue_api_key", "rotate_signing_secret"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    change_form_template = "admin/merchants/environment/change_form.html"

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        fields = ("merchant", "kind", "callback_url", "pause_mode", "pause_minutes")
        if self.has_change_permission(request, obj):  # administrators; never operators
            return (*fields, "signing_secret", "previous_signing_secret_until")
        return fields

    @admin.display(description="Signing secret")
    def signing_secret(self, environment: Environment) -> str:
        return format_html(
            '<code id="masked-signing-secret">{}</code> '
            '<button type="submit" form="signing-secret-reveal" class="button" '
            'id="reveal-signing-secret">Reveal</button>'
            '<div class="help">Revealing it is written to the audit log. A new one: the '
            "action “Rotate the signing secret” on the list of environments.</div>",
            secret_masked(environment.callback_signing_secret),
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # environments are created with their merchant

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "<int:environment_id>/signing-secret/",
                self.admin_site.admin_view(self.signing_secret_reveal_view),
                name="merchants_environment_signing_secret",
            ),
            *super().get_urls(),
        ]

    def signing_secret_reveal_view(self, request: HttpRequest, environment_id: int) -> HttpResponse:
        """The environment's signing secret (and the previous one while it still signs), for
        whoever may change the environment, on a POST only; each reveal is audited."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        environment = get_object_or_404(
            Environment.objects.select_related("merchant"), pk=environment_id
        )
        if not self.has_change_permission(request, environment):
            raise PermissionDenied("Your role does not allow seeing signing secrets.")
        until = environment.previous_signing_secret_until
        previous_signs = bool(
            environment.previous_signing_secret and until is not None and until > timezone.now()
        )
        _audit(
            request,
            "environment.signingSecret.reveal",
            environment,
            "Signing secret revealed" + (" with the previous one" if previous_signs else "."),
        )
        return TemplateResponse(  # admin_view: never cached
            request,
            "admin/merchants/environment/signing_secret.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "title": f"Signing secret of {environment}",
                "environment": environment,
                "previous_signs": previous_signs,
                "change_url": reverse("admin:merchants_environment_change", args=[environment.pk]),
            },
        )

    @admin.action(description="Issue a new API key (shown once)", permissions=["change"])
    def issue_api_key(self, request: HttpRequest, queryset: QuerySet[Environment]) -> None:
        for environment in queryset:
            api_key, clear = api_key_create(environment=environment, name=STAFF_ISSUED_KEY_NAME)
            _audit(request, "environment.apiKey.issue", environment, f"Key {api_key.prefix}…")
            self.message_user(
                request,
                f"New key for {environment}: {clear} (copy it now, it is not shown again)",
                messages.WARNING,
            )

    @admin.action(description="Rotate the signing secret", permissions=["change"])
    def rotate_signing_secret(self, request: HttpRequest, queryset: QuerySet[Environment]) -> None:
        for environment in queryset.select_related("merchant"):
            signing_secret_rotate(environment=environment)
            environment.refresh_from_db()
            until = f"{environment.previous_signing_secret_until:%Y-%m-%d %H:%M} UTC"
            _audit(
                request,
                "environment.signingSecret.rotate",
                environment,
                f"The previous secret signs too until {until}.",
            )
            self.message_user(
                request,
                f"New signing secret for {environment}; the previous one also signs callbacks "
                f"until {until}.",
                messages.SUCCESS,
            )


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("prefix", "environment", "name", "created", "last_used_at", "revoked_at")
    list_filter = ("environment__kind", "revoked_at")
    search_fields = ("prefix", "environment__merchant__name", "name")
    fields = ("environment", "name", "prefix", "created", "last_used_at", "revoked_at")
    readonly_fields = ("environment", "prefix", "created", "last_used_at", "revoked_at")
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # keys are issued from the environment page so the clear key can be shown once

    @admin.action(description="Revoke selected keys", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        for api_key in queryset:
            api_key_revoke(api_key=api_key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).")
