"""The engine's inputs and outputs: frozen dataclasses, amounts as ``Decimal`` with two places."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from products.validation import ValidatedItem


@dataclass(frozen=True)
class BasketItem:
    """One line of a basket. ``key`` is the caller's handle (an item id, ``"0"``, ...) and comes
    back on the plan's item lines and shipments. ``attributes`` may be in any letter case and
    may omit optional attributes (their defaults apply). ``pages`` is the page count of a
    product priced by page; ``None`` means its included pages. ``checked``: the line passed the
    catalogue check of the snapshot it is priced with (``of_validated``), its attributes every
    one of the product's in canonical spelling, so the engine does not check them again."""

    key: str
    sku: str
    attributes: Mapping[str, str]
    copies: int
    pages: int | None = None
    checked: bool = False

    @classmethod
    def of_validated(cls, item: ValidatedItem) -> "BasketItem":
        """The line of a basket item already checked against the catalogue."""
        return cls(
            key=item.key,
            sku=item.sku,
            attributes=item.attributes,
            copies=item.copies,
            pages=item.page_count,
            checked=True,
        )


@dataclass(frozen=True)
class ItemFailure:
    """Why an item cannot be planned: ``code`` is one of ``FAILURE_CODES``."""

    code: str
    description: str


FAILURE_CODES = (
    "UnknownSku",
    "UnknownAttribute",
    "UnknownAttributeValue",
    "MissingAttribute",
    "PageCountOutOfRange",
    "InvalidCopies",
    "NotShippedToCountry",
    "MethodNotOffered",
    "TemporarilyUnavailable",
    "NoCommonShippingMethod",
    "NoConfiguredLab",
    "NotMade",
)
# Only labs without a real connector (the simulator) make the item, and the basket is Live.
NO_CONFIGURED_LAB = "NoConfiguredLab"
# No lab the basket may go to makes the product at all ("cannot make"), as against
# ``NotShippedToCountry`` and ``MethodNotOffered``: labs make it but do not deliver it there
# ("cannot deliver").
NOT_MADE = "NotMade"
# Failures that time may mend (stock comes back, a lab is configured): an order is stored with
# ``ItemUnavailable`` and waits at allocation; a quote answers the issue and no price.
UNAVAILABLE_FOR_NOW = frozenset({"TemporarilyUnavailable", NO_CONFIGURED_LAB})


class Infeasible(Exception):
    """No plan exists; ``failures_by_item_key`` says why for each item that cannot be placed."""

    def __init__(self, failures_by_item_key: Mapping[str, list[ItemFailure]]) -> None:
        self.failures_by_item_key = dict(failures_by_item_key)
        super().__init__(
            "; ".join(
                f"{key}: {f.code}" for key, fs in self.failures_by_item_key.items() for f in fs
            )
        )


class UnknownCurrency(ValueError):
    """A currency without an exchange rate (the requested one, or a lab's)."""


@dataclass(frozen=True)
class ItemLine:
    """What one basket item costs, made by ``lab_code``.

    ``unit_cost`` is the converted, rounded price of one copy (pages included);
    ``total_cost = unit_cost * copies``; ``tax`` is ``total_cost * tax rate`` rounded.
    """

    key: str
    sku: str
    attributes: Mapping[str, str]
    copies: int
    pages: int | None
    lab_code: str
    unit_cost: Decimal
    total_cost: Decimal
    tax: Decimal


@dataclass(frozen=True)
class PlannedShipment:
    """One parcel: everything one lab makes for the basket, shipped by one carrier service."""

    lab_code: str
    lab_name: str
    lab_country_code: str
    shipping_method: str
    carrier_name: str
    carrier_service: str
    min_delivery_days: int
    max_delivery_days: int
    item_keys: tuple[str, ...]
    shipping_cost: Decimal
    shipping_tax: Decimal


@dataclass(frozen=True)
class AllocationPlan:
    """The cheapest way to make and deliver a basket, priced in ``currency``.

    ``shipments`` are ordered by lab code, ``item_lines`` follow the basket's order.
    ``items_cost``, ``shipping_cost``, ``items_tax`` and ``shipping_tax`` are sums of the
    rounded line and shipment amounts; ``total_tax = items_tax + shipping_tax`` and
    ``total_cost = items_cost + shipping_cost + total_tax``.
    """

    country_code: str
    shipping_method: str
    currency: str
    tax_rate: Decimal
    shipments: tuple[PlannedShipment, ...]
    item_lines: tuple[ItemLine, ...]
    items_cost: Decimal
    items_tax: Decimal
    shipping_cost: Decimal
    shipping_tax: Decimal
    total_tax: Decimal = field(init=False)
    total_cost: Decimal = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "total_tax", self.items_tax + self.shipping_tax)
        object.__setattr__(
            self, "total_cost", self.items_cost + self.shipping_cost + self.total_tax
        )

    def item_line(self, key: str) -> ItemLine:
        return next(line for line in self.item_lines if line.key == key)

    def shipment_of(self, key: str) -> PlannedShipment:
        return next(s for s in self.shipments if key in s.item_keys)
