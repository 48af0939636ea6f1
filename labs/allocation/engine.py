"""Loading what the engine needs from the database, and turning the optimum into a plan."""

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from types import MappingProxyType

from common.money import convert, tax_of, to_cents
from common.shipping import shipping_method_parse
from labs.allocation.optimiser import cheapest_assignment
from labs.allocation.types import (
    NO_CONFIGURED_LAB,
    NOT_MADE,
    AllocationPlan,
    BasketItem,
    Infeasible,
    ItemFailure,
    ItemLine,
    PlannedShipment,
    UnknownCurrency,
)
from labs.catalogue import CatalogueSnapshot, catalogue_snapshot
from labs.connectors.registry import simulator_serves
from labs.models import Lab, LabProduct, ShippingMethod, ShippingRate, TaxRule
from products.models import Product
from products.validation import ProductRules, attribute_failures, resolve_attributes

METHODS: tuple[str, ...] = tuple(ShippingMethod.values)


@dataclass(frozen=True)
class _Offer:
    """A lab able to make one item: its price for one copy, in the lab's currency."""

    lab: Lab
    unit_price: Decimal
    in_stock: bool


@dataclass(frozen=True)
class _PreparedItem:
    item: BasketItem
    product: Product
    attributes: Mapping[str, str]
    offers: tuple[_Offer, ...]
    # Labs that make the product were all left out: only the simulator serves them (a Live
    # basket where the simulator may not make Live orders).
    simulated_only: bool = False


# Per basket item, each in-stock lab's price of one copy converted to the basket currency and
# the line's cost in cents, tax included (what the optimiser compares): the same for every
# method, so made once for a basket and currency. A lab whose currency has no exchange rate is
# left out; a plan that needs it raises ``UnknownCurrency`` first (``_feasible``).
_ItemPrices = list[dict[str, tuple[Decimal, int]]]


@dataclass
class _Snapshot:
    """Everything about a basket and destination that does not depend on the method."""

    country_code: str
    items: list[_PreparedItem]
    failures: dict[str, list[ItemFailure]]
    # rates[lab code][method]: the most specific rate to the destination.
    rates: Mapping[str, Mapping[str, ShippingRate]]
    units_per_base: Mapping[str, Decimal]
    tax_rule: TaxRule | None
    # The labs the basket may go to (a resubmission's chosen labs), or None: every active lab.
    lab_codes: tuple[str, ...] | None = None
    # Currency -> ``_item_prices``, made by the first plan in that currency (``plan_all_methods``
    # plans every method of one basket).
    prices: dict[str, _ItemPrices] = field(default_factory=dict)


def _zone_specificity(catalogue: CatalogueSnapshot, country_code: str) -> dict[int, int]:
    """Zone id → how specific a rate to that zone is for the country (1: the zone lists it,
    2: rest of world); a country's own rate is 0."""
    specificity = {}
    for zone in catalogue.zones:
        if country_code in zone.countries:
            specificity[zone.id] = 1
        elif zone.rest_of_world:
            specificity[zone.id] = 2
    return specificity


def _load(
    *,
    items: Sequence[BasketItem],
    country_code: str,
    catalogue: CatalogueSnapshot | None,
    sandbox: bool | None,
    lab_codes: Collection[str] | None = None,
) -> _Snapshot:
    """What the basket needs, at the labs that may make the orders of the environment
    (``sandbox``; None: every lab, for a lab already chosen). The one place the rule of
    ``labs.connectors.simulator_serves`` is applied to pricing: where the simulator may not
    make the environment's orders, a lab without a real connector is left out, so a quote, a
    validation and an order of one environment are priced from exactly the same labs."""
    snapshot = catalogue if catalogue is not None else catalogue_snapshot()
    real_labs_only = sandbox is not None and not simulator_serves(sandbox=sandbox)
    country_code = country_code.upper()
    products = snapshot.products_by_sku([item.sku for item in items])
    failures: dict[str, list[ItemFailure]] = {}
    valid: list[tuple[BasketItem, Product, dict[str, str]]] = []
    for item in items:
        product = products.get(item.sku.strip().upper())
        rules = snapshot.rules.get(product.sku) if product is not None else None
        problems = _item_problems(item, product, rules)
        if problems:
            failures[item.key] = problems
        elif product is not None:
            attributes = (
                dict(item.attributes)
                if item.checked
                else resolve_attributes(product=product, attributes=item.attributes, rules=rules)
            )
            valid.append((item, product, attributes))

    prepared = []
    for item, product, attributes in valid:
        chosen = [
            lp
            for lp in snapshot.lab_products.get(product.pk, ())
            if lab_codes is None or lp.lab.code in lab_codes
        ]
        real = [lp for lp in chosen if lp.lab.has_real_connector] if real_labs_only else chosen
        prepared.append(
            _PreparedItem(
                item=item,
                product=product,
                attributes=attributes,
                offers=tuple(
                    _Offer(
                        lab=lp.lab,
                        unit_price=_unit_price(lp, product, item.pages),
                        in_stock=lp.in_stock,
                    )
                    for lp in real
                ),
                simulated_only=bool(chosen) and not real,
            )
        )

    to_country = snapshot.derived(
        ("rates to", country_code), lambda: _rates_to(snapshot, country_code)
    )
    labs = {offer.lab.pk: offer.lab for p in prepared for offer in p.offers}
    rates = {lab.code: to_country[lab_id] for lab_id, lab in labs.items() if lab_id in to_country}

    return _Snapshot(
        country_code=country_code,
        items=prepared,
        failures=failures,
        rates=rates,
        units_per_base=snapshot.units_per_base,
        tax_rule=snapshot.tax_rules.get(country_code),
        lab_codes=None if lab_codes is None else tuple(sorted(lab_codes)),
    )


def _rates_to(
    catalogue: CatalogueSnapshot, country_code: str
) -> dict[int, Mapping[str, ShippingRate]]:
    """Lab id -> method -> the lab's most specific rate to ``country_code`` (labs without one
    left out): its own rate, else a zone's that lists the country, else a rest-of-world
    zone's. The same for every basket of a catalogue version: kept with the snapshot."""
    zones = _zone_specificity(catalogue, country_code)
    found: dict[int, dict[str, tuple[int, ShippingRate]]] = {}
    for lab_id, lab_rates in catalogue.rates.items():
        for rate in lab_rates:
            if rate.country_code == country_code and rate.zone_id is None:
                specificity = 0
            elif rate.zone_id is not None and rate.zone_id in zones:
                specificity = zones[rate.zone_id]
            else:
                continue
            current = found.setdefault(lab_id, {}).get(rate.method)
            if current is None or specificity < current[0]:
                found[lab_id][rate.method] = (specificity, rate)
    return {
        lab_id: MappingProxyType({method: rate for method, (_, rate) in by_method.items()})
        for lab_id, by_method in found.items()
    }


def _item_problems(
    item: BasketItem, product: Product | None, rules: ProductRules | None
) -> list[ItemFailure]:
    if product is None:
        return [ItemFailure("UnknownSku", f"There is no product with SKU '{item.sku}'.")]
    problems = (
        []
        if item.checked
        else [
            ItemFailure("MissingAttribute" if code == "Required" else code, description)
            for found in attribute_failures(
                product=product, attributes=item.attributes, path="", rules=rules
            ).values()
            for code, description in found
        ]
    )
    if item.copies < 1:
        problems.append(ItemFailure("InvalidCopies", "At least one copy."))
    if product.priced_by_page and item.pages is not None:
        low, high = product.min_pages or 0, product.max_pages or item.pages
        if not low <= item.pages <= high:
            problems.append(
                ItemFailure(
                    "PageCountOutOfRange", f"{product.sku} has between {low} and {high} pages."
                )
            )
    return problems


def _unit_price(lab_product: LabProduct, product: Product, pages: int | None) -> Decimal:
    """One copy at this lab in its currency: base price plus pages beyond those included."""
    price = lab_product.unit_cost
    if product.pages_included is not None and pages is not None:
        price += lab_product.extra_page_cost * max(0, pages - product.pages_included)
    return price


def _convert(snapshot: _Snapshot, amount: Decimal, *, from_: str, to: str) -> Decimal:
    try:
        return convert(
            amount,
            from_units_per_base=snapshot.units_per_base[from_],
            to_units_per_base=snapshot.units_per_base[to],
        )
    except KeyError as missing:
        raise UnknownCurrency(f"No exchange rate for {missing.args[0]}.") from None


def _method_failures(snapshot: _Snapshot, method: str) -> dict[str, list[ItemFailure]]:
    failures = dict(snapshot.failures)
    for prepared in snapshot.items:
        failure = _offer_failure(snapshot, prepared, method)
        if failure is not None:
            failures[prepared.item.key] = [failure]
    return failures


def _usable_offers(snapshot: _Snapshot, prepared: _PreparedItem, method: str) -> list[_Offer]:
    return [
        offer
        for offer in prepared.offers
        if offer.in_stock and method in snapshot.rates.get(offer.lab.code, {})
    ]


def _offer_failure(snapshot: _Snapshot, prepared: _PreparedItem, method: str) -> ItemFailure | None:
    if _usable_offers(snapshot, prepared, method):
        return None
    sku, country = prepared.product.sku, snapshot.country_code
    if prepared.simulated_only:
        return ItemFailure(
            NO_CONFIGURED_LAB,
            f"No lab is configured to make {sku} for Live orders: only the built-in simulator "
            "makes it, and the simulator makes Sandbox orders only.",
        )
    if not prepared.offers:  # no lab it may go to makes it: not a question of delivery
        labs = snapshot.lab_codes
        where = f"by lab {', '.join(labs)}" if labs else "by any active lab"
        return ItemFailure(NOT_MADE, f"{sku} is not made {where}.")
    reaching = [o for o in prepared.offers if snapshot.rates.get(o.lab.code)]
    if not reaching:
        return ItemFailure("NotShippedToCountry", f"{sku} cannot be delivered to {country}.")
    by_method = [o for o in reaching if method in snapshot.rates[o.lab.code]]
    if not by_method:
        offered = _methods_of(snapshot, reaching)
        return ItemFailure(
            "MethodNotOffered",
            f"{sku} cannot be delivered to {country} by {method} (methods: {', '.join(offered)}).",
        )
    return ItemFailure("TemporarilyUnavailable", f"{sku} is temporarily unavailable.")


def _methods_of(snapshot: _Snapshot, offers: Iterable[_Offer]) -> list[str]:
    methods = {m for o in offers for m in snapshot.rates.get(o.lab.code, {})}
    return [m for m in METHODS if m in methods]


def _item_prices(snapshot: _Snapshot, currency: str) -> _ItemPrices:
    tax_rate = snapshot.tax_rule.rate if snapshot.tax_rule else Decimal(0)
    prices: _ItemPrices = []
    for prepared in snapshot.items:
        by_lab: dict[str, tuple[Decimal, int]] = {}
        for offer in prepared.offers:
            if not offer.in_stock or offer.lab.currency not in snapshot.units_per_base:
                continue
            unit = _convert(snapshot, offer.unit_price, from_=offer.lab.currency, to=currency)
            line = unit * prepared.item.copies
            by_lab[offer.lab.code] = (unit, to_cents(line + tax_of(line, tax_rate)))
        prices.append(by_lab)
    return prices


def _feasible(snapshot: _Snapshot, method: str, currency: str) -> list[list[_Offer]]:
    """The offers each item may take by ``method``, once it is known that every item has one
    and that the basket can be priced in ``currency``: raises ``Infeasible`` and
    ``UnknownCurrency`` as pricing would, without pricing."""
    failures = _method_failures(snapshot, method)
    if failures:
        raise Infeasible(failures)
    if currency not in snapshot.units_per_base:
        raise UnknownCurrency(f"No exchange rate for {currency}.")
    usable = [_usable_offers(snapshot, prepared, method) for prepared in snapshot.items]
    for offers in usable:
        for offer in offers:
            if offer.lab.currency not in snapshot.units_per_base:
                raise UnknownCurrency(f"No exchange rate for {offer.lab.currency}.")
    return usable


def _plan(snapshot: _Snapshot, method: str, currency: str) -> AllocationPlan:
    currency = currency.upper()
    usable = _feasible(snapshot, method, currency)
    item_prices = snapshot.prices.get(currency)
    if item_prices is None:  # the first plan of the basket in this currency
        item_prices = snapshot.prices[currency] = _item_prices(snapshot, currency)
    tax_rate = snapshot.tax_rule.rate if snapshot.tax_rule else Decimal(0)
    shipping_taxed = snapshot.tax_rule.applies_to_shipping if snapshot.tax_rule else False

    # Everything the optimiser compares is already a rounded amount in the basket currency,
    # so the plan it picks is priced exactly as it was compared.
    unit_prices: list[dict[str, Decimal]] = []
    item_costs: list[dict[str, int]] = []
    labs: dict[str, Lab] = {}
    for offers, priced in zip(usable, item_prices, strict=True):
        units: dict[str, Decimal] = {}
        costs: dict[str, int] = {}
        for offer in offers:
            code = offer.lab.code
            units[code], costs[code] = priced[code]
            labs[code] = offer.lab
        unit_prices.append(units)
        item_costs.append(costs)
    shipping_prices: dict[str, Decimal] = {}
    shipment_costs: dict[str, int] = {}
    for code, lab in labs.items():
        rate = snapshot.rates[code][method]
        price = _convert(snapshot, rate.price, from_=lab.currency, to=currency)
        shipping_prices[code] = price
        shipment_costs[code] = to_cents(price + (tax_of(price, tax_rate) if shipping_taxed else 0))

    assignment = cheapest_assignment(item_costs, shipment_costs)

    lines = []
    for prepared, prices, lab_code in zip(snapshot.items, unit_prices, assignment, strict=True):
        unit = prices[lab_code]
        total = unit * prepared.item.copies
        lines.append(
            ItemLine(
                key=prepared.item.key,
                sku=prepared.product.sku,
                attributes=dict(prepared.attributes),
                copies=prepared.item.copies,
                pages=_pages(prepared),
                lab_code=lab_code,
                unit_cost=unit,
                total_cost=total,
                tax=tax_of(total, tax_rate),
            )
        )
    shipments = []
    for lab_code in sorted(set(assignment)):
        lab, rate, price = (
            labs[lab_code],
            snapshot.rates[lab_code][method],
            shipping_prices[lab_code],
        )
        shipments.append(
            PlannedShipment(
                lab_code=lab_code,
                lab_name=lab.name,
                lab_country_code=lab.country_code,
                shipping_method=method,
                carrier_name=rate.carrier_name,
                carrier_service=rate.carrier_service,
                min_delivery_days=rate.min_days,
                max_delivery_days=rate.max_days,
                item_keys=tuple(line.key for line in lines if line.lab_code == lab_code),
                shipping_cost=price,
                shipping_tax=tax_of(price, tax_rate) if shipping_taxed else Decimal("0.00"),
            )
        )
    plan = AllocationPlan(
        country_code=snapshot.country_code,
        shipping_method=method,
        currency=currency,
        tax_rate=tax_rate,
        shipments=tuple(shipments),
        item_lines=tuple(lines),
        items_cost=sum((line.total_cost for line in lines), Decimal("0.00")),
        items_tax=sum((line.tax for line in lines), Decimal("0.00")),
        shipping_cost=sum((s.shipping_cost for s in shipments), Decimal("0.00")),
        shipping_tax=sum((s.shipping_tax for s in shipments), Decimal("0.00")),
    )
    assert to_cents(plan.total_cost) == sum(
        item_costs[i][lab] for i, lab in enumerate(assignment)
    ) + sum(shipment_costs[lab] for lab in set(assignment)), "plan priced as compared"
    return plan


def _pages(prepared: _PreparedItem) -> int | None:
    if not prepared.product.priced_by_page:
        return None
    return (
        prepared.item.pages if prepared.item.pages is not None else prepared.product.pages_included
    )


def plan_basket(
    *,
    items: Sequence[BasketItem],
    country_code: str,
    shipping_method: str,
    currency: str,
    sandbox: bool,
    catalogue: CatalogueSnapshot | None = None,
    lab_codes: Collection[str] | None = None,
) -> AllocationPlan:
    """The cheapest feasible plan for ``items`` delivered to ``country_code`` by
    ``shipping_method`` (any letter case), priced in ``currency``, at the labs ``lab_codes``
    when given (a resubmission to chosen labs), else at any active lab.

    Raises ``Infeasible`` (failures per item key) when some item cannot be placed,
    ``UnknownCurrency`` when ``currency`` or a needed lab currency has no exchange rate, and
    ``ValueError`` for an unknown method or an empty basket. ``catalogue`` is the snapshot to
    price against (a caller that validated the basket against one passes it, so one request
    reads one version); by default the current one. ``sandbox``: the environment the basket is
    priced for (required, so that no caller prices at labs its orders may not use); where the
    simulator may not make its orders (``labs.connectors.simulator_serves``) every lab without
    a real connector is left out: an item only such labs make fails with ``NoConfiguredLab``.
    """
    snapshot, method = _basket_loaded(
        items, country_code, shipping_method, catalogue, sandbox, lab_codes
    )
    return _plan(snapshot, method, currency)


def basket_check(
    *,
    items: Sequence[BasketItem],
    country_code: str,
    shipping_method: str,
    currency: str,
    sandbox: bool,
    catalogue: CatalogueSnapshot | None = None,
) -> None:
    """Whether ``plan_basket`` with the same arguments would find a plan, without making it:
    raises as it raises. For a caller that needs to know the basket can be made and priced
    (an order being created: it is planned at allocation), not its price."""
    snapshot, method = _basket_loaded(items, country_code, shipping_method, catalogue, sandbox)
    _feasible(snapshot, method, currency.upper())


def _basket_loaded(
    items: Sequence[BasketItem],
    country_code: str,
    shipping_method: str,
    catalogue: CatalogueSnapshot | None,
    sandbox: bool | None,
    lab_codes: Collection[str] | None = None,
) -> tuple[_Snapshot, str]:
    """The basket's snapshot and its method parsed, for a plan by one method; raises
    ``ValueError`` for an unknown method or an empty basket."""
    method = shipping_method_parse(shipping_method)
    if method is None:
        raise ValueError(f"Unknown shipping method '{shipping_method}'.")
    _check_basket(items)
    snapshot = _load(
        items=items,
        country_code=country_code,
        catalogue=catalogue,
        sandbox=sandbox,
        lab_codes=lab_codes,
    )
    return snapshot, method


def plan_all_methods(
    *,
    items: Sequence[BasketItem],
    country_code: str,
    currency: str,
    sandbox: bool,
    catalogue: CatalogueSnapshot | None = None,
) -> dict[str, AllocationPlan]:
    """A plan for every method that can deliver the whole basket, in method order, at the labs
    of ``sandbox``'s environment as ``plan_basket`` chooses them.

    Raises ``Infeasible`` when no method can; each item then gets the reason it fails under
    every method (``NotShippedToCountry``, ``TemporarilyUnavailable``, ...), or
    ``NoCommonShippingMethod`` when it could be sent on its own but not with the others.
    """
    _check_basket(items)
    snapshot = _load(items=items, country_code=country_code, catalogue=catalogue, sandbox=sandbox)
    plans: dict[str, AllocationPlan] = {}
    for method in METHODS:
        try:
            plans[method] = _plan(snapshot, method, currency)
        except Infeasible:
            continue
    if not plans:
        raise Infeasible(_explain_no_method(snapshot))
    return plans


def methods_available(
    *,
    items: Sequence[BasketItem],
    country_code: str,
    sandbox: bool,
    catalogue: CatalogueSnapshot | None = None,
) -> list[str]:
    """The methods (in the order Budget, Standard, StandardPlus, Express, Overnight) by which
    the whole basket can be delivered to ``country_code`` by the labs of ``sandbox``'s
    environment (as ``plan_basket`` chooses them)."""
    _check_basket(items)
    snapshot = _load(items=items, country_code=country_code, catalogue=catalogue, sandbox=sandbox)
    return [m for m in METHODS if not _method_failures(snapshot, m)]


def plan_at_lab(
    *,
    items: Sequence[BasketItem],
    lab_code: str,
    country_code: str,
    shipping_method: str,
    currency: str,
) -> AllocationPlan:
    """The plan for items that one lab already makes (a shipment at its lab, delivered by
    another method): priced as ``plan_basket`` prices, but at ``lab_code`` only and whatever
    its stock now. Raises ``Infeasible`` when that lab cannot deliver them so
    (``MethodNotOffered``, ``NotShippedToCountry``), and as ``plan_basket`` otherwise."""
    snapshot, method = _basket_loaded(items, country_code, shipping_method, None, None)
    snapshot.items = [
        replace(
            prepared,
            offers=tuple(
                replace(offer, in_stock=True)
                for offer in prepared.offers
                if offer.lab.code == lab_code
            ),
        )
        for prepared in snapshot.items
    ]
    return _plan(snapshot, method, currency)


def _explain_no_method(snapshot: _Snapshot) -> dict[str, list[ItemFailure]]:
    failures = dict(snapshot.failures)
    for prepared in snapshot.items:
        own = [m for m in METHODS if not _offer_failure(snapshot, prepared, m)]
        if own:
            failures[prepared.item.key] = [
                ItemFailure(
                    "NoCommonShippingMethod",
                    f"{prepared.product.sku} can only be delivered to {snapshot.country_code} "
                    f"by {', '.join(own)}, which cannot deliver the rest of the basket.",
                )
            ]
        else:
            failure = _offer_failure(snapshot, prepared, METHODS[0])
            reaching = [o for o in prepared.offers if snapshot.rates.get(o.lab.code)]
            if reaching:
                failure = ItemFailure(
                    "TemporarilyUnavailable", f"{prepared.product.sku} is temporarily unavailable."
                )
            assert failure is not None
            failures[prepared.item.key] = [failure]
    return failures


def _check_basket(items: Sequence[BasketItem]) -> None:
    if not items:
        raise ValueError("A basket needs at least one item.")
    if len({item.key for item in items}) != len(items):
        raise ValueError("Basket item keys must be unique.")
