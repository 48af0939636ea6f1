"""A lab's answer that comes after the web request's budget is reconciled: the caller is told
the change is pending, and a job asks the site (``GET /order/{id}``) and records what it did
through the records a timely answer uses (a cancel refunded and called back, a hold held, a
new carrier and price). Answers that are not Site Flow's are errors, and a redirect at
submission is tried again rather than failing the shipment for good."""

import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from labs.connectors.siteflow import ship_to
from labs.models import Lab
from orders.issues import LAB_ANSWER_PENDING, LAB_ANSWER_UNKNOWN
from orders.models import (
    Charge,
    ChargeType,
    Order,
    OrderIssue,
    PipelineStep,
    Shipment,
    ShipmentStatus,
    Stage,
)
from orders.pipeline.claims import order_claim
from orders.pipeline.state_machine import STEPS, order_advance
from orders.pipeline.steps.produce import order_shipments_track
from orders.representation import order_recipient, shipment_recipient
from orders.shipments import BUSY_MESSAGE, LAB_ANSWER_WAIT, shipment_lab_answer_reconcile
from orders.tasks import lab_answers_sweep_task
from tests.support.images import jpeg_bytes
from tests.support.orders import events_of, order_at_labs
from tests.support.siteflow import SiteflowServer, site_running, siteflow_lab

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue", "eager_tasks")]

TOKEN = "token-late"
SECRET = "s3cret-late-answers"
TYPE = "com.service.order"


@pytest.fixture
def site(settings: Any) -> Iterator[SiteflowServer]:
    with site_running(settings, token=TOKEN, secret=SECRET) as server:
        yield server


@pytest.fixture
def tight(settings: Any) -> None:
    """The production numbers scaled down: 1.5 s for a request's lab calls, 3 s a call."""
    settings.REQUEST_TIMEOUT_SECONDS = 6.0
    settings.LAB_CALLS_BUDGET_SECONDS = 1.5
    settings.SITEFLOW_TIMEOUT_SECONDS = 3.0


def at_the_site(api: APIClient, site: SiteflowServer) -> Shipment:
    """A Live order whose one shipment is an order at the Site Flow site ``site``."""
    order = order_at_labs(api, callbackUrl="https://hooks.example.com/in")
    shipment = Shipment.objects.get(order=order)
    Lab.objects.filter(code=shipment.lab_code).update(
        connector="siteflow",
        siteflow_base_url=site.base_url,
        siteflow_token=TOKEN,
        siteflow_secret=SECRET,
        siteflow_destination="late",
        siteflow_carrier_aliases={"Standard": "royalmail-48", "Express": "dhl-express"},
    )
    reference = site.place(
        shipment.public_id,
        ship_to=ship_to(shipment_recipient(shipment)),
        carrier_alias="royalmail-48",
    )
    Shipment.objects.filter(id=shipment.id).update(lab_order_reference=reference)
    return Shipment.objects.select_related("order__environment").get(id=shipment.id)


def answered_late(
    django_capture_on_commit_callbacks: Any, send: Callable[[], Any]
) -> tuple[Any, list[Callable[[], None]]]:
    """``send``'s response, and what its transactions queued on commit (not run yet)."""
    with django_capture_on_commit_callbacks() as queued:
        response = send()
    assert response.status_code == 200, response.content
    return response.json(), list(queued)


def run(queued: list[Callable[[], None]]) -> None:
    """Send what was queued (tasks run in-process: ``eager_tasks``)."""
    for callback in queued:
        callback()


def event_types(order: Order) -> list[str]:
    return [e["type"].removeprefix(TYPE + ".") for e in events_of(order.public_id)]


def wait_until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def issues(order: Order) -> list[tuple[str, str]]:
    return list(OrderIssue.objects.filter(order=order).values_list("object_id", "error_code"))


# --- late answers ---------------------------------------------------------------------------


def test_a_cancel_the_site_makes_after_the_budget_is_pending_then_cancelled_and_refunded(
    site: SiteflowServer,
    tight: None,
    live_api: APIClient,
    django_capture_on_commit_callbacks: Any,
) -> None:
    shipment = at_the_site(live_api, site)
    order = shipment.order
    charged = sum(c.total_cost for c in Charge.objects.filter(order=order))
    site.answer_delays["cancel"] = 3.0  # the site cancels, and answers after the budget
    before = event_types(order)

    body, queued = answered_late(
        django_capture_on_commit_callbacks,
        lambda: live_api.post(f"/v4.0/orders/{order.public_id}/actions/cancel"),
    )

    assert body["outcome"] == "FailedToCancel"
    [issue] = body["order"]["status"]["issues"]
    assert (issue["objectId"], issue["errorCode"]) == (shipment.public_id, LAB_ANSWER_PENDING)
    assert issue["description"].startswith(
        "Pending: lab gb1 did not confirm the cancel in time. The lab is being asked"
    )
    assert body["order"]["status"]["stage"] == "InProgress"
    assert site.order(shipment.public_id).status == "cancelled"
    pending = Shipment.objects.get(id=shipment.id)
    assert (pending.status, pending.lab_operation) == (ShipmentStatus.PROCESSING, "cancel")
    assert pending.lab_operation_unanswered_at is not None
    assert event_types(order) == before

    run(queued)  # the reconcile job asks the site and records its truth

    shipment.refresh_from_db()
    order.refresh_from_db()
    assert (shipment.status, shipment.lab_operation, shipment.lab_ended_at) == (
        ShipmentStatus.CANCELLED, "", None,
    )  # fmt: skip
    assert (order.stage, order.pipeline_step) == (Stage.CANCELLED, PipelineStep.CANCELLED)
    [refund] = Charge.objects.filter(order=order, charge_type=ChargeType.REFUND)
    assert refund.total_cost == -charged
    assert issues(order) == []
    assert event_types(order)[len(before) :] == [
        "shipments.shipment#Cancelled",
        "status.stage.changed#Cancelled",
    ]
    shown = live_api.get(f"/v4.0/orders/{order.public_id}").json()["order"]
    assert shown["status"]["stage"] == "Cancelled"
    assert shown["status"]["issues"] == []


def test_a_hold_the_site_makes_after_the_budget_is_pending_then_held(
    site: SiteflowServer,
    tight: None,
    live_api: APIClient,
    staff_api: APIClient,
    django_capture_on_commit_callbacks: Any,
) -> None:
    shipment = at_the_site(live_api, site)
    site.answer_delays["hold"] = 3.0
    before = event_types(shipment.order)

    body, queued = answered_late(
        django_capture_on_commit_callbacks,
        lambda: staff_api.post(
            f"/v4.0/orders/{shipment.order.public_id}/shipments/{shipment.public_id}/hold"
        ),
    )

    assert body["success"] is False
    assert body["message"].startswith("Pending: lab gb1 did not confirm the hold in time.")
    assert site.order(shipment.public_id).held is True
    assert Shipment.objects.get(id=shipment.id).is_held is False
    assert issues(shipment.order) == []  # staff's own operation: not the merchant's concern

    run(queued)

    shipment.refresh_from_db()
    assert shipment.is_held is True
    assert (shipment.status, shipment.lab_operation) == (ShipmentStatus.PROCESSING, "")
    assert event_types(shipment.order)[len(before) :] == ["shipments.shipment#Processing"]


def test_a_new_method_the_site_makes_after_the_budget_is_pending_then_recorded_with_its_price(
    site: SiteflowServer,
    tight: None,
    live_api: APIClient,
    django_capture_on_commit_callbacks: Any,
) -> None:
    shipment = at_the_site(live_api, site)
    order = shipment.order
    site.answer_delays["shipments"] = 3.0
    before = event_types(order)

    body, queued = answered_late(
        django_capture_on_commit_callbacks,
        lambda: live_api.post(
            f"/v4.0/orders/{order.public_id}/actions/updateShippingMethod",
            {"shippingMethod": "Express"},
            format="json",
        ),
    )

    assert body["outcome"] == "FailedToUpdate"
    [result] = body["shipmentUpdateResults"]
    assert (result["shipmentId"], result["successful"]) == (shipment.public_id, False)
    assert result["description"].startswith(
        "Pending: lab gb1 did not confirm the new shipping method in time."
    )
    assert body["order"]["shippingMethod"] == "Standard"
    assert site.order(shipment.public_id).carrier == {"alias": "dhl-express"}

    run(queued)

    shipment.refresh_from_db()
    order.refresh_from_db()
    assert (shipment.shipping_method, order.shipping_method) == ("Express", "Express")
    assert shipment.lab_operation == ""
    shipping = Charge.objects.filter(order=order, charge_type=ChargeType.SHIPPING)
    assert shipping.count() == 2  # the original and the adjustment to Express's price
    assert shipping.order_by("created", "id").last().total_cost > Decimal("0")  # type: ignore[union-attr]
    assert issues(order) == []
    assert event_types(order)[len(before) :] == ["shipments.shipment#Processing"]
    shown = live_api.get(f"/v4.0/orders/{order.public_id}").json()["order"]
    assert shown["shippingMethod"] == "Express"


def test_the_production_check_leaves_a_cancel_awaiting_its_answer_to_be_recorded_as_a_cancel(
    site: SiteflowServer,
    tight: None,
    live_api: APIClient,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Before the job runs, the pipeline's own check sees the site's cancel: it is not taken as
    the lab's own (LabCancelled, unrefunded) but left to be recorded as the merchant's."""
    shipment = at_the_site(live_api, site)
    order = shipment.order
    site.answer_delays["cancel"] = 3.0
    _, queued = answered_late(
        django_capture_on_commit_callbacks,
        lambda: live_api.post(f"/v4.0/orders/{order.public_id}/actions/cancel"),
    )
    Order.objects.filter(id=order.id).update(submitted_at=timezone.now())

    tracked = order_shipments_track(
        order=Order.objects.select_related("environment").get(id=order.id)
    )

    assert tracked.cancelled_now == [] and tracked.stranded is False
    assert Shipment.objects.get(id=shipment.id).status == ShipmentStatus.PROCESSING
    run(queued)
    assert Order.objects.get(id=order.id).stage == Stage.CANCELLED
    assert issues(order) == []


@pytest.mark.django_db(transaction=True)
def test_a_merchants_cancel_made_while_the_production_check_asks_the_site_is_refunded(
    site: SiteflowServer, settings: Any, live_api: APIClient
) -> None:
    """The production check loaded the shipment before the merchant's cancel recorded its
    intent, and reads the site's ``cancelled`` (the merchant's cancel, made) before that
    cancel's answer is recorded: the check leaves it to the cancel (the database says a cancel
    of ours awaits its answer), which records it refunded, not as the lab's own.

    Transactional (the check and the cancel run in threads with their own sessions)."""
    settings.SITEFLOW_TIMEOUT_SECONDS = 10.0
    shipment = at_the_site(live_api, site)
    order = shipment.order
    charged = sum(c.total_cost for c in Charge.objects.filter(order=order))
    issues_before = issues(order)
    Order.objects.filter(id=order.id).update(
        pipeline_step=PipelineStep.PRODUCTION, due_at=timezone.now(), submitted_at=timezone.now()
    )
    claimed = order_claim(order_id=order.id, step=PipelineStep.PRODUCTION)
    assert claimed is not None
    site.pause("read")  # the check's question waits at the site
    site.answer_delays["cancel"] = 2.0  # the site cancels; its answer comes 2 s later
    failures: list[BaseException] = []
    answered: list[dict[str, Any]] = []

    def check() -> None:
        try:
            STEPS[PipelineStep.PRODUCTION](claimed)
        except BaseException as exc:
            failures.append(exc)
        finally:
            connection.close()

    def cancel() -> None:
        try:
            response = live_api.post(f"/v4.0/orders/{order.public_id}/actions/cancel")
            answered.append(response.json())
        except BaseException as exc:
            failures.append(exc)
        finally:
            connection.close()

    checking = threading.Thread(target=check)
    checking.start()
    assert wait_until(lambda: site.waiting["read"] == 1)  # shipments loaded, site asked
    cancelling = threading.Thread(target=cancel)
    cancelling.start()
    assert wait_until(lambda: site.in_flight["cancel"] == 1)  # made at the site, unanswered
    assert Shipment.objects.get(id=shipment.id).lab_operation == "cancel"
    site.resume("read")  # the check reads ``cancelled`` before the cancel's answer comes
    checking.join(10)
    cancelling.join(10)

    assert failures == []
    [body] = answered
    assert body["outcome"] == "Cancelled"
    assert body["order"]["status"]["stage"] == "Cancelled"
    shipment.refresh_from_db()
    order.refresh_from_db()
    assert (shipment.status, shipment.lab_ended_at, shipment.lab_operation) == (
        ShipmentStatus.CANCELLED, None, "",
    )  # fmt: skip
    assert (order.stage, order.pipeline_step) == (Stage.CANCELLED, PipelineStep.CANCELLED)
    [refund] = Charge.objects.filter(order=order, charge_type=ChargeType.REFUND)
    assert refund.total_cost == -charged
    assert issues(order) == issues_before  # no LabCancelled


def test_the_sweep_settles_an_intent_a_killed_process_left_with_what_the_lab_did(
    sandbox_api: APIClient,
) -> None:
    """A process killed during its lab call leaves its intent: the lab answers' sweep asks the
    lab (the simulator keeps nothing, so the hold was not made) and ends it."""
    shipment = Shipment.objects.get(order=order_at_labs(sandbox_api))
    Shipment.objects.filter(id=shipment.id).update(
        lab_operation="hold",
        lab_operation_since=timezone.now() - timedelta(minutes=6),
        lab_operation_change={"by": "staff"},
    )

    assert lab_answers_sweep_task() == 1

    shipment.refresh_from_db()
    assert (shipment.lab_operation, shipment.lab_operation_since, shipment.is_held) == (
        "", None, False,
    )  # fmt: skip
    assert lab_answers_sweep_task() == 0


def test_a_change_the_lab_can_never_say_about_is_given_up_for_staff_and_frees_the_shipment(
    site: SiteflowServer, live_api: APIClient, staff_api: APIClient, admin_client: Client
) -> None:
    """The site lost the lab order (it answers 404): the merchant's pending cancel cannot be
    settled, and the shipment takes no other change meanwhile; after ``LAB_ANSWER_WAIT`` the
    intent is dropped, the merchant's pending issue gives way to one staff see, and the
    shipment takes changes again. Nothing is recorded as cancelled or refunded."""
    shipment = at_the_site(live_api, site)
    order = shipment.order
    issues_before = issues(order)
    site.stand_in("cancel", 200, b"{}")
    hold_url = f"/v4.0/orders/{order.public_id}/shipments/{shipment.public_id}/hold"

    body = live_api.post(f"/v4.0/orders/{order.public_id}/actions/cancel").json()
    assert body["outcome"] == "FailedToCancel"
    del site.orders[shipment.public_id]  # the site answers 404 for it from now on

    assert shipment_lab_answer_reconcile(shipment_id=shipment.id) == "unknown"
    assert staff_api.post(hold_url).json()["message"] == BUSY_MESSAGE
    assert (shipment.public_id, LAB_ANSWER_PENDING) in issues(order)

    since = timezone.now() - LAB_ANSWER_WAIT - timedelta(minutes=1)
    Shipment.objects.filter(id=shipment.id).update(lab_operation_since=since)
    assert shipment_lab_answer_reconcile(shipment_id=shipment.id) == "given up"

    stored = Shipment.objects.get(id=shipment.id)
    assert (stored.lab_operation, stored.lab_operation_since, stored.status) == (
        "", None, ShipmentStatus.PROCESSING,
    )  # fmt: skip
    assert issues(order) == [*issues_before, (shipment.public_id, LAB_ANSWER_UNKNOWN)]
    assert OrderIssue.objects.get(order=order, error_code=LAB_ANSWER_UNKNOWN).description == (
        f"Lab gb1 never said whether it made the cancel the merchant asked at "
        f"{since.isoformat(timespec='seconds')} (lab order {stored.lab_order_reference}); it is "
        "no longer awaited, and staff check the lab order at its lab."
    )
    assert Order.objects.get(id=order.id).stage == Stage.IN_PROGRESS
    assert not Charge.objects.filter(order=order, charge_type=ChargeType.REFUND).exists()
    shown = live_api.get(f"/v4.0/orders/{order.public_id}").json()["order"]
    assert [i["errorCode"] for i in shown["status"]["issues"]][-1] == LAB_ANSWER_UNKNOWN
    listed = admin_client.get(reverse("admin:orders_order_changelist"), {"attention": "lab"})
    assert list(listed.context["cl"].result_list) == [order]
    # The shipment takes changes again: the hold reaches the site (which has no such order).
    assert staff_api.post(hold_url).json()["message"] == (
        f"Order {stored.lab_order_reference} not found"
    )


def test_the_sweep_queues_a_change_still_unsettled_once_until_its_message_is_presumed_lost(
    site: SiteflowServer, settings: Any, live_api: APIClient
) -> None:
    """The lab cannot say (404): the job leaves the change pending; the sweep does not queue it
    at every round, only again once a claim period has passed (its message presumed lost)."""
    shipment = at_the_site(live_api, site)
    Shipment.objects.filter(id=shipment.id).update(
        lab_operation="hold",
        lab_operation_since=timezone.now() - timedelta(seconds=10),
        lab_operation_unanswered_at=timezone.now(),
        lab_operation_change={"by": "staff"},
    )
    del site.orders[shipment.public_id]
    asked = len(site.received)

    assert lab_answers_sweep_task() == 1  # queued: the job runs, the lab cannot say
    assert lab_answers_sweep_task() == 0
    assert lab_answers_sweep_task() == 0
    assert len(site.received) == asked + 1  # one GET of the order
    assert Shipment.objects.get(id=shipment.id).lab_operation == "hold"

    lost = timezone.now() - timedelta(seconds=settings.PIPELINE_CLAIM_SECONDS + 1)
    Shipment.objects.filter(id=shipment.id).update(swept_at=lost)
    assert lab_answers_sweep_task() == 1
    assert lab_answers_sweep_task() == 0


# --- answers that are not Site Flow's -------------------------------------------------------


def settled_after_the_window(shipment: Shipment, settings: Any) -> str:
    """Settle the shipment's pending change as the job does once the call can no longer be
    acted on (``SITEFLOW_TIMEOUT_SECONDS`` after the intent)."""
    since = timezone.now() - timedelta(seconds=settings.SITEFLOW_TIMEOUT_SECONDS + 1)
    Shipment.objects.filter(id=shipment.id).update(lab_operation_since=since)
    return shipment_lab_answer_reconcile(shipment_id=shipment.id)


NEW_ADDRESS = {"line1": "9 New Street", "postalOrZipCode": "EC1A 1BB", "countryCode": "GB",
               "townOrCity": "London"}  # fmt: skip


@pytest.mark.parametrize("answer", [b"", b'{"ok": true}', b'{"data": []}', b"<html>OK</html>"])
def test_a_200_that_is_not_the_lab_order_is_pending_and_no_new_address_when_the_site_has_none(
    site: SiteflowServer, settings: Any, live_api: APIClient, staff_api: APIClient, answer: bytes
) -> None:
    """Something in front of the site answers 200 (the site never saw the change): not taken
    as done, nor as refused; the site's order, asked afterwards, shows the old address."""
    shipment = at_the_site(live_api, site)
    site.stand_in("shipments", 200, answer, {"Content-Type": "application/json"})
    recipient_before = order_recipient(shipment.order)

    body = staff_api.post(
        f"/v4.0/orders/{shipment.order.public_id}/shipments/{shipment.public_id}/updateAddress",
        {"address": NEW_ADDRESS},
        format="json",
    ).json()

    assert body["success"] is False
    assert body["message"].startswith("Pending: lab gb1 did not confirm the new address in time.")
    assert site.stood_in["shipments"] == 1
    assert Shipment.objects.get(id=shipment.id).lab_operation == "updateAddress"

    assert settled_after_the_window(shipment, settings) == "not made"

    stored = Shipment.objects.select_related("order").get(id=shipment.id)
    assert stored.recipient is None
    assert order_recipient(stored.order) == recipient_before
    assert stored.lab_operation == ""


@pytest.mark.parametrize("operation", ["hold", "unhold"])
def test_a_200_that_is_not_the_lab_order_is_pending_and_no_hold_or_release_the_site_lacks(
    site: SiteflowServer, settings: Any, live_api: APIClient, staff_api: APIClient, operation: str
) -> None:
    shipment = at_the_site(live_api, site)
    if operation == "unhold":
        Shipment.objects.filter(id=shipment.id).update(held_since=timezone.now())
        site.order(shipment.public_id).held = True
    site.stand_in(operation, 200, b'{"message": "OK"}', {"Content-Type": "application/json"})

    body = staff_api.post(
        f"/v4.0/orders/{shipment.order.public_id}/shipments/{shipment.public_id}/{operation}"
    ).json()

    assert body["success"] is False
    assert body["message"].startswith("Pending: lab gb1 did not confirm the ")
    assert settled_after_the_window(shipment, settings) == "not made"
    assert Shipment.objects.get(id=shipment.id).is_held is (operation == "unhold")


@pytest.mark.parametrize(
    ("operation", "status", "answer"),
    [("hold", 200, b"{}"), ("hold", 204, b""), ("unhold", 200, b'{"message": "OK"}')],
)
def test_a_hold_or_release_the_site_makes_but_answers_without_the_lab_order_is_recorded(
    site: SiteflowServer,
    live_api: APIClient,
    staff_api: APIClient,
    django_capture_on_commit_callbacks: Any,
    operation: str,
    status: int,
    answer: bytes,
) -> None:
    """The site makes the change but its 2xx says nothing of the lab order: pending, and the
    job records what the site holds."""
    shipment = at_the_site(live_api, site)
    if operation == "unhold":
        Shipment.objects.filter(id=shipment.id).update(held_since=timezone.now())
        site.order(shipment.public_id).held = True
    site.answer_instead(operation, status, answer, {"Content-Type": "application/json"})

    body, queued = answered_late(
        django_capture_on_commit_callbacks,
        lambda: staff_api.post(
            f"/v4.0/orders/{shipment.order.public_id}/shipments/{shipment.public_id}/{operation}"
        ),
    )

    assert body["success"] is False
    assert body["message"].startswith("Pending: lab gb1 did not confirm the ")
    assert site.order(shipment.public_id).held is (operation == "hold")
    run(queued)
    stored = Shipment.objects.get(id=shipment.id)
    assert (stored.is_held, stored.lab_operation) == (operation == "hold", "")


def test_a_merchants_new_recipient_answered_by_an_empty_200_is_pending_then_changes_nothing(
    site: SiteflowServer, settings: Any, live_api: APIClient
) -> None:
    shipment = at_the_site(live_api, site)
    site.stand_in("shipments", 200)
    recipient_before = order_recipient(shipment.order)
    new = {**recipient_before, "name": "Grace Hopper",
           "address": {**recipient_before["address"], "line1": "9 New Street"}}  # fmt: skip

    body = live_api.post(
        f"/v4.0/orders/{shipment.order.public_id}/actions/updateRecipient", new, format="json"
    ).json()

    assert body["outcome"] == "FailedToUpdate"
    [result] = body["shipmentUpdateResults"]
    assert result["successful"] is False
    assert result["description"].startswith("Pending: lab gb1 did not confirm the new address")
    assert (shipment.public_id, LAB_ANSWER_PENDING) in issues(shipment.order)

    assert settled_after_the_window(shipment, settings) == "not made"

    assert order_recipient(Order.objects.get(id=shipment.order_id)) == recipient_before
    assert Shipment.objects.get(id=shipment.id).recipient is None
    assert site.order(shipment.public_id).ship_to["address1"] == "1 Analytical Row"
    assert LAB_ANSWER_PENDING not in {code for _, code in issues(shipment.order)}


@pytest.mark.parametrize(("status", "answer"), [(200, b"{}"), (204, b""), (200, b"OK")])
def test_a_merchants_new_recipient_the_site_makes_but_answers_without_the_order_is_recorded(
    site: SiteflowServer,
    live_api: APIClient,
    django_capture_on_commit_callbacks: Any,
    status: int,
    answer: bytes,
) -> None:
    """The site holds the new recipient though its answer does not say so: the order is not
    left with the old one; the job reads the site's order and records the new one."""
    shipment = at_the_site(live_api, site)
    site.answer_instead("shipments", status, answer)
    recipient_before = order_recipient(shipment.order)
    new = {**recipient_before, "name": "Grace Hopper",
           "address": {**recipient_before["address"], "line1": "9 New Street"}}  # fmt: skip

    body, queued = answered_late(
        django_capture_on_commit_callbacks,
        lambda: live_api.post(
            f"/v4.0/orders/{shipment.order.public_id}/actions/updateRecipient", new, format="json"
        ),
    )

    assert body["outcome"] == "FailedToUpdate"
    [result] = body["shipmentUpdateResults"]
    assert result["description"].startswith("Pending: lab gb1 did not confirm the new address")
    assert site.order(shipment.public_id).ship_to["address1"] == "9 New Street"

    run(queued)

    assert order_recipient(Order.objects.get(id=shipment.order_id)) == new
    stored = Shipment.objects.get(id=shipment.id)
    assert (stored.recipient, stored.lab_operation) == (None, "")
    assert LAB_ANSWER_PENDING not in {code for _, code in issues(shipment.order)}


# --- a redirect at submission ---------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_redirect_at_submission_is_shown_to_staff_and_tried_again_not_a_final_failure(
    site: SiteflowServer, settings: Any, live_api: APIClient, httpserver: HTTPServer,
    live_server: Any,
) -> None:  # fmt: skip
    settings.LIVE_BASE_URL = live_server.url
    siteflow_lab(site)
    site.stand_in("submit", 302, b"", {"Location": "https://moved.example.com/api/order?x=1"})
    httpserver.expect_request("/moved.jpg").respond_with_data(
        jpeg_bytes(), content_type="image/jpeg"
    )
    response = live_api.post(
        "/v4.0/orders",
        {
            "merchantReference": "MR-moved",
            "shippingMethod": "Standard",
            "recipient": {
                "name": "Ada Lovelace",
                "address": {"line1": "1 Analytical Row", "postalOrZipCode": "SW1A 1AA",
                            "countryCode": "GB", "townOrCity": "London"},
            },
            "items": [{"sku": "GLOBAL-PHO-4X6", "copies": 1,
                       "assets": [{"url": httpserver.url_for("/moved.jpg")}]}],
        },
        format="json",
    )  # fmt: skip
    assert response.status_code == 200, response.content
    order_pk = int(response.json()["order"]["id"].split("_", 1)[1])

    for _ in range(10):
        order = Order.objects.get(id=order_pk)
        if Shipment.objects.filter(order_id=order_pk, submit_attempts__gte=1).exists():
            break
        Order.objects.filter(id=order_pk, due_at__isnull=False).update(due_at=timezone.now())
        order_advance(order_id=order_pk)

    order = Order.objects.get(id=order_pk)
    shipment = Shipment.objects.get(order_id=order_pk)
    assert order.pipeline_step == PipelineStep.SUBMIT  # to be tried again, not Failed
    assert order.due_at is not None
    assert shipment.submit_attempts == 1
    [issue] = OrderIssue.objects.filter(order_id=order_pk)
    assert issue.description == (
        f"Lab gb1 refused shipment {shipment.public_id} (attempt 1 of 5): Site Flow answered "
        "HTTP 302, a redirect to https://moved.example.com/api/order, which is not followed: "
        "check the lab's base URL."
    )

    del site.stand_ins["submit"]  # the site's address works again: the next attempt goes
    Order.objects.filter(id=order_pk).update(due_at=timezone.now())
    order_advance(order_id=order_pk)

    shipment.refresh_from_db()
    assert shipment.lab_order_reference == site.order(shipment.public_id).id
    assert Order.objects.get(id=order_pk).pipeline_step == PipelineStep.PRODUCTION
