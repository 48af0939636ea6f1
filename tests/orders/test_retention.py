"""Image files are deleted IMAGE_RETENTION_DAYS after lab submission, or after the last update of
an order that ended without it (cancelled or failed); an order still in progress keeps them."""

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.utils import timezone
from rest_framework.test import APIClient

from orders.lab_orders import lab_order
from orders.models import Asset, Order, PipelineStep, Shipment, Stage
from orders.pipeline.retention import images_purge_expired
from orders.tasks import images_purge_expired_task
from tests.support.documents import document_rewritten
from tests.support.images import jpeg_bytes
from tests.support.orders import order_via_api, submitted_order_with_files
from tests.support.pipeline import advance_to
from tests.support.servers import serve

pytestmark = pytest.mark.usefixtures("catalogue")


def test_files_go_thirty_days_after_submission(
    sandbox_api: APIClient, settings: Any, tmp_path: Path
) -> None:
    settings.MEDIA_ROOT = tmp_path
    old, old_files = submitted_order_with_files(sandbox_api, days_ago=31)
    recent, recent_files = submitted_order_with_files(sandbox_api, days_ago=29)

    assert images_purge_expired_task() == 1

    assert not any(default_storage.exists(name) for name in old_files)
    assert all(default_storage.exists(name) for name in recent_files)
    shown = sandbox_api.get(f"/v4.0/orders/{old.public_id}").json()["order"]["items"][0]
    assert shown["thumbnailUrl"] is None and shown["assets"][0]["thumbnailUrl"] is None
    assert Order.objects.get(id=old.id).files_deleted_at is not None
    assert Order.objects.get(id=recent.id).files_deleted_at is None
    assert images_purge_expired_task() == 0


def test_an_order_still_in_progress_keeps_its_files(
    sandbox_api: APIClient, settings: Any, tmp_path: Path
) -> None:
    settings.MEDIA_ROOT = tmp_path
    order, files = submitted_order_with_files(sandbox_api, days_ago=40)
    Order.objects.filter(id=order.id).update(
        submitted_at=None,
        pipeline_step=PipelineStep.DOWNLOAD,
        last_updated=timezone.now() - timedelta(days=40),
    )
    document_rewritten(order)

    assert images_purge_expired_task() == 0
    assert all(default_storage.exists(name) for name in files)


@pytest.mark.parametrize("step", [PipelineStep.CANCELLED, PipelineStep.FAILED])
def test_an_order_ended_without_submission_loses_its_files_after_its_last_update(
    sandbox_api: APIClient, settings: Any, tmp_path: Path, step: str
) -> None:
    settings.MEDIA_ROOT = tmp_path
    old, old_files = submitted_order_with_files(sandbox_api, days_ago=0)
    recent, recent_files = submitted_order_with_files(sandbox_api, days_ago=0)
    ended = {"submitted_at": None, "pipeline_step": step}
    if step == PipelineStep.CANCELLED:
        ended["stage"] = Stage.CANCELLED
    now = timezone.now()
    Order.objects.filter(id=old.id).update(**ended, last_updated=now - timedelta(days=31))
    Order.objects.filter(id=recent.id).update(**ended, last_updated=now - timedelta(days=29))
    document_rewritten(old)
    document_rewritten(recent)

    assert images_purge_expired_task() == 1

    assert not any(default_storage.exists(name) for name in old_files)
    assert all(default_storage.exists(name) for name in recent_files)
    assert Order.objects.get(id=old.id).files_deleted_at is not None


def test_one_run_purges_every_expired_order_batch_after_batch(
    sandbox_api: APIClient, settings: Any, tmp_path: Path
) -> None:
    settings.MEDIA_ROOT = tmp_path
    made = [submitted_order_with_files(sandbox_api, days_ago=31) for _ in range(5)]

    assert images_purge_expired(batch=2) == 5

    assert not any(default_storage.exists(name) for _, files in made for name in files)
    assert not Order.objects.filter(files_deleted_at__isnull=True).exists()


def test_a_submission_after_the_files_were_deleted_renders_them_again_first(
    sandbox_api: APIClient, settings: Any, tmp_path: Path, httpserver: Any
) -> None:
    """The Submit step (a staff retry, a held order long after) finds the files gone: it
    downloads and renders again, and the lab gets the print file, never the original."""
    settings.MEDIA_ROOT = tmp_path
    settings.ALLOW_PRIVATE_URLS = True
    original = serve(httpserver, "/photo.jpg", jpeg_bytes(), "image/jpeg")
    order = order_via_api(
        sandbox_api,
        items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": original}]}],
    )
    advance_to(order.public_id, PipelineStep.SUBMIT)
    Order.objects.filter(id=order.id).update(submitted_at=timezone.now() - timedelta(days=31))
    assert images_purge_expired() == 1
    Order.objects.filter(id=order.id).update(submitted_at=None)

    advance_to(order.public_id, PipelineStep.PRODUCTION)

    asset = Asset.objects.get(item__order=order)
    assert asset.print_file and default_storage.exists(asset.print_file)
    [item] = lab_order(Shipment.objects.get(order=order)).items
    assert item.files["default"] != original
    assert asset.print_file.rsplit("/", 1)[-1] in item.files["default"]
    assert Order.objects.get(id=order.id).files_deleted_at is None
