"""What the dashboard reads: one merchant's orders, keys and callbacks, never another's."""

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from django.db.models import Count, Exists, F, OuterRef, Prefetch, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from common.errors import ValidationFailed
from common.ids import PREFIXES, id_number
from dashboard.presentation import STAGE_NAMES, STEP_STATE_NAMES
from merchants.models import ApiKey, Environment, Merchant
from orders.issues import REQUIRES_PAYMENT_AUTHORISATION
from orders.models import (
    Charge,
    DetailState,
    Order,
    OrderIssue,
    OrderItem,
    PipelineStep,
    Stage,
)
from orders.selectors import LIST_STATUS_STAGES, orders_with_parts
from products.models import Product
from products.validation import ItemInput
from quotes.services import quotes_create
from webhooks.models import CallbackAttempt, CallbackEvent, CallbackState

PAGE_SIZE = 25
DETAIL_FIELDS = (
    "download_assets",
    "allocate_production_location",
    "print_ready_assets_prepared",
    "in_production",
    "shipping",
)


class NotFound(Exception):
    """Nothing the signed-in merchant may see (also when another merchant's row exists)."""


def merchant_order_get(*, merchant: Merchant, order_id: int) -> Order:
    order = (
        orders_with_parts(Order.objects.filter(environment__merchant=merchant, id=order_id))
        .select_related("environment__merchant")
        .first()
    )
    if order is None:
        raise NotFound
    return order


@dataclass(frozen=True)
class OrderListFilter:
    status: str = ""
    # An order id, a merchant reference or a recipient name (any part, any case).
    search: str = ""
    attention: bool = False
    created_from: date | None = None
    created_to: date | None = None  # inclusive
    before_id: int | None = None


def _needs_attention() -> Q:
    """Orders a merchant has to look at: waiting for payment, with an issue, or a step in
    Error."""
    errors = Q()
    for detail in DETAIL_FIELDS:
        errors |= Q(**{detail: DetailState.ERROR})
    has_issue = Exists(OrderIssue.objects.filter(order=OuterRef("pk")))
    return Q(stage=Stage.AWAITING_PAYMENT) | Q(has_issue) | errors


def _search(text: str) -> Q:
    found = Q(merchant_reference__icontains=text) | Q(recipient_name__icontains=text)
    number = id_number(PREFIXES["order"], text, allow_bare=True)
    if number is not None:
        found |= Q(id=number)
    return found


def environment_orders(
    *, environment: Environment, filters: OrderListFilter
) -> tuple[list[Order], bool]:
    """A page of the environment's orders, newest first, and whether older ones follow."""
    queryset = Order.objects.filter(environment=environment)
    if filters.status in LIST_STATUS_STAGES:
        queryset = queryset.filter(stage=LIST_STATUS_STAGES[filters.status])
    if filters.search:
        queryset = queryset.filter(_search(filters.search))
    if filters.attention:
        queryset = queryset.filter(_needs_attention())
    if filters.created_from is not None:
        queryset = queryset.filter(created__date__gte=filters.created_from)
    if filters.created_to is not None:
        queryset = queryset.filter(created__date__lte=filters.created_to)
    if filters.before_id is not None:
        queryset = queryset.filter(id__lt=filters.before_id)
    page = list(orders_with_parts(queryset.order_by("-id"))[: PAGE_SIZE + 1])
    return page[:PAGE_SIZE], len(page) > PAGE_SIZE


def environment_keys(*, environment: Environment) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(environment=environment).order_by("revoked_at", "-created")


def merchant_key_get(*, environment: Environment, key_id: int) -> ApiKey:
    key = ApiKey.objects.filter(environment=environment, pk=key_id).first()
    if key is None:
        raise NotFound
    return key


def environment_events(
    *, environment: Environment, subject: str = "", failed: bool = False, with_body: bool = False
) -> list[CallbackEvent]:
    """The newest callback events (of one order, or those not delivered) with every delivery
    attempt; their payloads only ``with_body`` (the callback log shows them, the order page
    does not)."""
    queryset = CallbackEvent.objects.filter(environment=environment)
    if not with_body:
        queryset = queryset.defer("body")
    if subject:
        queryset = queryset.filter(subject=subject)
    if failed:  # tried and not accepted (yet)
        queryset = queryset.filter(attempts__gt=0).exclude(state=CallbackState.DELIVERED)
    return list(
        queryset.order_by("-created").prefetch_related(
            Prefetch("attempt_log", queryset=CallbackAttempt.objects.order_by("number"))
        )[:PAGE_SIZE]
    )


def merchant_event_get(*, environment: Environment, event_id: int) -> CallbackEvent:
    event = CallbackEvent.objects.filter(environment=environment, id=event_id).first()
    if event is None:
        raise NotFound
    return event


@dataclass(frozen=True)
class ProgressStep:
    label: str
    state: str  # a DetailState: NotStarted, InProgress, Complete, Error (the pill's colour)
    words: str = ""  # the state as the page says it, when not STEP_STATE_NAMES's

    @property
    def state_name(self) -> str:
        return self.words or STEP_STATE_NAMES.get(self.state, "")


def order_hold_released(order: Order, *, now: datetime | None = None) -> bool:
    """Held, and its hold is over (submitted by hand or its window ended): the pipeline takes
    it on within moments; nothing may change it any more."""
    now = now or timezone.now()
    return (
        order.pipeline_step == PipelineStep.HELD
        and order.due_at is not None
        and order.due_at <= now
    )


def order_stage_name(order: Order) -> str:
    """The order's stage as the pages name it; a held order whose hold is over is "Leaving the
    hold" (still ``OnHold`` to the API until the pipeline takes it on, within moments)."""
    if order_hold_released(order):
        return "Leaving the hold"
    return STAGE_NAMES.get(order.stage, "")


def order_progress(order: Order) -> list[ProgressStep]:
    """The order's steps in the order they happen, each with its state. The payment stays
    neutral (not started) until it is paid: waiting for it is not progress."""
    steps: list[ProgressStep] = []
    if order.stage == Stage.ON_HOLD:
        if order_hold_released(order):
            steps.append(ProgressStep(STAGE_NAMES[Stage.ON_HOLD], DetailState.COMPLETE, "Ended"))
        else:
            steps.append(ProgressStep(STAGE_NAMES[Stage.ON_HOLD], DetailState.IN_PROGRESS))
    payment_issue = any(i.authorisation_url for i in order.issues.all())
    if order.payment_authorised_at is not None:
        steps.append(ProgressStep("Payment", DetailState.COMPLETE, "Paid"))
    elif payment_issue:
        waiting = order.pipeline_step == PipelineStep.AWAITING_PAYMENT
        words = "Waiting for payment" if waiting else "Not due yet"
        steps.append(ProgressStep("Payment", DetailState.NOT_STARTED, words))
    steps += [
        ProgressStep("Assets downloaded", order.download_assets),
        ProgressStep("Lab allocated", order.allocate_production_location),
        ProgressStep("Print files prepared", order.print_ready_assets_prepared),
        ProgressStep("In production", order.in_production),
        ProgressStep("Shipped", order.shipping),
    ]
    return steps


def order_under_way(order: Order) -> bool:
    """Work is going on that the page should follow (it refreshes itself)."""
    return order_hold_released(order) or order.pipeline_step in (
        PipelineStep.DOWNLOAD,
        PipelineStep.ALLOCATE,
        PipelineStep.PREPARE,
        PipelineStep.SUBMIT,
        PipelineStep.PRODUCTION,
    )


@dataclass(frozen=True)
class CatalogueEntry:
    product: Product
    ships_to: list[str]
    # The cheapest quote for one copy (its first variant, required print areas) to the chosen
    # country, with its method; None where nothing reaches it.
    price: Decimal | None
    method: str


def catalogue_entries(
    *,
    listed: list[tuple[Product, list[str]]],
    country_code: str,
    currency: str,
    sandbox: bool,
    category: str | None = None,
) -> list[CatalogueEntry]:
    """Every product of ``listed`` (``labs.selectors.products_with_countries()``'s answer) of
    ``category`` with a price for ``country_code`` from the quote engine, as a quote for one
    copy in the environment (``sandbox``) would give it: a Live price from the labs that make
    Live orders."""
    entries = []
    for product, ships_to in listed:
        if category is not None and product.category != category:
            continue
        price, method = None, ""
        if country_code in ships_to:
            variant = next(iter(product.variants.all()), None)
            areas = [a.name for a in product.print_areas.all() if a.required] or ["default"]
            item = ItemInput(
                sku=product.sku,
                copies=1,
                attributes=dict(variant.attributes) if variant else {},
                print_areas=areas,
                page_counts=[product.min_pages] * len(areas),
            )
            try:
                result = quotes_create(
                    items=[item],
                    destination_country_code=country_code,
                    shipping_method=None,
                    currency=currency,
                    sandbox=sandbox,
                )
            except ValidationFailed:
                result = None
            if result is not None and result.quotes:
                cheapest = min(result.quotes, key=lambda quote: quote.plan.total_cost)
                price, method = cheapest.plan.total_cost, cheapest.plan.shipping_method
        entries.append(CatalogueEntry(product, ships_to, price, method))
    return entries


@dataclass(frozen=True)
class AttributeShown:
    name: str
    value: str
    defaulted: bool  # not given in the order: the product's default, which the lab is sent


def item_attributes_shown(items: list[OrderItem]) -> list[list[AttributeShown]]:
    """Each item's attributes as its lab gets them: those given, and the product's defaults of
    those not given (``finish: lustre``), marked as defaulted. One query for any number of
    items."""
    skus = {item.sku.upper() for item in items}
    products = {
        product.sku: product
        for product in Product.objects.filter(sku__in=skus).prefetch_related("attributes")
    }
    shown = []
    for item in items:
        given = {name.lower(): (name, value) for name, value in item.attributes.items()}
        attributes = [AttributeShown(name, value, False) for name, value in given.values()]
        product = products.get(item.sku.upper())
        for attribute in product.attributes.all() if product else ():
            if attribute.name.lower() not in given and attribute.default:
                attributes.append(AttributeShown(attribute.name, attribute.default, True))
        shown.append(attributes)
    return shown


@dataclass(frozen=True)
class Day:
    day: date
    orders: int
    spend: Decimal  # the charges made that day, in the merchant's billing currency (refunds off)


def overview_days(*, environment: Environment, today: date, days: int = 30) -> list[Day]:
    """The last ``days`` days up to ``today`` (UTC), oldest first, each with the orders placed
    and the charges made in the environment. Two queries whatever the number of orders."""
    first = today - timedelta(days=days - 1)
    start = datetime.combine(first, time.min, tzinfo=UTC)
    placed = dict(
        Order.objects.filter(environment=environment, created__gte=start)
        .annotate(day=TruncDate("created", tzinfo=UTC))
        .values("day")
        .annotate(count=Count("id"))
        .values_list("day", "count")
    )
    spent = dict(
        Charge.objects.filter(
            order__environment=environment,
            created__gte=start,
            currency=environment.merchant.billing_currency,
        )
        .annotate(day=TruncDate("created", tzinfo=UTC))
        .values("day")
        .annotate(total=Sum(F("total_cost") + F("total_tax")))
        .values_list("day", "total")
    )
    return [
        Day(day, placed.get(day, 0), spent.get(day) or Decimal(0))
        for day in (first + timedelta(days=n) for n in range(days))
    ]


@dataclass(frozen=True)
class AttentionCount:
    label: str
    count: int
    query: str  # the orders list's filter that shows them


def attention_counts(*, environment: Environment) -> list[AttentionCount]:
    """How many of the environment's orders need the merchant, by why: waiting for payment,
    held, with an issue other than payment, a step failed. One query."""
    errors = Q()
    for detail in DETAIL_FIELDS:
        errors |= Q(**{detail: DetailState.ERROR})
    other_issue = Exists(
        OrderIssue.objects.filter(order=OuterRef("pk")).exclude(
            error_code=REQUIRES_PAYMENT_AUTHORISATION
        )
    )
    counts = Order.objects.filter(environment=environment).aggregate(
        awaiting=Count("id", filter=Q(stage=Stage.AWAITING_PAYMENT)),
        held=Count("id", filter=Q(stage=Stage.ON_HOLD)),
        issue=Count("id", filter=Q(other_issue) & ~Q(stage=Stage.CANCELLED)),
        failed=Count("id", filter=errors & ~Q(stage=Stage.CANCELLED)),
    )
    return [
        AttentionCount("Waiting for payment", counts["awaiting"], "status=awaitingPayment"),
        AttentionCount("On hold", counts["held"], "status=draft"),
        AttentionCount("With a problem to look at", counts["issue"], "attention=1"),
        AttentionCount("A step failed", counts["failed"], "attention=1"),
    ]
