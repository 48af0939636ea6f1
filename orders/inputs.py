"""The order's input fields and request shapes, shared by the order API (``orders.api``) and
the merchant dashboard's forms, so that both refuse the same values with the same messages
(field names as the specification)."""

import json
import re
from typing import Any
from urllib.parse import urlsplit

from rest_framework import serializers

from api.serializers import JsonIntegerField, KeptFieldsSerializer, StrictSerializer
from common.countries import is_country_code
from common.shipping import shipping_method_parse
from orders.models import ShippingMethod, Sizing

METADATA_MAX_CHARACTERS = 2000
BRANDING_NAMES = (
    "postcard",
    "flyer",
    "packing_slip_bw",
    "packing_slip_color",
    "sticker_exterior_round",
    "sticker_exterior_rectangle",
    "sticker_interior_round",
    "sticker_interior_rectangle",
)
_MD5 = re.compile(r"^[0-9a-fA-F]{32}$")


class Int64Field(JsonIntegerField):
    """An int64, as the specification types ``omsId``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(min_value=-(2**63), max_value=2**63 - 1, **kwargs)


class CaseInsensitiveChoiceField(serializers.ChoiceField):
    """Accepts any letter case and returns the canonical spelling."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str):
            for choice in self.choices:
                if str(choice).lower() == data.strip().lower():
                    return choice
        self.fail("invalid_choice", input=data)


class ShippingMethodField(serializers.ChoiceField):
    """A shipping method in any letter case (``common.shipping.shipping_method_parse``),
    returned in its canonical spelling."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=ShippingMethod.values, **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        method = shipping_method_parse(data)
        if method is None:
            self.fail("invalid_choice", input=data)
        return method


class HttpUrlField(serializers.URLField):
    """An absolute http(s) URL (no other scheme is ever fetched or called)."""

    default_error_messages = {"invalid": "Enter an absolute http or https URL."}

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not value.lower().startswith(("http://", "https://")):
            self.fail("invalid")
        try:
            port = urlsplit(value).port  # a port beyond 65535 raises
        except ValueError:
            self.fail("invalid")
        if port == 0:  # nothing can be connected to on it
            self.fail("invalid")
        return value


class CountryCodeField(serializers.CharField):
    default_error_messages = {
        "invalid_country": "'{value}' is not an ISO 3166-1 alpha-2 country code."
    }

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data).upper()
        if not is_country_code(value):
            self.fail("invalid_country", value=data)
        return value


class MetadataField(serializers.JSONField):
    default_error_messages = {
        "not_object": "Metadata must be a JSON object.",
        "too_long": f"Metadata must be at most {METADATA_MAX_CHARACTERS} characters (compact).",
    }

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            self.fail("not_object")
        if (
            len(json.dumps(data, separators=(",", ":"), ensure_ascii=False))
            > METADATA_MAX_CHARACTERS
        ):
            self.fail("too_long")
        return data


class AttributesField(serializers.DictField):
    child = serializers.CharField(allow_blank=False)


class AddressInput(StrictSerializer):
    line1 = serializers.CharField(max_length=200)
    line2 = serializers.CharField(max_length=200, required=False, allow_blank=True, allow_null=True)
    postalOrZipCode = serializers.CharField(max_length=40)
    countryCode = CountryCodeField()
    townOrCity = serializers.CharField(max_length=100)
    stateOrCounty = serializers.CharField(
        max_length=100, required=False, allow_blank=True, allow_null=True
    )


class RecipientInput(StrictSerializer):
    name = serializers.CharField(max_length=200)
    email = serializers.EmailField(required=False, allow_blank=True, allow_null=True)
    phoneNumber = serializers.CharField(
        max_length=50, required=False, allow_blank=True, allow_null=True
    )
    address = AddressInput()


class CostInput(StrictSerializer):
    amount = serializers.DecimalField(max_digits=12, decimal_places=2, min_value=0)
    currency = serializers.RegexField(r"^[A-Za-z]{3}$")


class SpineInput(StrictSerializer):
    text = serializers.CharField(max_length=200, required=False, allow_blank=True)
    backgroundColourHexCode = serializers.RegexField(r"^#?[0-9A-Fa-f]{6}$", required=False)
    textColourHexCode = serializers.RegexField(r"^#?[0-9A-Fa-f]{6}$", required=False)
    textSizePx = JsonIntegerField(min_value=1, max_value=500, required=False, allow_null=True)
    textFontFamily = serializers.CharField(max_length=100, required=False, allow_blank=True)


class AssetInput(StrictSerializer):
    omsId = Int64Field(required=False, allow_null=True)
    printArea = serializers.CharField(max_length=50, required=False, default="default")
    url = HttpUrlField(max_length=2000)
    md5Hash = serializers.RegexField(_MD5, required=False, allow_null=True)
    pageCount = JsonIntegerField(min_value=1, max_value=10000, required=False, allow_null=True)


class ItemInput(StrictSerializer):
    omsId = Int64Field(required=False, allow_null=True)
    merchantReference = serializers.CharField(
        max_length=200, required=False, allow_blank=True, allow_null=True
    )
    sku = serializers.CharField(max_length=100)
    copies = JsonIntegerField(min_value=1, max_value=100000)
    sizing = CaseInsensitiveChoiceField(choices=Sizing.values, required=False, default=Sizing.FILL)
    attributes = AttributesField(required=False, default=dict)
    spine = SpineInput(required=False, allow_null=True)
    assets = AssetInput(many=True, allow_empty=False)
    recipientCost = CostInput(required=False, allow_null=True)


class PackingSlipInput(StrictSerializer):
    url = HttpUrlField(max_length=2000, required=False, allow_null=True)


class BrandingItemInput(StrictSerializer):
    url = HttpUrlField(max_length=2000)


class BrandingInput(StrictSerializer):
    def get_fields(self) -> dict[str, serializers.Field]:
        return {name: BrandingItemInput(required=False) for name in BRANDING_NAMES}


class OrderCreateInput(KeptFieldsSerializer):
    omsId = Int64Field(required=False, allow_null=True)
    callbackUrl = HttpUrlField(max_length=2000, required=False, allow_null=True, allow_blank=True)
    merchantReference = serializers.CharField(
        max_length=200, required=False, allow_blank=True, allow_null=True
    )
    idempotencyKey = serializers.CharField(max_length=200, required=False, allow_null=True)
    shippingMethod = ShippingMethodField()
    recipient = RecipientInput()
    items = ItemInput(many=True, allow_empty=False, max_length=500)  # type: ignore[call-arg]
    packingSlip = PackingSlipInput(required=False, allow_null=True)
    branding = BrandingInput(required=False, allow_null=True)
    metadata = MetadataField(required=False, allow_null=True)


class ShippingMethodInput(StrictSerializer):
    shippingMethod = ShippingMethodField()


class MetadataInput(StrictSerializer):
    metadata = MetadataField()


class RecipientUpdateInput(RecipientInput):
    """The recipient, flat, as the body of ``updateRecipient``."""
