"""POST /v4.0/quotes."""

import re
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from labs.allocation import BasketItem, plan_basket
from merchants.services import CreatedMerchant
from tests.labs.factories import (
    ExchangeRateFactory,
    LabFactory,
    LabProductFactory,
    ShippingRateFactory,
    TaxRuleFactory,
)
from tests.merchants.factories import merchant_with_keys
from tests.products.factories import PhotobookFactory, ProductAttributeFactory, ProductFactory

pytestmark = pytest.mark.django_db
TRACE = re.compile(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")
QUOTE_ITEM_ID = re.compile(r"^qit_[0-9a-f]{32}$")


@pytest.fixture
def catalogue() -> None:
    """A fine-art print and framed prints in GB and the US; photobooks from a book lab in GB."""
    fap = ProductFactory(sku="GLOBAL-FAP-10X10")
    framed = ProductFactory(sku="GLOBAL-CFPM-16X20")
    ProductAttributeFactory(product=framed, name="color", values=["black", "white", "natural"])
    book = PhotobookFactory(sku="BOOK-A4-L-HARD-M")
    gb1 = LabFactory(code="gb1", name="London Print Works")
    gb2 = LabFactory(code="gb2", name="Midlands Framing")
    gb3 = LabFactory(code="gb3", name="Bristol Bindery")
    us1 = LabFactory(code="us1", country_code="US", currency="USD")
    ExchangeRateFactory(currency="USD", units_per_base=Decimal("1.250000"))
    ExchangeRateFactory(currency="EUR", units_per_base=Decimal("1.200000"))
    TaxRuleFactory(country_code="GB", rate=Decimal("0.2000"))
    LabProductFactory(lab=gb1, product=fap, unit_cost=Decimal("6.00"))
    LabProductFactory(lab=gb2, product=framed, unit_cost=Decimal("38.00"))
    LabProductFactory(
        lab=gb3, product=book, unit_cost=Decimal("14.00"), extra_page_cost=Decimal("0.25")
    )
    LabProductFactory(lab=us1, product=fap, unit_cost=Decimal("7.50"))
    ShippingRateFactory(lab=gb1, method="Standard", price=Decimal("3.95"))
    ShippingRateFactory(
        lab=gb1,
        method="Express",
        price=Decimal("7.95"),
        carrier_name="DPD",
        carrier_service="Next Day",
    )
    ShippingRateFactory(
        lab=gb2,
        method="Standard",
        price=Decimal("6.95"),
        carrier_name="DPD",
        carrier_service="Two Day",
    )
    ShippingRateFactory(lab=gb3, method="Standard", price=Decimal("3.95"))
    ShippingRateFactory(
        lab=us1,
        country_code="US",
        method="Standard",
        price=Decimal("5.00"),
        carrier_name="USPS",
        carrier_service="Priority Mail",
    )


def quote(client: APIClient, **body: Any):  # type: ignore[no-untyped-def]
    return client.post("/v4.0/quotes", body, format="json")


def fap(copies: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "sku": "global-fap-10x10",
        "copies": copies,
        "assets": [{"printArea": "default"}],
        **extra,
    }


def money(amount: str, currency: str = "GBP") -> dict[str, str]:
    return {"amount": amount, "currency": currency}


def test_a_quote_for_one_method(sandbox_api: APIClient, catalogue: None) -> None:
    response = quote(
        sandbox_api,
        shippingMethod="standard",
        destinationCountryCode="gb",
        items=[fap(copies=2, attributes={})],
    )

    assert response.status_code == 200
    body = response.json()
    assert TRACE.match(body.pop("traceParent"))
    item_id = body["quotes"][0]["items"][0]["id"]
    assert QUOTE_ITEM_ID.match(item_id)
    assert body == {
        "outcome": "Created",
        "issues": [],
        "quotes": [
            {
                "shipmentMethod": "Standard",
                "costSummary": {
                    "items": money("12.00"),
                    "shipping": money("3.95"),
                    # 2.40 on the items, 0.79 on shipping
                    "totalTax": money("3.19"),
                    "totalCost": money("19.14"),
                },
                "shipments": [
                    {
                        "carrier": {"name": "Royal Mail", "service": "Tracked 48"},
                        "fulfillmentLocation": {"countryCode": "GB", "labCode": "gb1"},
                        "cost": money("3.95"),
                        "items": [item_id],
                    }
                ],
                "items": [
                    {
                        "id": item_id,
                        "sku": "GLOBAL-FAP-10X10",
                        "copies": 2,
                        "unitCost": money("6.00"),
                        "attributes": {},
                        "assets": [{"printArea": "default"}],
                    }
                ],
            }
        ],
    }


def test_without_a_method_every_method_that_delivers_is_quoted(
    sandbox_api: APIClient, catalogue: None
) -> None:
    body = quote(sandbox_api, destinationCountryCode="GB", items=[fap()]).json()

    assert [q["shipmentMethod"] for q in body["quotes"]] == ["Standard", "Express"]
    assert [q["costSummary"]["shipping"] for q in body["quotes"]] == [
        money("3.95"),
        money("7.95"),
    ]
    express = body["quotes"][1]["shipments"][0]
    assert express["carrier"] == {"name": "DPD", "service": "Next Day"}
    # Each quote numbers its own items.
    assert body["quotes"][0]["items"][0]["id"] != body["quotes"][1]["items"][0]["id"]


def test_a_photobook_and_a_framed_print_ship_separately(
    sandbox_api: APIClient, catalogue: None
) -> None:
    body = quote(
        sandbox_api,
        shippingMethod="Standard",
        destinationCountryCode="GB",
        items=[
            {
                "sku": "BOOK-A4-L-HARD-M",
                "copies": 1,
                "assets": [{"printArea": "default", "pageCount": 40}, {"printArea": "Spine"}],
            },
            {
                "sku": "GLOBAL-CFPM-16X20",
                "copies": 1,
                "attributes": {"Color": "Black"},
                "assets": [{"printArea": "default"}],
            },
        ],
    ).json()

    (result,) = body["quotes"]
    book_id, frame_id = (item["id"] for item in result["items"])
    assert [
        (s["fulfillmentLocation"]["labCode"], s["items"], s["cost"]) for s in result["shipments"]
    ] == [("gb2", [frame_id], money("6.95")), ("gb3", [book_id], money("3.95"))]
    # 14.00 + 16 extra pages at 0.25
    assert result["items"][0]["unitCost"] == money("18.00")
    assert result["items"][0]["assets"] == [{"printArea": "default"}, {"printArea": "spine"}]
    assert result["items"][1]["attributes"] == {"color": "black"}
    assert result["costSummary"]["items"] == money("56.00")
    assert result["costSummary"]["shipping"] == money("10.90")


def test_us_destinations_carry_the_sales_tax_warning_and_convert_currency(
    sandbox_api: APIClient, catalogue: None
) -> None:
    response = quote(
        sandbox_api, destinationCountryCode="US", currencyCode="eur", items=[fap(copies=3)]
    )

    assert response.status_code == 200
    body = response.json()
    assert body["outcome"] == "CreatedWithIssues"
    assert body["issues"] == [
        {
            "errorCode": "destinationCountryCode.UsSalesTaxWarning",
            "description": "Prices for deliveries to the United States may be subject to sales "
            "tax, which is not included in this quote.",
        }
    ]
    (result,) = body["quotes"]
    # 7.50 USD * 1.20 / 1.25 = 7.20 EUR; shipping 5.00 USD = 4.80 EUR; no tax.
    assert result["items"][0]["unitCost"] == money("7.20", "EUR")
    assert result["costSummary"] == {
        "items": money("21.60", "EUR"),
        "shipping": money("4.80", "EUR"),
        "totalTax": money("0.00", "EUR"),
        "totalCost": money("26.40", "EUR"),
    }


def test_the_merchant_billing_currency_is_the_default(catalogue: None) -> None:
    merchant: CreatedMerchant = merchant_with_keys(name="Dollar Prints", billing_currency="USD")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=merchant.live_api_key)

    body = quote(
        client, shippingMethod="Standard", destinationCountryCode="US", items=[fap()]
    ).json()

    assert body["quotes"][0]["items"][0]["unitCost"] == money("7.50", "USD")


def test_a_quote_equals_the_engine_plan_to_the_cent(
    sandbox_api: APIClient, catalogue: None
) -> None:
    body = quote(
        sandbox_api, shippingMethod="Express", destinationCountryCode="GB", items=[fap(copies=7)]
    ).json()

    plan = plan_basket(
        items=[BasketItem(key="x", sku="GLOBAL-FAP-10X10", attributes={}, copies=7)],
        country_code="GB",
        shipping_method="Express",
        currency="GBP",
        sandbox=True,
    )
    assert body["quotes"][0]["costSummary"] == {
        "items": money(str(plan.items_cost)),
        "shipping": money(str(plan.shipping_cost)),
        "totalTax": money(str(plan.total_tax)),
        "totalCost": money(str(plan.total_cost)),
    }


def failures_of(response: Any) -> dict[str, list[dict[str, str]]]:
    assert response.status_code == 400
    body = response.json()
    assert body["outcome"] == "ValidationFailed"
    assert body["statusCode"] == 400
    assert TRACE.match(body["traceParent"])
    assert response["traceParent"] == body["traceParent"]
    return body["data"]["failures"]


def test_request_shape_failures(sandbox_api: APIClient, catalogue: None) -> None:
    response = quote(
        sandbox_api,
        shippingMethod="Teleport",
        destinationCountryCode="XX",
        currencyCode="ABC",
        items=[fap(sizing="fitPrintArea"), {"sku": "X", "copies": 0, "assets": []}],
        coupon="FREE",
    )

    assert failures_of(response) == {
        "shippingMethod": [
            {
                "code": "InvalidShippingMethod",
                "description": "'Teleport' is not a shipping method; use one of Budget, "
                "Standard, StandardPlus, Express, Overnight.",
            }
        ],
        "destinationCountryCode": [
            {
                "code": "InvalidCountryCode",
                "description": "'XX' is not a two-letter ISO country code.",
            }
        ],
        "currencyCode": [
            {"code": "UnsupportedCurrency", "description": "Quotes cannot be priced in 'ABC'."}
        ],
        "items[0].sizing": [{"code": "UnknownField", "description": "Unknown field."}],
        "items[1].copies": [
            {"code": "MinValue", "description": "Ensure this value is greater than or equal to 1."}
        ],
        "coupon": [{"code": "UnknownField", "description": "Unknown field."}],
    }
    assert failures_of(quote(sandbox_api, destinationCountryCode="GB", items=[])) == {
        "items": [{"code": "Empty", "description": "This list may not be empty."}]
    }


def test_catalogue_failures_name_each_field(sandbox_api: APIClient, catalogue: None) -> None:
    response = quote(
        sandbox_api,
        destinationCountryCode="GB",
        items=[
            {"sku": "NOPE", "copies": 1, "assets": [{"printArea": "default"}]},
            {"sku": "GLOBAL-CFPM-16X20", "copies": 1, "assets": [{"printArea": "default"}]},
            {
                "sku": "GLOBAL-CFPM-16X20",
                "copies": 1,
                "attributes": {"color": "purple"},
                "assets": [{"printArea": "default"}, {"printArea": "lid"}],
            },
        ],
    )

    assert failures_of(response) == {
        "items[0].sku": [
            {"code": "UnknownSku", "description": "There is no product with SKU 'NOPE'."}
        ],
        "items[1].attributes.color": [
            {
                "code": "Required",
                "description": "GLOBAL-CFPM-16X20 needs attribute 'color' "
                "(values: black, white, natural).",
            }
        ],
        "items[2].attributes.color": [
            {
                "code": "UnknownAttributeValue",
                "description": "'purple' is not a value of color for GLOBAL-CFPM-16X20 "
                "(values: black, white, natural).",
            }
        ],
        "items[2].assets[1].printArea": [
            {
                "code": "UnknownPrintArea",
                "description": "GLOBAL-CFPM-16X20 has no print area 'lid' (print areas: default).",
            }
        ],
    }


def test_undeliverable_items_are_explained(sandbox_api: APIClient, catalogue: None) -> None:
    assert failures_of(
        quote(sandbox_api, shippingMethod="Overnight", destinationCountryCode="GB", items=[fap()])
    ) == {
        "items[0].sku": [
            {
                "code": "MethodNotOffered",
                "description": "GLOBAL-FAP-10X10 cannot be delivered to GB by Overnight "
                "(methods: Standard, Express).",
            }
        ]
    }
    assert failures_of(quote(sandbox_api, destinationCountryCode="JP", items=[fap()])) == {
        "items[0].sku": [
            {
                "code": "NotShippedToCountry",
                "description": "GLOBAL-FAP-10X10 cannot be delivered to JP.",
            }
        ]
    }


def test_quotes_need_an_api_key_and_json(api: APIClient, sandbox_api: APIClient) -> None:
    assert quote(api, destinationCountryCode="GB", items=[fap()]).status_code == 401
    response = sandbox_api.post("/v4.0/quotes", "x=1", content_type="text/plain")
    assert response.status_code == 415
    assert response.json()["outcome"] == "InvalidContentType"
    assert sandbox_api.get("/v4.0/quotes").status_code == 405


def test_the_number_of_queries_does_not_grow_with_the_basket(
    sandbox_api: APIClient, catalogue: None
) -> None:
    def queries_for(items: list[dict[str, Any]]) -> int:
        with CaptureQueriesContext(connection) as captured:
            response = quote(sandbox_api, destinationCountryCode="GB", items=items)
        assert response.status_code == 200
        return len(captured.captured_queries)

    framed = {
        "sku": "GLOBAL-CFPM-16X20",
        "copies": 1,
        "attributes": {"color": "white"},
        "assets": [{"printArea": "default"}],
    }
    book = {"sku": "BOOK-A4-L-HARD-M", "copies": 1, "assets": [{"printArea": "default"}]}
    quote(sandbox_api, destinationCountryCode="GB", items=[fap()])  # key stamp, catalogue load

    # The versions of the keys and the catalogue, in one query: the key and the catalogue
    # themselves are this process's.
    assert queries_for([fap()]) == queries_for([fap(), framed, book, fap(copies=3)]) == 1
