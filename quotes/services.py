"""Quotes: the catalogue check of a basket and its price from the allocation engine.

Nothing is stored; a quote is what an order of the same basket would be charged now.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from common.errors import ValidationFailed
from common.ids import new_hex_id
from labs.allocation import (
    NO_CONFIGURED_LAB,
    UNAVAILABLE_FOR_NOW,
    AllocationPlan,
    BasketItem,
    Infeasible,
    ItemFailure,
    UnknownCurrency,
    plan_all_methods,
    plan_basket,
)
from labs.catalogue import CatalogueSnapshot, catalogue_snapshot
from products.validation import ItemInput, basket_validate

US_SALES_TAX_WARNING = "destinationCountryCode.UsSalesTaxWarning"
# An item that no lab of the environment can make now (out of stock everywhere, or, for Live,
# made only by the simulator where it may not make Live orders): the quote has no price, as an
# order of the basket would be CreatedWithIssues with ``order.items.ItemUnavailable`` and no
# charges yet.
ITEM_UNAVAILABLE = "items.ItemUnavailable"


# A quote's item is exactly what the catalogue check takes.
QuoteItemRequest = ItemInput


@dataclass(frozen=True)
class QuoteItem:
    id: str
    sku: str
    copies: int
    attributes: Mapping[str, str]
    print_areas: tuple[str, ...]


@dataclass(frozen=True)
class Quote:
    """One priced plan; ``item_ids`` maps the plan's item keys to this quote's ``qit_`` ids."""

    plan: AllocationPlan
    items: tuple[QuoteItem, ...]
    item_ids: Mapping[str, str]


@dataclass(frozen=True)
class QuoteIssue:
    error_code: str
    description: str


@dataclass(frozen=True)
class QuoteResult:
    quotes: tuple[Quote, ...]
    issues: tuple[QuoteIssue, ...]


def quotes_create(
    *,
    items: Sequence[QuoteItemRequest],
    destination_country_code: str,
    shipping_method: str | None,
    currency: str,
    sandbox: bool,
    catalogue: CatalogueSnapshot | None = None,
) -> QuoteResult:
    """Quotes for the basket: for ``shipping_method`` only, or for every method able to deliver
    all of it. Raises ``ValidationFailed`` for catalogue problems and undeliverable items; an
    item no lab can make now gives no quote but an ``items.ItemUnavailable`` issue.
    ``sandbox``: the environment quoted for; the engine prices at exactly the labs an order of
    that environment may use, so the quote equals the order's charges to the cent.
    ``catalogue``: the snapshot to price against (the current one by default)."""
    if catalogue is None:
        catalogue = catalogue_snapshot()
    validated = basket_validate(
        items=items,
        require_page_count=False,
        products=catalogue.products_by_sku([item.sku for item in items]),
        rules=catalogue.rules,
    )
    basket = [BasketItem.of_validated(item) for item in validated]
    issues: list[QuoteIssue] = []
    try:
        plans = _plans(
            basket, destination_country_code, shipping_method, currency, sandbox, catalogue
        )
    except Infeasible as infeasible:
        # As an order of the basket is CreatedWithIssues: an item out of stock everywhere is
        # an issue, not an error, once the rest of the basket could be delivered.
        unavailable = _unavailable(infeasible)
        rest = [item for item in basket if item.key not in unavailable]
        if not unavailable:
            raise _undeliverable(infeasible) from infeasible
        if rest:
            try:
                _plans(
                    rest, destination_country_code, shipping_method, currency, sandbox, catalogue
                )
            except Infeasible as still:
                raise _undeliverable(still) from still
        plans = []
        by_key = {item.key: item for item in validated}
        issues += [
            QuoteIssue(
                ITEM_UNAVAILABLE,
                _unavailable_description(
                    key, by_key[key].sku, infeasible.failures_by_item_key[key]
                ),
            )
            for key in sorted(unavailable, key=int)
        ]

    quotes = []
    for plan in plans:
        ids = {item.key: new_hex_id("qit_") for item in validated}
        quote_items = [
            QuoteItem(
                id=ids[item.key],
                sku=item.sku,
                copies=item.copies,
                attributes=dict(item.given_attributes),
                print_areas=item.print_areas,
            )
            for item in validated
        ]
        quotes.append(Quote(plan=plan, items=tuple(quote_items), item_ids=ids))
    if destination_country_code.upper() == "US":
        issues.append(
            QuoteIssue(
                US_SALES_TAX_WARNING,
                "Prices for deliveries to the United States may be subject to sales tax, "
                "which is not included in this quote.",
            )
        )
    return QuoteResult(quotes=tuple(quotes), issues=tuple(issues))


def _plans(
    basket: Sequence[BasketItem],
    country_code: str,
    shipping_method: str | None,
    currency: str,
    sandbox: bool,
    catalogue: CatalogueSnapshot,
) -> list[AllocationPlan]:
    """The plan for ``shipping_method``, or for every method that delivers the basket."""
    try:
        if shipping_method is not None:
            return [
                plan_basket(
                    items=basket,
                    country_code=country_code,
                    shipping_method=shipping_method,
                    currency=currency,
                    sandbox=sandbox,
                    catalogue=catalogue,
                )
            ]
        return list(
            plan_all_methods(
                items=basket,
                country_code=country_code,
                currency=currency,
                sandbox=sandbox,
                catalogue=catalogue,
            ).values()
        )
    except UnknownCurrency as unknown:
        raise ValidationFailed.single("currencyCode", "UnknownCurrency", str(unknown)) from unknown


def _unavailable(infeasible: Infeasible) -> set[str]:
    """The keys of the items that fail only for what an order waits out (``order_validate``
    stores such an order with ``ItemUnavailable``): no stock, no lab configured for Live."""
    return {
        key
        for key, failures in infeasible.failures_by_item_key.items()
        if failures and all(f.code in UNAVAILABLE_FOR_NOW for f in failures)
    }


def _unavailable_description(key: str, sku: str, failures: Sequence[ItemFailure]) -> str:
    reasons = " ".join(f.description for f in failures if f.code == NO_CONFIGURED_LAB)
    return (
        f"items[{key}]: {sku} is temporarily unavailable{': ' + reasons if reasons else '.'} "
        "Please contact customer services."
    )


def _undeliverable(infeasible: Infeasible) -> ValidationFailed:
    return ValidationFailed(
        {
            f"items[{key}].sku": [(f.code, f.description) for f in failures]
            for key, failures in infeasible.failures_by_item_key.items()
        }
    )
