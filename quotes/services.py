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
from products.selectors import products_by_sku
from products.validation import (
    canonical_attributes,
    canonical_print_area,
    item_failures,
    item_page_count,
)

US_SALES_TAX_WARNING = "destinationCountryCode.UsSalesTaxWarning"


@dataclass(frozen=True)
class QuoteItemRequest:
    sku: str
    copies: int
    attributes: Mapping[str, str]
    print_areas: Sequence[str]
    # pageCount of each asset, in the same order as print_areas (None where not given)
    page_counts: Sequence[int | None]


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


def _page_count(item: QuoteItemRequest) -> int | None:
    return item_page_count(zip(item.print_areas, item.page_counts, strict=True))


def quotes_create(
    *,
    items: Sequence[QuoteItemRequest],
    destination_country_code: str,
    shipping_method: str | None,
    currency: str,
) -> QuoteResult:
    """Quotes for the basket: for ``shipping_method`` only, or for every method able to deliver
    all of it. Raises ``ValidationFailed`` for catalogue problems and undeliverable items."""
    products = products_by_sku(skus=(item.sku for item in items))
    failures: dict[str, list[tuple[str, str]]] = {}
    for index, item in enumerate(items):
        found = item_failures(
            sku=item.sku,
            attributes=item.attributes,
            print_areas=item.print_areas,
            page_count=_page_count(item),
            path=f"items[{index}]",
            require_page_count=False,
            product=products.get(item.sku.strip().upper()),
        )
        failures.update(found)
    if failures:
        raise ValidationFailed(failures)

    basket = [
        BasketItem(
            key=str(index),
            sku=item.sku,
            attributes=item.attributes,
            copies=item.copies,
            pages=_page_count(item),
        )
        for index, item in enumerate(items)
    ]
    try:
        if shipping_method is not None:
            plans = [
                plan_basket(
                    items=basket,
                    country_code=destination_country_code,
                    shipping_method=shipping_method,
                    currency=currency,
                    catalogue=products,
                )
            ]
        else:
            plans = list(
                plan_all_methods(
                    items=basket,
                    country_code=destination_country_code,
                    currency=currency,
                    catalogue=products,
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
        ids = {str(index): new_hex_id("qit_") for index in range(len(items))}
        quote_items = []
        for index, item in enumerate(items):
            product = products[item.sku.strip().upper()]
            quote_items.append(
                QuoteItem(
                    id=ids[str(index)],
                    sku=product.sku,
                    copies=item.copies,
                    attributes=canonical_attributes(product=product, attributes=item.attributes),
                    print_areas=tuple(
                        canonical_print_area(product=product, print_area=area) or area
                        for area in item.print_areas
                    ),
                )
            )
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
