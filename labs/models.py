"""Production labs, what they make at what cost, how they ship, exchange rates and taxes.

All amounts a lab quotes (``LabProduct`` costs, ``ShippingRate`` prices) are in the lab's own
currency; the allocation engine converts them with ``ExchangeRate`` (see ``labs.allocation``).
"""

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from common.countries import validate_country_code, validate_country_codes, validate_currency_code
from common.shipping import ShippingMethod
from labs.capabilities import CAPABILITIES
from labs.variant_codes import validate_variant_codes
from products.models import Product


def _money_field() -> models.DecimalField:
    """A non-negative amount with two decimals, in the lab's currency."""
    return models.DecimalField(
        max_digits=10, decimal_places=2, validators=[MinValueValidator(Decimal("0"))]
    )


def _share_field(help_text: str = "") -> models.DecimalField:
    """A share between 0 and 1 (the simulator's failure modes)."""
    return models.DecimalField(
        max_digits=4,
        decimal_places=3,
        default=Decimal("0"),
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("1"))],
        help_text=help_text,
    )


class Connector(models.TextChoices):
    SIMULATOR = "simulator", "Built-in simulator"
    SITEFLOW = "siteflow", "Site Flow over HTTP"


def validate_capabilities(value: object) -> None:
    if not isinstance(value, list) or any(c not in CAPABILITIES for c in value):
        raise ValidationError(f"A list drawn from: {', '.join(CAPABILITIES)}.")


def validate_carrier_aliases(value: object) -> None:
    methods = set(ShippingMethod.values)
    if (
        not isinstance(value, dict)
        or any(k not in methods for k in value)
        or any(not isinstance(v, str) or not v for v in value.values())
    ):
        raise ValidationError(
            f"An object from shipping method ({', '.join(ShippingMethod.values)}) to alias."
        )


class Lab(models.Model):
    """A production location. ``code`` (``gb1``, ``us2``) is what shipments show as labCode.

    Sandbox always uses the simulator connector; Live uses ``connector`` when it is a real one
    (``has_real_connector``; the simulator makes Live orders only where the development setting
    ``SIMULATOR_PRODUCES_LIVE`` allows it). The simulator refuses ``simulator_failure_share`` of
    its submissions, and cancels (``simulator_cancel_share``) or fails
    (``simulator_error_share``) that share of the lab orders it accepted, on its side, when
    production would start, so failure handling and its callbacks can be exercised. A Site
    Flow lab is reached at ``siteflow_base_url`` with its token and secret (the secret signs
    every request and is never shown again once saved, see ``labs.admin``).
    """

    code = models.CharField(
        max_length=16,
        unique=True,
        validators=[RegexValidator(r"^[a-z]{2}[0-9]+$", "Two letters and digits, e.g. gb1.")],
    )
    name = models.CharField(max_length=120)
    country_code = models.CharField(max_length=2, validators=[validate_country_code])
    currency = models.CharField(max_length=3, validators=[validate_currency_code])
    connector = models.CharField(max_length=12, choices=Connector.choices)
    capabilities = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_capabilities],
        help_text="What the lab's connector can do to a lab order after submission, drawn "
        f"from: {', '.join(CAPABILITIES)}.",
    )
    simulator_failure_share = _share_field()
    simulator_cancel_share = _share_field(
        "Share of accepted lab orders the simulator cancels on its side."
    )
    simulator_error_share = _share_field(
        "Share of accepted lab orders the simulator reports failed in production."
    )
    siteflow_base_url = models.URLField(
        "Site Flow base URL", blank=True, help_text="For example https://lab.example.com/api"
    )
    siteflow_token = models.CharField("Site Flow token", max_length=200, blank=True)
    siteflow_secret = models.CharField("Site Flow secret", max_length=200, blank=True)
    siteflow_destination = models.CharField(
        "Site Flow destination", max_length=120, blank=True, help_text="The destination name."
    )
    siteflow_carrier_aliases = models.JSONField(
        "Site Flow carrier aliases",
        default=dict,
        blank=True,
        validators=[validate_carrier_aliases],
        help_text='Shipping method → the site\'s carrier alias, e.g. {"Express": "dhl-express"}; '
        "a method without an alias is sent under its own name.",
    )
    is_active = models.BooleanField(default=True, help_text="Inactive labs are never allocated.")

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return f"{self.code} ({self.name})"

    def clean(self) -> None:
        if self.connector != Connector.SITEFLOW:
            return
        missing = {
            name: f"A Site Flow lab needs its {label}."
            for name, label in (
                ("siteflow_base_url", "base URL"),
                ("siteflow_token", "token"),
                ("siteflow_secret", "secret"),
            )
            if not getattr(self, name)
        }
        if missing:
            raise ValidationError(missing)

    @property
    def has_real_connector(self) -> bool:
        """Whether a real lab is behind this one: a Site Flow site with its settings complete."""
        return self.connector == Connector.SITEFLOW and not self.siteflow_missing()

    def siteflow_missing(self) -> list[str]:
        """The Site Flow settings this lab lacks (base URL, token, secret)."""
        return [
            label
            for label, value in (
                ("base URL", self.siteflow_base_url),
                ("token", self.siteflow_token),
                ("secret", self.siteflow_secret),
            )
            if not value
        ]


class LabProduct(models.Model):
    """A product a lab makes, at a unit cost in the lab's currency.

    ``variant_codes`` maps attribute values to the lab's own code of that variant
    (``labs.variant_codes``); ``lab_sku`` is the code otherwise.

    For products priced by page, ``unit_cost`` covers the product's ``pages_included`` and each
    further page costs ``extra_page_cost``. ``in_stock`` off makes the lab skip the product
    for now (paper ran out, machine down) without losing its price.
    """

    lab = models.ForeignKey(Lab, on_delete=models.CASCADE, related_name="products")
    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="lab_products")
    unit_cost = _money_field()
    extra_page_cost = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        default=Decimal("0"),
        validators=[MinValueValidator(Decimal("0"))],
    )
    in_stock = models.BooleanField(default=True)
    lab_sku = models.CharField(
        "lab's product code",
        max_length=100,
        blank=True,
        help_text="What the lab calls the product (Site Flow's sku); blank: the product SKU.",
    )
    variant_codes = models.JSONField(
        "lab's codes per variant",
        default=dict,
        blank=True,
        validators=[validate_variant_codes],
        help_text='Attribute values → the lab\'s code for that variant, e.g. {"wrap=ImageWrap": '
        '"CAN-IW", "wrap=Black": "CAN-BK"}; several pairs joined by commas. The match with the '
        "most pairs wins; without one, the lab's product code above.",
    )

    class Meta:
        ordering = ["lab__code", "product__sku"]
        constraints = [
            models.UniqueConstraint(fields=["lab", "product"], name="one_price_per_lab_product")
        ]

    def __str__(self) -> str:
        return f"{self.lab.code}: {self.product.sku}"


class ShippingZone(models.Model):
    """A named set of destination countries (``EU``); ``rest_of_world`` matches every country."""

    code = models.CharField(max_length=20, unique=True)
    name = models.CharField(max_length=120)
    countries = models.JSONField(default=list, blank=True, validators=[validate_country_codes])
    rest_of_world = models.BooleanField(default=False)

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return self.code


class ShippingRate(models.Model):
    """The price of one shipment from a lab to a destination by one method, in lab currency.

    The destination is either one country or a zone. For a given lab, country and method the
    most specific rate wins: a country rate, then a zone listing the country, then a
    rest-of-world zone (see ``labs.allocation``).
    """

    lab = models.ForeignKey(Lab, on_delete=models.CASCADE, related_name="shipping_rates")
    country_code = models.CharField(
        max_length=2, blank=True, validators=[validate_country_code], help_text="Or a zone."
    )
    zone = models.ForeignKey(
        ShippingZone, null=True, blank=True, on_delete=models.PROTECT, related_name="rates"
    )
    method = models.CharField(max_length=12, choices=ShippingMethod.choices)
    price = _money_field()
    carrier_name = models.CharField(max_length=60)
    carrier_service = models.CharField(max_length=80)
    min_days = models.PositiveSmallIntegerField()
    max_days = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["lab__code", "method", "country_code", "zone__code"]
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(country_code="") & models.Q(zone__isnull=False))
                | (~models.Q(country_code="") & models.Q(zone__isnull=True)),
                name="rate_has_country_or_zone",
            ),
            models.UniqueConstraint(
                fields=["lab", "method", "country_code"],
                condition=~models.Q(country_code=""),
                name="one_rate_per_lab_method_country",
            ),
            models.UniqueConstraint(
                fields=["lab", "method", "zone"],
                condition=models.Q(zone__isnull=False),
                name="one_rate_per_lab_method_zone",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.lab.code} → {self.country_code or self.zone} {self.method}"

    def clean(self) -> None:
        if bool(self.country_code) == (self.zone_id is not None):
            raise ValidationError("Give either a country or a zone.")
        if self.min_days > self.max_days:
            raise ValidationError({"max_days": "At least min_days."})


class ExchangeRate(models.Model):
    """How many units of ``currency`` one unit of the base currency (``BASE_CURRENCY``) buys.

    Every conversion goes through the base: A → B multiplies by ``rate(B) / rate(A)``.
    """

    BASE_CURRENCY = "GBP"

    currency = models.CharField(max_length=3, unique=True, validators=[validate_currency_code])
    units_per_base = models.DecimalField(
        max_digits=14, decimal_places=6, validators=[MinValueValidator(Decimal("0.000001"))]
    )
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["currency"]

    def __str__(self) -> str:
        return f"1 {self.BASE_CURRENCY} = {self.units_per_base} {self.currency}"


class TaxRule(models.Model):
    """Sales tax charged on deliveries to a country (VAT, GST); none where no rule exists."""

    country_code = models.CharField(max_length=2, unique=True, validators=[validate_country_code])
    name = models.CharField(max_length=40, default="VAT")
    rate = models.DecimalField(
        max_digits=5,
        decimal_places=4,
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("1"))],
    )
    applies_to_shipping = models.BooleanField(default=True)

    class Meta:
        ordering = ["country_code"]

    def __str__(self) -> str:
        return f"{self.country_code} {self.name} {self.rate:%}"


class SimulatedLabOrder(models.Model):
    """A submission the built-in lab simulator accepted, one per shipment id: a second
    submission of the same shipment (a retry after a crash) answers the same reference
    instead of making a second lab order, as a real lab keyed on the shipment id does."""

    shipment_id = models.CharField(max_length=40, unique=True)
    lab_code = models.CharField(max_length=16)
    reference = models.CharField(max_length=80)
    submissions = models.PositiveIntegerField(default=1, help_text="Submissions received.")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created"]

    def __str__(self) -> str:
        return f"{self.lab_code}: {self.reference}"
