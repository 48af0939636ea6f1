"""``SITEFLOW_STANDIN=1 make run``: the Site Flow stand-in beside the service, the demo Site Flow
lab sf1 pointed at it, a Live order of the demo merchant made there and shipped, and the Site
Flow bulk shipping update (the admin's tool, a file uploaded) changing its carrier at the
stand-in first, while staff held it there. One ``make run`` in a copy of the checkout for the
module, on the embedded default, on free ports."""

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from tests.support.local_stack import MAKE_RUN_MARKS, LocalStack, checkout_copy, make_run
from tests.support.web import free_port

pytestmark = MAKE_RUN_MARKS
# From submission to shipped at the stand-in (time on hold not counted).
SHIP_SECONDS = 45
ADMIN_PASSWORD = "a-long-enough-admin-passphrase"


def wait_for(condition: Callable[[], Any], seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)
    return found


def demo_values(stack: LocalStack) -> dict[str, str]:
    text = (stack.checkout / "var" / "demo.env").read_text()
    return dict(re.findall(r"^export ([A-Z_]+)=(\S+)$", text, flags=re.MULTILINE))


@pytest.fixture(scope="module")
def standin_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, standin_port: int) -> Iterator[LocalStack]:
    checkout = checkout_copy(tmp_path_factory.mktemp("checkout"))
    with make_run(
        checkout,
        SITEFLOW_STANDIN="1",
        SITEFLOW_STANDIN_PORT=str(standin_port),
        SITEFLOW_STANDIN_PRINT_SECONDS="5",
        SITEFLOW_STANDIN_SHIP_SECONDS=str(SHIP_SECONDS),
        SITEFLOW_POLL_MAX_SECONDS="5",
    ) as running:
        yield running


def standin_orders(port: int) -> list[dict[str, Any]]:
    """The stand-in's own list of its orders (``GET /``)."""
    listed: list[dict[str, Any]] = requests.get(f"http://127.0.0.1:{port}/", timeout=10).json()[
        "orders"
    ]
    return listed


def admin_session(stack: LocalStack) -> tuple[requests.Session, str]:
    """An administrator signed in to the admin, as ``create_staff`` makes one, and the staff
    key it printed."""
    made = stack.manage(
        "create_staff", "--username", "ops-admin", "--password", ADMIN_PASSWORD, "--administrator"
    )
    key = re.search(r"^STAFF_API_KEY=(\S+)$", made, flags=re.MULTILINE)
    assert key is not None, made
    session = requests.Session()
    login = f"{stack.url}/admin/login/"
    form = session.get(login, timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert token is not None
    signed_in = session.post(
        login,
        data={
            "csrfmiddlewaretoken": token.group(1),
            "username": "ops-admin",
            "password": ADMIN_PASSWORD,
            "next": "/admin/",
        },
        headers={"Referer": login},
        timeout=30,
    )
    assert signed_in.status_code == 200 and "ops-admin" in signed_in.text, signed_in.text[-2000:]
    return session, key.group(1)


def test_a_live_order_goes_to_the_stand_in_and_ships_with_the_carrier_the_shipping_tool_set(
    stack: LocalStack, standin_port: int
) -> None:
    standin_url = f"http://127.0.0.1:{standin_port}/api"
    assert f"Site Flow stand-in on {standin_url}" in stack.log()
    demo = demo_values(stack)
    assert demo["SITEFLOW_STANDIN_URL"] == standin_url
    live = {"X-API-Key": demo["LIVE_API_KEY"]}
    session, staff_key = admin_session(stack)

    # A Live order of the demo merchant: a photo print to London, at the demo Site Flow lab.
    created = requests.post(
        f"{stack.url}/v4.0/orders",
        json={
            "shippingMethod": "Standard",
            "recipient": {
                "name": "Ada Lovelace",
                "address": {
                    "line1": "1 Analytical Row",
                    "townOrCity": "London",
                    "postalOrZipCode": "SW1A 1AA",
                    "countryCode": "GB",
                },
            },
            "items": [
                {
                    "sku": "GLOBAL-PHO-8X10",
                    "copies": 1,
                    "attributes": {"finish": "gloss"},
                    "sizing": "fillPrintArea",
                    "assets": [{"printArea": "default", "url": demo["DEMO_IMAGE_URL"]}],
                }
            ],
        },
        headers=live,
        timeout=30,
    )
    assert created.status_code == 200, created.text
    order_id = created.json()["order"]["id"]
    order_url = f"{stack.url}/v4.0/orders/{order_id}"

    def shipment() -> dict[str, Any]:
        shown = requests.get(order_url, headers=live, timeout=30).json()["order"]
        first: dict[str, Any] = shown["shipments"][0]
        return first

    def at_standin() -> list[dict[str, Any]]:
        return [o for o in standin_orders(standin_port) if o["sourceOrderId"] == shipment()["id"]]

    (sent,) = wait_for(at_standin, 240, "the lab order at the stand-in")
    assert shipment()["fulfillmentLocation"]["labCode"] == "sf1"
    assert sent["carrierAlias"] == "royalmail-48"
    assert sent["status"] in ("printready", "inproduction")
    order_file = stack.checkout / "var" / "siteflow-standin" / "orders.json"
    assert "PHOTO-8X10-GLOSS" in order_file.read_text()  # the lab's code for the variant

    # Staff hold it at the stand-in (so it waits for the shipping update however slow this
    # machine is), then the Site Flow shipping update in the admin: a file naming the lab
    # order, reviewed, then submitted; its job changes the carrier at the stand-in.
    operations = f"{order_url}/shipments/{shipment()['id']}"
    held = requests.post(f"{operations}/hold", headers={"X-API-Key": staff_key}, timeout=60)
    assert held.status_code == 200 and held.json()["success"] is True, held.text
    assert at_standin()[0]["held"] is True
    tool = f"{stack.url}/admin/backoffice/bulkjob/shipping/"
    form = session.get(tool, timeout=30)
    assert form.status_code == 200
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert token is not None
    sheet = f"Lab Order Id,Message,Last Activity\n{shipment()['id']},,\n".encode()
    fields = {
        "csrfmiddlewaretoken": token.group(1),
        "shippingSpeed": "Express",
        "carrierAlias": "dhl-express",
    }

    def posted(**more: str) -> requests.Response:
        return session.post(
            tool,
            data={**fields, **more},
            files={"file": ("shipping.csv", sheet, "text/csv")},
            headers={"Referer": tool},
            timeout=30,
        )

    review = posted()
    assert review.status_code == 200
    assert "1 of 1 lab orders will get carrier dhl-express (Express)." in review.text
    job = posted(confirm="1")
    assert job.status_code == 200 and "/progress/" in job.url, job.text[-2000:]
    pages: list[str] = []

    def row_done() -> bool:
        pages.append(session.get(job.url, timeout=30).text)
        return "Carrier changed to dhl-express (Express)." in pages[-1]

    try:
        wait_for(row_done, 240, "the job's row done")
    except AssertionError:
        rows = re.findall(r"(?s)<table.*?</table>", pages[-1])
        raise AssertionError((rows or pages)[-1][-3000:], stack.log()[-6000:]) from None
    assert at_standin()[0]["carrierAlias"] == "dhl-express"
    assert shipment()["carrier"] == {"name": "DHL", "service": "Express"}
    released = requests.post(f"{operations}/unhold", headers={"X-API-Key": staff_key}, timeout=60)
    assert released.status_code == 200 and released.json()["success"] is True, released.text

    # The stand-in ships it with that carrier; the service's polling sees it.
    shipped = wait_for(
        lambda: (found := shipment())["status"] == "Shipped" and found,
        SHIP_SECONDS + 180,
        "the shipment shipped",
    )
    (at_site,) = at_standin()
    assert at_site["status"] == "shipped"
    assert shipped["carrier"] == {"name": "DHL", "service": "Express"}
    assert shipped["tracking"] == {
        "number": at_site["trackingNumber"],
        "url": f"https://tracking.example.com/siteflow-standin/{at_site['trackingNumber']}",
    }
    assert "siteflow-standin: " in stack.log()
    assert not re.search(r"siteflow-standin exited", stack.log())
