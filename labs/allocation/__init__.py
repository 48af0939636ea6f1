"""The pricing and allocation engine, shared by quotes (now) and orders (at allocation).

Given a basket, a destination country, a shipping method and a currency, it finds the cheapest
feasible plan: a lab for every item, one shipment per lab used, with item, shipping and tax
amounts in that currency. An order is split into several shipments only when no single lab can
make everything or when splitting is cheaper overall.

Public interface (keyword-only)::

    plan_basket(*, items, country_code, shipping_method, currency, sandbox) -> AllocationPlan
    basket_check(*, items, country_code, shipping_method, currency, sandbox) -> None
    plan_all_methods(*, items, country_code, currency, sandbox) -> dict[method, AllocationPlan]
    methods_available(*, items, country_code, sandbox) -> list[str]
    plan_at_lab(*, items, lab_code, country_code, shipping_method, currency) -> AllocationPlan

``sandbox`` (required) names the environment a basket is priced for: a Live basket where the
simulator may not make Live orders (``labs.connectors.simulator_serves``) is priced only at
labs with a real connector. Quotes, ``validationOnly``, the dashboard's catalogue prices and
orders all pass it, and the engine alone applies the rule, so a quote and an order of one
environment are priced from the same labs.

``items`` is a sequence of ``BasketItem(key, sku, attributes, copies, pages=None)``. They raise
``Infeasible`` (``failures_by_item_key``: item key → ``[ItemFailure(code, description)]``) and
``UnknownCurrency``; see ``types.FAILURE_CODES`` for the codes.

What is cheapest: the plan's grand total including tax in the requested currency (see
``money`` for where amounts are rounded, and ``optimiser`` for the exact search and the
tie-break: fewer shipments, then lab codes in basket order). Labs must be active, make the
product, have it in stock, and have a shipping rate for the destination and method.

Lab-level stock and rates change; an order should therefore plan once, at allocation, and
store the plan's numbers. A quote for the same basket, destination, method and currency made
against the same data gives the same numbers to the cent.

Charges of an order (what the orders app writes from an ``AllocationPlan``; tax is kept apart
from ``totalCost`` so that a quote's ``costSummary`` and the order's charges match line by line):

- ``Item`` charge: one ChargeItem per ``plan.item_lines`` entry with ``cost`` =
  ``line.total_cost`` (``unit_cost * copies``, tax excluded) and tax ``line.tax``;
  ``totalCost`` = ``plan.items_cost``; ``totalTax`` = ``plan.items_tax``.
- ``Shipping`` charge: one ChargeItem per ``plan.shipments`` entry with ``cost`` =
  ``shipment.shipping_cost`` (tax excluded) and tax ``shipment.shipping_tax``;
  ``totalCost`` = ``plan.shipping_cost``; ``totalTax`` = ``plan.shipping_tax``.
- All amounts in ``plan.currency``. What the merchant pays in all is ``plan.total_cost``
  (both charges' ``totalCost`` plus both ``totalTax``). A quote's ``costSummary.items`` and
  ``.shipping`` equal the two ``totalCost``; its ``totalTax`` and ``totalCost`` are
  ``plan.total_tax`` and ``plan.total_cost``.
"""

from labs.allocation.engine import METHODS as METHODS
from labs.allocation.engine import basket_check as basket_check
from labs.allocation.engine import methods_available as methods_available
from labs.allocation.engine import plan_all_methods as plan_all_methods
from labs.allocation.engine import plan_at_lab as plan_at_lab
from labs.allocation.engine import plan_basket as plan_basket
from labs.allocation.types import FAILURE_CODES as FAILURE_CODES
from labs.allocation.types import NO_CONFIGURED_LAB as NO_CONFIGURED_LAB
from labs.allocation.types import NOT_MADE as NOT_MADE
from labs.allocation.types import UNAVAILABLE_FOR_NOW as UNAVAILABLE_FOR_NOW
from labs.allocation.types import AllocationPlan as AllocationPlan
from labs.allocation.types import BasketItem as BasketItem
from labs.allocation.types import Infeasible as Infeasible
from labs.allocation.types import ItemFailure as ItemFailure
from labs.allocation.types import ItemLine as ItemLine
from labs.allocation.types import PlannedShipment as PlannedShipment
from labs.allocation.types import UnknownCurrency as UnknownCurrency
