"""Quotes: the catalogue check of a basket and its price from the allocation engine.

Nothing is stored; a quote is what an order of the same basket would be charged now.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from common.errors import ValidationFailed
from common.ids import new_hex_id
from labs.allocation import (
    AllocationPlan,
    BasketItem,
    Infeasible,
    UnknownCurrency,
    plan_all_methods,
    plan_basket,
)
from labs.catalogue import CatalogueSnapshot, catalogue_snapshot
from products.validation import ItemInput, basket_validate

US_SALES_TAX_WARNING = "destinationCountryCode.UsSalesTaxWarning"


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
    catalogue: CatalogueSnapshot | None = None,
) -> QuoteResult:
    """Quotes for the basket: for ``shipping_method`` only, or for every method able to deliver
    all of it. Raises ``ValidationFailed`` for catalogue problems and undeliverable items.
    ``catalogue``: the snapshot to price against (the current one by default)."""
    if catalogue is None:
        catalogue = catalogue_snapshot()
    validated = basket_validate(
        items=items,
        require_page_count=False,
        products=catalogue.products_by_sku([item.sku for item in items]),
    )
    basket = [BasketItem.of_validated(item) for item in validated]
    try:
        if shipping_method is not None:
            plans = [
                plan_basket(
                    items=basket,
                    country_code=destination_country_code,
                    shipping_method=shipping_method,
                    currency=currency,
                    catalogue=catalogue,
                )
            ]
        else:
            plans = list(
                plan_all_methods(
                    items=basket,
                    country_code=destination_country_code,
                    currency=currency,
                    catalogue=catalogue,
                ).values()
            )
    except UnknownCurrency as unknown:
        raise ValidationFailed.single("currencyCode", "UnknownCurrency", str(unknown)) from unknown
    except Infeasible as infeasible:
        raise ValidationFailed(
            {
                f"items[{key}].sku": [(f.code, f.description) for f in item_failures_]
                for key, item_failures_ in infeasible.failures_by_item_key.items()
            }
        ) from infeasible

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
    issues = []
    if destination_country_code.upper() == "US":
        issues.append(
            QuoteIssue(
                US_SALES_TAX_WARNING,
                "Prices for deliveries to the United States may be subject to sales tax, "
                "which is not included in this quote.",
            )
        )
    return QuoteResult(quotes=tuple(quotes), issues=tuple(issues))
