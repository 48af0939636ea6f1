"""GET /v4.0/products (an extension), GET /v4.0/products/{sku} and POST /v4.0/products/spine."""

import re
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from common.countries import COUNTRY_CODES
from labs.models import Lab
from products.models import Category, Product
from tests.labs.factories import (
    LabFactory,
    LabProductFactory,
    ShippingRateFactory,
    ShippingZoneFactory,
)
from tests.products.factories import (
    PaperFactory,
    PhotobookFactory,
    ProductAttributeFactory,
    ProductFactory,
    VariantFactory,
)

pytestmark = pytest.mark.django_db
TRACE = re.compile(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")


def canvas() -> None:
    product = ProductFactory(sku="GLOBAL-CAN-10X10", description="Canvas 10x10")
    ProductAttributeFactory(product=product, name="wrap", values=["Black", "ImageWrap"])
    VariantFactory(
        product=product,
        attributes={"wrap": "Black"},
        print_area_sizes={"default": {"horizontalResolution": 3000, "verticalResolution": 3000}},
    )
    VariantFactory(
        product=product,
        attributes={"wrap": "ImageWrap"},
        print_area_sizes={"default": {"horizontalResolution": 3750, "verticalResolution": 3750}},
    )
    gb1, us1 = LabFactory(code="gb1"), LabFactory(code="us1", country_code="US", currency="USD")
    LabProductFactory(lab=gb1, product=product)
    LabProductFactory(lab=us1, product=product)
    ShippingRateFactory(lab=gb1, country_code="GB")
    ShippingRateFactory(
        lab=gb1, country_code="", zone=ShippingZoneFactory(code="EU", countries=["FR", "DE"])
    )
    ShippingRateFactory(lab=us1, country_code="US")


def test_product_details_in_any_letter_case(sandbox_api: APIClient) -> None:
    canvas()

    response = sandbox_api.get("/v4.0/Products/global-can-10x10")

    assert response.status_code == 200
    body = response.json()
    assert TRACE.match(body.pop("traceParent"))
    assert response["traceParent"]
    ships_to = ["DE", "FR", "GB", "US"]
    assert body == {
        "outcome": "Ok",
        "product": {
            "sku": "GLOBAL-CAN-10X10",
            "description": "Canvas 10x10",
            "productDimensions": {"width": 10.0, "height": 10.0, "units": "in"},
            "attributes": {"wrap": ["Black", "ImageWrap"]},
            "printAreas": {"default": {"required": True}},
            "variants": [
                {
                    "attributes": {"wrap": "Black"},
                    "shipsTo": ships_to,
                    "printAreaSizes": {
                        "default": {"horizontalResolution": 3000, "verticalResolution": 3000}
                    },
                },
                {
                    "attributes": {"wrap": "ImageWrap"},
                    "shipsTo": ships_to,
                    "printAreaSizes": {
                        "default": {"horizontalResolution": 3750, "verticalResolution": 3750}
                    },
                },
            ],
        },
    }


def test_a_rest_of_world_rate_ships_everywhere(sandbox_api: APIClient) -> None:
    product = ProductFactory(sku="P")
    VariantFactory(product=product)
    lab = LabFactory(code="gb1")
    LabProductFactory(lab=lab, product=product)
    world = ShippingZoneFactory(code="ROW", countries=[], rest_of_world=True)
    ShippingRateFactory(lab=lab, country_code="", zone=world)

    body = sandbox_api.get("/v4.0/products/p").json()

    assert body["product"]["variants"][0]["shipsTo"] == sorted(COUNTRY_CODES)


def test_the_lookup_reads_where_a_product_ships_from_the_catalogue_snapshot(
    sandbox_api: APIClient,
) -> None:
    canvas()
    sandbox_api.get("/v4.0/products/GLOBAL-CAN-10X10")  # the catalogue snapshot read once

    with CaptureQueriesContext(connection) as read:
        body = sandbox_api.get("/v4.0/products/GLOBAL-CAN-10X10").json()

    assert body["product"]["variants"][0]["shipsTo"] == ["DE", "FR", "GB", "US"]
    assert not [q for q in read.captured_queries if "labs_" in q["sql"]]


def test_an_unknown_sku_is_entity_not_found(sandbox_api: APIClient) -> None:
    response = sandbox_api.get("/v4.0/products/NOPE-1")

    assert response.status_code == 404
    body = response.json()
    assert TRACE.match(body.pop("traceParent"))
    assert body == {
        "outcome": "EntityNotFound",
        "statusCode": 404,
        "statusText": "The entity was not found.",
        "data": {"reason": "There is no product with SKU 'NOPE-1'."},
    }


def test_products_need_an_api_key(api: APIClient) -> None:
    canvas()

    response = api.get("/v4.0/products/GLOBAL-CAN-10X10")

    assert response.status_code == 401
    assert response.json()["outcome"] == "Unauthorized"


def spine(client: APIClient, **body: object):  # type: ignore[no-untyped-def]
    return client.post("/v4.0/products/spine", body, format="json")


def test_spine_width_of_a_photobook(sandbox_api: APIClient) -> None:
    PhotobookFactory(
        sku="BOOK-A4-L-HARD-M",
        spine_base_mm=Decimal("6.00"),
        paper=PaperFactory(name="Matte", mm_per_page=Decimal("0.0900")),
    )

    response = spine(
        sandbox_api,
        sku="book-a4-l-hard-m",
        destinationCountryCode="GB",
        state="",
        numberOfPages=45,
    )

    assert response.status_code == 200
    body = response.json()
    assert TRACE.match(body.pop("traceParent"))
    # 6.00 + 45 * 0.09 = 10.05
    assert body == {"success": True, "message": "", "spineInfo": {"widthMm": 10.05}}


def test_spine_refusals_are_success_false(sandbox_api: APIClient) -> None:
    PhotobookFactory(sku="BOOK")
    ProductFactory(sku="FLAT")

    cases = {
        "FLAT": "FLAT has no spine.",
        "NOPE": "There is no product with SKU 'NOPE'.",
    }
    for sku, message in cases.items():
        body = spine(sandbox_api, sku=sku, numberOfPages=30).json()
        assert (body["success"], body["message"], body["spineInfo"]) == (False, message, None)
    body = spine(sandbox_api, sku="BOOK", numberOfPages=300).json()
    assert (body["success"], body["message"]) == (False, "BOOK has at most 200 pages.")


def test_spine_request_validation(sandbox_api: APIClient) -> None:
    response = spine(sandbox_api, sku="BOOK", pages=3, destinationCountryCode="ZZ")

    assert response.status_code == 400
    body = response.json()
    assert body["outcome"] == "ValidationFailed"
    assert TRACE.match(body["traceParent"])
    assert body["data"]["failures"] == {
        "numberOfPages": [{"code": "Required", "description": "This field is required."}],
        "pages": [{"code": "UnknownField", "description": "Unknown field."}],
    }

    response = spine(sandbox_api, sku="BOOK", numberOfPages=30, destinationCountryCode="ZZ")
    assert response.status_code == 400
    assert response.json()["data"]["failures"] == {
        "destinationCountryCode": [
            {
                "code": "InvalidCountryCode",
                "description": "'ZZ' is not a two-letter ISO country code.",
            }
        ]
    }


# --- GET /v4.0/products (decisions.md, "Products list (extension)") -------------------------


@pytest.mark.usefixtures("catalogue")
def test_the_list_shows_every_active_product_as_the_lookup_does(sandbox_api: APIClient) -> None:
    Product.objects.filter(sku="GLOBAL-CAN-10X10").update(is_active=False)
    active = list(Product.objects.filter(is_active=True).order_by("sku"))
    assert len(active) > 20

    response = sandbox_api.get("/v4.0/products")

    assert response.status_code == 200
    body = response.json()
    assert TRACE.match(body.pop("traceParent"))
    assert body["outcome"] == "Ok"
    assert [p["sku"] for p in body["products"]] == [p.sku for p in active]
    for listed in body["products"]:
        looked_up = sandbox_api.get(f"/v4.0/products/{listed['sku']}").json()["product"]
        assert listed == looked_up


@pytest.mark.usefixtures("catalogue")
def test_the_list_keeps_one_category_in_any_letter_case(sandbox_api: APIClient) -> None:
    canvases = sorted(
        Product.objects.filter(category=Category.CANVAS).values_list("sku", flat=True)
    )
    assert canvases

    for given in ("Canvas", "canvas", "CANVAS"):
        body = sandbox_api.get(f"/v4.0/products?Category={given}").json()
        assert [p["sku"] for p in body["products"]] == canvases
    assert sandbox_api.get("/v4.0/products?category=Jigsaw").json()["products"] != []


def test_the_list_keeps_the_products_that_ship_to_a_country(sandbox_api: APIClient) -> None:
    canvas()  # made by gb1 (GB, FR, DE) and us1 (US)
    home = LabFactory(code="nz1", country_code="NZ")
    kiwi = ProductFactory(sku="NZ-ONLY-PRINT")
    VariantFactory(product=kiwi)
    LabProductFactory(lab=home, product=kiwi)
    ShippingRateFactory(lab=home, country_code="NZ")

    for given in ("GB", "gb", " gb "):
        body = sandbox_api.get("/v4.0/products", {"destinationCountryCode": given}).json()
        assert [p["sku"] for p in body["products"]] == ["GLOBAL-CAN-10X10"]
    body = sandbox_api.get("/v4.0/products?destinationCountryCode=NZ").json()
    assert [p["sku"] for p in body["products"]] == ["NZ-ONLY-PRINT"]
    assert sandbox_api.get("/v4.0/products?destinationCountryCode=JP").json()["products"] == []
    assert len(sandbox_api.get("/v4.0/products").json()["products"]) == 2


@pytest.mark.usefixtures("catalogue")
def test_a_compact_list_leaves_out_the_country_lists_and_nothing_else(
    sandbox_api: APIClient,
) -> None:
    whole = sandbox_api.get("/v4.0/products?category=PhotoPrint").json()["products"]
    compact = sandbox_api.get("/v4.0/products?category=PhotoPrint&compact=TRUE").json()
    assert compact["outcome"] == "Ok"
    for product in whole:
        for variant in product["variants"]:
            assert variant.pop("shipsTo")
    assert compact["products"] == whole
    assert sandbox_api.get("/v4.0/products?compact=false").json()["products"][0]["variants"][0][
        "shipsTo"
    ]
    # The lookup by SKU always gives the countries whole.
    looked_up = sandbox_api.get(f"/v4.0/products/{whole[0]['sku']}").json()["product"]
    assert looked_up["variants"][0]["shipsTo"]


@pytest.mark.parametrize(
    ("query", "field", "code"),
    [
        ("destinationCountryCode=XX", "destinationCountryCode", "InvalidCountryCode"),
        ("destinationCountryCode=GBR", "destinationCountryCode", "InvalidCountryCode"),
        ("compact=yes", "compact", "Invalid"),
    ],
)
def test_a_bad_list_filter_is_validation_failed(
    sandbox_api: APIClient, query: str, field: str, code: str
) -> None:
    canvas()

    response = sandbox_api.get(f"/v4.0/products?{query}")

    assert response.status_code == 400
    body = response.json()
    assert body["outcome"] == "ValidationFailed"
    [failure] = body["data"]["failures"][field]
    assert failure["code"] == code


@pytest.mark.usefixtures("catalogue")
def test_live_ships_to_the_countries_of_the_labs_live_orders_may_use(
    sandbox_api: APIClient, live_api: APIClient, settings: Any
) -> None:
    settings.SIMULATOR_PRODUCES_LIVE = False
    sku = "GLOBAL-PHO-4X6"
    sandbox = sandbox_api.get(f"/v4.0/products/{sku}").json()["product"]
    assert sandbox["variants"][0]["shipsTo"]
    # No lab has a real connector: Live orders may use none, so Live ships nowhere yet.
    live = live_api.get(f"/v4.0/products/{sku}").json()["product"]
    assert live["variants"][0]["shipsTo"] == []
    assert live_api.get("/v4.0/products?destinationCountryCode=GB").json()["products"] == []

    Lab.objects.filter(code="gb1").update(
        connector="siteflow",
        siteflow_base_url="https://siteflow.example.com",
        siteflow_token="token",
        siteflow_secret="secret",
    )
    live = live_api.get(f"/v4.0/products/{sku}").json()["product"]
    assert "GB" in live["variants"][0]["shipsTo"]
    assert set(live["variants"][0]["shipsTo"]) <= set(sandbox["variants"][0]["shipsTo"])
    listed = live_api.get("/v4.0/products?destinationCountryCode=GB&compact=true").json()
    assert sku in [p["sku"] for p in listed["products"]]


def test_an_unknown_category_is_validation_failed(sandbox_api: APIClient) -> None:
    canvas()

    response = sandbox_api.get("/v4.0/products?category=Mugs")

    assert response.status_code == 400
    body = response.json()
    assert body["outcome"] == "ValidationFailed"
    [failure] = body["data"]["failures"]["category"]
    assert failure["code"] == "InvalidChoice"
    assert failure["description"].startswith("'Mugs' is not one of Canvas, FineArtPrint,")


def test_the_list_needs_an_api_key(api: APIClient) -> None:
    response = api.get("/v4.0/products")

    assert response.status_code == 401
    assert response.json()["outcome"] == "Unauthorized"


def test_the_list_costs_the_same_queries_for_one_product_or_many(
    sandbox_api: APIClient, django_assert_num_queries: Any
) -> None:
    canvas()
    sandbox_api.get("/v4.0/products")  # the key's last use and the catalogue snapshot: once
    with django_assert_num_queries(1) as one:
        assert len(sandbox_api.get("/v4.0/products").json()["products"]) == 1

    for number in range(12):
        product = ProductFactory(sku=f"MORE-{number}")
        VariantFactory(product=product)
        LabProductFactory(lab=Lab.objects.get(code="gb1"), product=product)
    sandbox_api.get("/v4.0/products")  # the catalogue changed: the snapshot is read again
    with django_assert_num_queries(1) as many:
        assert len(sandbox_api.get("/v4.0/products").json()["products"]) == 13
    assert len(one.captured_queries) == len(many.captured_queries)


def test_the_openapi_document_marks_the_list_as_an_extension(api: APIClient) -> None:
    document = api.get("/v4.0/schema?format=json")
    assert document.status_code == 200, document.content[:200]

    operation = document.json()["paths"]["/v4.0/products"]["get"]

    assert operation["x-specification-extension"] is True
    assert operation["description"].startswith("**Extension**")
    [parameter] = [p for p in operation["parameters"] if p["name"] == "category"]
    assert "Canvas" in parameter["schema"]["enum"]
