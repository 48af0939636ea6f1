"""The dashboard's pages: one merchant's data only, settings, keys, held orders, callbacks."""

import base64
import hashlib
import hmac
import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from merchants.models import ApiKey, Environment, PauseMode
from merchants.services import CreatedMerchant
from orders.models import Order, PipelineStep, Stage
from tests.support.dashboard import signed_in_client
from tests.support.orders import order_create_via_api, pk
from webhooks.models import CallbackEvent, CallbackState
from webhooks.services import event_deliver

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]


@pytest.fixture
def owner(merchant: CreatedMerchant) -> Client:
    return signed_in_client(merchant.merchant)


@pytest.fixture
def stranger(other_merchant: CreatedMerchant) -> Client:
    return signed_in_client(other_merchant.merchant)


@pytest.fixture
def held_order(merchant: CreatedMerchant, sandbox_api: APIClient) -> str:
    merchant.merchant.environments.filter(kind="Sandbox").update(pause_mode=PauseMode.INDEFINITE)
    return order_create_via_api(sandbox_api, outcome="OnHold")


def edit_form(**changes: Any) -> dict[str, Any]:
    form = {
        "name": "Grace Hopper",
        "email": "grace@example.com",
        "phone_number": "",
        "line1": "2 Compiler Way",
        "line2": "",
        "postal_or_zip_code": "EC1A 1BB",
        "country_code": "GB",
        "town_or_city": "London",
        "state_or_county": "",
        "shipping_method": "Express",
        "copies_0": "3",
        "metadata": '{"channel": "dashboard"}',
    }
    form.update(changes)
    return form


def test_pages_need_a_sign_in() -> None:
    for path in ("/dashboard/", "/dashboard/orders", "/dashboard/keys", "/dashboard/settings"):
        response = Client().get(path)
        assert response.status_code == 302
        assert response["Location"].startswith("/dashboard/login?next=")


def test_the_link_page_at_the_root() -> None:
    response = Client().get("/")

    html = response.content.decode()
    assert response.status_code == 200
    for link in ('href="/v4.0/docs"', 'href="/dashboard/"', 'href="/admin/"'):
        assert link in html


def test_another_merchants_order_is_never_seen_nor_changed(
    held_order: str, stranger: Client, owner: Client
) -> None:
    before = Order.objects.get(id=pk(held_order))
    for method, path, data in [
        ("get", f"/dashboard/orders/{held_order}", None),
        ("post", f"/dashboard/orders/{held_order}/edit", edit_form()),
        ("post", f"/dashboard/orders/{held_order}/submit", None),
        ("get", f"/dashboard/orders/{held_order}/cancel", None),
        ("post", f"/dashboard/orders/{held_order}/cancel", None),
        ("get", f"/dashboard/pay/{held_order}", None),
    ]:
        response = getattr(stranger, method)(path, data or {})
        assert response.status_code == 404, (path, response.status_code)
    assert held_order not in stranger.get("/dashboard/orders").content.decode()
    after = Order.objects.get(id=pk(held_order))
    assert (after.stage, after.recipient_name, after.due_at) == (
        before.stage, before.recipient_name, before.due_at,
    )  # fmt: skip
    assert owner.get(f"/dashboard/orders/{held_order}").status_code == 200
    assert owner.get("/dashboard/orders/ord_x").status_code == 404


def test_editing_a_held_order_applies_validated_changes(
    held_order: str, owner: Client, sandbox_api: APIClient
) -> None:
    response = owner.post(f"/dashboard/orders/{held_order}/edit", edit_form())

    assert response.status_code == 302
    shown = sandbox_api.get(f"/v4.0/orders/{held_order}").json()["order"]
    assert shown["recipient"]["name"] == "Grace Hopper"
    assert shown["recipient"]["address"]["postalOrZipCode"] == "EC1A 1BB"
    assert shown["shippingMethod"] == "Express"
    assert shown["items"][0]["copies"] == 3
    assert shown["metadata"] == {"channel": "dashboard"}
    assert shown["status"]["stage"] == "OnHold"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        # a select of the countries the catalogue ships to
        ("country_code", "ZZ", "Select a valid choice. ZZ is not one of the available choices."),
        ("copies_0", "0", "Ensure this value is greater than or equal to 1."),
        ("metadata", "[1, 2]", "Metadata must be a JSON object."),
        ("metadata", "{nope", "Metadata must be valid JSON."),
        ("email", "not-mail", "Enter a valid email address."),
        ("name", "", "This field is required."),
    ],
)
def test_bad_values_are_refused_with_the_fields_message_and_nothing_changes(
    held_order: str, owner: Client, field: str, value: str, message: str
) -> None:
    before = Order.objects.get(id=pk(held_order))

    response = owner.post(f"/dashboard/orders/{held_order}/edit", edit_form(**{field: value}))

    assert response.status_code == 400
    html = response.content.decode()
    assert f'id="id_{field}_error"' in html
    assert message.replace("'", "&#x27;") in html
    after = Order.objects.get(id=pk(held_order))
    assert (after.recipient_name, after.shipping_method) == (
        before.recipient_name, before.shipping_method,
    )  # fmt: skip


def test_a_method_no_lab_offers_to_the_destination_is_refused_as_the_api_refuses_it(
    held_order: str, owner: Client
) -> None:
    form = edit_form(country_code="FR", shipping_method="Overnight")

    response = owner.post(f"/dashboard/orders/{held_order}/edit", form)

    assert response.status_code == 400
    assert 'id="id_shipping_method_error"' in response.content.decode()
    assert Order.objects.get(id=pk(held_order)).address_country_code == "GB"


def test_submit_now_and_cancel_from_the_dashboard(
    held_order: str, owner: Client, merchant: CreatedMerchant, sandbox_api: APIClient
) -> None:
    assert owner.post(f"/dashboard/orders/{held_order}/submit").status_code == 302
    order = Order.objects.get(id=pk(held_order))
    assert order.pipeline_step == PipelineStep.HELD and order.due_at is not None

    other = order_create_via_api(sandbox_api, outcome="OnHold")
    assert owner.post(f"/dashboard/orders/{other}/cancel").status_code == 302
    assert Order.objects.get(id=pk(other)).stage == Stage.CANCELLED


def test_keys_issue_shows_the_key_once_and_revoke_stops_it(
    owner: Client, merchant: CreatedMerchant
) -> None:
    response = owner.post("/dashboard/keys", {"name": "shop"})
    [key] = re.findall(r'id="new-key">(sk_sandbox_[^<]+)<', response.content.decode())
    assert APIClient().get("/v4.0/orders", HTTP_X_API_KEY=key).status_code == 200
    assert key not in owner.get("/dashboard/keys").content.decode()

    issued = ApiKey.objects.get(name="shop")
    confirm = owner.get(f"/dashboard/keys/{issued.pk}/revoke")
    assert confirm.status_code == 200 and "This cannot be undone." in confirm.content.decode()
    issued.refresh_from_db()
    assert issued.revoked_at is None  # asking first changes nothing
    assert owner.post(f"/dashboard/keys/{issued.pk}/revoke").status_code == 302
    assert APIClient().get("/v4.0/orders", HTTP_X_API_KEY=key).status_code == 401


def test_a_key_of_another_merchant_cannot_be_revoked(
    stranger: Client, merchant: CreatedMerchant
) -> None:
    key = ApiKey.objects.get(environment__merchant=merchant.merchant, environment__kind="Sandbox")

    assert stranger.post(f"/dashboard/keys/{key.pk}/revoke").status_code == 404
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None


def test_the_environment_switch_chooses_whose_keys_are_shown(
    owner: Client, merchant: CreatedMerchant
) -> None:
    owner.post("/dashboard/environment", {"kind": "Live", "next": "/dashboard/keys"})
    response = owner.post("/dashboard/keys", {"name": "live one"})

    assert "sk_live_" in response.content.decode()
    assert ApiKey.objects.get(name="live one").environment.kind == "Live"


def test_settings_are_validated_and_saved_per_environment(
    owner: Client, merchant: CreatedMerchant
) -> None:
    refused = owner.post(
        "/dashboard/settings",
        {"callback_url": "ftp://x", "pause_mode": "Minutes", "billing_currency": "GBP"},
    )  # fmt: skip
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "Enter a valid URL." in html or "http or https" in html
    assert "Give the number of minutes" in html

    saved = owner.post(
        "/dashboard/settings",
        {"callback_url": "https://shop.example.com/hooks", "pause_mode": "Minutes",
         "pause_minutes": "30", "billing_currency": "USD", "billing_mode": "Card"},
    )  # fmt: skip
    assert saved.status_code == 302
    sandbox = Environment.objects.get(merchant=merchant.merchant, kind="Sandbox")
    assert (sandbox.callback_url, sandbox.pause_mode, sandbox.pause_minutes) == (
        "https://shop.example.com/hooks", PauseMode.MINUTES, 30,
    )  # fmt: skip
    live = Environment.objects.get(merchant=merchant.merchant, kind="Live")
    assert live.pause_mode == PauseMode.NONE
    merchant.merchant.refresh_from_db()
    # Billing is the service's decision: a billing mode posted from the dashboard is ignored.
    assert (merchant.merchant.billing_currency, merchant.merchant.billing_mode) == (
        "USD", "Invoice",
    )  # fmt: skip


def _signatures(headers: dict[str, str], body: bytes, secret: str) -> bool:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return expected in headers["webhook-signature"].split(" ")


def test_rotating_the_secret_signs_with_both_for_a_day(
    owner: Client, merchant: CreatedMerchant, sandbox_api: APIClient, monkeypatch: Any
) -> None:
    sandbox = Environment.objects.get(merchant=merchant.merchant, kind="Sandbox")
    old = sandbox.callback_signing_secret
    confirm = owner.get("/dashboard/settings/rotate-secret").content.decode()
    assert "Rotate the Sandbox signing secret?" in confirm
    sandbox.refresh_from_db()
    assert sandbox.callback_signing_secret == old  # asking first changes nothing
    assert owner.post("/dashboard/settings/rotate-secret").status_code == 302
    sandbox.refresh_from_db()
    new = sandbox.callback_signing_secret
    assert new != old and sandbox.previous_signing_secret == old
    assert new in owner.get("/dashboard/settings").content.decode()

    sent: list[tuple[dict[str, str], bytes]] = []

    def record(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Any:
        from webhooks.delivery import AttemptResult, Outcome

        sent.append((headers, body))
        return AttemptResult(outcome=Outcome.DELIVERED, status_code=204, duration_ms=3)

    monkeypatch.setattr("webhooks.services.deliver", record)
    event = _event(sandbox)
    event_deliver(event_id=event.id)
    [(headers, body)] = sent
    assert _signatures(headers, body, new) and _signatures(headers, body, old)

    Environment.objects.filter(pk=sandbox.pk).update(
        previous_signing_secret_until=timezone.now() - timedelta(seconds=1)
    )
    sent.clear()
    CallbackEvent.objects.filter(id=event.id).update(
        state=CallbackState.PENDING, next_attempt_at=timezone.now()
    )
    event_deliver(event_id=event.id)
    [(headers, body)] = sent
    assert _signatures(headers, body, new) and not _signatures(headers, body, old)


def _event(environment: Environment) -> CallbackEvent:
    from tests.webhooks.factories import CallbackEventFactory

    return CallbackEventFactory.create(environment=environment)


def test_the_callback_log_shows_attempts_and_replays_an_event(
    owner: Client, merchant: CreatedMerchant, stranger: Client
) -> None:
    sandbox = Environment.objects.get(merchant=merchant.merchant, kind="Sandbox")
    event = _event(sandbox)
    CallbackEvent.objects.filter(id=event.id).update(state=CallbackState.FAILED)

    page = owner.get("/dashboard/callbacks").content.decode()
    assert event.public_id in page

    assert stranger.post(f"/dashboard/callbacks/{event.public_id}/replay").status_code == 404
    assert CallbackEvent.objects.get(id=event.id).state == CallbackState.FAILED
    assert owner.post(f"/dashboard/callbacks/{event.public_id}/replay").status_code == 302
    assert CallbackEvent.objects.get(id=event.id).state == CallbackState.PENDING


def test_forms_need_the_csrf_token(merchant: CreatedMerchant) -> None:
    signed_in_client(merchant.merchant)
    client = Client(enforce_csrf_checks=True)
    assert merchant.merchant.user is not None
    client.force_login(merchant.merchant.user)

    assert client.post("/dashboard/keys", {"name": "x"}).status_code == 403
    assert not ApiKey.objects.filter(name="x").exists()


def test_the_orders_list_filters_by_status(
    owner: Client, held_order: str, sandbox_api: APIClient
) -> None:
    html = owner.get("/dashboard/orders?status=draft").content.decode()
    assert held_order in html
    assert held_order not in owner.get("/dashboard/orders?status=complete").content.decode()
    assert owner.get("/dashboard/orders?status=bogus&before=x").status_code == 200


def test_the_orders_list_finds_an_order_by_its_id_in_ascii_digits_only(
    owner: Client, held_order: str
) -> None:
    number = held_order.removeprefix("ord_")
    full_width = number.translate({ord(d): 0xFF10 + int(d) for d in "0123456789"})

    assert held_order in owner.get(f"/dashboard/orders?q={held_order.upper()}").content.decode()
    assert held_order in owner.get(f"/dashboard/orders?q={number}").content.decode()
    assert held_order not in owner.get(f"/dashboard/orders?q=ord_{full_width}").content.decode()
    # A page before an id beyond any is the first page, not an error.
    beyond = owner.get(f"/dashboard/orders?before={'9' * 25}")
    assert beyond.status_code == 200 and held_order in beyond.content.decode()
    assert held_order in owner.get(f"/dashboard/orders?before={full_width}").content.decode()
