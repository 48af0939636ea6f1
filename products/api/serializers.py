from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from api.serializers import JsonIntegerField, StrictSerializer


class ProductDimensionsSerializer(serializers.Serializer):
    width = serializers.DecimalField(max_digits=8, decimal_places=2, coerce_to_string=False)
    height = serializers.DecimalField(max_digits=8, decimal_places=2, coerce_to_string=False)
    units = serializers.CharField()


class ProductPrintAreaSerializer(serializers.Serializer):
    # ``required`` is also a Field attribute, so the field is declared here, not on the class.
    def get_fields(self) -> dict[str, serializers.Field]:
        return {"required": serializers.BooleanField(help_text="An asset must be supplied.")}


class ProductPixelSizeSerializer(serializers.Serializer):
    horizontalResolution = serializers.IntegerField()
    verticalResolution = serializers.IntegerField()


class ProductVariantSerializer(serializers.Serializer):
    attributes = serializers.DictField(child=serializers.CharField())
    shipsTo = serializers.ListField(child=serializers.CharField())
    printAreaSizes = serializers.DictField(child=ProductPixelSizeSerializer())


class ProductDetailsSerializer(serializers.Serializer):
    sku = serializers.CharField()
    description = serializers.CharField()
    productDimensions = ProductDimensionsSerializer()
    attributes = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    printAreas = serializers.DictField(child=ProductPrintAreaSerializer())
    variants = ProductVariantSerializer(many=True)


class ProductResponseSerializer(serializers.Serializer):
    outcome = serializers.CharField(help_text="Ok")
    product = ProductDetailsSerializer()
    traceParent = serializers.CharField()


@extend_schema_serializer(many=False)  # one object holding the list, not a list
class ProductListResponseSerializer(serializers.Serializer):
    outcome = serializers.CharField(help_text="Ok")
    products = ProductDetailsSerializer(many=True)
    traceParent = serializers.CharField()


class SpineRequestSerializer(StrictSerializer):
    sku = serializers.CharField(max_length=64)
    destinationCountryCode = serializers.CharField(max_length=2, required=False)
    state = serializers.CharField(required=False, allow_blank=True, max_length=100)
    numberOfPages = JsonIntegerField(min_value=1, max_value=2**31 - 1)


class SpineInfoSerializer(serializers.Serializer):
    widthMm = serializers.FloatField()


class SpineResponseSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    message = serializers.CharField(allow_blank=True)
    spineInfo = SpineInfoSerializer(allow_null=True)
    traceParent = serializers.CharField()
