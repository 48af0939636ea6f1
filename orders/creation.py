"""Creating an order: whole-body validation against the catalogue, idempotency, pause window."""

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from common.db import rows_insert, rows_new
from common.errors import ValidationFailed
from labs.allocation import (
    UNAVAILABLE_FOR_NOW,
    AllocationPlan,
    BasketItem,
    Infeasible,
    UnknownCurrency,
    basket_check,
    plan_basket,
)
from labs.catalogue import CatalogueSnapshot, catalogue_snapshot
from merchants.models import Environment, PauseMode
from orders.artwork.spine import SPINE_AREA, spine_failures, spine_size
from orders.document import order_document_render, order_document_write
from orders.issues import ITEM_UNAVAILABLE
from orders.models import (
    Asset,
    AssetStatus,
    Order,
    OrderFile,
    OrderFileKind,
    OrderIssue,
    OrderItem,
    PipelineStep,
    Stage,
)
from orders.parts import OrderParts
from orders.payments import payment_issue_write, payment_required
from products.models import Product
from products.validation import DEFAULT_PRINT_AREA, ItemInput, ValidatedItem, basket_validate


@dataclass(frozen=True)
class ValidatedOrder:
    """An order body that can be accepted: its items in canonical form, as validation found
    them, per item index the reasons an item cannot be made right now, and the priced plan
    when it was asked for (``order_validate``'s ``priced``; None while an item cannot be
    made)."""

    items: list[ValidatedItem]
    unavailable: dict[str, list[str]]
    plan: AllocationPlan | None = None


@dataclass(frozen=True)
class CreateResult:
    """``parts``: the rows just written with a new order, so that it can be shown without
    reading it back; None for an order that already existed."""

    outcome: str  # Created, CreatedWithIssues, OnHold or AlreadyExists
    order: Order
    parts: OrderParts | None = None


def request_fingerprint(data: Mapping[str, Any]) -> str:
    """Of the validated order: the same order written with other key order, spacing, letter
    case of enumerations, countries or SKUs, or with defaults spelt out, has the same one."""
    canonical = {
        **data,
        "items": [{**item, "sku": str(item["sku"]).strip().upper()} for item in data["items"]],
    }
    text = json.dumps(
        canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _add(failures: dict[str, list[tuple[str, str]]], path: str, code: str, text: str) -> None:
    failures.setdefault(path, []).append((code, text))


def _spine_failures(
    *, data: Mapping[str, Any], products: Mapping[str, Product]
) -> dict[str, list[tuple[str, str]]]:
    """A spine given for a product that has none (only photobooks have one) is refused
    rather than stored and never printed."""
    failures: dict[str, list[tuple[str, str]]] = {}
    for index, item in enumerate(data["items"]):
        product = products.get(item["sku"].strip().upper())
        if item.get("spine") and product is not None and not product.has_spine:
            _add(
                failures,
                f"items[{index}].spine",
                "SpineNotSupported",
                f"{product.sku} has no spine; send the item without one.",
            )
    return failures


def _spine_fit_failures(
    *, data: Mapping[str, Any], items: list[ValidatedItem]
) -> dict[str, list[tuple[str, str]]]:
    """A spine the service is to draw (no ``spine`` asset) whose text is longer than the
    spine holds, or whose text size is wider than it (``orders.artwork.spine``)."""
    failures: dict[str, list[tuple[str, str]]] = {}
    for item in items:
        spine = data["items"][item.index].get("spine")
        if not spine or SPINE_AREA in item.print_areas or not item.product.has_spine:
            continue
        pages = item.page_count or item.product.pages_included
        size = spine_size(product=item.product, attributes=item.attributes, pages=pages or 0)
        if size is None:
            continue
        for field, message in spine_failures(spine, size).items():
            _add(failures, f"items[{item.index}].spine.{field}", "SpineTooSmall", message)
    return failures


def order_validate(
    *,
    data: Mapping[str, Any],
    currency: str,
    sandbox: bool,
    catalogue: CatalogueSnapshot | None = None,
    priced: bool = False,
) -> ValidatedOrder:
    """Check a shape-valid order body against the catalogue and the labs (for a Live order,
    those that may make Live orders: ``labs.connectors.simulator_serves``).

    Raises ``ValidationFailed`` with every failure at once. Returns the items in canonical form
    (what ``order_create`` stores) and, per item index, the descriptions of items that are
    valid but cannot be made right now (``ItemUnavailable``: out of stock, or no lab is
    configured to make it for Live orders). The basket is priced only when ``priced`` (an
    order that waits for its payment shows the amount); otherwise it is only known that it
    can be made and priced, as an order is planned and charged at allocation.
    """
    if catalogue is None:
        catalogue = catalogue_snapshot()
    products = catalogue.products_by_sku([item["sku"] for item in data["items"]])
    spines = _spine_failures(data=data, products=products)
    try:
        items = basket_validate(
            items=[
                ItemInput(
                    sku=item["sku"],
                    copies=item["copies"],
                    attributes=item.get("attributes") or {},
                    print_areas=[a.get("printArea") or DEFAULT_PRINT_AREA for a in item["assets"]],
                    page_counts=[a.get("pageCount") for a in item["assets"]],
                )
                for item in data["items"]
            ],
            require_page_count=True,
            products=products,
            rules=catalogue.rules,
        )
    except ValidationFailed as invalid:
        raise ValidationFailed({**invalid.failures, **spines}) from invalid
    spines.update(_spine_fit_failures(data=data, items=items))
    if spines:
        raise ValidationFailed(spines)
    basket = [BasketItem.of_validated(item) for item in items]
    failures: dict[str, list[tuple[str, str]]] = {}
    unavailable: dict[str, list[str]] = {}
    plan: AllocationPlan | None = None
    country_code, method = data["recipient"]["address"]["countryCode"], data["shippingMethod"]
    try:
        # Priced when the order is paid for first; else only checked (priced at allocation).
        plan = (plan_basket if priced else basket_check)(
            items=basket,
            country_code=country_code,
            shipping_method=method,
            currency=currency,
            catalogue=catalogue,
            sandbox=sandbox,
        )
    except UnknownCurrency as unknown:
        raise ValidationFailed.single(
            "body", "UnknownCurrency", f"{unknown} The account's billing currency cannot be priced."
        ) from unknown
    except Infeasible as infeasible:
        for key, item_failures_found in infeasible.failures_by_item_key.items():
            for failure in item_failures_found:
                if failure.code in UNAVAILABLE_FOR_NOW:
                    unavailable.setdefault(key, []).append(failure.description)
                elif failure.code in ("MethodNotOffered", "NoCommonShippingMethod"):
                    _add(
                        failures,
                        "shippingMethod",
                        failure.code,
                        f"items[{key}]: {failure.description}",
                    )
                elif failure.code == "NotShippedToCountry":
                    _add(
                        failures,
                        "recipient.address.countryCode",
                        failure.code,
                        f"items[{key}]: {failure.description}",
                    )
                else:
                    _add(failures, f"items[{key}]", failure.code, failure.description)
    if failures:
        raise ValidationFailed(failures)
    return ValidatedOrder(items=items, unavailable=unavailable, plan=plan)


def _hold(environment: Environment) -> tuple[bool, Any]:
    if environment.pause_mode == PauseMode.MINUTES and environment.pause_minutes > 0:
        return True, timezone.now() + timedelta(minutes=environment.pause_minutes)
    if environment.pause_mode == PauseMode.INDEFINITE:
        return True, None
    return False, None


def _existing(environment: Environment, key: str, fingerprint: str) -> CreateResult:
    order = Order.objects.get(environment=environment, idempotency_key=key)
    if order.request_fingerprint != fingerprint:
        raise ValidationFailed.single(
            "idempotencyKey",
            "IdempotencyKeyReused",
            "This idempotency key was used for a different order body; no order was created.",
        )
    return CreateResult("AlreadyExists", order)


def order_create(*, environment: Environment, data: Mapping[str, Any]) -> CreateResult:
    """Store a validated order with its items and assets in one transaction.

    Idempotency is enforced by the unique (environment, idempotency key) constraint, so
    concurrent requests with one key create one order; the losers read the winner's order.
    The body's fingerprint is kept only with a key: nothing else compares it.
    """
    key = data.get("idempotencyKey") or None
    fingerprint = request_fingerprint(data) if key is not None else ""
    if (
        key is not None
        and Order.objects.filter(environment=environment, idempotency_key=key).exists()
    ):
        return _existing(environment, key, fingerprint)
    pay_first = payment_required(environment)
    validated = order_validate(
        data=data,
        currency=environment.merchant.billing_currency,
        sandbox=environment.is_sandbox,
        priced=pay_first,
    )
    try:
        order, parts = _store(
            environment=environment,
            data=data,
            validated=validated,
            fingerprint=fingerprint,
            pay_first=pay_first,
        )
    except IntegrityError:
        if key is None:
            raise
        return _existing(environment, key, fingerprint)
    if order.stage == Stage.ON_HOLD:
        return CreateResult("OnHold", order, parts)
    outcome = "CreatedWithIssues" if validated.unavailable else "Created"
    return CreateResult(outcome, order, parts)


def _store(
    *,
    environment: Environment,
    data: Mapping[str, Any],
    validated: ValidatedOrder,
    fingerprint: str,
    pay_first: bool,
) -> tuple[Order, OrderParts]:
    """The order with its items and assets, all or none (``rows_insert``: on PostgreSQL one
    statement); its files and first issues, where it has any, with them in one transaction."""
    from orders.pipeline.scheduling import order_enqueue_on_commit
    from orders.pipeline.state_machine import order_first_state

    recipient, address = data["recipient"], data["recipient"]["address"]
    held, held_until = _hold(environment)
    first = order_first_state(held=held, held_until=held_until, pay_first=pay_first)
    now = timezone.now()
    branding = data.get("branding") or {}
    packing_slip_url = (data.get("packingSlip") or {}).get("url") or ""
    [order] = rows_new(
        Order,
        [
            {
                "environment": environment,
                "oms_id": data.get("omsId"),
                "merchant_reference": data.get("merchantReference") or "",
                "idempotency_key": data.get("idempotencyKey") or None,
                "request_fingerprint": fingerprint,
                "shipping_method": data["shippingMethod"],
                "callback_url": data.get("callbackUrl") or "",
                "recipient_name": recipient["name"],
                "recipient_email": recipient.get("email") or "",
                "recipient_phone": recipient.get("phoneNumber") or "",
                "address_line1": address["line1"],
                "address_line2": address.get("line2") or "",
                "address_postal_or_zip_code": address["postalOrZipCode"],
                "address_country_code": address["countryCode"],
                "address_town_or_city": address["townOrCity"],
                "address_state_or_county": address.get("stateOrCounty") or "",
                "metadata": data.get("metadata") or {},
                "branding": {
                    name: {"url": value["url"], "status": AssetStatus.IN_PROGRESS}
                    for name, value in branding.items()
                },
                "packing_slip_url": packing_slip_url,
                "packing_slip_status": AssetStatus.IN_PROGRESS if packing_slip_url else "",
                "us_sales_tax_already_collected": False,
                "currency": environment.merchant.billing_currency,
                "held_until": held_until,
                **first,
                "created": now,
                "last_updated": now,
            }
        ],
    )
    items = rows_new(
        OrderItem,
        [
            {
                "order": order,
                "position": index,
                "oms_id": item.get("omsId"),
                "merchant_reference": item.get("merchantReference") or "",
                "sku": valid.sku,
                "copies": item["copies"],
                "sizing": item["sizing"],
                "attributes": dict(valid.given_attributes),
                "spine": item.get("spine"),
                "recipient_cost_amount": (item.get("recipientCost") or {}).get("amount"),
                "recipient_cost_currency": (
                    (item.get("recipientCost") or {}).get("currency") or ""
                ).upper(),
            }
            for index, (item, valid) in enumerate(zip(data["items"], validated.items, strict=True))
        ],
    )
    by_item: dict[int, list[Asset]] = {}
    for order_item, item, valid in zip(items, data["items"], validated.items, strict=True):
        by_item[order_item.id] = rows_new(
            Asset,
            [
                {
                    "item": order_item,
                    "position": position,
                    "oms_id": asset.get("omsId"),
                    "print_area": print_area,
                    "url": asset["url"],
                    "md5_hash": (asset.get("md5Hash") or "").lower(),
                    "page_count": asset.get("pageCount"),
                }
                for position, (asset, print_area) in enumerate(
                    zip(item["assets"], valid.print_areas, strict=True)
                )
            ],
        )
    rows = ([order], items, [asset for assets in by_item.values() for asset in assets])
    parts = OrderParts(items=items, assets=by_item)
    if not (branding or packing_slip_url or validated.unavailable or pay_first):
        # The document goes in with the order's row, rendered from what is written.
        _, stored = order_document_render(order, parts)
        order.document, order.document_urls_expire = stored.text, stored.urls_expire
        rows_insert(*rows)
    else:
        with transaction.atomic():
            rows_insert(*rows)
            parts.issues = _extras_store(
                order=order,
                items=items,
                validated=validated,
                branding=branding,
                packing_slip_url=packing_slip_url,
                pay_first=pay_first,
            )
            order_document_write(order.id, order=order, parts=parts)
    if order.pipeline_step == PipelineStep.DOWNLOAD:
        order_enqueue_on_commit(order_id=order.id, step=PipelineStep.DOWNLOAD)
    return order, parts


def _extras_store(
    *,
    order: Order,
    items: list[OrderItem],
    validated: ValidatedOrder,
    branding: Mapping[str, Any],
    packing_slip_url: str,
    pay_first: bool,
) -> list[OrderIssue]:
    """The order's files, and the issues a new order shows (an item unavailable, a payment to
    authorise), in the transaction that stores the order."""
    files = [
        OrderFile(order=order, kind=OrderFileKind.BRANDING, name=name, url=value["url"])
        for name, value in branding.items()
    ]
    if packing_slip_url:
        slip = OrderFile(order=order, kind=OrderFileKind.PACKING_SLIP, url=packing_slip_url)
        files.insert(0, slip)
    OrderFile.objects.bulk_create(files)
    issues: list[OrderIssue] = OrderIssue.objects.bulk_create(
        OrderIssue(
            order=order,
            object_id=items[int(index)].public_id,
            error_code=ITEM_UNAVAILABLE,
            description=f"{items[int(index)].sku} is temporarily unavailable: {'; '.join(reasons)} "
            "Please contact customer services.",
        )
        for index, reasons in validated.unavailable.items()
    )
    if pay_first:
        # The create response shows the issue as a later GET does (decisions.md, wave 3).
        issues.append(
            payment_issue_write(
                order=order,
                amount=validated.plan.total_cost if validated.plan else None,
                currency=order.currency,
            )
        )
    return issues
