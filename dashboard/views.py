"""The merchant dashboard: plain Django views over the services of merchants, orders and
webhooks. Every page works without JavaScript; every form carries Django's CSRF token.

A signed-in person sees only their merchant's rows: each lookup below filters by the merchant
(and the chosen environment), and anything else is the dashboard's 404 page.
"""

import functools
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from billing.documents import invoice_pdf, receipt_pdf
from billing.selectors import merchant_invoice_get, merchant_invoices, order_payments_get
from common.countries import country_label
from common.errors import LabBusy, ValidationFailed
from common.ids import PREFIXES, id_number, parse_id
from dashboard import forms
from dashboard.charts import attention_chart, day_chart
from dashboard.presentation import (
    ATTEMPT_OUTCOME_NAMES,
    EVENT_STATE_NAMES,
    ITEM_STATUS_NAMES,
    STAGE_NAMES,
    event_payload_text,
    event_words,
    issue_in_words,
    order_money,
    order_timeline,
)
from dashboard.selectors import (
    NotFound,
    OrderListFilter,
    attention_counts,
    catalogue_entries,
    environment_events,
    environment_keys,
    environment_orders,
    item_attributes_shown,
    merchant_event_get,
    merchant_key_get,
    merchant_order_get,
    order_hold_released,
    order_progress,
    order_stage_name,
    order_under_way,
    overview_days,
)
from dashboard.services import dashboard_base_url, registration_signup
from dashboard.throttling import RegistrationThrottle
from labs.selectors import countries_shipped_to, products_with_countries
from merchants.models import Environment, EnvironmentKind, Merchant
from merchants.registration import registration_complete
from merchants.services import (
    api_key_create,
    api_key_revoke,
    environment_settings_update,
    merchant_currency_update,
    signing_secret_rotate,
)
from orders.actions import order_cancel
from orders.authorisation import order_payment_amount, order_payment_authorise
from orders.editing import order_held_submit, order_held_update
from orders.lab_bulkhead import order_lab_web_places
from orders.models import Order, PipelineStep, Stage
from orders.payments import PaymentUnavailable, payment_issue, payment_provider_is_test
from orders.representation import file_url
from orders.selectors import LIST_STATUS_STAGES, charges_of_invoice
from products.models import Category
from webhooks.services import event_replay

ENVIRONMENT_SESSION_KEY = "dashboard_environment"
STATUS_FILTERS = [
    ("", "Any status"),
    *((status, STAGE_NAMES[stage]) for status, stage in LIST_STATUS_STAGES.items()),
]

View = Callable[..., HttpResponse]


def _not_found(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/not_found.html", status=404)


def _current_environment(request: HttpRequest, merchant: Merchant) -> Environment:
    kind = request.session.get(ENVIRONMENT_SESSION_KEY, EnvironmentKind.SANDBOX)
    if kind not in EnvironmentKind.values:
        kind = EnvironmentKind.SANDBOX
    return merchant.environments.get(kind=kind)


def merchant_view(view: View) -> View:
    """Signed in as a merchant's person: ``request.merchant`` and ``request.environment`` are
    set; a row of someone else's is the 404 page."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return auth_views.redirect_to_login(request.get_full_path())
        merchant = Merchant.objects.filter(user=request.user).first()
        if merchant is None:
            return render(request, "dashboard/no_merchant.html", status=403)
        request.merchant = merchant  # type: ignore[attr-defined]
        request.environment = _current_environment(request, merchant)  # type: ignore[attr-defined]
        try:
            return view(request, *args, **kwargs)
        except NotFound:
            return _not_found(request)

    return wrapper


def _page(request: HttpRequest, template: str, context: dict[str, Any], **kw: Any) -> HttpResponse:
    environment: Environment = request.environment  # type: ignore[attr-defined]
    base = {
        "merchant": request.merchant,  # type: ignore[attr-defined]
        "environment": environment,
        "environment_kinds": EnvironmentKind.values,
    }
    return render(request, template, {**base, **context}, **kw)


def _order_id(value: str) -> int:
    try:
        return parse_id(PREFIXES["order"], value, field="orderId")
    except ValidationFailed as exc:
        raise NotFound from exc


def _base_url(request: HttpRequest) -> str:
    """The base of the file URLs a page shows the person viewing it (thumbnails): the host
    they asked. Mailed links use ``dashboard_base_url`` instead."""
    return request.build_absolute_uri("/").rstrip("/")


def _throttled(request: HttpRequest) -> bool:
    return not RegistrationThrottle().allow_request(request, None)  # type: ignore[arg-type]


# --- public pages ---------------------------------------------------------------------------


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html")


FAVICON = Path(__file__).resolve().parent / "static" / "dashboard" / "favicon.ico"


@functools.cache
def _favicon_bytes() -> bytes:
    return FAVICON.read_bytes()


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``, which browsers ask for on every page (the admin's and the API's too),
    from the dashboard's static file."""
    response = HttpResponse(_favicon_bytes(), content_type="image/vnd.microsoft.icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    form = forms.SignupForm(request.POST or None)
    if request.method == "POST":
        if _throttled(request):
            return render(request, "dashboard/throttled.html", status=429)
        if form.is_valid():
            registration_signup(
                name=form.cleaned_data["name"],
                email=form.cleaned_data["email"],
                password=form.cleaned_data["password"],
            )
            return render(
                request, "dashboard/signup_sent.html", {"email": form.cleaned_data["email"]}
            )
    return render(
        request, "dashboard/signup.html", {"form": form}, status=400 if form.errors else 200
    )


@require_http_methods(["GET", "POST"])
def verify(request: HttpRequest) -> HttpResponse:
    """GET shows a button (mail scanners that open links must not use the token up); POST
    creates the account, signs the person in and shows both API keys, once."""
    token = request.POST.get("token") if request.method == "POST" else request.GET.get("token")
    if not token:
        return render(
            request, "dashboard/verify.html", {"error": "The link has no token."}, status=400
        )
    if request.method == "GET":
        return render(request, "dashboard/verify.html", {"token": token})
    if _throttled(request):
        return render(request, "dashboard/throttled.html", status=429)
    try:
        completed = registration_complete(token=token)
    except ValidationFailed as failed:
        error = "; ".join(d for items in failed.failures.values() for _, d in items)
        return render(request, "dashboard/verify.html", {"error": error}, status=400)
    login(request, completed.user, backend="django.contrib.auth.backends.ModelBackend")
    return render(
        request,
        "dashboard/welcome.html",
        {
            "merchant": completed.created.merchant,
            "sandbox_key": completed.created.sandbox_api_key,
            "live_key": completed.created.live_api_key,
        },
    )


class LoginView(auth_views.LoginView):
    template_name = "dashboard/login.html"
    authentication_form = forms.LoginForm


class LogoutView(auth_views.LogoutView):
    next_page = "/dashboard/login"


class PasswordResetView(auth_views.PasswordResetView):
    """Django's own reset: a mail with a link ``/dashboard/password-reset/<uidb64>/<token>/``
    to the address if an account has it (the page says the same either way)."""

    template_name = "dashboard/password_reset.html"
    email_template_name = "dashboard/password_reset_email.txt"
    subject_template_name = "dashboard/password_reset_subject.txt"
    success_url = reverse_lazy("dashboard:password-reset-sent")

    @property
    def extra_email_context(self) -> dict[str, str]:  # type: ignore[override]
        """The link's base is the configured one (``dashboard_base_url``), never the request's
        ``Host`` or ``X-Forwarded-Host``: a reset asked for with a forged host still mails the
        service's own link."""
        return {"base_url": dashboard_base_url()}

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if _throttled(request):
            return render(request, "dashboard/throttled.html", status=429)
        return super().post(request, *args, **kwargs)


class PasswordResetSentView(auth_views.PasswordResetDoneView):
    template_name = "dashboard/password_reset_sent.html"


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    """The new password, twice; the link works once (the token depends on the password)."""

    template_name = "dashboard/password_reset_confirm.html"
    success_url = reverse_lazy("dashboard:password-reset-done")


class PasswordResetDoneView(auth_views.PasswordResetCompleteView):
    template_name = "dashboard/password_reset_done.html"


# --- the dashboard --------------------------------------------------------------------------


@require_GET
@merchant_view
def overview(request: HttpRequest) -> HttpResponse:
    """Counts, the last 30 days' orders and spend as charts, the orders needing attention."""
    environment: Environment = request.environment  # type: ignore[attr-defined]
    merchant: Merchant = request.merchant  # type: ignore[attr-defined]
    orders, _ = environment_orders(environment=environment, filters=OrderListFilter())
    counts = {
        STAGE_NAMES[stage]: Order.objects.filter(environment=environment, stage=stage).count()
        for stage in (Stage.ON_HOLD, Stage.AWAITING_PAYMENT, Stage.IN_PROGRESS)
    }
    days = overview_days(environment=environment, today=timezone.now().date())
    currency = merchant.billing_currency
    charts = [
        day_chart(
            slug="orders-chart",
            title="Orders placed a day, last 30 days",
            days=days,
            value=lambda day: Decimal(day.orders),
            places=0,
        ),
        day_chart(
            slug="spend-chart",
            title=f"Spend a day ({currency}), last 30 days",
            days=days,
            value=lambda day: day.spend,
            places=2,
            unit=currency,
        ),
    ]
    return _page(
        request,
        "dashboard/overview.html",
        {
            "orders": [(order, order_stage_name(order)) for order in orders[:5]],
            "counts": counts,
            "charts": charts,
            "attention": attention_chart(counts=attention_counts(environment=environment)),
        },
    )


@require_POST
@merchant_view
def environment_switch(request: HttpRequest) -> HttpResponse:
    kind = request.POST.get("kind", "")
    if kind in EnvironmentKind.values:
        request.session[ENVIRONMENT_SESSION_KEY] = kind
    target = request.POST.get("next") or reverse("dashboard:overview")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = reverse("dashboard:overview")
    return HttpResponseRedirect(target)


@require_http_methods(["GET", "POST"])
@merchant_view
def keys(request: HttpRequest) -> HttpResponse:
    environment: Environment = request.environment  # type: ignore[attr-defined]
    form = forms.ApiKeyForm(request.POST or None)
    new_key = None
    if request.method == "POST" and form.is_valid():
        _, new_key = api_key_create(environment=environment, name=form.cleaned_data["name"])
        form = forms.ApiKeyForm()
    return _page(
        request,
        "dashboard/keys.html",
        {"form": form, "keys": environment_keys(environment=environment), "new_key": new_key},
    )


def _confirm(request: HttpRequest, **context: Any) -> HttpResponse:
    """The page asking before a change that cannot be undone: its button posts to this URL."""
    return _page(request, "dashboard/confirm.html", context)


@require_http_methods(["GET", "POST"])
@merchant_view
def key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    environment: Environment = request.environment  # type: ignore[attr-defined]
    api_key = merchant_key_get(environment=environment, key_id=key_id)
    if request.method == "GET":
        return _confirm(
            request,
            title=f"Revoke the key {api_key.name or api_key.prefix + '…'}?",
            explanation=f"Requests with the {environment.kind} key starting "
            f"{api_key.prefix}… are refused from the moment it is revoked. This cannot be undone.",
            action="Revoke the key",
            back=reverse("dashboard:keys"),
        )
    api_key_revoke(api_key=api_key)
    messages.success(request, f"Key {api_key.prefix}… revoked; it no longer works.")
    return redirect("dashboard:keys")


@require_http_methods(["GET", "POST"])
@merchant_view
def settings_page(request: HttpRequest) -> HttpResponse:
    environment: Environment = request.environment  # type: ignore[attr-defined]
    merchant: Merchant = request.merchant  # type: ignore[attr-defined]
    initial = {
        "callback_url": environment.callback_url,
        "pause_mode": environment.pause_mode,
        "pause_minutes": environment.pause_minutes or None,
        "billing_currency": merchant.billing_currency,
    }
    form = forms.SettingsForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        environment_settings_update(
            environment=environment,
            callback_url=data["callback_url"],
            pause_mode=data["pause_mode"],
            pause_minutes=data["pause_minutes"] or 0,
        )
        merchant_currency_update(merchant=merchant, currency=data["billing_currency"])
        messages.success(request, f"Settings of {environment.kind} saved.")
        return redirect("dashboard:settings")
    return _page(
        request, "dashboard/settings.html", {"form": form}, status=400 if form.errors else 200
    )


@require_http_methods(["GET", "POST"])
@merchant_view
def secret_rotate(request: HttpRequest) -> HttpResponse:
    environment: Environment = request.environment  # type: ignore[attr-defined]
    if request.method == "GET":
        return _confirm(
            request,
            title=f"Rotate the {environment.kind} signing secret?",
            explanation="A new secret signs callbacks from now on; for 24 hours they also carry "
            "a signature of the current one. Give your receiver the new secret within that time.",
            action="Rotate the secret",
            back=reverse("dashboard:settings"),
        )
    signing_secret_rotate(environment=environment)
    messages.success(
        request,
        "New signing secret made. For 24 hours callbacks carry signatures of both secrets.",
    )
    return redirect("dashboard:settings")


def _date(value: str) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


def _order_total(order: Order) -> tuple[Decimal, str] | None:
    money = order_money(order)
    if money is not None:
        return money.total, money.currency
    for issue in order.issues.all():
        if issue.payment_amount is not None:
            return issue.payment_amount, issue.payment_currency
    return None


@require_GET
@merchant_view
def orders(request: HttpRequest) -> HttpResponse:
    environment: Environment = request.environment  # type: ignore[attr-defined]
    status = request.GET.get("status", "")
    before = request.GET.get("before", "")
    filters = OrderListFilter(
        status=status if status in dict(STATUS_FILTERS) else "",
        search=request.GET.get("q", "").strip()[:200],
        attention=request.GET.get("attention") == "1",
        created_from=_date(request.GET.get("from", "")),
        created_to=_date(request.GET.get("to", "")),
        before_id=id_number(PREFIXES["order"], before, allow_bare=True),
    )
    page, more = environment_orders(environment=environment, filters=filters)
    base_url = _base_url(request)
    rows = [
        {
            "order": order,
            "stage": order_stage_name(order),
            "items": [(item.copies, item.sku) for item in order.items.all()],
            "total": _order_total(order),
            "attention": bool(order.issues.all()),
            "thumbnails": [
                url
                for item in order.items.all()
                if (url := file_url(item.thumbnail, base_url)) is not None
            ][:3],
            "progress": order_progress(order),
        }
        for order in page
    ]
    query = request.GET.copy()
    query.pop("before", None)
    return _page(
        request,
        "dashboard/orders.html",
        {
            "rows": rows,
            "filters": filters,
            "status_filters": STATUS_FILTERS,
            "query": query.urlencode(),
            "next_before": page[-1].id if more and page else None,
            "refresh": any(order_under_way(o) for o in page),
        },
    )


def _order_page(
    request: HttpRequest,
    order: Order,
    *,
    form: forms.HeldOrderForm | None = None,
    status: int = 200,
) -> HttpResponse:
    items = list(order.items.all())
    released = order_hold_released(order)
    held = order.pipeline_step == PipelineStep.HELD and not released
    if held and form is None:
        form = forms.HeldOrderForm(order=order, items=items)
    base_url = _base_url(request)
    attributes = item_attributes_shown(items)
    issue = next((i for i in order.issues.all() if i.authorisation_url), None)
    price = order_payment_amount(order=order) if held else (None, "")
    events = environment_events(environment=order.environment, subject=order.public_id)
    payments, refunds = order_payments_get(order=order)
    return _page(
        request,
        "dashboard/order.html",
        {
            "order": order,
            "stage": order_stage_name(order),
            "items": [
                (item, file_url(item.thumbnail, base_url), shown)
                for item, shown in zip(items, attributes, strict=True)
            ],
            "defaulted": any(a.defaulted for shown in attributes for a in shown),
            "item_statuses": ITEM_STATUS_NAMES,
            "country": country_label(order.address_country_code),
            "shipments": list(order.shipments.all()),
            "money": order_money(order),
            "issues": [issue_in_words(i) for i in order.issues.all()],
            "timeline": order_timeline(order, events),
            "payments": payments,
            "refunds": refunds,
            "progress": order_progress(order),
            "refresh": order_under_way(order) and form is None,
            "held": held,
            "released": released,
            "hold_ends": order.due_at if held else None,
            "test_payments": payment_provider_is_test(),
            "form": form,
            "payment_issue": issue,
            "price": price,
            "can_cancel": order.stage in (Stage.ON_HOLD, Stage.AWAITING_PAYMENT, Stage.IN_PROGRESS),
            "events": events,
        },
        status=status,
    )


@require_GET
@merchant_view
def order_detail(request: HttpRequest, order_id: str) -> HttpResponse:
    order = merchant_order_get(merchant=request.merchant, order_id=_order_id(order_id))  # type: ignore[attr-defined]
    return _order_page(request, order)


@require_POST
@merchant_view
def order_edit(request: HttpRequest, order_id: str) -> HttpResponse:
    order = merchant_order_get(merchant=request.merchant, order_id=_order_id(order_id))  # type: ignore[attr-defined]
    if order.pipeline_step != PipelineStep.HELD or order_hold_released(order):
        messages.error(request, "The order is no longer on hold; it cannot be edited.")
        return redirect("dashboard:order", order_id=order.public_id)
    form = forms.HeldOrderForm(request.POST, order=order, items=list(order.items.all()))
    if form.is_valid():
        data = form.request_data
        try:
            order_held_update(
                order=order,
                recipient=data["recipient"],
                shipping_method=data["shippingMethod"],
                copies=[item["copies"] for item in data["items"]],
                metadata=data["metadata"],
            )
        except ValidationFailed as failed:
            form.add_failures(failed.failures)
        else:
            messages.success(request, "Order updated and priced again.")
            return redirect("dashboard:order", order_id=order.public_id)
    return _order_page(request, order, form=form, status=400)


@require_POST
@merchant_view
def order_submit(request: HttpRequest, order_id: str) -> HttpResponse:
    order = merchant_order_get(merchant=request.merchant, order_id=_order_id(order_id))  # type: ignore[attr-defined]
    if order_held_submit(order=order):
        messages.success(request, "Order submitted: it leaves the hold now and starts.")
    else:
        messages.error(request, "The order is not on hold any more.")
    return redirect("dashboard:order", order_id=order.public_id)


@require_http_methods(["GET", "POST"])
@merchant_view
def order_cancel_view(request: HttpRequest, order_id: str) -> HttpResponse:
    order = merchant_order_get(merchant=request.merchant, order_id=_order_id(order_id))  # type: ignore[attr-defined]
    if request.method == "GET":
        paid = order.payment_authorised_at is not None
        return _confirm(
            request,
            title=f"Cancel order {order.public_id}?",
            explanation="Nothing more is made or shipped for it"
            + (" and its payment is refunded to the card" if paid else "")
            + ". A shipment already in production cannot be cancelled. This cannot be undone.",
            action="Cancel the order",
            back=reverse("dashboard:order", kwargs={"order_id": order.public_id}),
        )
    try:
        with order_lab_web_places(order=order):
            result = order_cancel(order=order)
    except LabBusy as busy:  # nothing was done
        messages.error(request, f"The order could not be cancelled now: {busy}")
        return redirect("dashboard:order", order_id=order.public_id)
    if result.outcome == "Cancelled":
        messages.success(request, "Order cancelled.")
    else:
        messages.error(request, f"The order could not be cancelled ({result.outcome}).")
    return redirect("dashboard:order", order_id=order.public_id)


@require_GET
@merchant_view
def callbacks(request: HttpRequest) -> HttpResponse:
    environment: Environment = request.environment  # type: ignore[attr-defined]
    subject = request.GET.get("order", "").strip()[:40]
    failed = request.GET.get("failed") == "1"
    events = environment_events(
        environment=environment, subject=subject, failed=failed, with_body=True
    )
    for event in events:
        event.payload_text = event_payload_text(event)  # type: ignore[attr-defined]
        event.words = event_words(event.event_type)  # type: ignore[attr-defined]
        event.state_words = EVENT_STATE_NAMES.get(event.state, event.state)  # type: ignore[attr-defined]
        for attempt in event.attempt_log.all():
            attempt.outcome_words = ATTEMPT_OUTCOME_NAMES.get(attempt.outcome, attempt.outcome)  # type: ignore[attr-defined]
    return _page(
        request,
        "dashboard/callbacks.html",
        {"events": events, "subject": subject, "failed": failed},
    )


@require_POST
@merchant_view
def callback_replay(request: HttpRequest, event_id: str) -> HttpResponse:
    environment: Environment = request.environment  # type: ignore[attr-defined]
    try:
        number = parse_id(PREFIXES["event"], event_id, field="eventId")
    except ValidationFailed as exc:
        raise NotFound from exc
    event = merchant_event_get(environment=environment, event_id=number)
    event_replay(event=event)
    messages.success(request, f"Event {event.public_id} queued to be sent again.")
    return redirect("dashboard:callbacks")


@require_http_methods(["GET", "POST"])
@merchant_view
def pay(request: HttpRequest, order_id: str) -> HttpResponse:
    """The amount and one button: the provider takes the payment at once (the test provider)
    or the payer is sent on to its page (Stripe Checkout, 303) and comes back to the order."""
    order = merchant_order_get(merchant=request.merchant, order_id=_order_id(order_id))  # type: ignore[attr-defined]
    test_payments = payment_provider_is_test()
    if payment_issue(order) is None:
        return _page(
            request,
            "dashboard/pay.html",
            {"order": order, "nothing_due": True, "test_payments": test_payments},
        )
    amount, currency = order_payment_amount(order=order)
    error, status = "", 200
    if request.method == "POST":
        order_url = reverse("dashboard:order", kwargs={"order_id": order.public_id})
        try:
            result = order_payment_authorise(
                order=order, return_url=request.build_absolute_uri(order_url)
            )
        except ValidationFailed as failed:
            error = "; ".join(d for items in failed.failures.values() for _, d in items)
            status = 400
        except PaymentUnavailable:
            error = "The payment service cannot be reached just now; please try again shortly."
            status = 503
        else:
            if result.redirect_url:
                return HttpResponseRedirect(result.redirect_url, status=303)
            if result.authorised:
                messages.success(request, "Payment authorised: the order has started.")
                return redirect("dashboard:order", order_id=order.public_id)
            error = result.message or "The payment was declined."
            status = 400
    return _page(
        request,
        "dashboard/pay.html",
        {
            "order": order,
            "amount": amount,
            "currency": currency,
            "error": error,
            "test_payments": test_payments,
        },
        status=status,
    )


def _pdf(content: bytes, filename: str) -> HttpResponse:
    response = HttpResponse(content, content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_GET
@merchant_view
def order_receipt(request: HttpRequest, order_id: str) -> HttpResponse:
    """The receipt of an order paid by card (what was paid, what was refunded)."""
    order = merchant_order_get(merchant=request.merchant, order_id=_order_id(order_id))  # type: ignore[attr-defined]
    payments, refunds = order_payments_get(order=order)
    if not payments:
        raise NotFound
    content = receipt_pdf(order=order, payments=payments, refunds=refunds)
    return _pdf(content, f"receipt-{order.public_id}.pdf")


@require_GET
@merchant_view
def invoices(request: HttpRequest) -> HttpResponse:
    merchant: Merchant = request.merchant  # type: ignore[attr-defined]
    return _page(
        request, "dashboard/invoices.html", {"invoices": merchant_invoices(merchant=merchant)}
    )


@require_GET
@merchant_view
def invoice_pdf_download(request: HttpRequest, number: str) -> HttpResponse:
    merchant: Merchant = request.merchant  # type: ignore[attr-defined]
    invoice = merchant_invoice_get(merchant=merchant, number=number)
    if invoice is None:
        raise NotFound
    charges = charges_of_invoice(merchant_id=merchant.id, number=invoice.number)
    return _pdf(invoice_pdf(invoice=invoice, charges=charges), f"{invoice.number}.pdf")


@require_GET
@merchant_view
def catalogue(request: HttpRequest) -> HttpResponse:
    """Every product with its attributes and print areas, and a price for one copy to the
    chosen destination (the quote engine's cheapest method), in the merchant's currency, as a
    quote in the chosen environment gives it."""
    merchant: Merchant = request.merchant  # type: ignore[attr-defined]
    environment: Environment = request.environment  # type: ignore[attr-defined]
    listed = products_with_countries()
    countries = countries_shipped_to(listed=listed)
    country = request.GET.get("country", "").upper()
    if country not in countries:
        country = "GB" if "GB" in countries else (countries[0] if countries else "")
    category = request.GET.get("category", "")
    if category not in Category.values:
        category = ""
    entries = catalogue_entries(
        listed=listed,
        country_code=country,
        currency=merchant.billing_currency,
        sandbox=environment.is_sandbox,
        category=category or None,
    )
    return _page(
        request,
        "dashboard/catalogue.html",
        {
            "entries": entries,
            "countries": [(code, country_label(code)) for code in countries],
            "country": country,
            "categories": Category.choices,
            "category": category,
        },
    )
