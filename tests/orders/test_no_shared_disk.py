"""No shared disk: web, a downloads worker, an images worker (with beat), a labs worker and a
callbacks worker, each with its own VAR_DIR and no media folder in common, keep every file in
an S3-compatible bucket (moto's server on loopback). An order completes at a Site Flow lab
that fetches its print file through the web process, and its thumbnail is served."""

import io
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from PIL import Image
from pytest_httpserver import HTTPServer

from merchants.services import CreatedMerchant
from orders.models import Asset, Order, PipelineStep, Shipment, Stage
from tests.support.images import jpeg_bytes
from tests.support.orders import order_body, pk
from tests.support.s3 import Bucket, new_bucket, s3_server
from tests.support.servers import serve
from tests.support.siteflow import SiteflowServer, siteflow_lab
from tests.support.web import Web, gunicorn_serving, needs_shared_database
from tests.support.worker import (
    CAN_RUN_WORKER,
    NO_WORKER,
    Worker,
    Workers,
    purge_queues,
    wait_for,
    worker_environment,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,
    needs_shared_database,
    pytest.mark.skipif(not CAN_RUN_WORKER, reason=NO_WORKER),
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalogue"),
]
TOKEN, SECRET = "token-gb1", "siteflow-secret-value"
# What every process shares besides the database, the broker and the bucket: the key that
# signs file URLs (a worker writes them, the web process checks them).
SECRET_KEY = "no-shared-disk-test-secret-key"


@pytest.fixture
def bucket() -> Iterator[Bucket]:
    with s3_server() as endpoint:
        yield new_bucket(endpoint)


@pytest.fixture
def site() -> Iterator[SiteflowServer]:
    server = SiteflowServer(token=TOKEN, secret=SECRET)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def folders() -> Iterator[dict[str, Path]]:
    """A VAR_DIR per process, none inside another."""
    with tempfile.TemporaryDirectory(prefix="no-shared-disk-") as root:
        named = {
            name: Path(root) / name for name in ("web", "downloads", "images", "labs", "callbacks")
        }
        for folder in named.values():
            folder.mkdir()
        yield named


def own_folder(folder: Path) -> dict[str, str]:
    return {
        "VAR_DIR": str(folder / "var"),
        "MEDIA_ROOT": str(folder / "var" / "media"),
        "DJANGO_SECRET_KEY": SECRET_KEY,
    }


@pytest.fixture
def web(settings: Any, bucket: Bucket, folders: dict[str, Path]) -> Iterator[Web]:
    # The test process checks documents the workers wrote: it signs and addresses file URLs
    # as they do.
    settings.SECRET_KEY = SECRET_KEY
    with gunicorn_serving(
        workers=1, **own_folder(folders["web"]), **bucket.environment(), ALLOW_PRIVATE_URLS="1"
    ) as served:
        settings.SANDBOX_BASE_URL = settings.LIVE_BASE_URL = served.url
        yield served


@pytest.fixture
def workers(
    django_db_blocker: Any, bucket: Bucket, web: Web, folders: dict[str, Path]
) -> Iterator[Workers]:
    purge_queues()
    kinds = {
        "images": (("images",), "prefork", 1, True),
        "downloads": (("downloads",), "threads", 2, False),
        "labs": (("labs",), "threads", 2, False),
        "callbacks": (("callbacks", "sweeps"), "threads", 2, False),
    }
    members = {}
    for name, (queues, pool, concurrency, beat) in kinds.items():
        env = worker_environment(
            folders[name],
            web.url,
            **own_folder(folders[name]),
            **bucket.environment(),
            SITEFLOW_POLL_BASE_SECONDS="0.5",
            SITEFLOW_POLL_MAX_SECONDS="1",
        )
        members[name] = Worker(env, folders[name], queues, pool, concurrency, beat, name=name)
    running = Workers(members)
    running.start()
    try:
        wait_for("the workers to consume", running.ready, running)
        yield running
    finally:
        with django_db_blocker.unblock():
            running.kill()
        purge_queues()


def files_under(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file() and "media" in path.parts]


def test_an_order_completes_with_every_file_in_the_bucket_and_none_on_any_disk(
    merchant: CreatedMerchant,
    site: SiteflowServer,
    bucket: Bucket,
    web: Web,
    workers: Workers,
    folders: dict[str, Path],
    httpserver: HTTPServer,
) -> None:
    siteflow_lab(site)
    photo = serve(httpserver, "/photo.jpg", jpeg_bytes(1200, 1800), "image/jpeg")
    api = requests.Session()
    api.headers["X-API-Key"] = merchant.live_api_key
    body = order_body(items=[{"sku": "GLOBAL-PHO-4X6", "copies": 1, "assets": [{"url": photo}]}])

    # When a Live order is posted to the web process
    created = api.post(f"{web.url}/v4.0/orders", json=body, timeout=30)
    assert created.status_code == 200, created.text
    order_id = created.json()["order"]["id"]

    # Then the downloads and images workers take it to the Site Flow lab, which fetches the
    # print file through the web process's signed URL (redirected to the bucket)
    at_lab = Order.objects.filter(id=pk(order_id), pipeline_step=PipelineStep.PRODUCTION)
    wait_for(f"{order_id} at the lab", at_lab.exists, workers, timeout=120)
    shipment = Shipment.objects.get(order_id=pk(order_id))
    [(print_url, status)] = site.fetched.items()
    assert status == 200
    assert print_url.startswith(f"{web.url}/media/")

    # And once the lab ships it, the order completes
    site.ship(
        shipment.public_id,
        tracking_number="RM1GB",
        tracking_url="https://track.example/RM1GB",
        carrier_name="Royal Mail",
        carrier_service="Tracked 48",
        shipped_at="2026-03-02T09:30:00Z",
    )
    done = Order.objects.filter(id=pk(order_id), pipeline_step=PipelineStep.DONE)
    wait_for(f"{order_id} to complete", done.exists, workers, timeout=60)
    assert Order.objects.get(id=pk(order_id)).stage == Stage.COMPLETE

    # Every file is in the bucket, none on any process's disk
    asset = Asset.objects.get(item__order_id=pk(order_id))
    assert {asset.source_file, asset.print_file, asset.thumbnail} <= set(bucket.keys())
    assert all(files_under(folder) == [] for folder in folders.values())

    # And the thumbnail in the order's body is served: a redirect to the bucket, then the image
    shown = api.get(f"{web.url}/v4.0/orders/{order_id}", timeout=30).json()["order"]
    thumbnail = urlsplit(shown["items"][0]["assets"][0]["thumbnailUrl"])
    answer = requests.get(
        f"{web.url}{thumbnail.path}?{thumbnail.query}", allow_redirects=False, timeout=30
    )
    assert answer.status_code == 302
    assert answer.headers["Location"].startswith(f"{bucket.endpoint}/{bucket.name}/")
    image = requests.get(answer.headers["Location"], timeout=30)
    assert image.status_code == 200
    with Image.open(io.BytesIO(image.content)) as opened:
        assert opened.format == "JPEG"
