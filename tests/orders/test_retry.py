"""Staff correct a failed asset's URL and run the failed step again from the admin (through
``orders.retry``, audited); the order continues from there, here through a real worker."""

from typing import Any

import pytest
from django.test import Client
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from orders.models import Asset, Order, PipelineStep
from orders.retry import RetryRefused, order_failed_step_retry
from staff.models import AuditEntry
from tests.support.documents import document_rewritten
from tests.support.images import jpeg_bytes
from tests.support.orders import fetch, order_create_via_api, pk, stage_is
from tests.support.pipeline import order_failed
from tests.support.servers import serve
from tests.support.worker import Worker, needs_worker, wait_for

# The worker test commits; the others stay inside their transaction, out of the worker's sight.
pytestmark = pytest.mark.usefixtures("catalogue")


def failed_download(api: APIClient, httpserver: HTTPServer, worker: Worker | None) -> str:
    """An order whose one asset is not there: ten attempts, then the Failed step."""
    httpserver.expect_request("/not-yet.jpg").respond_with_data("gone", status=404)
    items = [
        {
            "sku": "GLOBAL-PHO-4X6",
            "copies": 1,
            "assets": [{"url": httpserver.url_for("/not-yet.jpg")}],
        }
    ]
    order_id = order_create_via_api(api, items=items)
    wait_for("the download to fail for good", order_failed(order_id), worker)
    return order_id


@needs_worker
@pytest.mark.slow
@pytest.mark.side_by_side
@pytest.mark.django_db(transaction=True)
def test_a_retried_download_with_a_corrected_url_completes(
    worker: Worker, sandbox_api: APIClient, httpserver: HTTPServer, admin_client: Client,
    admin_user: Any,
) -> None:  # fmt: skip
    order_id = failed_download(sandbox_api, httpserver, worker)
    failed = fetch(sandbox_api, order_id)
    assert failed["status"]["details"]["downloadAssets"] == "Error"
    assert [i["errorCode"] for i in failed["status"]["issues"]] == [
        "order.items.assets.FailedToDownloaded"
    ]
    asset = Asset.objects.get(item__order_id=pk(order_id))
    corrected = serve(httpserver, "/uploaded.jpg", jpeg_bytes(), "image/jpeg")
    page = admin_client.get(f"/admin/orders/order/{pk(order_id)}/retry/")
    assert page.status_code == 200
    assert "The order stopped at <strong>Download</strong>" in page.content.decode()

    confirmed = admin_client.post(
        f"/admin/orders/order/{pk(order_id)}/retry/", {f"asset_{asset.id}": corrected}
    )

    assert confirmed.status_code == 302
    done = wait_for("the order to complete", stage_is(sandbox_api, order_id, "Complete"), worker)
    assert done["status"]["issues"] == []
    assert done["status"]["details"]["downloadAssets"] == "Complete"
    assert done["items"][0]["assets"][0]["url"] == corrected
    assert [s["status"] for s in done["shipments"]] == ["Shipped"]
    [entry] = AuditEntry.objects.filter(operation="retry failed step")
    assert (entry.user, entry.target, entry.success) == (admin_user, order_id, True)
    assert entry.message == f"Download runs again; corrected URLs: {asset.public_id} → {corrected}"


@pytest.mark.django_db
def test_a_retry_is_refused_and_audited_when_the_order_has_no_failed_step(
    sandbox_api: APIClient, admin_client: Client
) -> None:
    order_id = order_create_via_api(sandbox_api)
    order = Order.objects.get(id=pk(order_id))

    with pytest.raises(RetryRefused, match="has no failed step: it is at Download"):
        order_failed_step_retry(order=order, user=None)
    page = admin_client.get(f"/admin/orders/order/{order.id}/retry/").content.decode()

    assert "has no failed step" in page
    [entry] = AuditEntry.objects.filter(operation="retry failed step")
    assert entry.success is False and entry.target == order_id
    assert Order.objects.get(id=order.id).pipeline_step == PipelineStep.DOWNLOAD


@pytest.mark.django_db
def test_only_the_urls_of_assets_that_failed_change(
    sandbox_api: APIClient, httpserver: HTTPServer
) -> None:
    order_id = order_create_via_api(sandbox_api)
    Order.objects.filter(id=pk(order_id)).update(
        pipeline_step=PipelineStep.FAILED, due_at=None, download_assets="Error"
    )
    document_rewritten(pk(order_id))
    asset = Asset.objects.get(item__order_id=pk(order_id))  # not in Error itself

    with pytest.raises(
        RetryRefused, match=f"assets that failed to download change: {asset.public_id}"
    ):
        order_failed_step_retry(
            order=Order.objects.get(id=pk(order_id)), user=None, asset_urls={asset.id: "https://x.example/a.jpg"}
        )  # fmt: skip

    assert Asset.objects.get(id=asset.id).url == asset.url
    assert Order.objects.get(id=pk(order_id)).pipeline_step == PipelineStep.FAILED
