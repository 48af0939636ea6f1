"""An administrator (not a superuser) adds a Site Flow lab, a lab product with variant codes and
a shipping rate through the admin's forms while a worker runs; the next Live order is
allocated to the new lab and submitted to its site with the variant's code, by the worker
started before the change, never restarted (decisions.md, "Staff, wave 4"; the catalogue
version's triggers, ``labs.catalogue``). On PostgreSQL (this test database, a real Celery
worker) and on the embedded default (SQLite and the filesystem broker: ``make run``'s
processes, ``scripts/run_all.py``, in a folder of their own).

The simulator makes no Live order here (``SIMULATOR_PRODUCES_LIVE`` off), so before the change
no lab makes a Live order at all, and after it only the new one does."""

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from labs.models import Lab, LabProduct
from merchants.services import CreatedMerchant
from orders.models import Shipment
from products.models import Product
from staff.services import staff_user_save
from tests.support.catalogue_admin import (
    AdminSession,
    added_id,
    lab_form,
    lab_product_form,
    shipping_rate_form,
)
from tests.support.images import jpeg_bytes
from tests.support.local_stack import LocalStack, run_all
from tests.support.orders import order_body, order_create_via_api, pk
from tests.support.servers import serve
from tests.support.siteflow import SiteflowServer
from tests.support.staff import signed_in
from tests.support.web import needs_shared_database
from tests.support.worker import (
    CAN_RUN_WORKER,
    NO_WORKER,
    Worker,
    purge_queues,
    wait_for,
    worker_environment,
)

pytestmark = [pytest.mark.slow, pytest.mark.side_by_side]

TOKEN, SECRET = "token-admin-made", "siteflow-secret-admin-made"
CANVAS = "GLOBAL-CAN-10X10"
# What lab_product_form gives the ImageWrap canvas.
IMAGE_WRAP_CODE = "ADM-CAN-10-IW"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def site() -> Iterator[SiteflowServer]:
    server = SiteflowServer(token=TOKEN, secret=SECRET)
    server.start()
    yield server
    server.stop()


def canvas_order(image_url: str) -> dict[str, Any]:
    """The base order (one ImageWrap canvas to GB, Standard) of the image at ``image_url``."""
    body = order_body()
    body["items"][0]["assets"][0]["url"] = image_url
    return body


def submitted_items(site: SiteflowServer) -> list[tuple[str, str, int]]:
    """(sourceOrderId, sku, quantity) of every item the site received, inserts aside."""
    return [
        (source, item["sku"], item["quantity"])
        for source, order in site.orders.items()
        for item in order.submitted["orderData"]["items"]
        if not item["sourceItemId"].endswith("-inserts")
    ]


# --- PostgreSQL ------------------------------------------------------------------------------


@needs_shared_database
@pytest.mark.skipif(not CAN_RUN_WORKER, reason=NO_WORKER)
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalogue")
def test_a_lab_an_administrator_adds_makes_the_next_live_order_on_postgresql(
    live_server: Any,
    merchant: CreatedMerchant,
    live_api: APIClient,
    sandbox_api: APIClient,
    site: SiteflowServer,
    httpserver: HTTPServer,
    settings: Any,
    django_db_blocker: Any,
) -> None:
    settings.SIMULATOR_PRODUCES_LIVE = False
    settings.ALLOW_PRIVATE_URLS = True
    # The worker's base URL (the live server's), here too: the documents both write agree.
    settings.SANDBOX_BASE_URL = settings.LIVE_BASE_URL = live_server.url
    image = serve(httpserver, "/canvas.jpg", jpeg_bytes(1600, 1600), "image/jpeg")
    user, _ = staff_user_save(username="ada", administrator=True)
    assert not user.is_superuser
    administrator = signed_in(user)
    product = Product.objects.get(sku=CANVAS)

    with tempfile.TemporaryDirectory(prefix="catalogue-admin-") as folder:
        purge_queues()
        env = worker_environment(
            Path(folder),
            live_server.url,
            SIMULATOR_PRODUCES_LIVE="0",
            SITEFLOW_POLL_BASE_SECONDS="0.5",
            SITEFLOW_POLL_MAX_SECONDS="1",
        )
        worker = Worker(env=env, folder=Path(folder))
        worker.start()
        try:
            wait_for("the worker to consume", worker.ready, worker)
            # Given a worker holding the catalogue as it was: a Sandbox order allocated by it
            warm = order_create_via_api(sandbox_api, canvas_order(image))
            at_a_lab = Shipment.objects.filter(order_id=pk(warm))
            wait_for("the Sandbox order to be allocated", at_a_lab.exists, worker)
            assert not Lab.objects.filter(code="gb7").exists()

            # When the administrator adds a Site Flow lab, a lab product with variant codes and
            # a shipping rate through the admin's forms
            lab_id = _admin_added(administrator.post, site, product.pk)

            # Then a new Live order is allocated to the new lab and submitted to its site with
            # the variant's code, by the worker started before the change
            changed_at = time.monotonic()
            order_id = order_create_via_api(live_api, canvas_order(image))
            shipment = Shipment.objects.filter(order_id=pk(order_id))
            wait_for("the Live order at the new lab's site", lambda: site.orders, worker)
            took = time.monotonic() - changed_at
        finally:
            with django_db_blocker.unblock():
                worker.kill()
            purge_queues()

    [made] = shipment
    assert made.lab_code == "gb7"
    assert submitted_items(site) == [(made.public_id, IMAGE_WRAP_CODE, 2)]
    assert site.orders[made.public_id].submitted["destination"]["name"] == "admin-made"
    assert worker.runs == 1  # the same worker, never restarted
    assert took < 60
    assert LabProduct.objects.get(lab_id=lab_id).variant_codes["wrap=ImageWrap"] == (
        IMAGE_WRAP_CODE
    )


def _admin_added(post: Any, site: SiteflowServer, product_id: int) -> int:
    """Lab gb7 at ``site``, its ImageWrap canvas and its Standard rate to GB, added through
    the admin's add forms with ``post`` (a test client's or an ``AdminSession``'s); the lab's
    id."""
    added = post("/admin/labs/lab/add/", {**lab_form("gb7", site=site), "_continue": "1"})
    assert added.status_code == 302, added.content.decode()[:3000]
    lab_id = added_id(added.headers["Location"])
    for path, form in (
        ("/admin/labs/labproduct/add/", lab_product_form(lab_id, product_id)),
        ("/admin/labs/shippingrate/add/", shipping_rate_form(lab_id)),
    ):
        response = post(path, form)
        assert response.status_code == 302, response.content.decode()[:3000]
    return lab_id


# --- SQLite: make run's processes -------------------------------------------------------------


def _embedded_env(var: Path) -> dict[str, str]:
    """``make run``'s settings on the embedded default in ``var``, as a newcomer's shell."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL") and not k.startswith(("DJANGO_", "PYTEST"))
    }
    return {**clean, "VAR_DIR": str(var), "DJANGO_SETTINGS_MODULE": "config.settings.local"}


def _manage(var: Path, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=_embedded_env(var),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _demo_values(var: Path) -> dict[str, str]:
    """What ``setup_demo`` wrote to ``var/demo.env``."""
    lines = (var / "demo.env").read_text().splitlines()
    return dict(line.removeprefix("export ").split("=", 1) for line in lines if "=" in line)


def _order_shown(stack: LocalStack, key: str, order_id: str) -> dict[str, Any]:
    response = requests.get(
        f"{stack.url}/v4.0/orders/{order_id}", headers={"X-API-Key": key}, timeout=30
    )
    assert response.status_code == 200, response.text
    return dict(response.json()["order"])


def _waited(what: str, check: Any, stack: LocalStack, seconds: float = 90) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := check()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}\n{stack.log()[-6000:]}")
        time.sleep(0.2)
    return found


def test_a_lab_an_administrator_adds_makes_the_next_live_order_on_sqlite(
    tmp_path: Path, site: SiteflowServer
) -> None:
    var = tmp_path / "var"
    _manage(var, "migrate", "--no-input")
    _manage(var, "setup_demo")
    _manage(var, "create_staff", "--username", "ada", "--password", "a-long-password-1",
            "--administrator")  # fmt: skip
    keys = _demo_values(var)

    with run_all(
        var,
        SIMULATOR_PRODUCES_LIVE="0",
        LAB_SIMULATOR_SECONDS="1",
        SITEFLOW_POLL_BASE_SECONDS="0.5",
        SITEFLOW_POLL_MAX_SECONDS="1",
        WEB_CONCURRENCY="1",
        CELERY_CONCURRENCY="1",
        CELERY_THREADS="2",
        LABS_CONCURRENCY="1",
    ) as stack:
        image = f"{stack.url}/demo/photo.jpg"

        def create(key: str) -> str:
            response = requests.post(
                f"{stack.url}/v4.0/orders",
                json=canvas_order(image),
                headers={"X-API-Key": key},
                timeout=30,
            )
            assert response.status_code == 200, response.text
            return str(response.json()["order"]["id"])

        # Given workers holding the catalogue as it was: a Sandbox order allocated by them
        warm = create(keys["SANDBOX_API_KEY"])
        _waited(
            "the Sandbox order to be allocated",
            lambda: _order_shown(stack, keys["SANDBOX_API_KEY"], warm)["shipments"],
            stack,
        )
        started = stack.log().count(" started (pid ")

        # When the administrator adds a Site Flow lab, a lab product with variant codes and a
        # shipping rate through the admin's forms, signed in through its sign-in form
        admin = AdminSession(stack.url, "ada", "a-long-password-1")
        product_id = admin.option_value("/admin/labs/labproduct/add/", CANVAS)
        lab_id = _admin_added(admin.post, site, product_id)

        # Then a new Live order is allocated to the new lab and submitted to its site with
        # the variant's code, by the processes started before the change
        order_id = create(keys["LIVE_API_KEY"])
        _waited("the Live order at the new lab's site", lambda: site.orders, stack)
        shown = _order_shown(stack, keys["LIVE_API_KEY"], order_id)
        restarted = stack.log().count(" started (pid ") - started

    [shipment] = shown["shipments"]
    assert shipment["fulfillmentLocation"] == {"countryCode": "GB", "labCode": "gb7"}
    assert submitted_items(site) == [(shipment["id"], IMAGE_WRAP_CODE, 2)]
    assert site.orders[shipment["id"]].submitted["destination"]["name"] == "admin-made"
    assert restarted == 0
    assert lab_id > 0
