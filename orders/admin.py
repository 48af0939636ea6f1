"""Admin registrations of the orders app (Django imports this module to find them).

Orders are read-only here: their rows belong to the API and the pipeline, and a form saving a
whole order row could overwrite a step that committed meanwhile. Staff act through services:
``order_submit_now`` submits held orders, ``order_run_now`` makes an order's working step due
now and queues it, ``order_asset_urls_correct`` replaces the URL of an image not downloaded
yet ("Retry with a corrected image URL", confirmed on its own page), and the order page's
shipment operations (hold, unhold, cancel, change address or method) are the staff shipment
services of ``orders.shipments``, each confirmed on its own page and audited.

The order page puts what an operator works from first (summary, items with thumbnails,
shipments with their lab orders and actions, charges, issues, callback events); every field
of the order follows, folded.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from common.admin_mixins import NoAddOrDelete, PublicIdColumn
from common.countries import is_country_code
from common.errors import LabBusy, ValidationFailed
from common.ids import PREFIXES, id_number
from common.shipping import ShippingMethod
from orders import inputs
from orders.actions import (
    OPEN_STAGES,
    ActionResult,
    actions_available,
    lab_state_refresh,
    order_cancel,
    order_update_recipient,
    order_update_shipping_method,
)
from orders.editing import order_held_submit
from orders.figures import attention_conditions
from orders.lab_bulkhead import shipment_lab_web_places
from orders.models import (
    Asset,
    Charge,
    DetailState,
    Order,
    OrderIssue,
    OrderItem,
    PipelineStep,
    Shipment,
    ShipmentResubmission,
    ShipmentStatus,
    Stage,
)
from orders.pipeline.claims import ACTIVE_STEPS
from orders.pipeline.state_machine import order_run_now, order_submit_now
from orders.representation import (
    file_url,
    order_recipient,
    shipment_address,
    shipment_recipient,
)
from orders.retry import (
    FailedStep,
    RetryRefused,
    order_asset_urls_correct,
    order_assets_correctable,
    order_failed_step,
    order_failed_step_retry,
)
from orders.shipments import (
    ShipmentOperationResult,
    shipment_cancel,
    shipment_capabilities,
    shipment_hold,
    shipment_unhold,
    shipment_update_address,
    shipment_update_shipping_method,
)
from orders.timeline import ITEM_STATUS_NAMES, STAGE_NAMES, STEP_STATE_NAMES, order_timeline
from staff.services import audit_entry_record
from webhooks.models import CallbackEvent

# The orders' pages leave out the admin's navigation sidebar, so that the list's columns and
# the order page's tables fit a 1280 px window (the breadcrumbs lead back).
FULL_WIDTH = {"is_nav_sidebar_enabled": False}
OPERATE_SHIPMENT = "orders.operate_shipment"
ACT_ON_ORDER = "orders.act_on_order"
# The lab's own cancel or error (decisions.md, "Lab-side cancellation and failure"), a
# submission the lab refused, and a change its lab never answered: what an operator looks at
# first.
DETAILS = (
    ("download_assets", "Download"),
    ("allocate_production_location", "Allocation"),
    ("print_ready_assets_prepared", "Print-ready files"),
    ("in_production", "Production"),
    ("shipping", "Shipping"),
)


class ReadOnlyInline(NoAddOrDelete, admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class OrderItemInline(PublicIdColumn, ReadOnlyInline):
    model = OrderItem
    fields = ("public_id", "position", "sku", "copies", "sizing", "attributes", "status",
              "availability", "shipment")  # fmt: skip
    readonly_fields = fields


class ShipmentInline(PublicIdColumn, ReadOnlyInline):
    model = Shipment
    fields = ("public_id", "lab_code", "status", "shipping_method", "carrier_name",
              "carrier_service", "tracking_number", "dispatch_date", "lab_order_reference",
              "submit_attempts", "submitted_at", "in_production_at", "lab_ended_at",
              "made_by", "lab_recipient")  # fmt: skip
    readonly_fields = fields

    @admin.display(description="recipient at its lab")
    def lab_recipient(self, shipment: Shipment) -> str:
        """The recipient its lab holds: its own when its lab kept another (a refused change,
        or an address changed on this lab order alone)."""
        if shipment.recipient is None:
            return "the order's"
        recipient = shipment_recipient(shipment)
        parts = [recipient["name"], recipient["email"], recipient["phoneNumber"]]
        return ", ".join(str(v) for v in [*parts, *recipient["address"].values()] if v)

    @admin.display(description="made by")
    def made_by(self, shipment: Shipment) -> str:
        """Whether a real lab makes it: the simulator's shipments say so plainly."""
        if shipment.simulated:
            return "simulated (the built-in lab simulator; no parcel leaves any lab)"
        return "its lab" if shipment.submitted_at else "-"


class ChargeInline(PublicIdColumn, ReadOnlyInline):
    model = Charge
    fields = ("public_id", "charge_type", "currency", "total_cost", "total_tax",
              "service_invoice_number", "created")  # fmt: skip
    readonly_fields = fields


class OrderIssueInline(ReadOnlyInline):
    model = OrderIssue
    fields = ("object_id", "error_code", "description", "created")
    readonly_fields = fields


def pipeline_state(order: Order, now: datetime | None = None) -> str:
    """Where the state machine stands, in words: the step and what it waits for."""
    now = now or timezone.now()
    step = order.pipeline_step
    if step not in ACTIVE_STEPS:
        return f"{step} (finished)"
    if order.claimed_until is not None and order.claimed_until > now:
        seconds = (order.claimed_until - now).total_seconds()
        return f"{step}: being worked on (claim ends in {seconds:.0f} s)"
    if order.due_at is None:
        if step == PipelineStep.HELD:
            return f"{step}: held until submitted by hand"
        return f"{step}: waiting for the lab"
    if order.due_at <= now:
        return f"{step}: due now"
    return f"{step}: due in {(order.due_at - now).total_seconds():.0f} s"


class NeedsAttention(admin.SimpleListFilter):
    """Orders an operator should look at: any issue, a step in Error, the lab's own cancel or
    error (or its refusal of a submission), or waiting at allocation (no lab can make it now)."""

    title = "needs attention"
    parameter_name = "attention"
    CHOICES = (
        ("any", "Any of these"),
        ("issues", "Has an issue"),
        ("error", "A step in Error"),
        ("lab", "Lab cancelled, failed or refused"),
        ("allocation", "Waiting at allocation"),
    )

    def lookups(self, request: HttpRequest, model_admin: Any) -> tuple[tuple[str, str], ...]:
        return self.CHOICES

    def queryset(self, request: HttpRequest, queryset: QuerySet[Order]) -> QuerySet[Order]:
        conditions = attention_conditions(timezone.now())  # the overview counts the same
        chosen = self.value()
        if chosen in conditions:
            return queryset.filter(conditions[chosen])
        return queryset


# --- shipment operations on the order page ------------------------------------------------------


class ConfirmForm(forms.Form):
    """An operation that takes nothing: its page only asks to confirm."""

    def __init__(self, *args: Any, shipment: Shipment, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)


class AddressForm(ConfirmForm):
    """The lab order's new address, as an order's recipient address (the API's fields)."""

    line1 = forms.CharField(label="Address line 1", max_length=200)
    line2 = forms.CharField(label="Address line 2", max_length=200, required=False)
    postalOrZipCode = forms.CharField(label="Postal or ZIP code", max_length=40)
    townOrCity = forms.CharField(label="Town or city", max_length=100)
    stateOrCounty = forms.CharField(label="State or county", max_length=100, required=False)
    countryCode = forms.CharField(label="Country code", max_length=2, min_length=2)

    def __init__(self, *args: Any, shipment: Shipment, **kwargs: Any) -> None:
        super().__init__(*args, shipment=shipment, **kwargs)
        if not self.is_bound:
            self.initial = shipment_address(shipment)

    def clean_countryCode(self) -> str:
        code = str(self.cleaned_data["countryCode"]).upper()
        if not is_country_code(code):
            raise forms.ValidationError(f"'{code}' is not an ISO 3166-1 alpha-2 country code.")
        return code


class MethodForm(ConfirmForm):
    shippingMethod = forms.ChoiceField(label="Shipping method", choices=ShippingMethod.choices)

    def __init__(self, *args: Any, shipment: Shipment, **kwargs: Any) -> None:
        super().__init__(*args, shipment=shipment, **kwargs)
        self.fields["shippingMethod"].initial = shipment.shipping_method


@dataclass(frozen=True)
class Operation:
    title: str
    explanation: str
    form: type[ConfirmForm]
    run: Any  # (shipment, the form's cleaned data) -> ShipmentOperationResult


OPERATIONS: dict[str, Operation] = {
    "hold": Operation(
        "Hold",
        "The lab stops producing this lab order until it is released; a held lab order "
        "never ships.",
        ConfirmForm,
        lambda shipment, data: shipment_hold(shipment=shipment),
    ),
    "unhold": Operation(
        "Release the hold",
        "The lab goes on producing this lab order where it stopped.",
        ConfirmForm,
        lambda shipment, data: shipment_unhold(shipment=shipment),
    ),
    "cancel": Operation(
        "Cancel",
        "The lab order is cancelled at its lab and its items and shipping are refunded to the "
        "merchant; the order is cancelled when no shipment of it is left.",
        ConfirmForm,
        lambda shipment, data: shipment_cancel(shipment=shipment),
    ),
    "updateAddress": Operation(
        "Change the address",
        "The lab ships this lab order to the address below; the order's recipient address "
        "follows when the order has this one shipment.",
        AddressForm,
        lambda shipment, data: shipment_update_address(shipment=shipment, address=data),
    ),
    "updateShippingMethod": Operation(
        "Change the shipping method",
        "The lab ships this lab order by the method below, with the carrier and price the "
        "pricing engine gives for it at this lab; the shipping charge follows the price.",
        MethodForm,
        lambda shipment, data: shipment_update_shipping_method(
            shipment=shipment, shipping_method=data["shippingMethod"]
        ),
    ),
}


def _audit(
    request: HttpRequest,
    shipment: Shipment,
    operation: str,
    result: ShipmentOperationResult,
    *,
    status_code: int = 200,
) -> None:
    user = request.user
    audit_entry_record(
        user=user if user.is_authenticated else None,  # type: ignore[arg-type]
        operation=f"shipment.{operation}",
        method=request.method or "",
        path=request.get_full_path(),
        target=f"order {shipment.order.public_id} shipment {shipment.public_id}",
        success=result.successful,
        status_code=status_code,
        message=result.message,
    )


def shipment_operations(shipment: Shipment) -> list[str]:
    """The operations an operator may try on the shipment now: its lab's capabilities, while
    the lab order is at its lab and neither shipped nor cancelled."""
    if shipment.status != ShipmentStatus.PROCESSING or shipment.submitted_at is None:
        return []
    offered = set(shipment_capabilities(shipment))
    offered.discard("unhold" if shipment.held_since is None else "hold")
    return [name for name in OPERATIONS if name in offered]


# --- order actions on the order page ------------------------------------------------------------


class OrderConfirmForm(forms.Form):
    """An order action that takes nothing: its page only asks to confirm."""

    def __init__(self, *args: Any, order: Order, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)

    def payload(self) -> dict[str, Any]:
        return {}


class OrderMethodForm(OrderConfirmForm):
    shippingMethod = forms.ChoiceField(label="Shipping method", choices=ShippingMethod.choices)

    def __init__(self, *args: Any, order: Order, **kwargs: Any) -> None:
        super().__init__(*args, order=order, **kwargs)
        self.fields["shippingMethod"].initial = order.shipping_method

    def clean_shippingMethod(self) -> str:
        return str(_api_checked(inputs.ShippingMethodInput, self.cleaned_data)["shippingMethod"])

    def payload(self) -> dict[str, Any]:
        return {"shipping_method": self.cleaned_data["shippingMethod"]}


RECIPIENT_FORM_FIELDS = {
    "name": (), "email": (), "phoneNumber": (), "line1": ("address",), "line2": ("address",),
    "postalOrZipCode": ("address",), "townOrCity": ("address",),
    "stateOrCounty": ("address",), "countryCode": ("address",),
}  # fmt: skip


class OrderRecipientForm(OrderConfirmForm):
    """The order's new recipient: the fields of ``updateRecipient``'s body, checked by its
    serializer (``orders.inputs.RecipientUpdateInput``), so the rules are the API's."""

    name = forms.CharField(label="Name", max_length=200)
    email = forms.CharField(label="Email", max_length=254, required=False)
    phoneNumber = forms.CharField(label="Phone number", max_length=50, required=False)
    line1 = forms.CharField(label="Address line 1", max_length=200)
    line2 = forms.CharField(label="Address line 2", max_length=200, required=False)
    postalOrZipCode = forms.CharField(label="Postal or ZIP code", max_length=40)
    townOrCity = forms.CharField(label="Town or city", max_length=100)
    stateOrCounty = forms.CharField(label="State or county", max_length=100, required=False)
    countryCode = forms.CharField(label="Country code", max_length=2)

    def __init__(self, *args: Any, order: Order, **kwargs: Any) -> None:
        super().__init__(*args, order=order, **kwargs)
        if not self.is_bound:
            recipient = order_recipient(order)
            self.initial = {**recipient, **recipient["address"]}
            del self.initial["address"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        body: dict[str, Any] = {"address": {}}
        for name, under in RECIPIENT_FORM_FIELDS.items():
            (body["address"] if under else body)[name] = cleaned.get(name, "")
        serializer = inputs.RecipientUpdateInput(data=body)
        if not serializer.is_valid():
            for name, errors in _flat_errors(serializer.errors).items():
                self.add_error(name if name in self.fields else None, errors)
            return cleaned
        self.recipient = dict(serializer.validated_data)
        return cleaned

    def payload(self) -> dict[str, Any]:
        return {"recipient": self.recipient}


def _flat_errors(errors: Any) -> dict[str, list[str]]:
    """A serializer's errors by leaf field name (``address.countryCode`` → ``countryCode``)."""
    flat: dict[str, list[str]] = {}
    for name, found in errors.items():
        if isinstance(found, dict):
            flat.update(_flat_errors(found))
        else:
            flat[name] = [str(error) for error in found]
    return flat


def _api_checked(serializer_class: Any, data: dict[str, Any]) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise forms.ValidationError(
            [e for es in _flat_errors(serializer.errors).values() for e in es]
        )
    return dict(serializer.validated_data)


@dataclass(frozen=True)
class OrderAction:
    """An action on the whole order, as the API and the dashboard do it: ``available`` is the
    name ``orders.actions.actions_available`` gives it (None: submit now, held orders only)."""

    title: str
    available: str | None
    form: type[OrderConfirmForm]
    audit: str


ORDER_ACTIONS: dict[str, OrderAction] = {
    "submit": OrderAction("Submit now", None, OrderConfirmForm, "order.submitNow"),
    "shipping-method": OrderAction(
        "Change shipping method", "changeShippingMethod", OrderMethodForm,
        "order.updateShippingMethod",
    ),
    "recipient": OrderAction(
        "Change recipient", "changeRecipientDetails", OrderRecipientForm, "order.updateRecipient"
    ),
    "cancel": OrderAction("Cancel order", "cancel", OrderConfirmForm, "order.cancel"),
}  # fmt: skip


def order_held_submittable(order: Order, now: datetime | None = None) -> bool:
    """What ``order_held_submit`` would submit: a held order not yet due."""
    now = now or timezone.now()
    return order.pipeline_step == PipelineStep.HELD and (order.due_at is None or order.due_at > now)


def order_actions_offered(order: Order) -> list[str]:
    """The order actions its state allows now (in ``ORDER_ACTIONS``' order): submit now for a
    held order, and those ``GET .../actions`` answers Yes to (from the labs' last known
    state; the confirmation page asks the labs again, as ``GET .../actions`` does)."""
    available = actions_available(order)
    return [
        name
        for name, action in ORDER_ACTIONS.items()
        if (
            order_held_submittable(order)
            if action.available is None
            else available[action.available]
        )
    ]


def order_action_explanation(order: Order, name: str) -> str:
    """What the action will do to this order, in words."""
    at_labs = any(s.submitted_at is not None for s in order.shipments.all())
    paid = order.payment_authorised_at is not None
    if name == "submit":
        return (
            "The order leaves its hold now and starts: its images are downloaded, a lab is "
            "chosen and it goes to production. It can no longer be edited as a held order."
        )
    if name == "cancel":
        money = (
            "what the merchant paid is refunded to the card"
            if paid
            else "its payment is no longer asked for"
            if order.stage == Stage.AWAITING_PAYMENT
            else "its charges are refunded (Refund charges)"
        )
        labs = (
            " Each lab holding a lab order of it is asked to cancel it first; if one refuses, "
            "the order goes on and only the cancelled shipments are refunded."
            if at_labs
            else ""
        )
        return f"Nothing more is made or shipped for it and {money}.{labs} This cannot be undone."
    changed = "shipping method" if name == "shipping-method" else "recipient"
    where = (
        f"Each shipment not yet in production gets the new {changed} at its lab; a lab that "
        "refuses keeps the old one, and the result of each shipment is shown."
        if at_labs
        else "No lab has the order yet: it is planned again with the new "
        f"{changed}, its shipments and charges priced as a quote would price them."
    )
    card = (
        " A card order that costs more asks the merchant for the difference before it goes "
        "to a lab; one that costs less is refunded the difference."
        if paid or order.stage == Stage.AWAITING_PAYMENT
        else ""
    )
    return f"{where}{card} The merchant is called back as for the API's action."


def _outcome_words(order: Order, action: OrderAction, outcome: str, result: ActionResult) -> str:
    refused = "; ".join(
        f"{r.shipment_id}: {r.description or r.error_code}"
        for r in result.shipment_results
        if not r.successful
    )
    said = {
        "Cancelled": "cancelled",
        "Updated": "done",
        "PartiallyUpdated": "done for some shipments only",
        "FailedToUpdate": "refused by the labs",
        "FailedToCancel": "not cancelled (a lab could not cancel)",
        "ActionNotAvailable": f"not available now (the order is {STAGE_NAMES[order.stage]})",
    }.get(outcome, outcome)
    return f"{action.title} of {order.public_id}: {said}." + (f" {refused}" if refused else "")


def order_action_refusal(order: Order, name: str) -> str:
    """Why the action is not offered for the order now, in words."""
    title = ORDER_ACTIONS[name].title
    if name == "submit":
        return f"{title} is for a held order; {order.public_id} is {STAGE_NAMES[order.stage]}."
    if order.stage not in OPEN_STAGES:
        return f"{title} is not available: {order.public_id} is {STAGE_NAMES[order.stage]}."
    return (
        f"{title} is not available for {order.public_id} now: every shipment of it is in "
        "production, shipped, or at a lab that cannot make this change."
    )


def _order_action_run(
    request: HttpRequest, order: Order, name: str, form: OrderConfirmForm
) -> tuple[bool, str]:
    """Run the action through the API's service (``orders.actions``; submit now through the
    dashboard's, ``orders.editing.order_held_submit``), audit it, and say how it went.
    ``ValidationFailed`` (a method the labs do not offer there) goes to the caller."""
    action = ORDER_ACTIONS[name]
    payload = form.payload()
    if name == "submit":
        submitted = order_held_submit(order=order)
        ok = submitted
        words = (
            f"Submitted {order.public_id}: it leaves the hold now and starts."
            if submitted
            else f"{action.title} of {order.public_id}: refused. The order is not on hold any "
            "more, or is already due."
        )
        detail = "submitted" if submitted else "not held, or already due"
    else:
        if name == "cancel":
            result = order_cancel(order=order)
        elif name == "shipping-method":
            result = order_update_shipping_method(order=order, **payload)
        else:
            result = order_update_recipient(order=order, **payload)
        ok = result.outcome in ("Cancelled", "Updated")
        words = _outcome_words(order, action, result.outcome, result)
        detail = result.outcome + "".join(
            f"; {r.shipment_id} {'ok' if r.successful else r.description or r.error_code}"
            for r in result.shipment_results
        )
    _order_audit(request, order, action, ok, detail, payload)
    return ok, words


def _order_audit(
    request: HttpRequest,
    order: Order,
    action: OrderAction,
    success: bool,
    detail: str,
    payload: dict[str, Any],
) -> None:
    asked = ""
    if "shipping_method" in payload:
        asked = f"to {payload['shipping_method']}"
    elif "recipient" in payload:
        recipient = payload["recipient"]
        asked = f"to {recipient['name']}, {recipient['address']['countryCode']}"
    audit_entry_record(
        user=request.user if isinstance(request.user, User) else None,
        operation=action.audit,
        method=request.method or "",
        path=request.get_full_path(),
        target=order.public_id,
        success=success,
        status_code=200,
        message=detail + (f" ({asked})" if asked else ""),
    )


def image_url_correctable(order: Order) -> bool:
    """Whether the order may have an image URL to correct (from its row alone): downloading,
    or stopped by its download."""
    if order.stage != Stage.IN_PROGRESS:
        return False
    return order.pipeline_step == PipelineStep.DOWNLOAD or (
        order.pipeline_step == PipelineStep.FAILED and order.download_assets == DetailState.ERROR
    )


ASSET_URL_TITLE = "Retry with a corrected image URL"
# How the order page lists its actions: the one that carries the order on first, cancel last.
ACTIONS_ORDER = ("retry", "submit", "asset-url", "shipping-method", "recipient", "cancel")


@dataclass(frozen=True)
class OfferedAction:
    name: str
    title: str
    url: str


def order_page_actions(order: Order) -> list[OfferedAction]:
    """Every action the order's state allows, in words, each to its confirmation page: the
    order actions, the image URL correction while it downloads, and the failed step's retry."""
    offered = [
        OfferedAction(
            name, ORDER_ACTIONS[name].title,
            reverse("admin:orders_order_action", args=[order.id, name]),
        )
        for name in order_actions_offered(order)
    ]  # fmt: skip
    if image_url_correctable(order):
        url = reverse("admin:orders_order_asset_url", args=[order.id])
        offered.append(OfferedAction("asset-url", ASSET_URL_TITLE, url))
    if order.pipeline_step == PipelineStep.FAILED:
        url = reverse("admin:orders_order_retry", args=[order.id])
        offered.append(OfferedAction("retry", "Run the failed step again", url))
    return sorted(offered, key=lambda action: ACTIONS_ORDER.index(action.name))


def order_page(request: HttpRequest, order: Order) -> dict[str, Any]:
    """What the order page shows above the order's fields; nothing is read item by item."""
    base_url = request.build_absolute_uri("/").rstrip("/")
    items = list(order.items.order_by("position"))
    shipments = list(order.shipments.select_related("order__environment").order_by("id"))
    may_operate = request.user.has_perm(OPERATE_SHIPMENT)
    resubmissions = {
        r.new_shipment_id: r
        for r in ShipmentResubmission.objects.filter(
            new_shipment_id__in=[s.id for s in shipments], submitted_at__isnull=False
        )
    }
    events = list(CallbackEvent.objects.filter(subject=order.public_id).order_by("sequence", "id"))
    may_act = request.user.has_perm(ACT_ON_ORDER)
    return {
        "summary": {
            "stage": order.stage,
            "stage_words": STAGE_NAMES.get(order.stage, order.stage),
            "state": pipeline_state(order),
            "actions": order_page_actions(order) if may_act else [],
            "details": [
                (label, STEP_STATE_NAMES.get(getattr(order, field), getattr(order, field)))
                for field, label in DETAILS
            ],
            "merchant": order.environment.merchant,
            "environment": order.environment,
        },
        "issues": list(order.issues.order_by("created", "id")),
        "items": [
            (
                item,
                file_url(item.thumbnail, base_url),
                ITEM_STATUS_NAMES.get(item.status, item.status),
            )
            for item in items
        ],
        "shipments": [
            (
                shipment,
                [(name, OPERATIONS[name].title) for name in shipment_operations(shipment)]
                if may_operate
                else [],
                resubmissions.get(shipment.id),
            )
            for shipment in shipments
        ],
        "charges": list(order.charges.order_by("created", "id")),
        "events": events,
        "timeline": order_timeline(order, events),
        "may_view_events": request.user.has_perm("webhooks.view_callbackevent"),
        "may_view_merchant": request.user.has_perm("merchants.view_merchant"),
    }


@admin.register(Order)
class OrderAdmin(PublicIdColumn, NoAddOrDelete, admin.ModelAdmin):
    # Few columns, each narrow, so the list fits a 1280 px window beside its filters: the step
    # and when it is due are in "where it stands"; every field is on the order's page.
    list_display = ("public_id", "environment", "merchant_reference", "stage_words",
                    "pipeline_state", "created")  # fmt: skip
    list_filter = (NeedsAttention, "stage", "pipeline_step", "environment__kind",
                   "download_assets", "print_ready_assets_prepared", "in_production")  # fmt: skip
    list_select_related = ("environment__merchant",)
    search_fields = ("merchant_reference", "recipient_name", "shipments__lab_order_reference",
                     "environment__merchant__name")  # fmt: skip
    search_help_text = (
        "An order id (ord_123 or 123), a shipment id (shp_123), a merchant reference, a "
        "recipient's name, a lab order reference or a merchant's name."
    )
    change_form_template = "admin/orders/order/change_form.html"
    date_hierarchy = "created"
    actions = ["submit_held_orders_now", "queue_due_step", "retry_failed_step",
               "retry_with_corrected_image_url"]  # fmt: skip
    inlines = [OrderItemInline, ShipmentInline, ChargeInline, OrderIssueInline]
    # Every field of the row, all inside the page's one folded "Every field" section.
    fieldsets = (
        ("Order", {"fields": ("public_id", "environment", "merchant_reference",
                              "idempotency_key", "shipping_method", "callback_url", "currency",
                              "created", "last_updated")}),
        ("Status", {"fields": ("stage", "download_assets", "allocate_production_location",
                               "print_ready_assets_prepared", "in_production", "shipping")}),
        ("Pipeline", {"fields": ("pipeline_state", "pipeline_step", "due_at", "claimed_until",
                                 "held_until", "submitted_at", "files_deleted_at",
                                 "callback_sequence")}),
        ("Recipient", {"fields": ("recipient_name", "recipient_email", "recipient_phone",
                                  "address_line1", "address_line2", "address_postal_or_zip_code",
                                  "address_town_or_city", "address_state_or_county",
                                  "address_country_code")}),
        ("Assets", {"fields": ("assets_table",)}),
        ("Other", {"fields": ("metadata", "branding", "packing_slip_url", "tag")}),
    )  # fmt: skip
    readonly_fields = [str(name) for _, group in fieldsets for name in group["fields"]]

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # an order's page is a view, never a form; staff act through services

    def has_act_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(ACT_ON_ORDER)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Order], search_term: str
    ) -> tuple[QuerySet[Order], bool]:
        """``ord_…`` (or the digits alone) finds the order, ``shp_…`` the order of that
        shipment; other text the merchant reference, the recipient's name, a lab order
        reference (digits too: a lab's reference may be a number) or the merchant's name."""
        term = search_term.strip().lower()
        for prefix, condition in (
            (PREFIXES["order"], "id"),
            (PREFIXES["shipment"], "shipments__id"),
        ):
            number = id_number(prefix, term)
            if number is not None:
                return queryset.filter(**{condition: number}), False
        found, duplicates = super().get_search_results(request, queryset, search_term)
        number = id_number(PREFIXES["order"], term, allow_bare=True)
        if number is not None:
            return found | queryset.filter(id=number), True
        return found, duplicates

    @admin.display(description="where it stands")
    def pipeline_state(self, order: Order) -> str:
        return pipeline_state(order)

    @admin.display(description="stage", ordering="stage")
    def stage_words(self, order: Order) -> str:
        return STAGE_NAMES.get(order.stage, order.stage)

    # --- the order page -----------------------------------------------------------------------

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        order = self.get_object(request, object_id)
        extra_context = {**(extra_context or {}), **FULL_WIDTH}
        if order is not None and self.has_view_permission(request, order):
            extra_context.update(order_page(request, order))
        return super().change_view(request, object_id, form_url, extra_context)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return super().changelist_view(request, {**(extra_context or {}), **FULL_WIDTH})

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "<int:order_id>/retry/",
                self.admin_site.admin_view(self.retry_view),
                name="orders_order_retry",
            ),
            path(
                "<int:order_id>/asset-url/",
                self.admin_site.admin_view(self.asset_url_view),
                name="orders_order_asset_url",
            ),
            path(
                "<int:order_id>/actions/<str:action>/",
                self.admin_site.admin_view(self.order_action_view),
                name="orders_order_action",
            ),
            path(
                "<int:order_id>/shipments/<int:shipment_id>/<str:operation>/",
                self.admin_site.admin_view(self.shipment_operation_view),
                name="orders_order_shipment_operation",
            ),
            *super().get_urls(),
        ]

    def shipment_operation_view(
        self, request: HttpRequest, order_id: int, shipment_id: int, operation: str
    ) -> HttpResponse:
        """A shipment operation: its confirmation page (GET, or a form with errors), then the
        staff shipment service (POST), audited, and the order page with the result."""
        if not request.user.has_perm(OPERATE_SHIPMENT):
            raise PermissionDenied("Your role does not allow operations on shipments.")
        if operation not in OPERATIONS:
            raise Http404(f"There is no shipment operation '{operation}'.")
        shipment = get_object_or_404(
            Shipment.objects.select_related("order__environment__merchant"),
            id=shipment_id,
            order_id=order_id,
        )
        described = OPERATIONS[operation]
        posted = request.POST if request.method == "POST" else None
        form = described.form(posted, shipment=shipment)
        if request.method == "POST" and form.is_valid():
            done = f"{described.title} of {shipment.public_id}: "
            try:
                with shipment_lab_web_places(shipment=shipment):
                    result = described.run(shipment, form.cleaned_data)
            except LabBusy as busy:  # nothing was done: the lab's share of the web is taken
                result = ShipmentOperationResult(False, str(busy), shipment)
                _audit(request, shipment, operation, result, status_code=503)
                messages.error(request, done + f"not sent. {busy}")
                return HttpResponseRedirect(
                    reverse("admin:orders_order_change", args=[shipment.order_id])
                )
            _audit(request, shipment, operation, result)
            if result.successful:
                messages.success(request, done + "done.")
            else:
                messages.error(request, done + f"refused. {result.message}")
            return HttpResponseRedirect(
                reverse("admin:orders_order_change", args=[shipment.order_id])
            )
        return TemplateResponse(
            request,
            "admin/orders/order/shipment_operation.html",
            self.page_context(
                request,
                f"{described.title}: {shipment.public_id}",
                order=shipment.order,
                shipment=shipment,
                recipient=shipment_recipient(shipment),
                operation=operation,
                described=described,
                form=form,
            ),
        )

    def page_context(self, request: HttpRequest, title: str, **more: Any) -> dict[str, Any]:
        """What every page of an order's work shows (a shipment operation, an order action,
        a retry): the admin's own context, the full width of the orders' pages, the title."""
        return {
            **self.admin_site.each_context(request),
            **FULL_WIDTH,
            "opts": self.model._meta,
            "title": title,
            **more,
        }

    def order_action_view(self, request: HttpRequest, order_id: int, action: str) -> HttpResponse:
        """An order action: its confirmation page (GET: what it will do, after asking the labs
        where their lab orders stand, as ``GET .../actions`` does; or the form with its
        errors), then the API's service (POST), audited, and the order page with the
        outcome in words."""
        if not self.has_act_permission(request):
            raise PermissionDenied("Your role does not allow acting on orders.")
        if action not in ORDER_ACTIONS:
            raise Http404(f"There is no order action '{action}'.")
        order = get_object_or_404(
            Order.objects.select_related("environment__merchant"), id=order_id
        )
        described = ORDER_ACTIONS[action]
        change_url = reverse("admin:orders_order_change", args=[order.id])
        if request.method == "POST":
            form = described.form(request.POST, order=order)
            if form.is_valid():
                try:
                    ok, words = _order_action_run(request, order, action, form)
                except ValidationFailed as failed:
                    _order_audit(request, order, described, False, str(failed), form.payload())
                    for where, found in failed.failures.items():
                        field = where.rsplit(".", 1)[-1]
                        for _, description in found:
                            form.add_error(field if field in form.fields else None, description)
                else:
                    self.message_user(request, words, messages.SUCCESS if ok else messages.ERROR)
                    return HttpResponseRedirect(change_url)
            order.refresh_from_db()
        else:
            lab_state_refresh(order)
            form = described.form(order=order)
        offered = action in order_actions_offered(order)
        return TemplateResponse(
            request,
            "admin/orders/order/order_action.html",
            self.page_context(
                request,
                f"{described.title}: {order.public_id}",
                order=order,
                stage_words=STAGE_NAMES.get(order.stage, order.stage),
                state=pipeline_state(order),
                recipient=order_recipient(order),
                shipments=list(order.shipments.order_by("id")),
                described=described,
                explanation=order_action_explanation(order, action) if offered else "",
                refused="" if offered else order_action_refusal(order, action),
                form=form,
                change_url=change_url,
            ),
        )

    def retry_view(self, request: HttpRequest, order_id: int) -> HttpResponse:
        """Confirm, then run the order's failed step again (``orders.retry``), with the failed
        assets' URLs corrected as typed."""
        if not self.has_act_permission(request):
            raise PermissionDenied("Your role does not allow acting on an order's work.")
        order = get_object_or_404(Order, id=order_id)
        change_url = reverse("admin:orders_order_change", args=[order.id])
        context = self.page_context(
            request,
            f"Run the failed step of {order.public_id} again",
            order=order,
            change_url=change_url,
        )
        try:
            failed = order_failed_step(order=order)
        except RetryRefused as refused:
            return TemplateResponse(request, _RETRY_TEMPLATE, {**context, "refused": refused})
        form = AssetUrlsForm(request.POST or None, failed=failed)
        if request.method == "POST" and form.is_valid():
            try:
                user = request.user if isinstance(request.user, User) else None
                order_failed_step_retry(order=order, user=user, asset_urls=form.urls())
            except RetryRefused as refused:
                return TemplateResponse(request, _RETRY_TEMPLATE, {**context, "refused": refused})
            self.message_user(
                request, f"{order.public_id}: {failed.step} runs again.", messages.SUCCESS
            )
            return HttpResponseRedirect(change_url)
        return TemplateResponse(
            request, _RETRY_TEMPLATE, {**context, "failed": failed, "form": form}
        )

    def asset_url_view(self, request: HttpRequest, order_id: int) -> HttpResponse:
        """Retry with a corrected image URL: the images not downloaded yet with their URLs
        and last errors (GET), then the corrected ones replaced and the download run now
        (POST, ``orders.retry.order_asset_urls_correct``, audited), back to the order page."""
        if not self.has_act_permission(request):
            raise PermissionDenied("Your role does not allow acting on an order's work.")
        order = get_object_or_404(Order, id=order_id)
        change_url = reverse("admin:orders_order_change", args=[order.id])
        context = self.page_context(
            request,
            f"Retry {order.public_id} with a corrected image URL",
            order=order,
            change_url=change_url,
        )
        try:
            assets = order_assets_correctable(order=order)
        except RetryRefused as refused:
            return TemplateResponse(request, _ASSET_URL_TEMPLATE, {**context, "refused": refused})
        form = CorrectedImageUrlsForm(request.POST or None, assets=assets)
        if request.method == "POST" and form.is_valid():
            user = request.user if isinstance(request.user, User) else None
            try:
                corrected = order_asset_urls_correct(order=order, user=user, asset_urls=form.urls())
            except RetryRefused as refused:
                return TemplateResponse(
                    request, _ASSET_URL_TEMPLATE, {**context, "refused": refused}
                )
            names = ", ".join(asset.public_id for asset in corrected)
            self.message_user(
                request,
                f"{order.public_id}: the download runs now with the corrected URL of {names}.",
                messages.SUCCESS,
            )
            return HttpResponseRedirect(change_url)
        return TemplateResponse(
            request,
            _ASSET_URL_TEMPLATE,
            {**context, "failed": order.pipeline_step == PipelineStep.FAILED, "form": form},
        )

    @admin.action(description="Retry with a corrected image URL (one order)", permissions=["act"])
    def retry_with_corrected_image_url(
        self, request: HttpRequest, queryset: QuerySet[Order]
    ) -> HttpResponse | None:
        """Opens the confirmation page of the one order chosen."""
        if queryset.count() != 1:
            self.message_user(request, "Choose one order.", level=messages.WARNING)
            return None
        order = queryset.get()
        return HttpResponseRedirect(reverse("admin:orders_order_asset_url", args=[order.id]))

    @admin.action(description="Run the failed step again (one order)", permissions=["act"])
    def retry_failed_step(
        self, request: HttpRequest, queryset: QuerySet[Order]
    ) -> HttpResponse | None:
        """Opens the confirmation page of the one order chosen."""
        if queryset.count() != 1:
            self.message_user(request, "Choose one order.", level=messages.WARNING)
            return None
        order = queryset.get()
        return HttpResponseRedirect(reverse("admin:orders_order_retry", args=[order.id]))

    @admin.display(description="assets")
    def assets_table(self, order: Order) -> str:
        assets = Asset.objects.filter(item__order=order).select_related("item")
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td><td>{}</td></tr>",
            (
                (a.public_id, a.item.public_id, a.print_area, a.status, a.download_attempts,
                 a.url, a.print_file or "-", a.last_error or "-")
                for a in assets.order_by("item__position", "position")
            ),
        )  # fmt: skip
        return format_html(
            "<table><tr><th>id</th><th>item</th><th>print area</th><th>status</th>"
            "<th>attempts</th><th>url</th><th>print file</th><th>last error</th></tr>{}</table>",
            rows,
        )

    @admin.action(description="Submit held orders now", permissions=["act"])
    def submit_held_orders_now(self, request: HttpRequest, queryset: QuerySet[Order]) -> None:
        submitted = sum(order_submit_now(order=order) for order in queryset)
        skipped = queryset.count() - submitted
        self.message_user(request, f"{submitted} held order(s) submitted.", level=messages.SUCCESS)
        if skipped:
            self.message_user(
                request,
                f"{skipped} order(s) were not on hold or already due; left as they are.",
                level=messages.WARNING,
            )

    @admin.action(description="Run the due pipeline step now", permissions=["act"])
    def queue_due_step(self, request: HttpRequest, queryset: QuerySet[Order]) -> None:
        """Each order's working step made due now and queued (``order_run_now``): a waiting
        download's backoff is over, and a worker runs the step at once. The others are left
        as they are, and the message says so."""
        ran = [order_run_now(order_id=pk) for pk in queryset.values_list("id", flat=True)]
        queued = sum(step is not None for step in ran)
        if queued:
            self.message_user(
                request, f"{queued} order(s) due now and queued for their step.", messages.SUCCESS
            )
        if len(ran) - queued:
            self.message_user(
                request,
                f"{len(ran) - queued} order(s) left as they are: held (use Submit held orders "
                "now), awaiting payment, finished, failed, or being worked on now.",
                level=messages.WARNING,
            )


@admin.register(ShipmentResubmission)
class ShipmentResubmissionAdmin(NoAddOrDelete, admin.ModelAdmin):
    """Every resubmission with the lab cost the service bore for it (never charged to the
    merchant)."""

    list_display = ("__str__", "lab_code", "shipping_method", "lab_cost", "created",
                    "submitted_at")  # fmt: skip
    list_filter = ("lab_code",)
    search_fields = ("original__id", "new_shipment_id")
    fields = ("original", "new_shipment", "lab_code", "lab_country_code", "shipping_method",
              "carrier_name", "carrier_service", "lab_cost", "plan", "created",
              "submitted_at")  # fmt: skip
    readonly_fields = fields

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[ShipmentResubmission], search_term: str
    ) -> tuple[QuerySet[ShipmentResubmission], bool]:
        if not search_term.strip():
            return queryset, False
        number = id_number(PREFIXES["shipment"], search_term, allow_bare=True)
        if number is None:
            return queryset.none(), False
        return queryset.filter(Q(original_id=number) | Q(new_shipment_id=number)), False

    @admin.display(description="lab cost (what the lab charges the service)")
    def lab_cost(self, record: ShipmentResubmission) -> str:
        if record.lab_cost is None:
            return "-"
        return f"{record.lab_cost} {record.plan['currency']}"

    @admin.display(description="new shipment")
    def new_shipment(self, record: ShipmentResubmission) -> str:
        return record.new_shipment_public_id


_RETRY_TEMPLATE = "admin/orders/order/retry.html"
_ASSET_URL_TEMPLATE = "admin/orders/order/asset_url.html"


class CorrectedImageUrlsForm(forms.Form):
    """One URL field per image not downloaded yet, holding its URL as it is; at least one must
    change."""

    def __init__(self, *args: Any, assets: tuple[Asset, ...], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for asset in assets:
            tried = f"{asset.download_attempts} attempt(s)"
            self.fields[f"asset_{asset.id}"] = forms.URLField(
                label=f"{asset.public_id} ({asset.print_area}, {tried}): "
                f"{asset.last_error or 'not tried yet'}",
                initial=asset.url,
                max_length=2000,
                assume_scheme="https",
            )

    def urls(self) -> dict[int, str]:
        """Asset id → URL, for those changed from what the asset has."""
        return {
            int(name.removeprefix("asset_")): url
            for name, url in self.cleaned_data.items()
            if url != self.fields[name].initial
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not self.errors and not self.urls():
            raise forms.ValidationError("Change the URL of at least one image.")
        return cleaned


class AssetUrlsForm(forms.Form):
    """One URL field per asset that failed to download, holding its URL as it is."""

    def __init__(self, *args: Any, failed: FailedStep, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for asset in failed.assets:
            self.fields[f"asset_{asset.id}"] = forms.URLField(
                label=f"{asset.public_id} ({asset.print_area}): {asset.last_error or 'failed'}",
                initial=asset.url,
                max_length=2000,
                assume_scheme="https",
            )

    def urls(self) -> dict[int, str]:
        """Asset id → URL, for those changed from what the asset has."""
        return {
            int(name.removeprefix("asset_")): url
            for name, url in self.cleaned_data.items()
            if url != self.fields[name].initial
        }
