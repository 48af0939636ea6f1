"""Labs and what they make, ship and charge, in the admin.

Administrators add and change labs, lab products (lab SKU, variant codes, stock, prices),
shipping zones and rates and exchange rates; operators view them (``staff.roles``). Every write
changes the catalogue version (``labs.versioning``), so running processes use it at once. The
product of a lab product is chosen from a plain list: products stay superusers' to browse.
"""

from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.http import HttpRequest

from common.countries import is_country_code
from common.http import url_refusal
from labs.capabilities import CAPABILITIES, capabilities_listed
from labs.models import ExchangeRate, Lab, LabProduct, ShippingRate, ShippingZone, TaxRule
from labs.services import lab_save

# What each capability lets staff and merchants do to a lab order after its submission.
CAPABILITY_LABELS = {
    "cancel": "cancel: cancel the lab order",
    "hold": "hold: hold the lab order",
    "unhold": "unhold: release a held lab order",
    "updateAddress": "updateAddress: change the recipient's address",
    "updateShippingMethod": "updateShippingMethod: change the shipping method",
}


class LabProductInline(admin.TabularInline):
    model = LabProduct
    extra = 0


class ShippingRateInline(admin.TabularInline):
    model = ShippingRate
    extra = 0


class LabForm(forms.ModelForm):
    """The lab page; the Site Flow secret is write-only: never rendered back, and left blank
    it keeps the secret already saved."""

    siteflow_secret = forms.CharField(
        label="Site Flow secret",
        required=False,
        strip=True,
        max_length=200,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )

    class Meta:
        model = Lab
        fields = ("siteflow_secret",)  # the rest come from LabAdmin.fieldsets

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        already = bool(self.instance.pk and self.instance.siteflow_secret)
        self.fields["siteflow_secret"].help_text = (
            "A secret is saved; it is never shown. Type a new one to replace it."
            if already
            else "Never shown again once saved."
        )

    def clean_siteflow_base_url(self) -> str:
        """A base URL the outbound client would send to (http or https, a host, no
        credentials, a port it can connect to), as ``configure_lab`` takes it."""
        url = str(self.cleaned_data.get("siteflow_base_url") or "")
        refusal = url_refusal(url) if url else None
        if refusal is not None:
            raise forms.ValidationError(refusal)
        return url

    def clean_siteflow_secret(self) -> str:
        typed = str(self.cleaned_data.get("siteflow_secret") or "")
        if typed:
            return typed
        return self.instance.siteflow_secret if self.instance.pk else ""


class LabCapabilitiesForm(LabForm):
    """The lab page with its capabilities as checkboxes over the known ones, saved as the
    JSON list the lab holds (in the vocabulary's order)."""

    capabilities = forms.MultipleChoiceField(
        label="Capabilities",
        required=False,
        choices=[(name, CAPABILITY_LABELS.get(name, name)) for name in CAPABILITIES],
        widget=forms.CheckboxSelectMultiple,
        help_text="What the lab's connector can do to a lab order after submission. A Site "
        "Flow lab saved with none ticked gets every one Site Flow supports.",
    )

    def clean_capabilities(self) -> list[str]:
        return capabilities_listed(self.cleaned_data.get("capabilities") or [])


class ShippingZoneForm(forms.ModelForm):
    """A zone's countries typed as codes (``DE, FR IT``), saved as the list of upper-case
    ISO 3166-1 alpha-2 codes the zone holds; an unknown code is refused, as the API does."""

    countries = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="ISO 3166-1 alpha-2 country codes separated by commas or spaces, e.g. "
        "DE, FR, IT. A rest-of-world zone matches every country.",
    )

    class Meta:
        model = ShippingZone
        fields = ("code", "name", "countries", "rest_of_world")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if isinstance(self.initial.get("countries"), list):  # the zone's own, as typed
            self.initial["countries"] = ", ".join(self.initial["countries"])

    def clean_countries(self) -> list[str]:
        typed = str(self.cleaned_data.get("countries") or "")
        codes = list(dict.fromkeys(typed.replace(",", " ").upper().split()))
        unknown = [code for code in codes if not (code.isascii() and is_country_code(code))]
        if unknown:
            raise forms.ValidationError(
                f"Not ISO 3166-1 alpha-2 country codes: {', '.join(unknown)}."
            )
        return codes


def _credentials_hidden(fields: Any) -> list[str]:
    """The fields with the Site Flow token in place of whether token and secret are saved,
    and without the secret."""
    return [
        "siteflow_credentials" if field == "siteflow_token" else field
        for field in fields
        if field != "siteflow_secret"
    ]


@admin.register(Lab)
class LabAdmin(admin.ModelAdmin):
    form = LabCapabilitiesForm
    fieldsets = (
        (None, {"fields": ("code", "name", "country_code", "currency", "is_active")}),
        (
            "Connector",
            {
                "fields": (
                    "connector",
                    "capabilities",
                    "simulator_failure_share",
                    "simulator_cancel_share",
                    "simulator_error_share",
                )
            },
        ),
        (
            "Site Flow",
            {
                "fields": (
                    "siteflow_base_url",
                    "siteflow_token",
                    "siteflow_secret",
                    "siteflow_destination",
                    "siteflow_carrier_aliases",
                )
            },
        ),
    )
    list_display = ("code", "name", "country_code", "currency", "connector",
                    "simulator_failure_share", "is_active")  # fmt: skip
    list_filter = ("country_code", "connector", "currency", "is_active")
    search_fields = ("code", "name")
    inlines = [LabProductInline, ShippingRateInline]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    readonly_fields = ("siteflow_credentials",)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        """The Site Flow token and secret for whoever may change the lab (the secret still
        write-only); to anyone else, only whether they are saved."""
        if self.has_change_permission(request, obj):
            return self.fieldsets
        return [
            (name, {**options, "fields": _credentials_hidden(options["fields"])})
            for name, options in self.fieldsets
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if self.has_change_permission(request, obj):
            return ()
        return self.readonly_fields

    @admin.display(description="Site Flow token and secret")
    def siteflow_credentials(self, lab: Lab) -> str:
        saved = [
            name
            for name, value in (("token", lab.siteflow_token), ("secret", lab.siteflow_secret))
            if value
        ]
        state = " and ".join(saved).capitalize() + " saved" if saved else "None saved"
        return f"{state}; shown to administrators only."

    def save_model(self, request: HttpRequest, obj: Lab, form: Any, change: bool) -> None:
        lab_save(lab=obj)


@admin.register(LabProduct)
class LabProductAdmin(admin.ModelAdmin):
    list_display = ("lab", "product", "lab_sku", "unit_cost", "extra_page_cost", "in_stock")
    list_filter = ("in_stock", "lab", "product__category")
    list_editable = ("in_stock",)
    search_fields = ("product__sku", "lab_sku", "lab__code", "lab__name")
    fields = ("lab", "product", "lab_sku", "variant_codes", "unit_cost", "extra_page_cost",
              "in_stock")  # fmt: skip
    list_select_related = ("lab", "product")

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        changelist = super().get_changelist_instance(request)
        if not self.has_change_permission(request):
            changelist.list_editable = ()  # a viewer sees the stock, not a form to change it
        return changelist


@admin.register(ShippingZone)
class ShippingZoneAdmin(admin.ModelAdmin):
    form = ShippingZoneForm
    list_display = ("code", "name", "rest_of_world")
    search_fields = ("code", "name")


@admin.register(ShippingRate)
class ShippingRateAdmin(admin.ModelAdmin):
    list_display = ("lab", "method", "country_code", "zone", "price", "carrier_name",
                    "carrier_service", "min_days", "max_days")  # fmt: skip
    list_filter = ("method", "lab", "zone", "carrier_name")
    search_fields = ("lab__code", "country_code", "carrier_name", "carrier_service")
    list_select_related = ("lab", "zone")


@admin.register(ExchangeRate)
class ExchangeRateAdmin(admin.ModelAdmin):
    list_display = ("currency", "units_per_base", "updated")
    search_fields = ("currency",)


@admin.register(TaxRule)
class TaxRuleAdmin(admin.ModelAdmin):
    list_display = ("country_code", "name", "rate", "applies_to_shipping")
    list_filter = ("name", "applies_to_shipping")
    search_fields = ("country_code",)
