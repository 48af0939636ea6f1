from typing import Any

from rest_framework import serializers

from api.serializers import (
    CarrierFields,
    FulfillmentLocationFields,
    JsonIntegerField,
    KeptFieldsSerializer,
    StrictSerializer,
)
from common.countries import is_country_code
from common.shipping import shipping_method_parse
from labs.allocation import METHODS
from labs.selectors import currencies_supported


class QuoteAssetRequestSerializer(StrictSerializer):
    printArea = serializers.CharField(max_length=40)
    pageCount = JsonIntegerField(min_value=1, max_value=2**31 - 1, required=False)


class QuoteItemRequestSerializer(StrictSerializer):
    sku = serializers.CharField(max_length=64)
    copies = JsonIntegerField(min_value=1, max_value=2**31 - 1)
    attributes = serializers.DictField(
        child=serializers.CharField(max_length=100), required=False, default=dict
    )
    assets = QuoteAssetRequestSerializer(many=True)


class QuoteRequestSerializer(KeptFieldsSerializer):
    shippingMethod = serializers.CharField(
        required=False,
        help_text=f"One of {', '.join(METHODS)}, in any letter case; all methods if absent.",
    )
    destinationCountryCode = serializers.CharField(max_length=2)
    currencyCode = serializers.CharField(
        required=False, help_text="Defaults to the merchant's billing currency."
    )
    items = QuoteItemRequestSerializer(many=True, allow_empty=False)

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
    currency = serializers.CharField()


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
    carrier = QuoteCarrierSerializer()
    fulfillmentLocation = QuoteFulfillmentLocationSerializer()
    cost = QuoteCostSerializer()
    items = serializers.ListField(child=serializers.CharField(), help_text="Quote item ids.")


class QuoteAssetSerializer(serializers.Serializer):
    printArea = serializers.CharField()


class QuoteItemSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="qit_ and 32 hexadecimal characters")
    sku = serializers.CharField()
    copies = serializers.IntegerField()
    unitCost = QuoteCostSerializer()
    attributes = serializers.DictField(child=serializers.CharField())
    assets = QuoteAssetSerializer(many=True)


class QuoteSerializer(serializers.Serializer):
    shipmentMethod = serializers.CharField()
    costSummary = QuoteCostSummarySerializer()
    shipments = QuoteShipmentSerializer(many=True)
    items = QuoteItemSerializer(many=True)


class QuoteIssueSerializer(serializers.Serializer):
    errorCode = serializers.CharField()
    description = serializers.CharField()


class QuoteResponseSerializer(serializers.Serializer):
    outcome = serializers.CharField(help_text="Created or CreatedWithIssues")
    quotes = QuoteSerializer(many=True)
    issues = QuoteIssueSerializer(many=True)
    traceParent = serializers.CharField()


def cost(amount: Any, currency: str) -> dict[str, str]:
    return {"amount": f"{amount:.2f}", "currency": currency}
