"""A quote is what the order of the same basket is charged, to the cent, in both environments
(decisions.md, "Quotes and products"), where the built-in simulator may not make Live orders
(``SIMULATOR_PRODUCES_LIVE`` off, as in production): a Live quote, a Live ``validationOnly``
and a Live order are all priced from the labs with a real connector only, a Sandbox one from
every lab. The catalogue's simulator labs are cheaper than its real ones, so a quote priced
at a lab the order may not use shows."""

import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.db import transaction
from django.test import override_settings
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from labs.models import Lab
from orders.issues import ITEM_UNAVAILABLE
from orders.models import Charge, ChargeItem, Order, OrderIssue, OrderItem, Shipment
from orders.pipeline.steps.allocate import order_allocate
from tests.labs.factories import (
    ExchangeRateFactory,
    LabFactory,
    LabProductFactory,
    ShippingRateFactory,
    ShippingZoneFactory,
    TaxRuleFactory,
)
from tests.products.factories import PhotobookFactory, ProductAttributeFactory, ProductFactory
from tests.support.orders import order_body, pk

pytestmark = pytest.mark.django_db

REAL = {
    "connector": "siteflow",
    "siteflow_base_url": "https://lab.example/api",
    "siteflow_token": "token",
    "siteflow_secret": "secret",
}
WRAPS = ["Black", "ImageWrap", "MirrorWrap", "White"]
# Repeated to weigh the draw towards baskets some lab of either environment can price.
SKUS = ["T-PRINT"] * 4 + ["T-CANVAS", "T-BOOK"] * 2 + ["T-CARD", "T-POSTER", "T-NONE"]
COUNTRIES = ["GB"] * 3 + ["DE", "FR", "US"] * 2 + ["JP", "CA"]
METHODS = ["Standard"] * 4 + ["Express"] * 2 + ["Budget", "StandardPlus", "Overnight"]
QUOTE_ITEM = re.compile(r"^items\[(\d+)\]: ")


@pytest.fixture
def simulator_not_live() -> Iterator[None]:
    with override_settings(SIMULATOR_PRODUCES_LIVE=False):
        yield


@pytest.fixture
def mixed_catalogue(simulator_not_live: None) -> None:
    """Simulator labs ``sgb`` (GB) and ``sus`` (US), cheaper than the Site Flow labs ``rgb``
    (GB) and ``rde`` (DE, in EUR); ``hde`` is a Site Flow lab without its secret (not a real
    connector, so simulator only), the cheapest for books. T-CARD is made only by simulators
    (Live: ``NoConfiguredLab``); T-POSTER's only real lab is out of stock (Live:
    ``TemporarilyUnavailable``); nobody ships to CA; JP only by rest-of-world rates."""
    sgb = LabFactory(code="sgb")
    sus = LabFactory(code="sus", country_code="US", currency="USD")
    rgb = LabFactory(code="rgb", **REAL)
    rde = LabFactory(code="rde", country_code="DE", currency="EUR", **REAL)
    hde = LabFactory(
        code="hde",
        country_code="DE",
        currency="EUR",
        connector="siteflow",
        siteflow_base_url="https://lab.example/api",
        siteflow_token="token",
    )
    ExchangeRateFactory(currency="USD", units_per_base=Decimal("1.250000"))
    ExchangeRateFactory(currency="EUR", units_per_base=Decimal("1.170000"))
    TaxRuleFactory(country_code="GB", rate=Decimal("0.2000"))
    TaxRuleFactory(
        country_code="DE", name="MwSt", rate=Decimal("0.1900"), applies_to_shipping=False
    )
    eu = ShippingZoneFactory(code="EU", countries=["DE", "FR", "NL", "IE"])
    world = ShippingZoneFactory(
        code="ROW", name="Rest of the world", countries=[], rest_of_world=True
    )

    fine_art = ProductFactory(sku="T-PRINT")
    canvas = ProductFactory(sku="T-CANVAS", category="Canvas")
    ProductAttributeFactory(product=canvas, name="wrap", values=WRAPS)
    book = PhotobookFactory(sku="T-BOOK")
    card = ProductFactory(sku="T-CARD", category="GreetingCard")
    poster = ProductFactory(sku="T-POSTER", category="Poster")

    for lab, product, cost, extra, in_stock in [
        (sgb, fine_art, "2.00", "0", True),
        (sus, fine_art, "2.40", "0", True),
        (rgb, fine_art, "5.50", "0", True),
        (rde, fine_art, "4.10", "0", True),
        (sgb, canvas, "9.00", "0", True),
        (sus, canvas, "11.00", "0", True),
        (rgb, canvas, "14.00", "0", True),
        (sgb, book, "12.00", "0.2000", True),
        (hde, book, "9.00", "0.1000", True),
        (rde, book, "16.00", "0.3000", True),
        (sgb, card, "1.10", "0", True),
        (sus, card, "1.30", "0", True),
        (sgb, poster, "3.00", "0", True),
        (rgb, poster, "4.00", "0", False),
    ]:
        LabProductFactory(
            lab=lab,
            product=product,
            unit_cost=Decimal(cost),
            extra_page_cost=Decimal(extra),
            in_stock=in_stock,
        )

    for lab, where, method, price in [
        (sgb, "GB", "Budget", "2.50"),
        (sgb, "GB", "Standard", "3.00"),
        (sgb, "GB", "Express", "6.00"),
        (sgb, eu, "Standard", "7.00"),
        (sgb, "US", "Standard", "9.00"),
        (sus, "US", "Budget", "4.00"),
        (sus, "US", "Standard", "6.00"),
        (sus, "US", "Express", "15.00"),
        (rgb, "GB", "Budget", "3.95"),
        (rgb, "GB", "Standard", "4.95"),
        (rgb, "GB", "Express", "8.95"),
        (rgb, "GB", "Overnight", "14.00"),
        (rgb, eu, "Standard", "9.50"),
        (rgb, eu, "Express", "18.00"),
        (rgb, world, "Standard", "14.00"),
        (rde, "DE", "Standard", "4.99"),
        (rde, "DE", "Express", "11.99"),
        (rde, eu, "Standard", "8.99"),
        (rde, eu, "Express", "19.99"),
        (rde, "GB", "Standard", "10.99"),
        (rde, world, "Standard", "19.99"),
        (hde, "DE", "Standard", "3.00"),
        (hde, "GB", "Standard", "6.00"),
    ]:
        place = (
            {"country_code": where}
            if isinstance(where, str)
            else {"country_code": "", "zone": where}
        )
        ShippingRateFactory(lab=lab, method=method, price=Decimal(price), **place)
    assert [lab.code for lab in Lab.objects.order_by("code") if lab.has_real_connector] == [
        "rde",
        "rgb",
    ]


@st.composite
def baskets(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One to three items: a SKU (T-NONE is unknown), copies, a wrap for the canvas, a page
    count for the book."""
    items = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        sku = draw(st.sampled_from(SKUS))
        item: dict[str, Any] = {"sku": sku, "copies": draw(st.integers(1, 5))}
        if sku == "T-CANVAS":
            item["attributes"] = {"wrap": draw(st.sampled_from(WRAPS))}
        asset: dict[str, Any] = {"printArea": "default"}
        if sku == "T-BOOK":
            asset["pageCount"] = draw(st.integers(min_value=24, max_value=60))
        item["assets"] = [asset]
        items.append(item)
    return items


def order_of(items: list[dict[str, Any]], country: str, method: str) -> dict[str, Any]:
    """The order request for the quoted basket."""
    body = order_body(shippingMethod=method, items=[], merchantReference="")
    body["recipient"]["address"]["countryCode"] = country
    body["items"] = [
        {
            **{k: v for k, v in item.items() if k != "assets"},
            "assets": [
                {**asset, "url": f"https://images.example.com/{n}.jpg"} for asset in item["assets"]
            ],
        }
        for n, item in enumerate(items)
    ]
    return body


def quote_of(items: list[dict[str, Any]], country: str, method: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"destinationCountryCode": country, "items": items}
    if method is not None:
        body["shippingMethod"] = method
    return body


def failure_codes(body: dict[str, Any]) -> set[str]:
    return {f["code"] for failures in body["data"]["failures"].values() for f in failures}


def cents(money: dict[str, str]) -> Decimal:
    assert money["currency"] == "GBP"
    return Decimal(money["amount"])


def charged(order: Order) -> dict[str, Any]:
    """The order's charges in the shape of a quote's numbers: the cost summary, each
    shipment's lab and shipping cost, each item's lab and line cost (in request order)."""
    charges = {c.charge_type: c for c in Charge.objects.filter(order=order)}
    assert sorted(charges) == ["Item", "Shipping"]
    assert {c.currency for c in charges.values()} == {"GBP"}
    lines = ChargeItem.objects.filter(charge__order=order)
    items = list(OrderItem.objects.filter(order=order).order_by("position"))
    labs: dict[int | None, str] = dict(
        Shipment.objects.filter(order=order).values_list("id", "lab_code")
    )
    return {
        "items": charges["Item"].total_cost,
        "shipping": charges["Shipping"].total_cost,
        "totalTax": sum(c.total_tax for c in charges.values()),
        "totalCost": sum(c.total_cost + c.total_tax for c in charges.values()),
        "shipments": sorted(
            (labs[line.shipment_id], line.cost) for line in lines if line.shipment_id
        ),
        "items_by_position": [
            (labs[item.shipment_id], next(x.cost for x in lines if x.item_id == item.id))
            for item in items
        ],
    }


def quoted(quote: dict[str, Any]) -> dict[str, Any]:
    summary = quote["costSummary"]
    lab_of = {
        item_id: s["fulfillmentLocation"]["labCode"]
        for s in quote["shipments"]
        for item_id in s["items"]
    }
    return {
        "items": cents(summary["items"]),
        "shipping": cents(summary["shipping"]),
        "totalTax": cents(summary["totalTax"]),
        "totalCost": cents(summary["totalCost"]),
        "shipments": sorted(
            (s["fulfillmentLocation"]["labCode"], cents(s["cost"])) for s in quote["shipments"]
        ),
        "items_by_position": [
            (lab_of[item["id"]], cents(item["unitCost"]) * item["copies"])
            for item in quote["items"]
        ],
    }


def assert_quote_is_charged(
    api: APIClient, items: list[dict[str, Any]], country: str, method: str
) -> None:
    """The quote for the basket against ``validationOnly`` and the order of it, allocated."""
    quote = api.post("/v4.0/quotes", quote_of(items, country, method), format="json")
    body = order_of(items, country, method)
    checked = api.post("/v4.0/orders?validationOnly=true", body, format="json")
    created = api.post("/v4.0/orders", body, format="json")

    if quote.status_code == 400:
        event(f"refused: {sorted(failure_codes(quote.json()))}")
        # Both refuse, for the same reasons.
        assert created.status_code == checked.status_code == 400, (quote.json(), created.json())
        assert failure_codes(quote.json()) == failure_codes(created.json())
        assert checked.json()["data"] == created.json()["data"]
        return
    assert quote.status_code == 200, quote.json()
    assert created.status_code == 200, (quote.json(), created.json())
    assert checked.status_code == 200 and checked.json()["outcome"] == "Ok"
    order = Order.objects.get(id=pk(created.json()["order"]["id"]))
    unavailable = [i for i in quote.json()["issues"] if i["errorCode"] == "items.ItemUnavailable"]
    if not quote.json()["quotes"]:
        # No price for now: the order is stored with the same items unavailable and waits.
        event("unavailable")
        assert unavailable
        assert created.json()["outcome"] == "CreatedWithIssues"
        item_ids = [item["id"] for item in created.json()["order"]["items"]]
        assert sorted(
            item_ids.index(issue.object_id)
            for issue in OrderIssue.objects.filter(order=order, error_code=ITEM_UNAVAILABLE)
        ) == sorted(int(QUOTE_ITEM.match(i["description"])[1]) for i in unavailable)  # type: ignore[index]
        with transaction.atomic():
            assert order_allocate(order=order) is None
        assert not Charge.objects.filter(order=order).exists()
        return
    assert not unavailable
    assert created.json()["outcome"] == "Created"
    [one] = quote.json()["quotes"]
    with transaction.atomic():
        assert order_allocate(order=order) is True
    event(f"priced at {sorted({lab for lab, _ in quoted(one)['shipments']})}")
    assert charged(order) == quoted(one)
    # Without a method, the quotes of every method hold this one, to the cent.
    every = api.post("/v4.0/quotes", quote_of(items, country, None), format="json").json()
    [same] = [q for q in every["quotes"] if q["shipmentMethod"] == one["shipmentMethod"]]
    assert same["costSummary"] == one["costSummary"]
    assert quoted(same) == quoted(one)


@pytest.mark.parametrize("environment", ["Sandbox", "Live"])
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    items=baskets(),
    country=st.sampled_from(COUNTRIES),
    method=st.sampled_from(METHODS),
    letter_case=st.sampled_from([str, str.lower, str.upper]),
)
def test_a_quote_equals_the_charges_of_the_order_of_its_basket(
    mixed_catalogue: None,
    sandbox_api: APIClient,
    live_api: APIClient,
    environment: str,
    items: list[dict[str, Any]],
    country: str,
    method: str,
    letter_case: Any,
) -> None:
    api = live_api if environment == "Live" else sandbox_api
    assert_quote_is_charged(api, items, country, letter_case(method))


US_PHOTO_QUOTE = {
    "shippingMethod": "Standard",
    "destinationCountryCode": "US",
    "items": [{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"printArea": "default"}]}],
}


def gb1_real() -> None:
    """The demo catalogue with lab gb1 at a Site Flow site: the only lab with a real
    connector; us1, the cheap one for US photos, stays a simulator lab."""
    assert Lab.objects.filter(code="gb1").update(**REAL) == 1


@pytest.mark.usefixtures("catalogue", "simulator_not_live")
def test_a_live_us_quote_is_priced_at_the_real_lab_the_order_is_charged_at(
    sandbox_api: APIClient, live_api: APIClient
) -> None:
    """The reported case: a Live US Standard quote answered the simulator lab us1's price while
    the order was charged at the real lab gb1."""
    gb1_real()

    sandbox = sandbox_api.post("/v4.0/quotes", US_PHOTO_QUOTE, format="json").json()
    live = live_api.post("/v4.0/quotes", US_PHOTO_QUOTE, format="json").json()
    created = live_api.post(
        "/v4.0/orders",
        order_of(US_PHOTO_QUOTE["items"], "US", "Standard"),  # type: ignore[arg-type]
        format="json",
    )

    [at_simulator] = sandbox["quotes"]
    assert at_simulator["shipments"][0]["fulfillmentLocation"]["labCode"] == "us1"
    assert at_simulator["costSummary"]["totalCost"] == {"amount": "5.26", "currency": "GBP"}
    [at_real_lab] = live["quotes"]
    assert at_real_lab["shipments"][0]["fulfillmentLocation"] == {
        "countryCode": "GB",
        "labCode": "gb1",
    }
    assert at_real_lab["costSummary"] == {
        "items": {"amount": "0.56", "currency": "GBP"},
        "shipping": {"amount": "12.00", "currency": "GBP"},
        "totalTax": {"amount": "0.00", "currency": "GBP"},
        "totalCost": {"amount": "12.56", "currency": "GBP"},
    }
    order = Order.objects.get(id=pk(created.json()["order"]["id"]))
    with transaction.atomic():
        assert order_allocate(order=order) is True
    assert charged(order) == quoted(at_real_lab)
    assert charged(order)["totalCost"] == Decimal("12.56")


@pytest.mark.usefixtures("catalogue", "simulator_not_live")
def test_a_live_quote_of_what_only_the_simulator_makes_is_unavailable_as_its_order_is(
    live_api: APIClient,
) -> None:
    gb1_real()
    book = {
        "sku": "BOOK-A4-L-HARD-M",
        "copies": 1,
        "assets": [{"printArea": "default", "pageCount": 40}],
    }

    quote = live_api.post(
        "/v4.0/quotes",
        {"shippingMethod": "Standard", "destinationCountryCode": "GB", "items": [book]},
        format="json",
    )
    checked = live_api.post(
        "/v4.0/orders?validationOnly=true", order_of([book], "GB", "Standard"), format="json"
    )
    created = live_api.post("/v4.0/orders", order_of([book], "GB", "Standard"), format="json")

    assert quote.status_code == 200
    assert {k: v for k, v in quote.json().items() if k != "traceParent"} == {
        "outcome": "CreatedWithIssues",
        "quotes": [],
        "issues": [
            {
                "errorCode": "items.ItemUnavailable",
                "description": "items[0]: BOOK-A4-L-HARD-M is temporarily unavailable: No lab "
                "is configured to make BOOK-A4-L-HARD-M for Live orders: only the built-in "
                "simulator makes it, and the simulator makes Sandbox orders only. Please "
                "contact customer services.",
            }
        ],
    }
    assert checked.status_code == 200 and checked.json()["outcome"] == "Ok"
    assert created.status_code == 200
    assert created.json()["outcome"] == "CreatedWithIssues"
    assert [i["errorCode"] for i in created.json()["order"]["status"]["issues"]] == [
        "order.items.ItemUnavailable"
    ]
