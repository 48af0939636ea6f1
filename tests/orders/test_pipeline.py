"""The fulfilment pipeline end to end: a real Celery worker (with its beat sweeper) on Redis and
the test database, assets and callbacks served by local HTTP servers, the lab simulator.

The worker, the servers and the helpers that run steps in-process are in ``tests.support``;
this module holds the scenarios.
"""

import io
import json
import threading
import time
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from PIL import Image
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient
from standardwebhooks.webhooks import Webhook
from werkzeug import Request, Response

from common.leases import claim_token_new
from labs.connectors import connector_for
from labs.models import Lab, LabProduct, ShippingRate, SimulatedLabOrder
from merchants.models import PauseMode
from merchants.services import CreatedMerchant
from orders.document import order_document_write
from orders.events import order_stage_changed
from orders.lab_orders import lab_order
from orders.models import (
    Asset,
    Charge,
    ChargeType,
    Order,
    OrderIssue,
    PipelineStep,
    Shipment,
    Stage,
)
from orders.pipeline import claims
from orders.pipeline.claims import ClaimLost, order_claim, order_claimed_transaction
from orders.pipeline.state_machine import STEPS, order_advance, order_submit_now
from orders.pipeline.steps.download import order_assets_download
from orders.pipeline.steps.prepare import order_assets_prepare
from orders.pipeline.steps.produce import shipment_submission_record
from orders.tasks import orders_sweep_task
from tests.support.documents import document_rewritten
from tests.support.images import bomb_png_bytes, jpeg_bytes, md5, pdf_bytes, png_bytes
from tests.support.orders import (
    TYPE,
    charge_totals,
    events_of,
    fetch,
    order_body,
    order_create_via_api,
    photo_order,
    pk,
    quote_for,
    split_order,
    stage_is,
)
from tests.support.pipeline import advance_to, make_due, order_failed, run_in_process
from tests.support.servers import Receiver, requests_to, serve
from tests.support.worker import Worker, needs_worker, purge_queues, wait_for
from webhooks.models import CallbackEvent, CallbackState
from webhooks.tasks import events_sweep_task

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue"),
]
# The order's document written (``orders.document``): the order with its environment, its
# items, assets, shipments, charges and issues read, the document written; an order with
# charges has their lines read too.
DOCUMENT_WRITTEN = ["SELECT"] * 6 + ["UPDATE"]
DOCUMENT_WRITTEN_CHARGED = ["SELECT"] * 7 + ["UPDATE"]
ALL_COMPLETE = {
    "downloadAssets": "Complete",
    "allocateProductionLocation": "Complete",
    "printReadyAssetsPrepared": "Complete",
    "inProduction": "Complete",
    "shipping": "Complete",
}


# --- The whole way ---------------------------------------------------------------------------


@needs_worker
def test_an_order_goes_from_created_to_complete_with_shipment_tracking_charges_and_callbacks(
    worker: Worker,
    live_server: Any,
    sandbox_api: APIClient,
    merchant: CreatedMerchant,
    httpserver: HTTPServer,
    receiver: Receiver,
) -> None:
    photo, art = jpeg_bytes(600, 400), png_bytes(300, 450)
    body = order_body(
        callbackUrl=httpserver.url_for("/callbacks"),
        items=[
            {
                "sku": "GLOBAL-PHO-4X6",
                "copies": 3,
                "sizing": "fillPrintArea",
                "assets": [
                    {
                        "url": serve(httpserver, "/photo.jpg", photo, "image/jpeg"),
                        "md5Hash": md5(photo),
                    }
                ],
            },
            {
                "sku": "GLOBAL-FAP-8X10",
                "copies": 1,
                "sizing": "fitPrintArea",
                "assets": [{"url": serve(httpserver, "/art.png", art, "image/png")}],
            },
        ],
    )
    quote = quote_for(sandbox_api, body)

    order_id = order_create_via_api(sandbox_api, body)
    order = wait_for("the order to complete", stage_is(sandbox_api, order_id, "Complete"), worker)

    assert order["status"] == {"stage": "Complete", "details": ALL_COMPLETE, "issues": []}
    [shipment] = order["shipments"]
    assert shipment["status"] == "Shipped"
    assert shipment["fulfillmentLocation"] == {"countryCode": "GB", "labCode": "gb1"}
    assert shipment["carrier"] == {"name": "Royal Mail", "service": "Tracked 48"}
    number = shipment["tracking"]["number"]
    assert number.startswith("SIM") and len(number) == 15
    assert shipment["tracking"]["url"] == f"https://tracking.example.com/{number}"
    assert shipment["dispatchDate"].endswith("Z")
    assert {i["itemId"] for i in shipment["items"]} == {i["id"] for i in order["items"]}
    assert shipment["cancelled"] is False

    assert sorted(charge_totals(order)) == ["Item", "Shipping"]
    assert charge_totals(order)["Item"] == quote["costSummary"]["items"]
    assert charge_totals(order)["Shipping"] == quote["costSummary"]["shipping"]
    [shipping] = [c for c in order["charges"] if c["chargeType"] == "Shipping"]
    assert [line["shipmentId"] for line in shipping["items"]] == [shipment["id"]]

    for item in order["items"]:
        assert item["status"] == "Ok"
        [asset] = item["assets"]
        assert asset["status"] == "Complete"
        assert item["thumbnailUrl"] == asset["thumbnailUrl"]
        # The URL is on this service's host; the live server serves the same MEDIA_ROOT.
        shown = urlsplit(asset["thumbnailUrl"])
        thumbnail = requests.get(f"{live_server.url}{shown.path}?{shown.query}", timeout=10)
        assert thumbnail.status_code == 200
        assert max(Image.open(io.BytesIO(thumbnail.content)).size) == 400
    stored = Order.objects.get(id=pk(order_id))
    assert (stored.pipeline_step, stored.due_at, stored.claimed_until) == (
        PipelineStep.DONE, None, None,
    )  # fmt: skip
    assert stored.submitted_at is not None

    expected = [
        f"{TYPE}.status.details.downloadAssets#Complete",
        f"{TYPE}.shipments.shipment#Shipped",
        f"{TYPE}.status.stage.changed#Complete",
    ]
    wait_for("three callbacks", lambda: len(receiver.types(order_id)) == 3, worker)
    assert receiver.types(order_id) == expected
    [last] = [e for e in receiver.events() if e["type"] == expected[-1]]
    assert last["data"]["order"]["status"]["stage"] == "Complete"
    assert last["data"]["order"]["shipments"][0]["tracking"]["number"] == number
    secret = merchant.merchant.environments.get(kind="Sandbox").callback_signing_secret
    for headers, raw in receiver.deliveries:
        assert headers["Content-Type"].startswith("application/cloudevents+json")
        assert Webhook(secret).verify(raw, headers)["subject"] == order_id


@needs_worker
def test_a_photobook_and_a_framed_print_split_into_two_shipments_from_two_labs(
    worker: Worker,
    live_server: Any,
    sandbox_api: APIClient,
    httpserver: HTTPServer,
    receiver: Receiver,
) -> None:
    book = pdf_bytes(40)
    body = order_body(
        callbackUrl=httpserver.url_for("/callbacks"),
        items=[
            {
                "sku": "BOOK-A4-L-HARD-M",
                "copies": 1,
                "assets": [
                    {
                        "printArea": "default",
                        "url": serve(httpserver, "/book.pdf", book, "application/pdf"),
                        "pageCount": 40,
                        "md5Hash": md5(book),
                    },
                    {
                        "printArea": "spine",
                        "url": serve(httpserver, "/spine.jpg", jpeg_bytes(60, 900), "image/jpeg"),
                    },
                ],
            },
            {
                "sku": "GLOBAL-CFPM-12X16",
                "copies": 1,
                "attributes": {"color": "black"},
                "assets": [{"url": serve(httpserver, "/frame.jpg", jpeg_bytes(), "image/jpeg")}],
            },
        ],
    )
    quote = quote_for(sandbox_api, body)

    order_id = order_create_via_api(sandbox_api, body)
    order = wait_for("the order to complete", stage_is(sandbox_api, order_id, "Complete"), worker)

    assert order["status"]["details"] == ALL_COMPLETE
    labs = {s["fulfillmentLocation"]["labCode"]: s for s in order["shipments"]}
    assert sorted(labs) == ["gb2", "gb3"]
    book_item, frame_item = order["items"]
    assert [i["itemId"] for i in labs["gb3"]["items"]] == [book_item["id"]]
    assert [i["itemId"] for i in labs["gb2"]["items"]] == [frame_item["id"]]
    assert {s["status"] for s in order["shipments"]} == {"Shipped"}
    assert labs["gb2"]["tracking"]["number"] != labs["gb3"]["tracking"]["number"]
    assert charge_totals(order)["Item"] == quote["costSummary"]["items"]
    assert charge_totals(order)["Shipping"] == quote["costSummary"]["shipping"]
    [shipping] = [c for c in order["charges"] if c["chargeType"] == "Shipping"]
    assert sorted(line["shipmentId"] for line in shipping["items"]) == sorted(
        s["id"] for s in order["shipments"]
    )
    assert book_item["assets"][0]["pageCount"] == 40
    assert Shipment.objects.filter(order_id=pk(order_id)).count() == 2
    wait_for("four callbacks", lambda: len(receiver.types(order_id)) == 4, worker)
    assert receiver.types(order_id) == [
        f"{TYPE}.status.details.downloadAssets#Complete",
        f"{TYPE}.shipments.shipment#Shipped",
        f"{TYPE}.shipments.shipment#Shipped",
        f"{TYPE}.status.stage.changed#Complete",
    ]


# --- Downloads that fail ---------------------------------------------------------------------


def assert_failed_download(order: dict[str, Any], attempts: int, reason: str) -> None:
    assert order["status"]["stage"] == "InProgress"
    assert order["status"]["details"] == {
        "downloadAssets": "Error",
        "allocateProductionLocation": "NotStarted",
        "printReadyAssetsPrepared": "NotStarted",
        "inProduction": "NotStarted",
        "shipping": "NotStarted",
    }
    [item] = order["items"]
    [asset] = item["assets"]
    assert (item["status"], asset["status"], asset["thumbnailUrl"]) == ("Invalid", "Error", None)
    [issue] = order["status"]["issues"]
    assert issue["objectId"] == item["id"]
    assert issue["errorCode"] == "order.items.assets.FailedToDownloaded"
    assert asset["id"] in issue["description"]
    assert f"after {attempts} attempt(s)" in issue["description"]
    assert reason in issue["description"]
    assert order["shipments"] == [] and order["charges"] == []


@needs_worker
def test_an_md5_mismatch_fails_the_asset_after_three_attempts(
    worker: Worker, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    photo = jpeg_bytes()
    url = serve(httpserver, "/changed.jpg", photo, "image/jpeg")
    body = order_body(
        items=[
            {"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url, "md5Hash": "0" * 32}]}
        ]
    )

    order_id = order_create_via_api(sandbox_api, body)
    wait_for("the download to fail", order_failed(order_id), worker)

    assert_failed_download(fetch(sandbox_api, order_id), 3, f"MD5 hash is {md5(photo)}")
    assert requests_to(httpserver, "/changed.jpg") == 3
    assert Asset.objects.get(item__order_id=pk(order_id)).download_attempts == 3


@pytest.mark.django_db  # in-process: its task message must not reach the module's running worker
def test_an_asset_is_checked_against_an_md5_hash_only_when_the_order_gives_one(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    photo, art = jpeg_bytes(), png_bytes()
    order_id = order_create_via_api(
        sandbox_api,
        items=[
            {
                "sku": "GLOBAL-PHO-4X6",
                "copies": 1,
                "assets": [
                    {
                        "url": serve(httpserver, "/photo.jpg", photo, "image/jpeg"),
                        "md5Hash": md5(photo),
                    }
                ],
            },
            {
                "sku": "GLOBAL-PHO-4X6",
                "copies": 1,
                "assets": [{"url": serve(httpserver, "/art.png", art, "image/png")}],
            },
            {
                "sku": "GLOBAL-PHO-4X6",
                "copies": 1,
                "assets": [
                    {
                        "url": serve(httpserver, "/changed.jpg", photo, "image/jpeg"),
                        "md5Hash": "0" * 32,
                    }
                ],
            },
        ],
    )

    order_advance(order_id=pk(order_id))

    matching, unhashed, changed = Asset.objects.filter(item__order_id=pk(order_id)).order_by(
        "item__position"
    )
    assert (matching.status, matching.download_attempts) == ("Complete", 1)
    assert (unhashed.status, unhashed.download_attempts) == ("Complete", 1)
    assert (changed.status, changed.download_attempts) == ("InProgress", 1)
    with default_storage.open(matching.source_file) as stored:
        assert stored.read() == photo
    with default_storage.open(unhashed.source_file) as stored:
        assert stored.read() == art
    assert changed.source_file == ""
    [issue] = fetch(sandbox_api, order_id)["status"]["issues"]
    assert issue["errorCode"] == "order.items.assets.NotDownloaded"
    assert f"MD5 hash is {md5(photo)}, but the order gives {'0' * 32}" in issue["description"]


@pytest.mark.django_db  # in-process: its task message must not reach the module's running worker
def test_a_download_replaces_the_file_an_earlier_unrecorded_attempt_left_in_storage(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    order_id = photo_order(sandbox_api, httpserver, "photo")
    asset = Asset.objects.get(item__order_id=pk(order_id))
    # Stored by an attempt whose worker died before its transaction committed.
    name = f"orders/{asset.item.order_id}/assets/{asset.id}/source.jpeg"
    default_storage.save(name, ContentFile(b"an earlier copy"))

    order_advance(order_id=pk(order_id))

    asset.refresh_from_db()
    assert (asset.status, asset.source_file, asset.source_size) == (
        "Complete",
        name,
        len(jpeg_bytes()),
    )
    with default_storage.open(name) as stored:
        assert stored.read() == jpeg_bytes()


@needs_worker
def test_a_failing_asset_host_is_retried_with_not_downloaded_then_failed_to_download(
    worker: Worker, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    seen_retrying = threading.Event()
    served = []

    def broken(request: Request) -> Response:
        served.append(request.path)
        if len(served) == 5:  # hold the 5th attempt until the test has looked at the order
            seen_retrying.wait(timeout=30)
        return Response("upstream is down", status=500)

    httpserver.expect_request("/down.jpg").respond_with_handler(broken)
    body = order_body(
        items=[
            {
                "sku": "GLOBAL-PHO-4X6",
                "copies": 1,
                "assets": [{"url": httpserver.url_for("/down.jpg")}],
            }
        ]
    )

    order_id = order_create_via_api(sandbox_api, body)
    wait_for("the fifth attempt", lambda: len(served) == 5, worker)
    retrying = fetch(sandbox_api, order_id)
    seen_retrying.set()
    wait_for("the download to fail", order_failed(order_id), worker)
    failed = fetch(sandbox_api, order_id)

    assert retrying["status"]["stage"] == "InProgress"
    assert retrying["status"]["details"]["downloadAssets"] == "InProgress"
    [item] = retrying["items"]
    assert (item["status"], item["assets"][0]["status"]) == ("NotYetDownloaded", "InProgress")
    [issue] = retrying["status"]["issues"]
    assert issue["errorCode"] == "order.items.assets.NotDownloaded"
    assert issue["objectId"] == item["id"]
    assert "attempt 4 of 10" in issue["description"]
    assert "HTTP 500" in issue["description"]
    assert_failed_download(failed, 10, "HTTP 500")
    assert len(served) == 10


def test_a_private_address_is_refused_when_private_urls_are_not_allowed(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = False
    local = serve(httpserver, "/local.jpg", jpeg_bytes(), "image/jpeg")
    body = order_body(
        items=[
            {"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": local}]},
            {
                "sku": "GLOBAL-PHO-4X6",
                "copies": 1,
                "assets": [{"url": "http://169.254.169.254/latest/meta-data/"}],
            },
        ]
    )
    order_id = order_create_via_api(sandbox_api, body)

    assert order_advance(order_id=pk(order_id)) is not None  # tried again later, like a name
    # that does not resolve: a merchant learns nothing of our network by naming hosts

    order = fetch(sandbox_api, order_id)
    assert order["status"]["details"]["downloadAssets"] == "InProgress"
    issues = order["status"]["issues"]
    assert [i["errorCode"] for i in issues] == ["order.items.assets.NotDownloaded"] * 2
    for issue in issues:
        assert "attempt 1 of 10" in issue["description"]
        assert "the host cannot be reached from the service" in issue["description"]
    assert requests_to(httpserver, "/local.jpg") == 0


# Not transactional: the order's on-commit task message must not reach a running worker, which
# is allowed to fetch private addresses.
test_a_private_address_is_refused_when_private_urls_are_not_allowed = pytest.mark.django_db(
    test_a_private_address_is_refused_when_private_urls_are_not_allowed
)


@needs_worker
def test_a_decompression_bomb_is_refused_with_an_issue(
    worker: Worker, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    url = serve(httpserver, "/bomb.png", bomb_png_bytes(), "image/png")
    body = order_body(items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}])

    order_id = order_create_via_api(sandbox_api, body)
    wait_for("the preparation to fail", order_failed(order_id), worker)

    order = fetch(sandbox_api, order_id)
    assert order["status"]["stage"] == "InProgress"
    assert order["status"]["details"] == {
        "downloadAssets": "Complete",
        "allocateProductionLocation": "Complete",
        "printReadyAssetsPrepared": "Error",
        "inProduction": "NotStarted",
        "shipping": "NotStarted",
    }
    [item] = order["items"]
    [issue] = order["status"]["issues"]
    assert issue["objectId"] == item["id"]
    assert issue["errorCode"] == "order.items.assets.PrintReadyFailed"
    assert issue["description"] == (
        f"Asset {item['assets'][0]['id']} cannot be printed: The image is 15000x15000 pixels "
        "(225 megapixels); images over 200 megapixels are refused."
    )
    assert item["assets"][0]["thumbnailUrl"] is None
    assert {s["status"] for s in order["shipments"]} == {"Processing"}
    assert not Shipment.objects.filter(order_id=pk(order_id), submitted_at__isnull=False).exists()


# --- Pause window ----------------------------------------------------------------------------


@needs_worker
def test_a_held_order_is_submitted_by_the_sweeper_when_its_pause_window_expires(
    worker: Worker,
    sandbox_api: APIClient,
    merchant: CreatedMerchant,
    httpserver: HTTPServer,
    receiver: Receiver,
) -> None:
    environment = merchant.merchant.environments.get(kind="Sandbox")
    environment.pause_mode, environment.pause_minutes = PauseMode.MINUTES, 1
    environment.save(update_fields=["pause_mode", "pause_minutes"])
    url = serve(httpserver, "/held.jpg", jpeg_bytes(), "image/jpeg")
    body = order_body(
        callbackUrl=httpserver.url_for("/callbacks"),
        items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}],
    )

    order_id = order_create_via_api(sandbox_api, body, outcome="OnHold")
    time.sleep(1.5)  # the sweeper runs every second; the window has not expired
    assert fetch(sandbox_api, order_id)["status"]["stage"] == "OnHold"
    assert requests_to(httpserver, "/held.jpg") == 0
    # The minute passes: only the due time moves, as it would with the clock.
    now = timezone.now()
    Order.objects.filter(id=pk(order_id)).update(held_until=now, due_at=now)

    wait_for("the order to complete", stage_is(sandbox_api, order_id, "Complete"), worker)
    wait_for("four callbacks", lambda: len(receiver.types(order_id)) == 4, worker)
    assert receiver.types(order_id) == [
        f"{TYPE}.status.stage.changed#InProgress",
        f"{TYPE}.status.details.downloadAssets#Complete",
        f"{TYPE}.shipments.shipment#Shipped",
        f"{TYPE}.status.stage.changed#Complete",
    ]


@needs_worker
def test_an_indefinitely_held_order_waits_until_submitted_by_hand(
    worker: Worker, sandbox_api: APIClient, merchant: CreatedMerchant, httpserver: HTTPServer
) -> None:
    environment = merchant.merchant.environments.get(kind="Sandbox")
    environment.pause_mode = PauseMode.INDEFINITE
    environment.save(update_fields=["pause_mode"])
    url = serve(httpserver, "/waiting.jpg", jpeg_bytes(), "image/jpeg")
    body = order_body(items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}])

    order_id = order_create_via_api(sandbox_api, body, outcome="OnHold")
    time.sleep(1.5)
    held = Order.objects.get(id=pk(order_id))
    assert (held.stage, held.pipeline_step, held.due_at) == (Stage.ON_HOLD, PipelineStep.HELD, None)

    assert order_submit_now(order=held) is True
    assert order_submit_now(order=held) is False  # already on its way

    wait_for("the order to complete", stage_is(sandbox_api, order_id, "Complete"), worker)
    assert Charge.objects.filter(order_id=pk(order_id), charge_type=ChargeType.ITEM).count() == 1
    assert not OrderIssue.objects.filter(order_id=pk(order_id)).exists()
    events = CallbackEvent.objects.filter(subject=order_id).order_by("sequence")
    assert [(e.event_type, e.state) for e in events] == [
        (f"{TYPE}.status.stage.changed#InProgress", CallbackState.NO_DESTINATION),
        (f"{TYPE}.status.details.downloadAssets#Complete", CallbackState.NO_DESTINATION),
        (f"{TYPE}.shipments.shipment#Shipped", CallbackState.NO_DESTINATION),
        (f"{TYPE}.status.stage.changed#Complete", CallbackState.NO_DESTINATION),
    ]


# --- In-process: the steps called directly (no worker; no task message is sent) -------------


def _card_body(front: str, inside: str) -> dict[str, Any]:
    """An order of one greeting card, its default (front) and inside print areas from these
    URLs."""
    areas = [{"printArea": "default", "url": front}, {"printArea": "inside", "url": inside}]
    return order_body(items=[{"sku": "GLOBAL-GRE-5X7", "copies": 1, "assets": areas}])


@pytest.mark.django_db
def test_an_item_shows_its_default_print_area_not_the_one_rendered_after_it(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SIMULATOR_SECONDS = 0
    front = serve(httpserver, "/front.jpg", jpeg_bytes(500, 700, (250, 0, 0)), "image/jpeg")
    inside = serve(httpserver, "/inside.png", png_bytes(500, 700), "image/png")
    body = _card_body(front, inside)
    order_id = order_create_via_api(sandbox_api, body)

    done = run_in_process(order_id)

    assert (done.stage, done.pipeline_step) == (Stage.COMPLETE, PipelineStep.DONE)
    item = done.items.get()
    default = item.assets.get(print_area="default")
    assert default.thumbnail and item.thumbnail == default.thumbnail
    assert item.assets.get(print_area="inside").thumbnail not in ("", item.thumbnail)
    shipment = done.shipments.get()
    assert shipment.status == "Shipped" and shipment.lab_order_reference.startswith("SIM-")


@pytest.mark.django_db
def test_an_item_whose_asset_fails_for_good_is_invalid_however_its_other_asset_ends(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    broken = serve(httpserver, "/front.jpg", b"not an image at all", "image/jpeg")
    inside = serve(httpserver, "/inside.png", png_bytes(500, 700), "image/png")
    body = _card_body(broken, inside)
    order = order_claim(order_id=pk(order_create_via_api(sandbox_api, body)))
    assert order is not None

    with CaptureQueriesContext(connection) as captured:
        state = _downloaded(order)

    assert state == ("Error", None)
    item = order.items.get()
    assert item.status == "Invalid"
    assert [(a.print_area, a.status) for a in item.assets.order_by("position")] == [
        ("default", "Error"),
        ("inside", "Complete"),
    ]
    # The item's status written once, by the first attempt's record: the second attempt's
    # record finds it already Invalid in the item its assets share.
    item_writes = [
        q for q in captured.captured_queries if q["sql"].startswith('UPDATE "orders_orderitem"')
    ]
    assert len(item_writes) == 1


@pytest.mark.django_db
def test_downloading_a_one_asset_order_without_files_takes_a_query_for_each_read_and_write(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer, django_assert_num_queries: Any
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    order = order_claim(order_id=pk(photo_order(sandbox_api, httpserver, "photo")))
    assert order is not None

    # The order's items, its assets, the catalogue version; the attempt (savepoint, claim
    # renewed, asset, item status written, the document as the move writes it: the order, its
    # items, assets, shipments, charges and issues read, the document written; release). The
    # item's status and the outcome come from the assets as read and attempted: no query (the
    # order shows no packing slip or branding file).
    with django_assert_num_queries(3 + 4 + len(DOCUMENT_WRITTEN) + 1):
        state = _downloaded(order)

    assert state == ("Complete", None)


@pytest.mark.django_db
def test_a_downloads_last_attempt_commits_with_the_orders_move_or_not_at_all(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    order = order_claim(order_id=pk(photo_order(sandbox_api, httpserver, "together")))
    assert order is not None
    claim = order.claimed_until

    # The step returns its last record unwritten, for the state machine's move.
    last_record = order_assets_download(order=order)
    assert Asset.objects.get(item__order_id=order.id).download_attempts == 0
    with pytest.raises(RuntimeError), order_claimed_transaction(order=order):
        assert last_record() == ("Complete", None)
        # Inside the move's transaction: the attempt is written, not yet committed.
        assert Asset.objects.get(item__order_id=order.id).status == "Complete"
        raise RuntimeError("the move failed")

    # Neither the attempt nor the claim's renewal stands, and the claim in memory is the
    # database's, so the state machine's retry finds the order by it.
    asset = Asset.objects.get(item__order_id=order.id)
    assert (asset.status, asset.download_attempts, asset.source_file) == ("InProgress", 0, "")
    assert order.claimed_until == claim == Order.objects.get(id=order.id).claimed_until

    # Tried again: the attempt and the move commit together.
    assert _downloaded(order) == ("Complete", None)
    assert Asset.objects.get(item__order_id=order.id).status == "Complete"
    assert requests_to(httpserver, "/together.jpg") == 2
    # Nothing left to attempt: the last record writes nothing, under the move's renewed claim.
    assert _downloaded(order) == ("Complete", None)
    assert order.claimed_until != claim
    assert requests_to(httpserver, "/together.jpg") == 2


def _downloaded(order: Order) -> tuple[str, Any]:
    """The download step, its last record written as the state machine writes it: in the
    transaction that renews the claim (and moves the order on, writing the order's document,
    written here in its place)."""
    last_record = order_assets_download(order=order)
    with order_claimed_transaction(order=order):
        state = last_record()
        order_document_write(order.id)
        return state


@pytest.mark.django_db
def test_a_claim_locks_reads_and_claims_the_order_with_its_environment_and_merchant(
    sandbox_api: APIClient, django_assert_num_queries: Any
) -> None:
    order_id = pk(order_create_via_api(sandbox_api, merchantReference="claimed"))
    Order.objects.filter(id=order_id).update(pipeline_step=PipelineStep.ALLOCATE)

    # Its transaction (a savepoint here), the order read and locked with its environment and
    # merchant, its claim written: the same on every database.
    with django_assert_num_queries(4):
        order = order_claim(order_id=order_id, step=PipelineStep.ALLOCATE)
        assert order is not None
        assert order.environment.merchant.name == "Acme Prints"

    stored = Order.objects.get(id=order_id)
    assert stored.claimed_until is not None and stored.claimed_until > timezone.now()
    assert (order.claimed_until, order.claim_token) == (stored.claimed_until, stored.claim_token)
    assert (order.pipeline_step, order.merchant_reference) == (PipelineStep.ALLOCATE, "claimed")
    # Claimed: no second claim, for this step or any other, until it is released.
    assert order_claim(order_id=order_id, step=PipelineStep.ALLOCATE) is None
    assert order_claim(order_id=order_id) is None
    Order.objects.filter(id=order_id).update(claimed_until=None)
    assert order_claim(order_id=order_id, step=PipelineStep.PREPARE) is None  # not its step
    Order.objects.filter(id=order_id).update(due_at=timezone.now() + timedelta(minutes=1))
    assert order_claim(order_id=order_id) is None  # not due


@pytest.mark.django_db
def test_the_state_machine_alone_shows_a_claimed_step_started_and_once(
    sandbox_api: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim writes its lease and token only; the state machine shows the step it runs as
    started (InProgress, ``last_updated`` with it) before the step's work, and a retry of the
    step, finding it shown, writes nothing more."""
    order_id = pk(order_create_via_api(sandbox_api, merchantReference="started"))
    earlier = timezone.now() - timedelta(minutes=5)
    Order.objects.filter(id=order_id).update(
        pipeline_step=PipelineStep.ALLOCATE, last_updated=earlier
    )
    document_rewritten(order_id)
    order = order_claim(order_id=order_id, step=PipelineStep.ALLOCATE)
    assert order is not None
    stored = Order.objects.get(id=order_id)
    assert (stored.allocate_production_location, stored.last_updated) == ("NotStarted", earlier)
    Order.objects.filter(id=order_id).update(claimed_until=None)

    # The step's work sees its detail shown, in the database and in the order it is given.
    seen: list[tuple[str, str, Any]] = []

    def allocation(running: Order) -> None:
        shown = Order.objects.get(id=running.id)
        detail = shown.allocate_production_location
        seen.append((running.allocate_production_location, detail, shown.last_updated))
        Order.objects.filter(id=running.id).update(claimed_until=None)  # as a released claim

    monkeypatch.setitem(STEPS, PipelineStep.ALLOCATE, allocation)
    with CaptureQueriesContext(connection) as captured:
        order_advance(order_id=order_id, step=PipelineStep.ALLOCATE)
    [(in_memory, detail, updated)] = seen
    assert (in_memory, detail) == ("InProgress", "InProgress") and updated > earlier
    # The SET lists of the order's updates: the claim's, then the detail shown.
    assigned = [
        query["sql"].split(" WHERE ")[0]
        for query in captured.captured_queries
        if query["sql"].startswith('UPDATE "orders_order" SET')
    ]
    shown_by = [sql for sql in assigned if '"allocate_production_location" =' in sql]
    assert len(shown_by) == 1 and '"claim_token" =' not in shown_by[0]

    # Run again (a retry): shown already, nothing written, ``last_updated`` kept.
    Order.objects.filter(id=order_id).update(last_updated=earlier)
    document_rewritten(order_id)
    order_advance(order_id=order_id, step=PipelineStep.ALLOCATE)
    assert seen[1] == ("InProgress", "InProgress", earlier)


@pytest.mark.django_db  # in-process
def test_a_rendering_renews_the_claim_first_unless_it_was_taken_within_the_second(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    public_id = photo_order(sandbox_api, httpserver, "fresh")
    advance_to(public_id, PipelineStep.PREPARE)
    order_id = pk(public_id)
    order = order_claim(order_id=order_id, step=PipelineStep.PREPARE)
    assert order is not None and order.claimed_until is not None
    taken = order.claimed_until

    # Taken just now (within CLAIM_FRESH, made a minute here so that a slow machine cannot
    # make the claim older): rendered under the claim as it was, with no statement for it.
    monkeypatch.setattr(claims, "CLAIM_FRESH", timedelta(minutes=1))
    assert order_assets_prepare(order=order) is True
    assert Order.objects.get(id=order_id).claimed_until == taken == order.claimed_until
    monkeypatch.undo()

    # A claim taken two seconds ago is renewed before the rendering.
    Asset.objects.filter(item__order_id=order_id).update(print_file="", thumbnail="")
    document_rewritten(order_id)
    older = taken - timedelta(seconds=2)
    Order.objects.filter(id=order_id).update(claimed_until=older)
    order.claimed_until = older
    assert order_assets_prepare(order=order) is True
    renewed = Order.objects.get(id=order_id).claimed_until
    assert renewed == order.claimed_until and renewed > taken
    # A claim taken over meanwhile (another worker's) is found by that renewal, before
    # anything is rendered.
    Asset.objects.filter(item__order_id=order_id).update(print_file="", thumbnail="")
    document_rewritten(order_id)
    order.claimed_until = older
    assert order.claim_token is not None
    Order.objects.filter(id=order_id).update(claim_token=order.claim_token + 1)
    with pytest.raises(ClaimLost):
        order_assets_prepare(order=order)
    assert Asset.objects.get(item__order_id=order_id).print_file == ""


@pytest.mark.django_db  # in-process
def test_an_order_cancelled_within_a_fresh_claims_second_stays_cancelled_after_its_rendering(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    monkeypatch.setattr(claims, "CLAIM_FRESH", timedelta(minutes=1))  # the claim stays fresh
    order_id = photo_order(sandbox_api, httpserver, "cancelled-fresh")
    advance_to(order_id, PipelineStep.PREPARE)
    order = order_claim(order_id=pk(order_id), step=PipelineStep.PREPARE)
    assert order is not None

    cancelled = sandbox_api.post(f"/v4.0/orders/{order_id}/actions/cancel", {}, format="json")
    assert cancelled.json()["outcome"] == "Cancelled"
    # The rendering goes ahead (its claim was not renewed), and the step's move finds the
    # claim gone: the cancel stands.
    with pytest.raises(ClaimLost):
        STEPS[PipelineStep.PREPARE](order)

    stored = Order.objects.get(id=pk(order_id))
    assert (stored.stage, stored.pipeline_step, stored.due_at) == (
        Stage.CANCELLED, PipelineStep.CANCELLED, None,
    )  # fmt: skip


@pytest.mark.django_db  # in-process
def test_print_ready_and_submission_each_move_on_with_the_orders_document_in_one_transaction(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pinned statements of a one-print order; a transaction shows as a SAVEPOINT and its
    RELEASE here (inside the test's own), which Django's query log records too."""
    if connection.vendor != "postgresql":
        pytest.skip("the claim and the simulator's record are one statement on PostgreSQL")
    settings.ALLOW_PRIVATE_URLS = True
    monkeypatch.setattr(claims, "CLAIM_FRESH", timedelta(minutes=1))  # however slow the machine
    order_id = photo_order(sandbox_api, httpserver, "statements")
    advance_to(order_id, PipelineStep.PREPARE)

    def step_statements(step: str) -> list[str]:
        order = order_claim(order_id=pk(order_id), step=step)
        assert order is not None
        with CaptureQueriesContext(connection) as captured:
            STEPS[step](order)
        return [query["sql"].split()[0] for query in captured.captured_queries]

    # Its items, its assets, the catalogue version; the rendering recorded with the document
    # that shows its thumbnail (the order row locked first, the asset's files, the item's
    # thumbnail, the document); the move with its document (the claim just taken is not
    # renewed).
    assert step_statements(PipelineStep.PREPARE) == [
        "SELECT", "SELECT", "SELECT",
        "SAVEPOINT", "SELECT", "UPDATE", "UPDATE", *DOCUMENT_WRITTEN_CHARGED, "RELEASE",
        "SAVEPOINT", "UPDATE", *DOCUMENT_WRITTEN_CHARGED, "RELEASE",
    ]  # fmt: skip
    # The shipments with what the lab order needs (its items, assets, files and labs), the
    # catalogue version (the items' canonical attributes for the lab; in a worker's run read
    # once with the steps before), the submission's intent on the shipment, the simulator's
    # record, the submission recorded under the order's lock (claim renewed, shipment with its
    # intent ended, its issue cleared: none, so no document written), the move with its
    # document.
    assert step_statements(PipelineStep.SUBMIT) == [
        "SELECT", "SELECT", "SELECT", "SELECT", "SELECT", "SELECT", "UPDATE", "INSERT",
        "SAVEPOINT", "UPDATE", "UPDATE", "DELETE", "RELEASE",
        "SAVEPOINT", "UPDATE", *DOCUMENT_WRITTEN_CHARGED, "RELEASE",
    ]  # fmt: skip
    assert Order.objects.get(id=pk(order_id)).pipeline_step == PipelineStep.PRODUCTION


@pytest.mark.django_db
def test_a_worker_whose_claim_was_taken_over_records_nothing(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    order_id = photo_order(sandbox_api, httpserver, "slow")
    stale = order_claim(order_id=pk(order_id))
    assert stale is not None
    # The claim expired and another worker claimed the order (a new token).
    Order.objects.filter(id=stale.id).update(
        claimed_until=timezone.now() + timedelta(minutes=5), claim_token=claim_token_new()
    )

    with pytest.raises(ClaimLost):
        _downloaded(stale)

    asset = Asset.objects.get(item__order_id=stale.id)
    assert (asset.status, asset.download_attempts, asset.source_file) == ("InProgress", 0, "")
    assert requests_to(httpserver, "/slow.jpg") == 1
    assert Order.objects.get(id=stale.id).download_assets == "NotStarted"


@pytest.mark.django_db
def test_a_lab_refusing_every_submission_fails_production_after_its_attempts(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SUBMIT_ATTEMPTS = 3
    settings.ASSET_RETRY_BASE_SECONDS = 0.01
    Lab.objects.filter(code="gb1").update(simulator_failure_share=1)
    order_id = photo_order(sandbox_api, httpserver, "refused")

    failed = run_in_process(order_id)

    assert failed.pipeline_step == PipelineStep.FAILED
    order = fetch(sandbox_api, order_id)
    assert order["status"]["stage"] == "InProgress"
    assert order["status"]["details"] == {
        "downloadAssets": "Complete",
        "allocateProductionLocation": "Complete",
        "printReadyAssetsPrepared": "Complete",
        "inProduction": "Error",
        "shipping": "NotStarted",
    }
    [shipment] = order["shipments"]
    assert shipment["status"] == "Processing" and shipment["tracking"] is None
    [issue] = order["status"]["issues"]  # replaced at each attempt, not appended
    assert (issue["objectId"], issue["errorCode"]) == (
        shipment["id"], "order.shipments.SubmissionFailed",
    )  # fmt: skip
    assert issue["description"] == (
        f"Lab gb1 refused shipment {shipment['id']} after 3 attempt(s): "
        "Simulated rejection by lab gb1."
    )
    stored = Shipment.objects.get(id=pk(shipment["id"]))
    assert (stored.submitted_at, stored.submit_attempts) == (None, 3)


@pytest.mark.django_db
def test_a_cancelled_order_is_never_submitted_to_its_lab(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    order_id = photo_order(sandbox_api, httpserver, "cancelled")
    advance_to(order_id, PipelineStep.SUBMIT)

    cancelled = sandbox_api.post(f"/v4.0/orders/{order_id}/actions/cancel", {}, format="json")
    assert cancelled.json()["outcome"] == "Cancelled"
    assert order_advance(order_id=pk(order_id)) is None

    order = Order.objects.get(id=pk(order_id))
    assert (order.stage, order.pipeline_step, order.due_at) == (
        Stage.CANCELLED, PipelineStep.CANCELLED, None,
    )  # fmt: skip
    shipment = order.shipments.get()
    assert (shipment.status, shipment.submitted_at, shipment.lab_order_reference) == (
        "Cancelled", None, "",
    )  # fmt: skip
    assert order.in_production == "NotStarted"


@pytest.mark.django_db
def test_a_submission_accepted_after_the_order_was_cancelled_is_not_recorded(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    order_id = photo_order(sandbox_api, httpserver, "raced")
    advance_to(order_id, PipelineStep.SUBMIT)
    # A worker in the submit step has read the shipment and sent it to the lab ...
    worker_copy = order_claim(order_id=pk(order_id))
    assert worker_copy is not None
    shipment = Shipment.objects.select_related("order__environment").get(order=worker_copy)
    lab = connector_for(lab_code=shipment.lab_code, sandbox=True)
    accepted = lab.submit(lab_order(shipment))
    # ... when the merchant cancels, before the lab's answer is recorded.
    cancelled = sandbox_api.post(f"/v4.0/orders/{order_id}/actions/cancel", {}, format="json")
    assert cancelled.json()["outcome"] == "Cancelled"

    with pytest.raises(ClaimLost):
        shipment_submission_record(
            order=worker_copy,
            shipment=shipment,
            reference=accepted.reference,
            submitted_at=timezone.now(),
            connector=lab,
        )

    shipment = Shipment.objects.get(order_id=pk(order_id))
    assert (shipment.status, shipment.submitted_at, shipment.lab_order_reference) == (
        "Cancelled", None, "",
    )  # fmt: skip
    assert Order.objects.get(id=pk(order_id)).stage == Stage.CANCELLED


@pytest.mark.django_db
def test_a_submission_whose_answer_was_never_recorded_is_adopted_not_made_again(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    order_id = photo_order(sandbox_api, httpserver, "lost-answer")
    advance_to(order_id, PipelineStep.SUBMIT)
    # A worker in the submit step recorded its intent and reached the lab, then was killed
    # before it heard the answer; its claim expired.
    killed = order_claim(order_id=pk(order_id))
    assert killed is not None
    shipment = Shipment.objects.select_related("order__environment").get(order=killed)
    Shipment.objects.filter(id=shipment.id).update(
        lab_operation="submit", lab_operation_since=timezone.now()
    )
    lab = connector_for(lab_code=shipment.lab_code, sandbox=True)
    made = lab.submit(lab_order(shipment))
    Order.objects.filter(id=killed.id).update(claimed_until=timezone.now() - timedelta(seconds=1))

    order_advance(order_id=killed.id)

    shipment.refresh_from_db()
    assert Order.objects.get(id=killed.id).pipeline_step == PipelineStep.PRODUCTION
    assert (shipment.lab_order_reference, shipment.submit_attempts) == (made.reference, 0)
    assert (shipment.lab_operation, shipment.lab_operation_since) == ("", None)
    # The lab was asked for it once: its order was looked up and adopted.
    recorded = SimulatedLabOrder.objects.get(shipment_id=shipment.public_id)
    assert recorded.submissions == 1


@pytest.mark.django_db
def test_an_item_out_of_stock_everywhere_waits_at_allocation_until_it_is_back(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SIMULATOR_SECONDS = 0
    settings.ALLOCATION_RETRY_BASE_SECONDS = 900
    settings.ALLOCATION_RETRY_MAX_SECONDS = 3 * 3600
    order_id = photo_order(sandbox_api, httpserver, "stock")
    # Between the order and its allocation, every lab runs out of the product.
    LabProduct.objects.filter(product__sku="GLOBAL-PHO-4X6").update(in_stock=False)

    advance_to(order_id, PipelineStep.ALLOCATE)
    before = timezone.now()
    due = order_advance(order_id=pk(order_id))

    waiting = Order.objects.get(id=pk(order_id))
    assert waiting.pipeline_step == PipelineStep.ALLOCATE
    assert due == waiting.due_at and due is not None
    assert timedelta(minutes=14) < due - before < timedelta(minutes=16)
    order = fetch(sandbox_api, order_id)
    assert order["status"]["stage"] == "InProgress"
    assert order["status"]["details"]["allocateProductionLocation"] == "InProgress"
    [item] = order["items"]
    [issue] = order["status"]["issues"]
    assert (issue["objectId"], issue["errorCode"]) == (item["id"], "order.items.ItemUnavailable")
    assert issue["description"] == "GLOBAL-PHO-4X6 is temporarily unavailable."

    # Still out of stock later: the one issue is updated, and the wait doubles up to its cap.
    first = OrderIssue.objects.get(order_id=pk(order_id)).created
    OrderIssue.objects.filter(order_id=pk(order_id)).update(created=first - timedelta(hours=1))
    make_due(order_id)
    before = timezone.now()
    due = order_advance(order_id=pk(order_id))
    assert due is not None and timedelta(minutes=59) < due - before < timedelta(minutes=61)
    OrderIssue.objects.filter(order_id=pk(order_id)).update(created=first - timedelta(days=1))
    make_due(order_id)
    before = timezone.now()
    due = order_advance(order_id=pk(order_id))
    assert due is not None
    assert timedelta(hours=2, minutes=59) < due - before < timedelta(hours=3, minutes=1)
    assert OrderIssue.objects.filter(order_id=pk(order_id)).count() == 1

    # Back in stock: allocated at the next attempt, the issue gone, the order completes.
    LabProduct.objects.filter(product__sku="GLOBAL-PHO-4X6").update(in_stock=True)
    make_due(order_id)
    done = run_in_process(order_id)

    assert (done.stage, done.pipeline_step) == (Stage.COMPLETE, PipelineStep.DONE)
    order = fetch(sandbox_api, order_id)
    assert order["status"]["issues"] == []
    assert order["status"]["details"]["allocateProductionLocation"] == "Complete"
    assert done.items.get().availability == "Available"


@pytest.mark.django_db
def test_an_order_created_with_an_unavailable_item_loses_its_issue_once_allocated(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SIMULATOR_SECONDS = 0
    LabProduct.objects.filter(product__sku="GLOBAL-PHO-4X6").update(in_stock=False)
    url = serve(httpserver, "/later.jpg", jpeg_bytes(), "image/jpeg")
    items = [{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}]
    order_id = order_create_via_api(sandbox_api, items=items, outcome="CreatedWithIssues")
    assert [i["errorCode"] for i in fetch(sandbox_api, order_id)["status"]["issues"]] == [
        "order.items.ItemUnavailable"
    ]
    LabProduct.objects.filter(product__sku="GLOBAL-PHO-4X6").update(in_stock=True)

    done = run_in_process(order_id)

    assert (done.stage, done.pipeline_step) == (Stage.COMPLETE, PipelineStep.DONE)
    assert fetch(sandbox_api, order_id)["status"]["issues"] == []


@pytest.mark.django_db
def test_an_item_no_lab_makes_any_more_fails_allocation_with_item_unavailable(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    order_id = photo_order(sandbox_api, httpserver, "gone")
    # Between the order and its allocation, every lab stops making the product.
    LabProduct.objects.filter(product__sku="GLOBAL-PHO-4X6").delete()

    failed = run_in_process(order_id)

    assert (failed.pipeline_step, failed.due_at) == (PipelineStep.FAILED, None)
    order = fetch(sandbox_api, order_id)
    assert order["status"]["details"]["downloadAssets"] == "Complete"
    assert order["status"]["details"]["allocateProductionLocation"] == "Error"
    assert order["status"]["details"]["printReadyAssetsPrepared"] == "NotStarted"
    [item] = order["items"]
    [issue] = order["status"]["issues"]
    assert (issue["objectId"], issue["errorCode"]) == (item["id"], "order.items.ItemUnavailable")
    assert order["shipments"] == [] and order["charges"] == []


@pytest.mark.django_db  # in-process: its task message must not reach the module's running worker
@pytest.mark.parametrize(
    ("content", "content_type", "reason"),
    [
        (b"", "image/jpeg", "empty"),
        (b"<html><body>Sign in to see this file</body></html>", "image/jpeg", "not a JPEG"),
    ],
)
def test_a_file_that_cannot_succeed_fails_after_one_attempt(
    settings: Any,
    sandbox_api: APIClient,
    httpserver: HTTPServer,
    content: bytes,
    content_type: str,
    reason: str,
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    url = serve(httpserver, "/not-a-photo.jpg", content, content_type)
    order_id = order_create_via_api(
        sandbox_api, items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": url}]}]
    )

    failed = run_in_process(order_id)

    assert failed.pipeline_step == PipelineStep.FAILED
    assert requests_to(httpserver, "/not-a-photo.jpg") == 1
    [issue] = fetch(sandbox_api, order_id)["status"]["issues"]
    assert issue["errorCode"] == "order.items.assets.FailedToDownloaded"
    assert "after 1 attempt(s)" in issue["description"]
    assert reason.lower() in issue["description"].lower()


@pytest.mark.django_db  # in-process: its task message must not reach the module's running worker
def test_a_step_ending_in_error_sends_its_error_callback_with_the_order(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    order_id = photo_order(sandbox_api, httpserver, "gone-too")
    LabProduct.objects.filter(product__sku="GLOBAL-PHO-4X6").delete()

    run_in_process(order_id)

    events = CallbackEvent.objects.filter(subject=order_id).order_by("sequence")
    assert [e.event_type for e in events] == [
        f"{TYPE}.status.details.downloadAssets#Complete",
        f"{TYPE}.status.details.allocateProductionLocation#Error",
    ]
    sent = json.loads(bytes(events.last().body))  # type: ignore[union-attr]
    assert sent["data"]["order"]["status"]["details"]["allocateProductionLocation"] == "Error"
    assert sent["data"]["order"]["id"] == order_id


@pytest.mark.django_db
def test_a_shipment_refused_for_good_withdraws_the_shipments_already_at_other_labs(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SUBMIT_ATTEMPTS = 2
    settings.ASSET_RETRY_BASE_SECONDS = 0.01
    Lab.objects.filter(code="gb3").update(simulator_failure_share=1)
    order_id = split_order(sandbox_api, httpserver, callbackUrl=httpserver.url_for("/callbacks"))

    failed = run_in_process(order_id)

    assert (failed.pipeline_step, failed.due_at) == (PipelineStep.FAILED, None)
    order = fetch(sandbox_api, order_id)
    assert order["status"]["details"]["inProduction"] == "Error"
    shipments = {s["fulfillmentLocation"]["labCode"]: s for s in order["shipments"]}
    # gb2 had accepted its shipment: withdrawn through its connector and refunded.
    assert shipments["gb2"]["status"] == "Cancelled"
    assert shipments["gb3"]["status"] == "Processing"
    gb2 = Shipment.objects.get(order_id=pk(order_id), lab_code="gb2")
    assert gb2.submitted_at is not None and gb2.lab_order_reference
    refund = Charge.objects.get(order_id=pk(order_id), charge_type=ChargeType.REFUND)
    assert {(line.item_id, line.shipment_id) for line in refund.items.all()} == {
        (gb2.items.get().id, None), (None, gb2.id),
    }  # fmt: skip
    assert [c["chargeType"] for c in order["charges"]].count("Refund") == 1
    [issue] = order["status"]["issues"]
    assert (issue["objectId"], issue["errorCode"]) == (
        shipments["gb3"]["id"], "order.shipments.SubmissionFailed",
    )  # fmt: skip
    [cancelled_event] = [e for e in events_of(order_id) if "shipment#" in e["type"]]
    assert cancelled_event["type"] == f"{TYPE}.shipments.shipment#Cancelled"
    # A failed order can still be cancelled by the merchant: the rest is refunded then.
    cancelled = sandbox_api.post(f"/v4.0/orders/{order_id}/actions/cancel", {}, format="json")
    assert cancelled.json()["outcome"] == "Cancelled"


@pytest.mark.django_db
def test_a_shipment_its_lab_will_not_withdraw_is_followed_to_dispatch(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SUBMIT_ATTEMPTS = 2
    settings.ASSET_RETRY_BASE_SECONDS = 0.01
    settings.LAB_SIMULATOR_SECONDS = 0
    Lab.objects.filter(code="gb3").update(simulator_failure_share=1)
    Lab.objects.filter(code="gb2").update(capabilities=[])  # it cannot cancel
    order_id = split_order(sandbox_api, httpserver)

    done = run_in_process(order_id)

    assert (done.stage, done.pipeline_step) == (Stage.COMPLETE, PipelineStep.DONE)
    order = fetch(sandbox_api, order_id)
    assert order["status"]["details"]["inProduction"] == "Error"
    shipments = {s["fulfillmentLocation"]["labCode"]: s["status"] for s in order["shipments"]}
    assert shipments == {"gb2": "Shipped", "gb3": "Cancelled"}
    gb3 = Shipment.objects.get(order_id=pk(order_id), lab_code="gb3")
    refund = Charge.objects.get(order_id=pk(order_id), charge_type=ChargeType.REFUND)
    assert {(line.item_id, line.shipment_id) for line in refund.items.all()} == {
        (gb3.items.get().id, None), (None, gb3.id),
    }  # fmt: skip


@pytest.mark.django_db
def test_a_live_site_flow_lab_without_credentials_fails_submission_cleanly(
    settings: Any, live_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SUBMIT_ATTEMPTS = 2
    settings.ASSET_RETRY_BASE_SECONDS = 0.01
    Lab.objects.filter(code="gb1").update(
        connector="siteflow", siteflow_base_url="https://siteflow.example/api"
    )
    order_id = photo_order(live_api, httpserver, "siteflow")

    failed = run_in_process(order_id)

    assert (failed.pipeline_step, failed.due_at) == (PipelineStep.FAILED, None)
    order = fetch(live_api, order_id)
    assert order["status"]["details"]["inProduction"] == "Error"
    [shipment] = order["shipments"]
    assert shipment["fulfillmentLocation"]["labCode"] == "gb1"
    [issue] = order["status"]["issues"]
    assert issue["description"] == (
        f"Lab gb1 refused shipment {shipment['id']} after 2 attempt(s): "
        "Site Flow lab gb1 is missing its token and secret."
    )


@pytest.mark.django_db
def test_the_shipped_event_shows_the_order_shipping_and_the_planned_carrier(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SIMULATOR_SECONDS = 0
    ShippingRate.objects.filter(lab__code="gb1", method="Standard").update(
        carrier_name="Evri", carrier_service="Parcel 48"
    )
    order_id = photo_order(
        sandbox_api, httpserver, "shipped", callbackUrl=httpserver.url_for("/callbacks")
    )

    done = run_in_process(order_id)

    assert done.stage == Stage.COMPLETE
    [shipped] = [e for e in events_of(order_id) if e["type"].endswith("shipment#Shipped")]
    status = shipped["data"]["order"]["status"]
    assert status["stage"] == "InProgress"
    assert status["details"]["inProduction"] == "InProgress"
    assert status["details"]["shipping"] == "InProgress"
    shipment = done.shipments.get()
    assert (shipment.carrier_name, shipment.carrier_service) == ("Evri", "Parcel 48")
    [tracked] = shipped["data"]["order"]["shipments"]
    assert tracked["carrier"] == {"name": "Evri", "service": "Parcel 48"}


@pytest.mark.django_db
def test_the_sweepers_queue_once_per_due_time_or_expired_claim_not_at_every_sweep(
    settings: Any, sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    settings.PIPELINE_CLAIM_SECONDS = 600
    order_id = photo_order(sandbox_api, httpserver, "swept", callbackUrl="https://cb.example/x")
    past = timezone.now() - timedelta(seconds=5)
    Order.objects.filter(id=pk(order_id)).update(due_at=past)
    with transaction.atomic():
        order_stage_changed(order=Order.objects.get(id=pk(order_id)))
    events = CallbackEvent.objects.filter(subject=order_id)
    events.update(next_attempt_at=past)
    orders = Order.objects.filter(id=pk(order_id))
    try:
        assert (orders_sweep_task(), events_sweep_task()) == (1, 1)
        # Their task messages may still wait in the queue (a backlog): no second one at each sweep.
        assert (orders_sweep_task(), events_sweep_task()) == (0, 0)
        assert (orders_sweep_task(), events_sweep_task()) == (0, 0)

        # Due again (a later step, a retry): queued again once.
        now = timezone.now()
        orders.update(due_at=now)
        events.update(next_attempt_at=now)
        assert (orders_sweep_task(), events_sweep_task()) == (1, 1)
        assert (orders_sweep_task(), events_sweep_task()) == (0, 0)

        # Claimed since, and the claim expired (its worker died): queued again once.
        expired = timezone.now() - timedelta(microseconds=1)
        orders.update(claimed_until=expired)
        events.update(claimed_until=expired)
        assert (orders_sweep_task(), events_sweep_task()) == (1, 1)
        assert (orders_sweep_task(), events_sweep_task()) == (0, 0)

        # Queued a claim period ago and still waiting: that message is presumed lost.
        lost = timezone.now() - timedelta(seconds=601)
        orders.update(swept_at=lost)
        events.update(swept_at=lost)
        assert (orders_sweep_task(), events_sweep_task()) == (1, 1)
    finally:
        purge_queues()
