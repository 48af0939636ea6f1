"""``make run`` as a newcomer meets it: from a clone, with no root, on the port they choose.

The stack tests start ``make run`` once for the module in a copy of the checkout, on the
embedded default (SQLite, the filesystem broker), on a free port that is not 8000.
"""

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests
from pytest_httpserver import HTTPServer
from standardwebhooks.webhooks import Webhook

from config.env import BASE_DIR
from tests.support.local_stack import (
    MAKE_RUN_MARKS,
    LocalStack,
    checkout_copy,
    make_run,
    newcomer_environment,
)
from tests.support.servers import Receiver
from tests.support.web import free_port, wait_until_listening

# Each test starts from what git holds (a clone, or the files a clone would hold).
pytestmark = MAKE_RUN_MARKS


def test_make_run_in_a_fresh_clone_invokes_no_apt_get_sudo_or_nginx(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(BASE_DIR), str(clone)], check=True)

    dry_run = subprocess.run(
        ["make", "-n", "run"],
        cwd=clone,
        env=newcomer_environment(),
        capture_output=True,
        text=True,
        check=True,
    )

    commands = dry_run.stdout
    # What it does run: the install (a fresh clone has no .venv), then the service.
    assert "-m venv .venv" in commands
    assert "--require-hashes -r requirements/dev.lock" in commands
    assert "manage.py migrate --noinput" in commands
    assert "scripts/run_all.py" in commands
    for word in ("apt-get", "sudo", "nginx", "chromium"):
        assert word not in commands, commands


def urls_in(document: Any, at: str = "") -> Iterator[tuple[str, str]]:
    """Every string in ``document`` that is an http(s) URL, with its path (``items[0].url``)."""
    if isinstance(document, dict):
        for key, value in document.items():
            yield from urls_in(value, f"{at}.{key}" if at else key)
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from urls_in(value, f"{at}[{index}]")
    elif isinstance(document, str) and re.match(r"https?://", document):
        yield at, document


def the_service_made(path: str) -> bool:
    """URLs in an order that the merchant or the lab gave, not this service."""
    return not (path.endswith("callbackUrl") or path.endswith("tracking.url"))


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


def order_body(image_url: str, **more: Any) -> dict[str, Any]:
    return {
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
                "sizing": "fillPrintArea",
                "assets": [{"printArea": "default", "url": image_url}],
            }
        ],
        **more,
    }


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    checkout = checkout_copy(tmp_path_factory.mktemp("checkout"))
    with make_run(checkout) as running:
        yield running


def test_make_run_prints_the_demo_keys_and_photo_and_serves_the_photo(stack: LocalStack) -> None:
    assert stack.port != 8000
    demo = demo_values(stack)
    assert demo["API"] == stack.url
    assert demo["DEMO_IMAGE_URL"] == f"{stack.url}/demo/photo.jpg"
    for name in ("API", "SANDBOX_API_KEY", "LIVE_API_KEY", "DEMO_IMAGE_URL"):
        assert f"\n{name}={demo[name]}\n" in stack.log()
    # The Site Flow stand-in runs only when asked (tests/config/test_make_run_siteflow.py).
    assert "siteflow-standin" not in stack.log()
    assert "SITEFLOW_STANDIN_URL" not in demo

    photo = requests.get(demo["DEMO_IMAGE_URL"], timeout=30)
    assert photo.status_code == 200
    assert photo.headers["Content-Type"] == "image/jpeg"
    assert photo.content.startswith(b"\xff\xd8")


def test_every_url_the_service_hands_out_names_the_port_make_run_serves_on(
    stack: LocalStack, httpserver: HTTPServer
) -> None:
    receiver = Receiver()
    httpserver.expect_request("/hooks", method="POST").respond_with_handler(receiver.handle)
    demo = demo_values(stack)
    sandbox = {"X-API-Key": demo["SANDBOX_API_KEY"]}

    # A Sandbox order of the demo photo (served on loopback), followed to Complete.
    created = requests.post(
        f"{stack.url}/v4.0/orders",
        json=order_body(demo["DEMO_IMAGE_URL"], callbackUrl=httpserver.url_for("/hooks")),
        headers=sandbox,
        timeout=30,
    )
    assert created.status_code == 200, created.text
    order_id = created.json()["order"]["id"]
    complete = "com.service.order.status.stage.changed#Complete"
    wait_for(lambda: complete in receiver.types(order_id), 240, "the order's Complete callback")
    order = requests.get(f"{stack.url}/v4.0/orders/{order_id}", headers=sandbox, timeout=30)

    made = [(p, u) for p, u in urls_in(order.json()["order"]) if the_service_made(p)]
    assert {p for p, _ in made} >= {"items[0].assets[0].thumbnailUrl", "items[0].thumbnailUrl"}
    for path, url in made:
        assert url.startswith(f"{stack.url}/"), (path, url)
    events = [e for e in receiver.events() if e["subject"] == order_id]
    assert events
    for event in events:
        assert event["source"] == f"{stack.url}/v4.0/Orders/"
        for path, url in urls_in(event["data"]):
            if the_service_made(path):
                assert url.startswith(f"{stack.url}/"), (event["type"], path, url)

    # A Live order of a merchant billed by card waits for payment on this service's page.
    card = stack.manage("create_merchant", "--name", "Card Prints", "--billing", "card")
    live_key = re.search(r"^LIVE_API_KEY=(\S+)$", card, flags=re.MULTILINE)
    assert live_key is not None, card
    live = {"X-API-Key": live_key.group(1)}
    created = requests.post(
        f"{stack.url}/v4.0/orders",
        json=order_body(demo["DEMO_IMAGE_URL"]),
        headers=live,
        timeout=30,
    )
    assert created.status_code == 200, created.text
    live_id = created.json()["order"]["id"]
    waiting = requests.get(f"{stack.url}/v4.0/orders/{live_id}", headers=live, timeout=30).json()
    (issue,) = waiting["order"]["status"]["issues"]
    assert issue["authorisationDetails"]["authorisationUrl"] == (
        f"{stack.url}/dashboard/pay/{live_id}"
    )


def test_a_sign_up_mail_is_written_under_var_with_one_line_naming_it(stack: LocalStack) -> None:
    session = requests.Session()
    form = session.get(f"{stack.url}/dashboard/signup", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert token is not None

    sent = session.post(
        f"{stack.url}/dashboard/signup",
        data={
            "csrfmiddlewaretoken": token.group(1),
            "name": "Newcomer Prints",
            "email": "newcomer@example.com",
            "password": "a-long-enough-passphrase",
        },
        timeout=30,
    )

    assert sent.status_code == 200
    line = wait_for(
        lambda: re.search(
            r"Mail 'Confirm your email address' to newcomer@example.com: (\S+)", stack.log()
        ),
        30,
        "the mail's line",
    )
    path = Path(line.group(1))
    assert path.parent == stack.checkout / "var" / "mail"
    assert f"{stack.url}/dashboard/verify?token=" in path.read_text()


def quickstart_commands() -> list[str]:
    """The ``sh`` blocks of the README's quickstart, in order."""
    readme = (BASE_DIR / "README.md").read_text()
    section = readme.split("\n## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)


def test_the_readme_quickstart_run_as_written_completes_the_demo_order(stack: LocalStack) -> None:
    commands = quickstart_commands()
    assert commands[0] == "make run\n"  # the `stack` fixture runs it
    # The receiver listens on a free port rather than the README's 9000 (tests run side by side).
    receiver_port = str(free_port())
    commands = [command.replace("9000", receiver_port) for command in commands[1:]]
    (receiver_command,) = [c for c in commands if "callback_receiver.py" in c]
    shell_commands = [c for c in commands if c != receiver_command]
    # A second shell in the checkout: a newcomer's environment, nothing of this stack's.
    shell = newcomer_environment()

    receiver = subprocess.Popen(
        ["bash", "-c", receiver_command],
        cwd=stack.checkout,
        env=shell,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    received: list[str] = []
    assert receiver.stdout is not None
    stream = receiver.stdout
    reader = threading.Thread(
        target=lambda: received.extend(line.decode() for line in iter(stream.readline, b"")),
        daemon=True,
    )
    reader.start()
    try:
        wait_until_listening(int(receiver_port), receiver, "the receiver", seconds=30)
        marker = "--- next command ---"
        script = "set -e\n" + "".join(f"echo '{marker}'\n{c}" for c in shell_commands)
        result = subprocess.run(
            ["bash", "-c", script],
            cwd=stack.checkout,
            env=shell,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, (result.stdout, result.stderr)
        # The Complete callback is sent once the stage has changed: it may follow the loop.
        complete = "com.service.order.status.stage.changed#Complete"
        wait_for(lambda: any(complete in line for line in received), 60, "the Complete callback")
    finally:
        os.killpg(receiver.pid, signal.SIGTERM)
        receiver.wait(timeout=30)
        reader.join(timeout=5)

    outputs = result.stdout.split(f"{marker}\n")[1:]
    assert [c.split()[0] for c in shell_commands] == [".", "curl", "curl", "curl", "until"]
    _, products, quote, created, _ = (o.strip() for o in outputs)
    # The photo prints shipping to GB, a line each: one screen, not the whole catalogue.
    skus = [line.split(" | ")[0] for line in products.splitlines()]
    assert "GLOBAL-PHO-8X10" in skus
    assert all(sku.startswith("GLOBAL-PHO-") for sku in skus)
    assert len(products.splitlines()) <= 60
    assert json.loads(quote)["quotes"][0]["shipmentMethod"] == "Standard"
    created_order = json.loads(created)
    assert created_order["outcome"] == "Created"
    order_id = created_order["order"]["id"]
    # The follow loop printed each stage it saw and stopped at Complete.
    stages = re.findall(r'"stage": *"([A-Za-z]+)"', result.stderr)
    assert stages[-1] == "Complete" and set(stages) <= {"InProgress", "Complete"}, stages

    # The receiver checked each callback with the secret `. var/demo.env` gave it, through the
    # documentation's snippet; it answered 204 to each, so each was delivered once.
    lines = [line.rstrip("\n") for line in received if not line.startswith("Receiving ")]
    assert lines and all(line.startswith("signature verified: ") for line in lines), lines
    types = [line.split(": ", 1)[1].split(" (order ")[0] for line in lines]
    assert all(f"(order {order_id}, sequence " in line for line in lines), lines
    # The three callbacks of a simple order, each once, in the order they happened.
    assert types == [
        "com.service.order.status.details.downloadAssets#Complete",
        "com.service.order.shipments.shipment#Shipped",
        complete,
    ]


def test_the_quickstart_receiver_refuses_a_callback_signed_with_another_secret(
    stack: LocalStack,
) -> None:
    port = free_port()
    shell = {**newcomer_environment(), **demo_values(stack)}
    receiver = subprocess.Popen(
        ["python3", "examples/callback_receiver.py", str(port)],
        cwd=stack.checkout,
        env=shell,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_until_listening(port, receiver, "the receiver", seconds=30)
        body = json.dumps({"type": "t", "subject": "ord_1", "sequence": 1})
        for secret, status in (
            (demo_values(stack)["SANDBOX_SIGNING_SECRET"], 204),
            ("whsec_" + "QUFB" * 8, 401),  # another secret
        ):
            now = datetime.now(UTC)
            answer = requests.post(
                f"http://127.0.0.1:{port}/",
                data=body.encode(),
                headers={
                    "webhook-id": "evt_1",
                    "webhook-timestamp": str(int(now.timestamp())),
                    "webhook-signature": Webhook(secret).sign("evt_1", now, body),
                },
                timeout=30,
            )
            assert answer.status_code == status, secret
    finally:
        os.killpg(receiver.pid, signal.SIGTERM)
        receiver.wait(timeout=30)


def test_the_printed_dashboard_sign_in_opens_the_demo_merchants_dashboard(
    stack: LocalStack,
) -> None:
    demo = demo_values(stack)
    names = ("SANDBOX_SIGNING_SECRET", "DASHBOARD_URL", "DASHBOARD_EMAIL", "DASHBOARD_PASSWORD")
    for name in names:
        assert f"\n{name}={demo[name]}\n" in stack.log()
    assert demo["DASHBOARD_URL"] == f"{stack.url}/dashboard/login"
    session = requests.Session()
    form = session.get(demo["DASHBOARD_URL"], timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert token is not None
    signed_in = session.post(
        demo["DASHBOARD_URL"],
        data={
            "csrfmiddlewaretoken": token.group(1),
            "username": demo["DASHBOARD_EMAIL"],
            "password": demo["DASHBOARD_PASSWORD"],
        },
        headers={"Referer": demo["DASHBOARD_URL"]},
        timeout=30,
    )
    assert signed_in.status_code == 200
    assert "Demo Merchant" in signed_in.text
    # The settings page shows the same Sandbox signing secret as var/demo.env.
    page = session.get(f"{stack.url}/dashboard/settings", timeout=30)
    assert demo["SANDBOX_SIGNING_SECRET"] in page.text


def test_the_sweeps_stay_out_of_the_log_unless_they_did_something(stack: LocalStack) -> None:
    # Beat queues three sweeps every 10 s: let it queue each a few times. Last in the module
    # (tests run in file order), so that the tests above, which follow orders, spend that wait.
    time.sleep(max(0.0, stack.ready_at + 35 - time.monotonic()))
    log = stack.log()
    assert "beat: Starting..." in log
    assert "Sending due task" not in log
    assert not re.search(r"sweep_task\[[^]]+\] received", log)
    for count in re.findall(r"sweep_task\[[^]]+\] succeeded in [0-9.]+s: (\S+)", log):
        assert int(count) > 0
