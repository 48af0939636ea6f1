from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.authentication import client_environment
from api.schema import PRODUCTS, operation
from api.views import ApiViewSet, validated_input
from common.countries import is_country_code
from common.errors import EntityNotFound, ValidationFailed
from labs.selectors import countries_reached, products_with_countries
from products.api.serializers import (
    ProductDetailsSerializer,
    ProductListDetailsSerializer,
    ProductListResponseSerializer,
    ProductResponseSerializer,
    SpineRequestSerializer,
    SpineResponseSerializer,
)
from products.models import Category, Product
from products.selectors import product_get, spine_width_mm


def _product_details(
    product: Product, ships_to: list[str], *, compact: bool = False
) -> dict[str, Any]:
    return {
        "sku": product.sku,
        "description": product.description,
        "productDimensions": {
            "width": product.width,
            "height": product.height,
            "units": product.units,
        },
        "attributes": {a.name: list(a.values) for a in product.attributes.all()},
        "printAreas": {a.name: {"required": a.required} for a in product.print_areas.all()},
        "variants": [
            {
                "attributes": v.attributes,
                **({} if compact else {"shipsTo": ships_to}),
                "printAreaSizes": v.print_area_sizes,
            }
            for v in product.variants.all()
        ],
    }


def _category(request: Request) -> str | None:
    raw = request.query_params.get("category")
    if not raw:
        return None
    known = {value.lower(): value for value in Category.values}
    category = known.get(raw.strip().lower())
    if category is None:
        raise ValidationFailed.single(
            "category",
            "InvalidChoice",
            f"'{raw}' is not one of {', '.join(sorted(Category.values))}.",
        )
    return category


def _destination(request: Request) -> str | None:
    raw = request.query_params.get("destinationcountrycode")
    if raw is None or raw == "":
        return None
    country = raw.strip().upper()
    if not is_country_code(country):
        raise ValidationFailed.single(
            "destinationCountryCode",
            "InvalidCountryCode",
            f"'{raw}' is not a two-letter ISO country code.",
        )
    return country


def _compact(request: Request) -> bool:
    raw = request.query_params.get("compact")
    if raw is None or raw == "":
        return False
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ValidationFailed.single("compact", "Invalid", f"'{raw}' is not true or false.")
    return value == "true"


class ProductViewSet(ApiViewSet):
    # GET /v4.0/products (an extension), GET /v4.0/products/{sku}, POST /v4.0/products/spine.
    lookup_field = "sku"
    lookup_value_converter = "str"

    @operation(
        PRODUCTS,
        "products_list",
        "Every active product",
        ProductListResponseSerializer,
        description=(
            "**Extension**: this service's addition to API v4.0, which otherwise looks products "
            "up one SKU at a time. Lists every active product, each in the shape "
            "`GET /v4.0/products/{sku}` answers, ordered by SKU; `category` keeps one category "
            "(any letter case), `destinationCountryCode` the products that ship to one country, "
            "and `compact=true` leaves out each variant's `shipsTo` (the list of countries, "
            "which `GET /v4.0/products/{sku}` always gives whole). The countries are those the "
            "labs of the key's environment deliver to."
        ),
        extensions={"x-specification-extension": True},
        parameters=[
            OpenApiParameter(
                "category",
                str,
                OpenApiParameter.QUERY,
                required=False,
                enum=sorted(Category.values),
                description="Only products of this category (any letter case).",
            ),
            OpenApiParameter(
                "destinationCountryCode",
                str,
                OpenApiParameter.QUERY,
                required=False,
                description="Only products that ship to this country (two-letter ISO code).",
            ),
            OpenApiParameter(
                "compact",
                bool,
                OpenApiParameter.QUERY,
                required=False,
                description="`true` leaves out each variant's `shipsTo`; `false` (the default) "
                "keeps it.",
            ),
        ],
    )
    def list(self, request: Request) -> Response:
        category, destination, compact = (
            _category(request),
            _destination(request),
            _compact(request),
        )
        listed = products_with_countries(
            category=category, sandbox=client_environment(request).is_sandbox
        )
        products = [
            _product_details(product, ships_to, compact=compact)
            for product, ships_to in listed
            if destination is None or destination in ships_to
        ]
        details = ProductListDetailsSerializer(products, many=True).data
        return Response({"outcome": "Ok", "products": details})

    @operation(
        PRODUCTS,
        "products_get",
        "Product details by SKU (any letter case)",
        ProductResponseSerializer,
        parameters=[
            OpenApiParameter(
                "sku", str, OpenApiParameter.PATH, description="The product's SKU (any case)."
            )
        ],
        description=(
            "A product's description, size, attributes with their allowed values, print areas "
            "(which need an asset) and the countries it ships to. SKUs match in any letter case."
        ),
    )
    def retrieve(self, request: Request, sku: str) -> Response:
        product = product_get(sku=sku)
        if product is None:
            raise EntityNotFound(f"There is no product with SKU '{sku}'.")
        details = ProductDetailsSerializer(
            _product_details(
                product,
                countries_reached(product=product, sandbox=client_environment(request).is_sandbox),
            )
        ).data
        return Response({"outcome": "Ok", "product": details})

    @operation(
        PRODUCTS,
        "products_spine",
        "Spine width of a photobook with a given number of pages",
        SpineResponseSerializer,
        request=SpineRequestSerializer,
        description=(
            "How wide the spine of a photobook is for a page count, so that a cover can be "
            "designed to fit; `success` is false, with a message, for a product without a spine."
        ),
    )
    @action(detail=False, methods=["post"], url_path="spine")
    def spine(self, request: Request) -> Response:
        data = validated_input(SpineRequestSerializer, request)
        country = data.get("destinationCountryCode")
        if country is not None and not is_country_code(country):
            raise ValidationFailed.single(
                "destinationCountryCode",
                "InvalidCountryCode",
                f"'{country}' is not a two-letter ISO country code.",
            )
        product = product_get(sku=data["sku"])
        if product is None:
            return _spine_response(False, f"There is no product with SKU '{data['sku']}'.")
        if not product.has_spine:
            return _spine_response(False, f"{product.sku} has no spine.")
        try:
            width = spine_width_mm(product=product, pages=data["numberOfPages"])
        except ValueError as problem:
            return _spine_response(False, str(problem))
        return _spine_response(True, "", float(width))


def _spine_response(success: bool, message: str, width_mm: float | None = None) -> Response:
    body = {
        "success": success,
        "message": message,
        "spineInfo": None if width_mm is None else {"widthMm": width_mm},
    }
    return Response(body)
