"""The order's input fields and request shapes, shared by the order API (``orders.api``) and
the merchant dashboard's forms, so that both refuse the same values with the same messages
(field names as the specification)."""

import json
import re
from typing import Any
from urllib.parse import urlsplit

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
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


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@extend_schema_field(OpenApiTypes.INT64)
class Int64Field(JsonIntegerField):
    """An int64, as the specification types ``omsId``. Its range is checked here rather than
    by ``min_value`` and ``max_value``, which the document would show as bounds no JSON reader
    holds exactly (9223372036854775807 reads as 9223372036854776000): ``int64`` says it."""

    def to_internal_value(self, data: Any) -> int:
        value = super().to_internal_value(data)
        if value < INT64_MIN:
            self.fail("min_value", min_value=INT64_MIN)
        if value > INT64_MAX:
            self.fail("max_value", max_value=INT64_MAX)
        return value


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


@extend_schema_field({"type": "string", "format": "uri"})  # one type, whatever allow_blank
class HttpUrlField(serializers.URLField):
    """An absolute http(s) URL (no other scheme is ever fetched or called) that the outbound
    client would request: a port it can connect to, no credentials (never sent, and never to be
    repeated back in an issue) and a host written in ASCII (an internationalised name in its
    ``xn--`` form), refused here rather than when the URL is first requested."""

    default_error_messages = {
        "invalid": "Enter an absolute http or https URL.",
        "credentials": "A URL with credentials (user:password@host) is not taken; give a URL "
        "that needs none, such as a signed one.",
        "host_not_ascii": "The URL's host must be written in ASCII: give an internationalised "
        "name in its xn-- form.",
    }

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not value.lower().startswith(("http://", "https://")):
            self.fail("invalid")
        try:
            parts = urlsplit(value)
            port = parts.port  # a port beyond 65535 raises
        except ValueError:
            self.fail("invalid")
        if port == 0:  # nothing can be connected to on it
            self.fail("invalid")
        for refused, reason in (
            (parts.username is not None or parts.password is not None, "credentials"),
            (not (parts.hostname or "").isascii(), "host_not_ascii"),
        ):
            if refused:
                raise serializers.ValidationError(self.error_messages[reason], code="invalid")
        return value


class OptionalHttpUrlField(HttpUrlField):
    """An ``HttpUrlField`` that takes an empty string as none (null), as ``allow_blank`` would
    take it, while the document types it once: a URL or null."""

    def run_validation(self, data: Any = serializers.empty) -> Any:
        if isinstance(data, str) and data.strip() == "":
            return None
        return super().run_validation(data)


class CountryCodeField(serializers.CharField):
    default_error_messages = {
        "invalid_country": "'{value}' is not an ISO 3166-1 alpha-2 country code."
    }

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data).upper()
        if not is_country_code(value):
            self.fail("invalid_country", value=data)
        return value


@extend_schema_field({"type": "object", "additionalProperties": {}})
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


HEX_COLOUR = r"^#?[0-9A-Fa-f]{6}$"
SHIPPING_METHOD_TEXT = (
    "Budget, Standard, StandardPlus, Express or Overnight, in any letter case: the lab and "
    "carrier are chosen to suit it."
)
METADATA_TEXT = (
    "Your own keys and values (a JSON object of at most 2000 characters, written compactly), "
    "shown back on the order and in its callbacks."
)


class AddressInput(StrictSerializer):
    line1 = serializers.CharField(max_length=200, help_text="The first line of the address.")
    line2 = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="The second line, if any.",
    )
    postalOrZipCode = serializers.CharField(max_length=40, help_text="The postal or ZIP code.")
    countryCode = CountryCodeField(help_text="The two-letter ISO country code, e.g. `GB`.")
    townOrCity = serializers.CharField(max_length=100, help_text="The town or city.")
    stateOrCounty = serializers.CharField(
        max_length=100,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="The state or county, if any.",
    )


class RecipientInput(StrictSerializer):
    name = serializers.CharField(
        max_length=200,
        help_text="Who receives the order (very long names may be shortened for couriers).",
    )
    email = serializers.EmailField(
        required=False, allow_blank=True, allow_null=True, help_text="The recipient's email."
    )
    phoneNumber = serializers.CharField(
        max_length=50,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="The recipient's mobile number, for the carrier.",
    )
    address = AddressInput(help_text="Where the order is shipped.")


class CostInput(StrictSerializer):
    amount = serializers.DecimalField(
        max_digits=12,
        decimal_places=2,
        min_value=0,
        help_text='The amount, at most two decimal places, e.g. "12.50".',
    )
    currency = serializers.RegexField(
        r"^[A-Za-z]{3}$", help_text="The three-letter ISO currency code, e.g. `GBP`."
    )


class SpineInput(StrictSerializer):
    text = serializers.CharField(
        max_length=200, required=False, allow_blank=True, help_text="The text on the spine."
    )
    backgroundColourHexCode = serializers.RegexField(
        HEX_COLOUR, required=False, help_text="The spine's background colour, e.g. `#FFFFFF`."
    )
    textColourHexCode = serializers.RegexField(
        HEX_COLOUR, required=False, help_text="The colour of the text, e.g. `#000000`."
    )
    textSizePx = JsonIntegerField(
        min_value=1,
        max_value=500,
        required=False,
        allow_null=True,
        help_text="The size of the text, in pixels; fitted to the spine if absent.",
    )
    textFontFamily = serializers.CharField(
        max_length=100, required=False, allow_blank=True, help_text="The font of the text."
    )


class AssetInput(StrictSerializer):
    omsId = Int64Field(
        required=False, allow_null=True, help_text="Your own number for this asset (int64)."
    )
    printArea = serializers.CharField(
        max_length=50,
        required=False,
        default="default",
        help_text="The print area the image is for: `default`, or one the product lists, e.g. "
        "`spine` (photobooks) or `lid` (jigsaws).",
    )
    url = HttpUrlField(
        max_length=2000, help_text="A public http(s) URL the service downloads the image from."
    )
    md5Hash = serializers.RegexField(
        _MD5,
        required=False,
        allow_null=True,
        help_text="The MD5 hash of the file, in hexadecimal: the download must match it.",
    )
    pageCount = JsonIntegerField(
        min_value=1,
        max_value=10000,
        required=False,
        allow_null=True,
        help_text="The number of pages: required when the product is priced by page (e.g. "
        "photobooks).",
    )


class ItemInput(StrictSerializer):
    omsId = Int64Field(
        required=False, allow_null=True, help_text="Your own number for this item (int64)."
    )
    merchantReference = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="Your own reference of the item.",
    )
    sku = serializers.CharField(
        max_length=100, help_text="The product's SKU (see the products' lookup)."
    )
    copies = JsonIntegerField(min_value=1, max_value=100000, help_text="How many of it.")
    sizing = CaseInsensitiveChoiceField(
        choices=Sizing.values,
        required=False,
        default=Sizing.FILL,
        help_text="How the image fits the print area: fillPrintArea (centred and cropped to "
        "cover it, the default), fitPrintArea (shrunk to fit inside it, white space may remain) "
        "or stretchToPrintArea (resized to fill it, stretched if the shapes differ).",
    )
    attributes = AttributesField(
        required=False,
        default=dict,
        help_text="Product attribute to chosen value, e.g. a frame colour; the product lists "
        "its attributes and their allowed values.",
    )
    spine = SpineInput(
        required=False, allow_null=True, help_text="A photobook's spine text and colours."
    )
    assets = AssetInput(
        many=True, allow_empty=False, help_text="The item's images, one per print area."
    )
    recipientCost = CostInput(
        required=False,
        allow_null=True,
        help_text="What you charged the recipient for the item: recommended for international "
        "orders (customs).",
    )


class PackingSlipInput(StrictSerializer):
    url = HttpUrlField(
        max_length=2000,
        required=False,
        allow_null=True,
        help_text="A public http(s) URL of the packing slip to put in the parcel.",
    )


class BrandingItemInput(StrictSerializer):
    url = HttpUrlField(
        max_length=2000, help_text="A public http(s) URL of the branded asset to put in the parcel."
    )


class BrandingInput(StrictSerializer):
    def get_fields(self) -> dict[str, serializers.Field]:
        return {
            name: BrandingItemInput(
                required=False, help_text=f"The {name.replace('_', ' ')} to include."
            )
            for name in BRANDING_NAMES
        }


class OrderCreateInput(KeptFieldsSerializer):
    omsId = Int64Field(
        required=False, allow_null=True, help_text="Your own number for this order (int64)."
    )
    callbackUrl = OptionalHttpUrlField(
        max_length=2000,
        required=False,
        allow_null=True,
        help_text="Where this order's callbacks go, in place of your account's callback URL; "
        "null for that one.",
    )
    merchantReference = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="Your own reference of the order (e.g. your order number).",
    )
    idempotencyKey = serializers.CharField(
        max_length=200,
        required=False,
        allow_null=True,
        help_text="Any string, kept indefinitely: a create repeated with the same key makes no "
        "second order (see Idempotency).",
    )
    shippingMethod = ShippingMethodField(help_text=SHIPPING_METHOD_TEXT)
    recipient = RecipientInput(help_text="Who receives the order, and where.")
    items = ItemInput(  # type: ignore[call-arg]
        many=True, allow_empty=False, max_length=500, help_text="What to make (1 to 500 items)."
    )
    packingSlip = PackingSlipInput(
        required=False, allow_null=True, help_text="A packing slip to put in the parcel."
    )
    branding = BrandingInput(
        required=False,
        allow_null=True,
        help_text="Branded assets to put in the parcel, by branding name.",
    )
    metadata = MetadataField(required=False, allow_null=True, help_text=METADATA_TEXT)


class ShippingMethodInput(StrictSerializer):
    shippingMethod = ShippingMethodField(help_text=SHIPPING_METHOD_TEXT)


class MetadataInput(StrictSerializer):
    metadata = MetadataField(help_text=METADATA_TEXT + " Replaces the metadata entirely.")


class RecipientUpdateInput(RecipientInput):
    """The recipient, flat, as the body of ``updateRecipient``."""
