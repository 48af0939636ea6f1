from typing import Any

from rest_framework import serializers

from api.serializers import (
    CarrierFields,
    FulfillmentLocationFields,
    JsonIntegerField,
    KeptFieldsSerializer,
    OutcomeField,
    StrictSerializer,
    TraceParentField,
)
from common.countries import is_country_code
from common.shipping import shipping_method_parse
from labs.allocation import METHODS
from labs.selectors import currencies_supported

QUOTE_OUTCOMES = ("Created", "CreatedWithIssues")


class QuoteAssetRequestSerializer(StrictSerializer):
    printArea = serializers.CharField(
        max_length=40, help_text="The print area an image would be for, e.g. `default`."
    )
    pageCount = JsonIntegerField(
        min_value=1,
        max_value=2**31 - 1,
        required=False,
        help_text="The number of pages: required when the product is priced by page.",
    )


class QuoteItemRequestSerializer(StrictSerializer):
    sku = serializers.CharField(max_length=64, help_text="The product's SKU.")
    copies = JsonIntegerField(min_value=1, max_value=2**31 - 1, help_text="How many of it.")
    attributes = serializers.DictField(
        child=serializers.CharField(max_length=100),
        required=False,
        default=dict,
        help_text="Product attribute to chosen value, as in an order.",
    )
    assets = QuoteAssetRequestSerializer(
        many=True, help_text="The print areas the item would have images for."
    )


class QuoteRequestSerializer(KeptFieldsSerializer):
    shippingMethod = serializers.CharField(
        required=False,
        help_text=f"One of {', '.join(METHODS)}, in any letter case; all methods if absent.",
    )
    destinationCountryCode = serializers.CharField(
        max_length=2, help_text="The two-letter ISO country code of the destination."
    )
    currencyCode = serializers.CharField(
        required=False,
        help_text="The three-letter ISO currency to price in; defaults to your billing currency.",
    )
    items = QuoteItemRequestSerializer(
        many=True, allow_empty=False, help_text="The basket: what would be made."
    )

    def validate_shippingMethod(self, value: str) -> str:
        method = shipping_method_parse(value)
        if method is None:
            raise serializers.ValidationError(
                f"'{value}' is not a shipping method; use one of {', '.join(METHODS)}.",
                code="invalid_shipping_method",
            )
        return method

    def validate_destinationCountryCode(self, value: str) -> str:
        if not is_country_code(value):
            raise serializers.ValidationError(
                f"'{value}' is not a two-letter ISO country code.", code="invalid_country_code"
            )
        return value.upper()

    def validate_currencyCode(self, value: str) -> str:
        # The view passes the catalogue snapshot it prices with, so a quote reads one version.
        catalogue = self.context.get("catalogue")
        supported = set(catalogue.units_per_base) if catalogue else currencies_supported()
        if value.upper() not in supported:
            raise serializers.ValidationError(
                f"Quotes cannot be priced in '{value}'.", code="unsupported_currency"
            )
        return value.upper()


class QuoteCostSerializer(serializers.Serializer):
    amount = serializers.CharField(help_text='Decimal string with two decimals, e.g. "12.50".')
    currency = serializers.CharField(help_text="The three-letter ISO currency code, e.g. `GBP`.")


class QuoteCostSummarySerializer(serializers.Serializer):
    items = QuoteCostSerializer(help_text="All items, tax excluded.")
    shipping = QuoteCostSerializer(help_text="All shipments, tax excluded.")
    totalTax = QuoteCostSerializer(help_text="Tax on items and shipping.")
    totalCost = QuoteCostSerializer(help_text="items + shipping + totalTax.")


class QuoteCarrierSerializer(CarrierFields):
    pass


class QuoteFulfillmentLocationSerializer(FulfillmentLocationFields):
    pass


class QuoteShipmentSerializer(serializers.Serializer):
    carrier = QuoteCarrierSerializer(help_text="Who would carry the shipment.")
    fulfillmentLocation = QuoteFulfillmentLocationSerializer(
        help_text="The lab that would make it."
    )
    cost = QuoteCostSerializer(help_text="The shipping cost of the shipment, tax excluded.")
    items = serializers.ListField(child=serializers.CharField(), help_text="Quote item ids.")


class QuoteAssetSerializer(serializers.Serializer):
    printArea = serializers.CharField(help_text="A print area of the item.")


class QuoteItemSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The quote item's id: `qit_` and 32 hexadecimal digits.")
    sku = serializers.CharField(help_text="The product's SKU.")
    copies = serializers.IntegerField(help_text="How many of it.")
    unitCost = QuoteCostSerializer(help_text="The cost of one copy, tax excluded.")
    attributes = serializers.DictField(
        child=serializers.CharField(), help_text="Every attribute of the product, as priced."
    )
    assets = QuoteAssetSerializer(many=True, help_text="Its print areas.")


class QuoteSerializer(serializers.Serializer):
    shipmentMethod = serializers.CharField(help_text="The shipping method quoted.")
    costSummary = QuoteCostSummarySerializer(help_text="What the order would cost.")
    shipments = QuoteShipmentSerializer(
        many=True, help_text="The shipments the order would be split into."
    )
    items = QuoteItemSerializer(many=True, help_text="The basket's items, priced.")


class QuoteIssueSerializer(serializers.Serializer):
    errorCode = serializers.CharField(
        help_text="e.g. `destinationCountryCode.UsSalesTaxWarning` (prices may be subject to "
        "US sales tax)."
    )
    description = serializers.CharField(help_text="The issue, for a person to read.")


class QuoteResponseSerializer(serializers.Serializer):
    outcome = OutcomeField(QUOTE_OUTCOMES, "Created, or CreatedWithIssues (see `issues`).")
    quotes = QuoteSerializer(
        many=True, help_text="One quote per shipping method, or for the method asked."
    )
    issues = QuoteIssueSerializer(many=True, help_text="What to know about the quotes.")
    traceParent = TraceParentField()


def cost(amount: Any, currency: str) -> dict[str, str]:
    return {"amount": f"{amount:.2f}", "currency": currency}
