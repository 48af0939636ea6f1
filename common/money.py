"""Money arithmetic of the engine: the one place where amounts are converted and rounded.

Rounding is half-up to two decimals (cents) and happens exactly at these points, nowhere else:

1. a lab's price for one copy (unit cost plus extra pages) converted to the basket currency;
2. a shipment's price converted to the basket currency;
3. the tax of an item line (``unit price * copies * rate``) and of a shipment.

Everything after that (line totals, sums, grand total) is exact addition and multiplication of
already-rounded amounts, so any caller that adds up the plan's numbers gets the plan's totals.
"""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def round_money(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def convert(
    amount: Decimal, *, from_units_per_base: Decimal, to_units_per_base: Decimal
) -> Decimal:
    """``amount`` in another currency, rounded to cents; rates are units per base currency."""
    if from_units_per_base == to_units_per_base:
        return round_money(amount)
    return round_money(amount * to_units_per_base / from_units_per_base)


def tax_of(amount: Decimal, rate: Decimal) -> Decimal:
    return round_money(amount * rate)


def to_cents(amount: Decimal) -> int:
    return int(amount * 100)
