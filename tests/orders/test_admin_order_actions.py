"""Every order is actionable from its admin page, in words: the actions its state allows (as
``GET .../actions`` answers, and "Submit now" for a held order), each through a confirmation
page (GET shows what will happen and changes nothing, POST does it through the API's service),
audited, its outcome said; the order's timeline; the raw fields folded in one section."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from merchants.models import Environment, PauseMode
from merchants.services import CreatedMerchant
from orders.models import Order, OrderIssue, PipelineStep, Shipment, Stage
from staff.models import AuditEntry
from tests.support.documents import document_rewritten
from tests.support.orders import book_item, order_at_labs, order_via_api
from tests.support.staff import signed_in, staff_client
from webhooks.models import CallbackEvent

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]

NEW_RECIPIENT = {
    "name": "Grace Hopper",
    "email": "grace@example.com",
    "phoneNumber": "",
    "line1": "2 Compiler Lane",
    "line2": "",
    "postalOrZipCode": "EC1A 1BB",
    "townOrCity": "London",
    "stateOrCounty": "",
    "countryCode": "GB",
}


@pytest.fixture
def operator() -> Client:
    return staff_client("olga")


@pytest.fixture
def held(merchant: CreatedMerchant, sandbox_api: APIClient) -> Order:
    Environment.objects.filter(merchant=merchant.merchant, kind="Sandbox").update(
        pause_mode=PauseMode.INDEFINITE
    )
    order = order_via_api(sandbox_api, outcome="OnHold")
    assert (order.stage, order.pipeline_step) == (Stage.ON_HOLD, PipelineStep.HELD)
    return order


@pytest.fixture
def awaiting_payment(card: CreatedMerchant, live_api: APIClient, settings: object) -> Order:
    order = order_via_api(live_api)
    assert order.stage == Stage.AWAITING_PAYMENT
    return order


@pytest.fixture
def in_progress(sandbox_api: APIClient) -> Order:
    """In progress, before any lab has it: downloading its images."""
    order = order_via_api(sandbox_api)
    assert (order.stage, order.pipeline_step) == (Stage.IN_PROGRESS, PipelineStep.DOWNLOAD)
    return order


def action_url(order: Order, action: str) -> str:
    return reverse("admin:orders_order_action", args=[order.id, action])


def page_of(client: Client, order: Order) -> str:
    response = client.get(reverse("admin:orders_order_change", args=[order.id]))
    assert response.status_code == 200
    return response.content.decode()


def offered(client: Client, order: Order) -> list[tuple[str, str]]:
    """The order page's actions: (name, words), in the page's order."""
    html = page_of(client, order)
    found = re.findall(r'data-action="([^"]+)" id="[^"]+">([^<]+)</a>', html)
    return [(name, words) for name, words in found]


def test_a_held_order_offers_submit_now_and_every_change(operator: Client, held: Order) -> None:
    assert offered(operator, held) == [
        ("submit", "Submit now"),
        ("shipping-method", "Change shipping method"),
        ("recipient", "Change recipient"),
        ("cancel", "Cancel order"),
    ]


def test_an_awaiting_payment_order_offers_its_changes_and_cancel(
    operator: Client, awaiting_payment: Order
) -> None:
    assert offered(operator, awaiting_payment) == [
        ("shipping-method", "Change shipping method"),
        ("recipient", "Change recipient"),
        ("cancel", "Cancel order"),
    ]


def test_an_order_before_any_lab_offers_the_image_url_correction_too(
    operator: Client, in_progress: Order
) -> None:
    assert offered(operator, in_progress) == [
        ("asset-url", "Retry with a corrected image URL"),
        ("shipping-method", "Change shipping method"),
        ("recipient", "Change recipient"),
        ("cancel", "Cancel order"),
    ]


def test_a_finished_order_offers_none(operator: Client, in_progress: Order) -> None:
    Order.objects.filter(id=in_progress.id).update(
        stage=Stage.COMPLETE, pipeline_step=PipelineStep.DONE, due_at=None
    )
    document_rewritten(in_progress)

    assert offered(operator, in_progress) == []
    assert "None: the order's state allows none." in page_of(operator, in_progress)
    refused = operator.get(action_url(in_progress, "cancel"))
    assert refused.status_code == 200
    assert "Cancel order is not available: " + in_progress.public_id + " is Complete." in (
        refused.content.decode()
    )
    assert 'id="confirm"' not in refused.content.decode()


def test_cancel_is_confirmed_then_done_through_the_api_service_audited_and_called_back(
    operator: Client, in_progress: Order
) -> None:
    confirm = operator.get(action_url(in_progress, "cancel"))

    html = confirm.content.decode()
    assert "Nothing more is made or shipped for it" in html and 'id="confirm"' in html
    assert Order.objects.get(id=in_progress.id).stage == Stage.IN_PROGRESS

    done = operator.post(action_url(in_progress, "cancel"), follow=True)

    assert f"Cancel order of {in_progress.public_id}: cancelled." in done.content.decode()
    assert Order.objects.get(id=in_progress.id).stage == Stage.CANCELLED
    entry = AuditEntry.objects.get(operation="order.cancel")
    assert (entry.username, entry.success, entry.target, entry.message) == (
        "olga",
        True,
        in_progress.public_id,
        "Cancelled",
    )
    assert CallbackEvent.objects.filter(
        subject=in_progress.public_id, event_type__endswith="status.stage.changed#Cancelled"
    ).exists()


def test_cancel_of_an_awaiting_payment_order_stops_asking_for_the_payment(
    operator: Client, awaiting_payment: Order
) -> None:
    html = operator.get(action_url(awaiting_payment, "cancel")).content.decode()
    assert "its payment is no longer asked for" in html

    operator.post(action_url(awaiting_payment, "cancel"))

    assert Order.objects.get(id=awaiting_payment.id).stage == Stage.CANCELLED
    assert not OrderIssue.objects.filter(
        order=awaiting_payment, error_code="RequiresPaymentAuthorisation"
    ).exists()


def test_change_shipping_method_starts_at_the_current_one_and_plans_the_order_again(
    operator: Client, held: Order
) -> None:
    form = operator.get(action_url(held, "shipping-method")).content.decode()
    assert '<option value="Standard" selected>' in form

    done = operator.post(action_url(held, "shipping-method"), {"shippingMethod": "Express"})

    assert done.status_code == 302
    assert Order.objects.get(id=held.id).shipping_method == "Express"
    entry = AuditEntry.objects.get(operation="order.updateShippingMethod")
    assert (entry.success, entry.message) == (True, "Updated (to Express)")


def test_a_method_the_labs_do_not_offer_is_refused_on_the_form_and_audited(
    operator: Client, sandbox_api: APIClient
) -> None:
    order = order_via_api(sandbox_api, items=[book_item()])

    refused = operator.post(action_url(order, "shipping-method"), {"shippingMethod": "Overnight"})

    assert refused.status_code == 200
    assert "Overnight delivery to GB is not offered for this order" in refused.content.decode()
    assert Order.objects.get(id=order.id).shipping_method == "Standard"
    assert not AuditEntry.objects.get(operation="order.updateShippingMethod").success


def test_change_recipient_is_checked_by_the_api_rules_then_done(
    operator: Client, awaiting_payment: Order
) -> None:
    url = action_url(awaiting_payment, "recipient")
    assert 'value="1 Analytical Row"' in operator.get(url).content.decode()

    refused = operator.post(url, {**NEW_RECIPIENT, "countryCode": "XX", "email": "not-mail"})

    html = refused.content.decode()
    assert refused.status_code == 200
    assert "Enter a valid email address." in html and "XX" in html
    assert Order.objects.get(id=awaiting_payment.id).recipient_name == "Ada Lovelace"

    operator.post(url, NEW_RECIPIENT)

    order = Order.objects.get(id=awaiting_payment.id)
    assert (order.recipient_name, order.address_line1) == ("Grace Hopper", "2 Compiler Lane")
    entry = AuditEntry.objects.get(operation="order.updateRecipient")
    assert (entry.success, entry.message) == (True, "Updated (to Grace Hopper, GB)")


def test_submit_now_releases_a_held_order_once(operator: Client, held: Order) -> None:
    assert "leaves its hold now" in operator.get(action_url(held, "submit")).content.decode()
    assert Order.objects.get(id=held.id).due_at is None

    done = operator.post(action_url(held, "submit"), follow=True)

    assert f"Submitted {held.public_id}: it leaves the hold now and starts." in (
        done.content.decode()
    )
    due = Order.objects.get(id=held.id).due_at
    assert due is not None and due <= timezone.now()
    again = operator.post(action_url(held, "submit"), follow=True)
    assert "Submit now of " + held.public_id + ": refused." in again.content.decode()
    entries = AuditEntry.objects.filter(operation="order.submitNow").order_by("id")
    assert [entry.success for entry in entries] == [True, False]


def test_submit_now_is_for_held_orders_only(operator: Client, in_progress: Order) -> None:
    html = operator.get(action_url(in_progress, "submit")).content.decode()

    assert f"Submit now is for a held order; {in_progress.public_id} is In progress." in html
    assert 'id="confirm"' not in html


def test_an_order_at_its_lab_offers_what_its_lab_can_still_do(
    operator: Client, sandbox_api: APIClient
) -> None:
    order = order_at_labs(sandbox_api)
    Order.objects.filter(id=order.id).update(pipeline_step=PipelineStep.PRODUCTION)
    Shipment.objects.filter(order=order).update(in_production_at=timezone.now())

    assert offered(operator, order) == []  # in production: GET .../actions says No to each


def test_a_viewer_without_the_order_actions_sees_none_and_is_refused(in_progress: Order) -> None:
    viewer = User.objects.create_user("vera", password="a-long-password-1", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_order"))
    client = signed_in(viewer)

    assert offered(client, in_progress) == []
    refused = client.get(action_url(in_progress, "cancel"))
    assert refused.status_code == 403 and refused["Content-Type"].startswith("text/html")
    assert client.post(action_url(in_progress, "cancel")).status_code == 403
    assert Order.objects.get(id=in_progress.id).stage == Stage.IN_PROGRESS
    assert not AuditEntry.objects.exists()


def test_a_post_without_its_csrf_token_changes_nothing(in_progress: Order) -> None:
    user = User.objects.get_or_create(username="olga")[0]
    staff_client("olga")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)

    assert client.post(action_url(in_progress, "cancel")).status_code == 403
    assert Order.objects.get(id=in_progress.id).stage == Stage.IN_PROGRESS


def test_an_unknown_action_is_not_found(operator: Client, in_progress: Order) -> None:
    assert operator.get(action_url(in_progress, "explode")).status_code == 404


def test_the_page_shows_the_timeline_and_folds_every_field_in_one_section(
    operator: Client, in_progress: Order
) -> None:
    Order.objects.filter(id=in_progress.id).update(created=timezone.now() - timedelta(hours=1))
    operator.post(action_url(in_progress, "cancel"))

    html = page_of(operator, in_progress)

    timeline = html[html.index('id="timeline"') : html.index("</ol>", html.index('id="timeline"'))]
    assert timeline.index("Order placed") < timeline.index("Stage now Cancelled")
    folded = html[html.index('<details id="every-field">') : html.rindex("</details>")]
    assert html.count("<fieldset") == folded.count("<fieldset") == 10  # 6 groups, 4 inlines
    for inline in ("items", "shipments", "charges", "issues"):
        assert f'id="{inline}-group"' in folded
    assert 'class="module aligned collapse' not in html
    assert html.index('id="timeline"') < html.index('<details id="every-field">')
