from django.contrib import admin
from django.db import models

from labs.models import ExchangeRate, Lab, LabProduct, ShippingRate, ShippingZone, TaxRule


class LabProductInline(admin.TabularInline):
    model = LabProduct
    extra = 0
    autocomplete_fields = ("product",)


class ShippingRateInline(admin.TabularInline):
    model = ShippingRate
    extra = 0


@admin.register(Lab)
class LabAdmin(admin.ModelAdmin):
    list_display = ("code", "name", "country_code", "currency", "connector",
                    "simulator_failure_share", "is_active")  # fmt: skip
    list_filter = ("country_code", "connector", "currency", "is_active")
    search_fields = ("code", "name")
    inlines = [LabProductInline, ShippingRateInline]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}


@admin.register(LabProduct)
class LabProductAdmin(admin.ModelAdmin):
    list_display = ("lab", "product", "unit_cost", "extra_page_cost", "in_stock")
    list_filter = ("in_stock", "lab", "product__category")
    list_editable = ("in_stock",)
    search_fields = ("product__sku", "lab__code", "lab__name")
    autocomplete_fields = ("product",)
    list_select_related = ("lab", "product")


@admin.register(ShippingZone)
class ShippingZoneAdmin(admin.ModelAdmin):
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
