from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from api.serializers import (
    OK_OUTCOMES,
    JsonIntegerField,
    OutcomeField,
    StrictSerializer,
    TraceParentField,
)


class ProductDimensionsSerializer(serializers.Serializer):
    width = serializers.DecimalField(
        max_digits=8, decimal_places=2, coerce_to_string=False, help_text="The width."
    )
    height = serializers.DecimalField(
        max_digits=8, decimal_places=2, coerce_to_string=False, help_text="The height."
    )
    units = serializers.CharField(help_text="The unit of both, e.g. `cm` or `in`.")


class ProductPrintAreaSerializer(serializers.Serializer):
    # ``required`` is also a Field attribute, so the field is declared here, not on the class.
    def get_fields(self) -> dict[str, serializers.Field]:
        return {"required": serializers.BooleanField(help_text="An asset must be supplied.")}


class ProductPixelSizeSerializer(serializers.Serializer):
    horizontalResolution = serializers.IntegerField(
        help_text="The recommended width of the image, in pixels."
    )
    verticalResolution = serializers.IntegerField(
        help_text="The recommended height of the image, in pixels."
    )


class ProductVariantSerializer(serializers.Serializer):
    attributes = serializers.DictField(
        child=serializers.CharField(), help_text="Attribute name to this variant's value."
    )
    shipsTo = serializers.ListField(
        child=serializers.CharField(),
        help_text="The two-letter ISO codes of the countries this variant ships to.",
    )
    printAreaSizes = serializers.DictField(
        child=ProductPixelSizeSerializer(),
        help_text="Print area name to the recommended pixel size of its image.",
    )


class ProductDetailsSerializer(serializers.Serializer):
    sku = serializers.CharField(help_text="The product's SKU, as orders name it.")
    description = serializers.CharField(help_text="What the product is.")
    productDimensions = ProductDimensionsSerializer(help_text="The product's size.")
    attributes = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Attribute name to the values an order may choose, e.g. frame colours.",
    )
    printAreas = serializers.DictField(
        child=ProductPrintAreaSerializer(),
        help_text="Print area name (e.g. `default`) to whether an asset must be supplied.",
    )
    variants = ProductVariantSerializer(
        many=True, help_text="Each combination of attribute values, where it ships, its sizes."
    )


class ProductListVariantSerializer(ProductVariantSerializer):
    shipsTo = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="The two-letter ISO codes of the countries this variant ships to; left out "
        "with `compact=true`.",
    )


class ProductListDetailsSerializer(ProductDetailsSerializer):
    variants = ProductListVariantSerializer(
        many=True, help_text="Each combination of attribute values, where it ships, its sizes."
    )


class ProductResponseSerializer(serializers.Serializer):
    outcome = OutcomeField(OK_OUTCOMES, "Ok.")
    product = ProductDetailsSerializer(help_text="The product.")
    traceParent = TraceParentField()


@extend_schema_serializer(many=False)  # one object holding the list, not a list
class ProductListResponseSerializer(serializers.Serializer):
    outcome = OutcomeField(OK_OUTCOMES, "Ok.")
    products = ProductListDetailsSerializer(many=True, help_text="Every product on offer.")
    traceParent = TraceParentField()


class SpineRequestSerializer(StrictSerializer):
    sku = serializers.CharField(max_length=64, help_text="The photobook's SKU.")
    destinationCountryCode = serializers.CharField(
        max_length=2, required=False, help_text="The two-letter ISO country it ships to."
    )
    state = serializers.CharField(
        required=False, allow_blank=True, max_length=100, help_text="The state it ships to."
    )
    numberOfPages = JsonIntegerField(
        min_value=1, max_value=2**31 - 1, help_text="The number of pages of the book."
    )


class SpineInfoSerializer(serializers.Serializer):
    widthMm = serializers.FloatField(help_text="The width of the spine, in millimetres.")


class SpineResponseSerializer(serializers.Serializer):
    success = serializers.BooleanField(help_text="Whether the width could be worked out.")
    message = serializers.CharField(allow_blank=True, help_text="Why not, when not; else empty.")
    spineInfo = SpineInfoSerializer(allow_null=True, help_text="The spine; null when not known.")
    traceParent = TraceParentField()
