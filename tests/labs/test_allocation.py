"""The pricing and allocation engine on real catalogue rows."""

from decimal import ROUND_HALF_UP, Decimal
from itertools import product as product_of

import pytest
from django.db import transaction
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labs.allocation import (
    AllocationPlan,
    BasketItem,
    Infeasible,
    ItemFailure,
    UnknownCurrency,
    basket_check,
    methods_available,
    plan_all_methods,
    plan_basket,
)
from tests.labs.factories import (
    ExchangeRateFactory,
    LabFactory,
    LabProductFactory,
    ShippingRateFactory,
    ShippingZoneFactory,
    TaxRuleFactory,
)
from tests.products.factories import PhotobookFactory, ProductAttributeFactory, ProductFactory

pytestmark = pytest.mark.django_db


def item(key: str, sku: str, copies: int = 1, **attributes: str) -> BasketItem:
    return BasketItem(key=key, sku=sku, attributes=attributes, copies=copies)


def plan(*items: BasketItem, country: str = "GB", method: str = "Standard", currency: str = "GBP"):  # type: ignore[no-untyped-def]
    return plan_basket(
        items=items, country_code=country, shipping_method=method, currency=currency, sandbox=True
    )


def failures(*items: BasketItem, country: str = "GB", method: str = "Standard"):  # type: ignore[no-untyped-def]
    with pytest.raises(Infeasible) as raised:
        plan(*items, country=country, method=method)
    return raised.value.failures_by_item_key


def test_a_basket_one_lab_can_make_ships_from_it_in_one_parcel() -> None:
    print_, canvas = ProductFactory(sku="P-1"), ProductFactory(sku="C-1")
    gb1 = LabFactory(code="gb1")
    LabProductFactory(lab=gb1, product=print_, unit_cost=Decimal("5.00"))
    LabProductFactory(lab=gb1, product=canvas, unit_cost=Decimal("20.00"))
    ShippingRateFactory(
        lab=gb1, price=Decimal("4.00"), carrier_name="DPD", carrier_service="Two Day"
    )

    result = plan(item("a", "p-1", copies=3), item("b", "C-1"))

    assert [(s.lab_code, s.item_keys, s.shipping_cost) for s in result.shipments] == [
        ("gb1", ("a", "b"), Decimal("4.00"))
    ]
    shipment = result.shipments[0]
    assert (shipment.carrier_name, shipment.carrier_service, shipment.lab_country_code) == (
        "DPD",
        "Two Day",
        "GB",
    )
    assert [
        (line.key, line.sku, line.unit_cost, line.total_cost) for line in result.item_lines
    ] == [
        ("a", "P-1", Decimal("5.00"), Decimal("15.00")),
        ("b", "C-1", Decimal("20.00"), Decimal("20.00")),
    ]
    assert (result.items_cost, result.shipping_cost, result.total_tax, result.total_cost) == (
        Decimal("35.00"),
        Decimal("4.00"),
        Decimal("0.00"),
        Decimal("39.00"),
    )


def test_items_no_single_lab_makes_are_split_one_shipment_per_lab() -> None:
    book, framed = PhotobookFactory(sku="BOOK-1"), ProductFactory(sku="FRAME-1")
    books, frames = LabFactory(code="gb3"), LabFactory(code="gb2")
    LabProductFactory(lab=books, product=book, unit_cost=Decimal("14.00"))
    LabProductFactory(lab=frames, product=framed, unit_cost=Decimal("30.00"))
    ShippingRateFactory(lab=books, price=Decimal("3.00"))
    ShippingRateFactory(lab=frames, price=Decimal("6.00"))

    result = plan(item("book", "BOOK-1"), item("frame", "FRAME-1"))

    assert [(s.lab_code, s.item_keys) for s in result.shipments] == [
        ("gb2", ("frame",)),
        ("gb3", ("book",)),
    ]
    assert result.shipping_cost == Decimal("9.00")
    assert result.total_cost == Decimal("53.00")


def test_splitting_happens_only_when_cheaper_overall() -> None:
    a, b = ProductFactory(sku="A"), ProductFactory(sku="B")
    gb1, gb2 = LabFactory(code="gb1"), LabFactory(code="gb2")
    LabProductFactory(lab=gb1, product=a, unit_cost=Decimal("10.00"))
    LabProductFactory(lab=gb1, product=b, unit_cost=Decimal("10.00"))
    cheap_b = LabProductFactory.create(lab=gb2, product=b, unit_cost=Decimal("7.00"))
    ShippingRateFactory(lab=gb1, price=Decimal("4.00"))
    ShippingRateFactory(lab=gb2, price=Decimal("4.00"))

    # Saving 3.00 on B does not pay for a second 4.00 parcel...
    together = plan(item("a", "A"), item("b", "B"))
    assert [(s.lab_code, s.item_keys) for s in together.shipments] == [("gb1", ("a", "b"))]
    assert together.total_cost == Decimal("24.00")

    # ...saving 5.00 does.
    cheap_b.unit_cost = Decimal("5.00")
    cheap_b.save()
    split = plan(item("a", "A"), item("b", "B"))
    assert [(s.lab_code, s.item_keys) for s in split.shipments] == [
        ("gb1", ("a",)),
        ("gb2", ("b",)),
    ]
    assert split.total_cost == Decimal("23.00")


def test_equal_prices_go_to_the_lowest_lab_code() -> None:
    a = ProductFactory(sku="A")
    for code in ("zz9", "gb7", "mm1"):
        lab = LabFactory(code=code)
        LabProductFactory(lab=lab, product=a, unit_cost=Decimal("10.00"))
        ShippingRateFactory(lab=lab, price=Decimal("4.00"))

    assert plan(item("a", "A")).shipments[0].lab_code == "gb7"


def test_each_infeasible_item_is_explained_with_a_code() -> None:
    a = ProductFactory(sku="A")
    canvas = ProductFactory(sku="CAN")
    ProductAttributeFactory(product=canvas, name="wrap", values=["Black", "White"])
    book = PhotobookFactory(sku="BOOK")
    gb1 = LabFactory(code="gb1")
    for product in (a, canvas, book):
        LabProductFactory(lab=gb1, product=product)
    ShippingRateFactory(lab=gb1, country_code="GB", method="Standard")

    assert failures(item("0", "NOPE"), item("1", "CAN"), item("2", "can", wrap="Gold")) == {
        "0": [ItemFailure("UnknownSku", "There is no product with SKU 'NOPE'.")],
        "1": [
            ItemFailure("MissingAttribute", "CAN needs attribute 'wrap' (values: Black, White).")
        ],
        "2": [
            ItemFailure(
                "UnknownAttributeValue",
                "'Gold' is not a value of wrap for CAN (values: Black, White).",
            )
        ],
    }
    assert failures(item("0", "A", copies=0)) == {
        "0": [ItemFailure("InvalidCopies", "At least one copy.")]
    }
    too_thick = BasketItem(key="0", sku="BOOK", attributes={}, copies=1, pages=500)
    assert failures(too_thick) == {
        "0": [ItemFailure("PageCountOutOfRange", "BOOK has between 24 and 200 pages.")]
    }
    assert failures(item("0", "A"), country="JP") == {
        "0": [ItemFailure("NotShippedToCountry", "A cannot be delivered to JP.")]
    }
    assert failures(item("0", "A"), method="Overnight") == {
        "0": [
            ItemFailure(
                "MethodNotOffered", "A cannot be delivered to GB by Overnight (methods: Standard)."
            )
        ]
    }


def test_an_item_out_of_stock_everywhere_is_temporarily_unavailable() -> None:
    a = ProductFactory(sku="A")
    gb1, gb2 = LabFactory(code="gb1"), LabFactory(code="gb2")
    LabProductFactory(lab=gb1, product=a, in_stock=False, unit_cost=Decimal("1.00"))
    elsewhere = LabProductFactory.create(lab=gb2, product=a, unit_cost=Decimal("9.00"))
    ShippingRateFactory(lab=gb1)
    ShippingRateFactory(lab=gb2)

    # The cheap lab is skipped while out of stock.
    assert plan(item("0", "A")).shipments[0].lab_code == "gb2"

    elsewhere.in_stock = False
    elsewhere.save()
    assert failures(item("0", "A")) == {
        "0": [ItemFailure("TemporarilyUnavailable", "A is temporarily unavailable.")]
    }


def test_inactive_labs_are_never_allocated() -> None:
    a = ProductFactory(sku="A")
    closed = LabFactory(code="gb1", is_active=False)
    LabProductFactory(lab=closed, product=a)
    ShippingRateFactory(lab=closed)

    assert failures(item("0", "A")) == {
        "0": [ItemFailure("NotMade", "A is not made by any active lab.")]
    }


def test_cannot_make_and_cannot_deliver_are_told_apart() -> None:
    a, b = ProductFactory(sku="A"), ProductFactory(sku="B")
    gb1, gb2 = LabFactory(code="gb1"), LabFactory(code="gb2")
    LabProductFactory(lab=gb1, product=a)
    LabProductFactory(lab=gb2, product=b)
    ShippingRateFactory(lab=gb1)
    ShippingRateFactory(lab=gb2)

    with pytest.raises(Infeasible) as made_elsewhere:
        plan_basket(
            items=[item("0", "A")], country_code="GB", shipping_method="Standard",
            currency="GBP", sandbox=True, lab_codes=["gb2"],
        )  # fmt: skip

    assert made_elsewhere.value.failures_by_item_key == {
        "0": [ItemFailure("NotMade", "A is not made by lab gb2.")]
    }
    assert failures(item("0", "A"), country="JP") == {
        "0": [ItemFailure("NotShippedToCountry", "A cannot be delivered to JP.")]
    }


def test_the_most_specific_shipping_rate_applies() -> None:
    a = ProductFactory(sku="A")
    lab = LabFactory(code="gb1")
    LabProductFactory(lab=lab, product=a)
    eu = ShippingZoneFactory(code="EU", countries=["DE", "FR"])
    world = ShippingZoneFactory(code="ROW", countries=[], rest_of_world=True)
    ShippingRateFactory(lab=lab, country_code="", zone=world, price=Decimal("20.00"))
    ShippingRateFactory(lab=lab, country_code="", zone=eu, price=Decimal("9.00"))
    ShippingRateFactory(lab=lab, country_code="FR", price=Decimal("7.00"))

    def shipping_to(country: str) -> Decimal:
        return plan(item("0", "A"), country=country).shipping_cost

    assert (shipping_to("FR"), shipping_to("DE"), shipping_to("JP")) == (
        Decimal("7.00"),
        Decimal("9.00"),
        Decimal("20.00"),
    )


def test_amounts_convert_per_unit_and_round_half_up_to_the_cent() -> None:
    a = ProductFactory(sku="A")
    us1 = LabFactory(code="us1", country_code="US", currency="USD")
    ExchangeRateFactory(currency="USD", units_per_base=Decimal("2.000000"))
    ExchangeRateFactory(currency="EUR", units_per_base=Decimal("1.170000"))
    LabProductFactory(lab=us1, product=a, unit_cost=Decimal("2.01"))
    ShippingRateFactory(lab=us1, country_code="US", price=Decimal("5.01"))

    # 2.01 USD is 1.005 GBP: half-up gives 1.01 (banker's rounding would give 1.00), and the
    # line is the rounded unit price times the copies, not the exact price times the copies.
    in_gbp = plan(item("0", "A", copies=3), country="US", currency="GBP")
    assert in_gbp.item_lines[0].unit_cost == Decimal("1.01")
    assert in_gbp.item_lines[0].total_cost == Decimal("3.03")
    assert in_gbp.shipping_cost == Decimal("2.51")  # 2.505
    assert in_gbp.currency == "GBP"

    # USD to EUR goes through the base: 2.01 * 1.17 / 2 = 1.17585.
    in_eur = plan(item("0", "A"), country="US", currency="eur")
    assert (in_eur.currency, in_eur.item_lines[0].unit_cost) == ("EUR", Decimal("1.18"))

    in_usd = plan(item("0", "A"), country="US", currency="USD")
    assert in_usd.item_lines[0].unit_cost == Decimal("2.01")

    with pytest.raises(UnknownCurrency):
        plan(item("0", "A"), country="US", currency="XYZ")


def test_tax_is_rounded_per_line_and_per_shipment() -> None:
    a, b = ProductFactory(sku="A"), ProductFactory(sku="B")
    lab = LabFactory(code="gb1")
    LabProductFactory(lab=lab, product=a, unit_cost=Decimal("0.33"))
    LabProductFactory(lab=lab, product=b, unit_cost=Decimal("0.33"))
    ShippingRateFactory(lab=lab, price=Decimal("2.99"))
    TaxRuleFactory(country_code="GB", rate=Decimal("0.2000"), applies_to_shipping=True)

    result = plan(item("a", "A"), item("b", "B"))

    # 0.066 rounds to 0.07 on each line (0.14), not 0.132 -> 0.13 on the sum.
    assert [line.tax for line in result.item_lines] == [Decimal("0.07"), Decimal("0.07")]
    assert result.items_tax == Decimal("0.14")
    assert result.shipments[0].shipping_tax == Decimal("0.60")  # 0.598
    assert result.total_tax == Decimal("0.74")
    assert result.total_cost == Decimal("0.66") + Decimal("2.99") + Decimal("0.74")
    assert result.tax_rate == Decimal("0.2000")


def test_untaxed_shipping_when_the_rule_says_so() -> None:
    a = ProductFactory(sku="A")
    lab = LabFactory(code="gb1")
    LabProductFactory(lab=lab, product=a, unit_cost=Decimal("10.00"))
    ShippingRateFactory(lab=lab, price=Decimal("5.00"))
    TaxRuleFactory(country_code="GB", rate=Decimal("0.1000"), applies_to_shipping=False)

    result = plan(item("a", "A"))

    assert (result.items_tax, result.shipping_tax, result.total_cost) == (
        Decimal("1.00"),
        Decimal("0.00"),
        Decimal("16.00"),
    )


def test_pages_beyond_those_included_cost_extra() -> None:
    book = PhotobookFactory(sku="BOOK")
    lab = LabFactory(code="gb3")
    LabProductFactory(
        lab=lab, product=book, unit_cost=Decimal("14.00"), extra_page_cost=Decimal("0.2850")
    )
    ShippingRateFactory(lab=lab)

    def unit(pages: int | None) -> Decimal:
        basket = [BasketItem(key="0", sku="BOOK", attributes={}, copies=1, pages=pages)]
        result = plan_basket(
            items=basket,
            country_code="GB",
            shipping_method="standard",
            currency="GBP",
            sandbox=True,
        )
        return result.item_lines[0].unit_cost

    # 14.00 + 16 * 0.285 = 18.56; no page count means the included 24 pages.
    assert (unit(40), unit(24), unit(None)) == (
        Decimal("18.56"),
        Decimal("14.00"),
        Decimal("14.00"),
    )


def test_methods_available_and_plans_for_every_method() -> None:
    a, b = ProductFactory(sku="A"), ProductFactory(sku="B")
    gb1, gb2 = LabFactory(code="gb1"), LabFactory(code="gb2")
    LabProductFactory(lab=gb1, product=a)
    LabProductFactory(lab=gb2, product=b)
    for method in ("Budget", "Standard", "Express"):
        ShippingRateFactory(lab=gb1, method=method)
    for method in ("Standard", "Express", "Overnight"):
        ShippingRateFactory(lab=gb2, method=method)

    basket = [item("a", "A"), item("b", "B")]
    assert methods_available(items=basket, country_code="GB", sandbox=True) == [
        "Standard",
        "Express",
    ]
    plans = plan_all_methods(items=basket, country_code="GB", currency="GBP", sandbox=True)
    assert list(plans) == ["Standard", "Express"]
    assert all(p.shipping_method == m for m, p in plans.items())


def test_no_common_method_is_explained_per_item() -> None:
    a, b, c = ProductFactory(sku="A"), ProductFactory(sku="B"), ProductFactory(sku="C")
    gb1, gb2 = LabFactory(code="gb1"), LabFactory(code="gb2")
    LabProductFactory(lab=gb1, product=a)
    LabProductFactory(lab=gb2, product=b)
    LabProductFactory(lab=gb2, product=c, in_stock=False)
    ShippingRateFactory(lab=gb1, method="Budget")
    ShippingRateFactory(lab=gb2, method="Express")

    with pytest.raises(Infeasible) as raised:
        plan_all_methods(
            items=[item("a", "A"), item("b", "B"), item("c", "C")],
            country_code="GB",
            currency="GBP",
            sandbox=True,
        )

    assert raised.value.failures_by_item_key == {
        "a": [
            ItemFailure(
                "NoCommonShippingMethod",
                "A can only be delivered to GB by Budget, which cannot deliver the rest of the "
                "basket.",
            )
        ],
        "b": [
            ItemFailure(
                "NoCommonShippingMethod",
                "B can only be delivered to GB by Express, which cannot deliver the rest of the "
                "basket.",
            )
        ],
        "c": [ItemFailure("TemporarilyUnavailable", "C is temporarily unavailable.")],
    }


def test_bad_calls_are_refused() -> None:
    ProductFactory(sku="A")
    with pytest.raises(ValueError, match="shipping method"):
        plan(item("0", "A"), method="Teleport")
    with pytest.raises(ValueError, match="at least one item"):
        plan()
    with pytest.raises(ValueError, match="unique"):
        plan(item("0", "A"), item("0", "A"))


def test_every_method_planned_at_once_is_priced_as_planned_alone() -> None:
    # plan_all_methods converts the items' prices once for all methods; each plan must equal
    # the plan of its method alone, also with a lab whose currency has no exchange rate (it
    # makes only what is out of stock there, so no plan needs its prices).
    a, b = ProductFactory(sku="A"), ProductFactory(sku="B")
    gb1 = LabFactory(code="gb1")
    us1 = LabFactory(code="us1", country_code="US", currency="USD")
    jp1 = LabFactory(code="jp1", country_code="JP", currency="JPY")
    ExchangeRateFactory(currency="USD", units_per_base=Decimal("1.270000"))
    ExchangeRateFactory(currency="EUR", units_per_base=Decimal("1.170000"))
    LabProductFactory(lab=gb1, product=a, unit_cost=Decimal("4.10"))
    LabProductFactory(lab=us1, product=a, unit_cost=Decimal("3.95"))
    LabProductFactory(lab=us1, product=b, unit_cost=Decimal("7.33"))
    LabProductFactory(lab=jp1, product=b, unit_cost=Decimal("100"), in_stock=False)
    for lab, method, price in [
        (gb1, "Budget", "2.50"),
        (gb1, "Standard", "3.50"),
        (us1, "Standard", "6.10"),
        (us1, "Express", "9.90"),
        (jp1, "Express", "700"),
    ]:
        ShippingRateFactory(lab=lab, method=method, price=Decimal(price))
    TaxRuleFactory(country_code="GB", rate=Decimal("0.2000"), applies_to_shipping=True)
    basket = [item("a", "A", copies=3), item("b", "B", copies=2)]

    plans = plan_all_methods(items=basket, country_code="GB", currency="EUR", sandbox=True)

    assert list(plans) == ["Standard", "Express"]
    assert plans == {
        method: plan(*basket, method=method, currency="EUR") for method in ("Standard", "Express")
    }


def test_basket_check_raises_as_planning_would_without_pricing() -> None:
    a, b = ProductFactory(sku="A"), ProductFactory(sku="B")
    gb1 = LabFactory(code="gb1")
    jp1 = LabFactory(code="jp1", country_code="JP", currency="JPY")  # no exchange rate
    LabProductFactory(lab=gb1, product=a)
    LabProductFactory(lab=jp1, product=b)
    ShippingRateFactory(lab=gb1, method="Standard")
    ShippingRateFactory(lab=jp1, method="Standard")

    def outcome(call, *items: BasketItem, method: str = "Standard", currency: str = "GBP"):  # type: ignore[no-untyped-def]
        try:
            call(
                items=items, country_code="GB", shipping_method=method, currency=currency,
                sandbox=True,
            )  # fmt: skip
        except Infeasible as infeasible:
            return "Infeasible", infeasible.failures_by_item_key
        except UnknownCurrency as unknown:
            return "UnknownCurrency", str(unknown)
        return "Ok", None

    cases = [
        ((item("0", "A"),), {}),
        ((item("0", "A"), item("1", "NOPE")), {}),
        ((item("0", "A"),), {"method": "Express"}),
        ((item("0", "A"),), {"currency": "XYZ"}),
        ((item("0", "A"), item("1", "B")), {}),  # jp1's prices cannot be converted
    ]
    answers = [outcome(basket_check, *items, **more) for items, more in cases]

    assert answers == [outcome(plan_basket, *items, **more) for items, more in cases]
    assert [answer[0] for answer in answers] == [
        "Ok",
        "Infeasible",
        "Infeasible",
        "UnknownCurrency",
        "UnknownCurrency",
    ]


prices = st.decimals(min_value=Decimal("0.00"), max_value=Decimal("40.00"), places=2)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    unit_costs=st.lists(
        st.lists(st.one_of(st.none(), prices), min_size=3, max_size=3), min_size=1, max_size=4
    ),
    shipping=st.lists(prices, min_size=3, max_size=3),
    copies=st.lists(st.integers(min_value=1, max_value=5), min_size=4, max_size=4),
)
def test_plan_basket_total_is_the_brute_force_minimum(
    unit_costs: list[list[Decimal | None]], shipping: list[Decimal], copies: list[int]
) -> None:
    """Given lab prices (None: the lab does not make the item), the plan costs exactly the
    minimum, over every assignment of items to labs, of lines + shipments + 20 % VAT each
    rounded half up."""
    codes = ["aa1", "bb1", "cc1"]
    with transaction.atomic():
        TaxRuleFactory(country_code="GB", rate=Decimal("0.2000"))
        labs = [LabFactory(code=code) for code in codes]
        for lab, price in zip(labs, shipping, strict=True):
            ShippingRateFactory(lab=lab, price=price)
        basket = []
        for index, costs in enumerate(unit_costs):
            product = ProductFactory(sku=f"H-{index}")
            basket.append(item(str(index), f"H-{index}", copies=copies[index]))
            for lab, cost in zip(labs, costs, strict=True):
                if cost is not None:
                    LabProductFactory(lab=lab, product=product, unit_cost=cost)

        def vat(amount: Decimal) -> Decimal:
            return (amount * Decimal("0.2")).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)

        options = [[i for i, c in enumerate(costs) if c is not None] for costs in unit_costs]
        totals = []
        for assignment in product_of(*options):
            total = Decimal("0")
            for costs, n, lab_index in zip(unit_costs, copies, assignment, strict=False):
                cost = costs[lab_index]
                assert cost is not None
                line = cost * n
                total += line + vat(line)
            for i in set(assignment):
                total += shipping[i] + vat(shipping[i])
            totals.append(total)

        if not totals:
            with pytest.raises(Infeasible):
                plan(*basket)
        else:
            result = plan(*basket)
            assert result.total_cost == min(totals)
            assert result.total_cost == (
                sum(line.total_cost + line.tax for line in result.item_lines)
                + sum(s.shipping_cost + s.shipping_tax for s in result.shipments)
            )
        transaction.set_rollback(True)


@override_settings(SIMULATOR_PRODUCES_LIVE=False)
def test_live_leaves_out_simulator_labs_and_says_no_lab_is_configured() -> None:
    """Where the simulator may not make Live orders, a Live basket is priced only at labs with
    a real connector; Sandbox at every lab."""
    made_by_both, simulated_only = ProductFactory(sku="P-1"), ProductFactory(sku="C-1")
    cheap_simulator = LabFactory(code="gb1")
    real = LabFactory(
        code="gb2",
        connector="siteflow",
        siteflow_base_url="https://lab.example/api",
        siteflow_token="token",
        siteflow_secret="secret",
    )
    half_configured = LabFactory(code="gb3", connector="siteflow")  # no credentials
    LabProductFactory(lab=cheap_simulator, product=made_by_both, unit_cost=Decimal("1.00"))
    LabProductFactory(lab=real, product=made_by_both, unit_cost=Decimal("9.00"))
    LabProductFactory(lab=cheap_simulator, product=simulated_only, unit_cost=Decimal("1.00"))
    LabProductFactory(lab=half_configured, product=simulated_only, unit_cost=Decimal("1.00"))
    for lab in (cheap_simulator, real, half_configured):
        ShippingRateFactory(lab=lab)

    def live(*items: BasketItem) -> AllocationPlan:
        return plan_basket(
            items=items,
            country_code="GB",
            shipping_method="Standard",
            currency="GBP",
            sandbox=False,
        )

    sandbox = plan(item("a", "P-1"))
    real_only = live(item("a", "P-1"))
    with pytest.raises(Infeasible) as raised:
        live(item("a", "P-1"), item("b", "C-1"))

    assert [s.lab_code for s in sandbox.shipments] == ["gb1"]
    assert [s.lab_code for s in real_only.shipments] == ["gb2"]
    assert raised.value.failures_by_item_key == {
        "b": [
            ItemFailure(
                "NoConfiguredLab",
                "No lab is configured to make C-1 for Live orders: only the built-in simulator "
                "makes it, and the simulator makes Sandbox orders only.",
            )
        ]
    }
    assert methods_available(items=[item("b", "C-1")], country_code="GB", sandbox=False) == []
    assert methods_available(items=[item("b", "C-1")], country_code="GB", sandbox=True) == [
        "Standard"
    ]
    with override_settings(SIMULATOR_PRODUCES_LIVE=True):
        assert [s.lab_code for s in live(item("a", "P-1")).shipments] == ["gb1"]
