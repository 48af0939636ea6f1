"""Creating an order: whole-body validation against the catalogue, idempotency, pause window."""

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from common.errors import ValidationFailed
from labs.allocation import BasketItem, Infeasible, UnknownCurrency, plan_basket
from merchants.models import Environment, PauseMode
from orders.issues import ITEM_UNAVAILABLE
from orders.models import (
    Asset,
    Order,
    OrderIssue,
    OrderItem,
    PipelineStep,
    Stage,
)
from products.models import Product
from products.selectors import products_by_sku
from products.validation import (
    DEFAULT_PRINT_AREA,
    canonical_attributes,
    canonical_print_area,
    item_failures,
    item_page_count,
)


@dataclass(frozen=True)
class CreateResult:
    outcome: str  # Created, CreatedWithIssues, OnHold or AlreadyExists
    order: Order


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


def _item_page_count(assets: list[dict[str, Any]]) -> int | None:
    return item_page_count(
        (a.get("printArea") or DEFAULT_PRINT_AREA, a.get("pageCount")) for a in assets
    )


def _add(failures: dict[str, list[tuple[str, str]]], path: str, code: str, text: str) -> None:
    failures.setdefault(path, []).append((code, text))


def order_products(*, data: Mapping[str, Any]) -> dict[str, Product]:
    """The catalogue products an order body names, loaded once for validation and storage."""
    return products_by_sku(skus=[item["sku"] for item in data["items"]])


def order_validate(
    *, data: Mapping[str, Any], currency: str, products: Mapping[str, Product] | None = None
) -> dict[str, list[str]]:
    """Check a shape-valid order body against the catalogue and the labs.

    Raises ``ValidationFailed`` with every failure at once. Returns, per item index, the
    descriptions of items that are valid but cannot be made right now (``ItemUnavailable``).
    """
    if products is None:
        products = order_products(data=data)
    failures: dict[str, list[tuple[str, str]]] = {}
    basket: list[BasketItem] = []
    for index, item in enumerate(data["items"]):
        path = f"items[{index}]"
        assets = item["assets"]
        for key, found in item_failures(
            sku=item["sku"],
            attributes=item.get("attributes") or {},
            print_areas=[a.get("printArea") or DEFAULT_PRINT_AREA for a in assets],
            page_count=_item_page_count(assets),
            path=path,
            require_page_count=True,
            product=products.get(item["sku"].strip().upper()),
        ).items():
            failures.setdefault(key, []).extend(found)
        basket.append(
            BasketItem(
                key=str(index),
                sku=item["sku"],
                attributes=item.get("attributes") or {},
                copies=item["copies"],
                pages=_item_page_count(assets),
            )
        )
    if failures:
        raise ValidationFailed(failures)

    unavailable: dict[str, list[str]] = {}
    try:
        plan_basket(
            items=basket,
            country_code=data["recipient"]["address"]["countryCode"],
            shipping_method=data["shippingMethod"],
            currency=currency,
            catalogue=products,
        )
    except UnknownCurrency as unknown:
        raise ValidationFailed.single(
            "body", "UnknownCurrency", f"{unknown} The account's billing currency cannot be priced."
        ) from unknown
    except Infeasible as infeasible:
        for key, item_failures_found in infeasible.failures_by_item_key.items():
            for failure in item_failures_found:
                if failure.code == "TemporarilyUnavailable":
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
    return unavailable


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
    """
    key = data.get("idempotencyKey") or None
    fingerprint = request_fingerprint(data)
    if (
        key is not None
        and Order.objects.filter(environment=environment, idempotency_key=key).exists()
    ):
        return _existing(environment, key, fingerprint)
    products = order_products(data=data)
    currency = environment.merchant.billing_currency
    unavailable = order_validate(data=data, currency=currency, products=products)
    try:
        order = _store(
            environment=environment,
            data=data,
            products=products,
            fingerprint=fingerprint,
            unavailable=unavailable,
        )
    except IntegrityError:
        if key is None:
            raise
        return _existing(environment, key, fingerprint)
    if order.stage == Stage.ON_HOLD:
        return CreateResult("OnHold", order)
    return CreateResult("CreatedWithIssues" if unavailable else "Created", order)


@transaction.atomic
def _store(
    *,
    environment: Environment,
    data: Mapping[str, Any],
    products: Mapping[str, Product],
    fingerprint: str,
    unavailable: dict[str, list[str]],
) -> Order:
    from orders.pipeline.scheduling import order_enqueue_on_commit

    recipient, address = data["recipient"], data["recipient"]["address"]
    held, held_until = _hold(environment)
    now = timezone.now()
    order = Order.objects.create(
        environment=environment,
        oms_id=data.get("omsId"),
        merchant_reference=data.get("merchantReference") or "",
        idempotency_key=data.get("idempotencyKey") or None,
        request_fingerprint=fingerprint,
        shipping_method=data["shippingMethod"],
        callback_url=data.get("callbackUrl") or "",
        recipient_name=recipient["name"],
        recipient_email=recipient.get("email") or "",
        recipient_phone=recipient.get("phoneNumber") or "",
        address_line1=address["line1"],
        address_line2=address.get("line2") or "",
        address_postal_or_zip_code=address["postalOrZipCode"],
        address_country_code=address["countryCode"],
        address_town_or_city=address["townOrCity"],
        address_state_or_county=address.get("stateOrCounty") or "",
        metadata=data.get("metadata") or {},
        branding={
            name: {"url": value["url"], "status": "NotDownloaded"}
            for name, value in (data.get("branding") or {}).items()
        },
        packing_slip_url=(data.get("packingSlip") or {}).get("url") or "",
        us_sales_tax_already_collected=False,
        currency=environment.merchant.billing_currency,
        stage=Stage.ON_HOLD if held else Stage.IN_PROGRESS,
        held_until=held_until,
        pipeline_step=PipelineStep.HELD if held else PipelineStep.DOWNLOAD,
        due_at=held_until if held else now,
        created=now,
        last_updated=now,
    )
    items: list[OrderItem] = []
    assets: list[Asset] = []
    for index, item in enumerate(data["items"]):
        product = products[item["sku"].strip().upper()]
        order_item = OrderItem(
            order=order,
            position=index,
            oms_id=item.get("omsId"),
            merchant_reference=item.get("merchantReference") or "",
            sku=product.sku,
            copies=item["copies"],
            sizing=item["sizing"],
            attributes=canonical_attributes(
                product=product, attributes=item.get("attributes") or {}
            ),
            spine=item.get("spine"),
            recipient_cost_amount=(item.get("recipientCost") or {}).get("amount"),
            recipient_cost_currency=(
                (item.get("recipientCost") or {}).get("currency") or ""
            ).upper(),
        )
        items.append(order_item)
        for position, asset in enumerate(item["assets"]):
            assets.append(
                Asset(
                    item=order_item,
                    position=position,
                    oms_id=asset.get("omsId"),
                    print_area=canonical_print_area(
                        product=product, print_area=asset.get("printArea") or "default"
                    )
                    or DEFAULT_PRINT_AREA,
                    url=asset["url"],
                    md5_hash=(asset.get("md5Hash") or "").lower(),
                    page_count=asset.get("pageCount"),
                )
            )
    OrderItem.objects.bulk_create(items)
    Asset.objects.bulk_create(assets)
    OrderIssue.objects.bulk_create(
        OrderIssue(
            order=order,
            object_id=items[int(index)].public_id,
            error_code=ITEM_UNAVAILABLE,
            description=f"{items[int(index)].sku} is temporarily unavailable: {'; '.join(reasons)} "
            "Please contact customer services.",
        )
        for index, reasons in unavailable.items()
    )
    if not held:
        order_enqueue_on_commit(order_id=order.id)
    return order
