from django import forms
from django.contrib import admin, messages
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from common.countries import validate_currency_code
from common.http import url_refusal
from labs.selectors import currencies_supported
from merchants.models import ApiKey, Environment, Merchant
from merchants.services import api_key_create, api_key_revoke


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


@admin.register(Environment)
class EnvironmentAdmin(admin.ModelAdmin):
    form = EnvironmentForm
    list_display = ("merchant", "kind", "callback_url", "pause_mode", "pause_minutes")
    list_filter = ("kind", "pause_mode")
    search_fields = ("merchant__name",)
    readonly_fields = ("merchant", "kind", "callback_signing_secret")
    actions = ["issue_api_key"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # environments are created with their merchant

    @admin.action(description="Issue a new API key (shown once)", permissions=["change"])
    def issue_api_key(self, request: HttpRequest, queryset: QuerySet[Environment]) -> None:
        for environment in queryset:
            _, clear = api_key_create(environment=environment, name=f"issued by {request.user}")
            self.message_user(
                request,
                f"New key for {environment}: {clear} (copy it now, it is not shown again)",
                messages.WARNING,
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
