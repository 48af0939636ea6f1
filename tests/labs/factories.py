from decimal import Decimal

import factory
from factory.django import DjangoModelFactory

from labs.models import ExchangeRate, Lab, LabProduct, ShippingRate, ShippingZone, TaxRule
from tests.products.factories import ProductFactory


class LabFactory(DjangoModelFactory[Lab]):
    class Meta:
        model = Lab
        django_get_or_create = ("code",)

    code = factory.Sequence(lambda n: f"tl{n}")
    name = factory.LazyAttribute(lambda lab: f"Test lab {lab.code}")
    country_code = "GB"
    currency = "GBP"
    connector = "simulator"
    capabilities = ["cancel", "hold", "unhold", "updateAddress", "updateShippingMethod"]


class LabProductFactory(DjangoModelFactory[LabProduct]):
    class Meta:
        model = LabProduct

    lab = factory.SubFactory(LabFactory)
    product = factory.SubFactory(ProductFactory)
    unit_cost = Decimal("10.00")
    extra_page_cost = Decimal("0")
    in_stock = True


class ShippingZoneFactory(DjangoModelFactory[ShippingZone]):
    class Meta:
        model = ShippingZone
        django_get_or_create = ("code",)

    code = "EU"
    name = "European Union"
    countries = ["DE", "FR", "NL", "IE"]
    rest_of_world = False


class ShippingRateFactory(DjangoModelFactory[ShippingRate]):
    """A country rate by default; pass ``zone=...`` and ``country_code=""`` for a zone rate."""

    class Meta:
        model = ShippingRate

    lab = factory.SubFactory(LabFactory)
    country_code = "GB"
    zone = None
    method = "Standard"
    price = Decimal("4.00")
    carrier_name = "Royal Mail"
    carrier_service = "Tracked 48"
    min_days = 2
    max_days = 3


class ExchangeRateFactory(DjangoModelFactory[ExchangeRate]):
    class Meta:
        model = ExchangeRate
        django_get_or_create = ("currency",)

    currency = "USD"
    units_per_base = Decimal("1.250000")


class TaxRuleFactory(DjangoModelFactory[TaxRule]):
    class Meta:
        model = TaxRule
        django_get_or_create = ("country_code",)

    country_code = "GB"
    name = "VAT"
    rate = Decimal("0.2000")
    applies_to_shipping = True
