"""Every dashboard page speaks in words: no API field name (``authorisationDetails``,
``downloadAssets``) and no raw enum value (``NotStarted``, ``AwaitingPayment``) in what a person
reads. Code the merchant copies (ids, SKUs, keys, event types, payloads in ``<code>`` and
``<pre>``) is data and left out of the check."""

import re
from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient

from common.countries import COUNTRY_NAMES
from merchants.models import Environment, PauseMode
from merchants.services import CreatedMerchant
from orders import issues
from orders.actions import order_cancel
from orders.authorisation import order_payment_authorise
from orders.models import DetailState, Order, OrderIssue, Stage
from orders.pipeline.state_machine import order_submit_now
from tests.support.dashboard import signed_in_client
from tests.support.documents import document_rewritten
from tests.support.orders import order_allocated, order_create_via_api, order_via_api, photo_order
from tests.support.pipeline import run_in_process

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("catalogue")]

# A camelCase name (authorisationDetails) or a run-together PascalCase value (NotStarted).
RAW_NAME = re.compile(r"\b(?:[a-z]+(?:[A-Z][a-z0-9]*)+|(?:[A-Z][a-z0-9]+){2,})\b")
SKIPPED = {"script", "style", "code", "pre"}
# Proper names that look like one (Heard Island and McDonald Islands).
NAMES = {word for name in COUNTRY_NAMES.values() for word in RAW_NAME.findall(name)}
READ_ATTRIBUTES = ("aria-label", "alt", "placeholder", "title")


class _VisibleText(HTMLParser):
    """The text a person reads or hears: text outside code, and labels in attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIPPED:
            self.skipping.append(tag)
        if not self.skipping:
            self.parts += [value or "" for name, value in attrs if name in READ_ATTRIBUTES]

    def handle_endtag(self, tag: str) -> None:
        if self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def visible_text(html: str) -> str:
    parser = _VisibleText()
    parser.feed(html)
    return " ".join(" ".join(parser.parts).split())


def raw_names(html: str) -> list[str]:
    return [name for name in RAW_NAME.findall(visible_text(html)) if name not in NAMES]


def test_the_check_finds_raw_names_in_text_and_leaves_code_alone() -> None:
    html = (
        '<p>Steps: <span>NotStarted</span></p><p title="follow authorisationDetails">x</p>'
        '<code>AwaitingPayment</code><pre>{"downloadAssets": 1}</pre><script>var fooBar;</script>'
    )

    assert raw_names(html) == ["NotStarted", "authorisationDetails"]


def _pause(merchant: CreatedMerchant, mode: str, minutes: int = 0) -> None:
    Environment.objects.filter(merchant=merchant.merchant, kind="Sandbox").update(
        pause_mode=mode, pause_minutes=minutes
    )


@pytest.fixture
def orders_in_every_state(
    card: CreatedMerchant,
    sandbox_api: APIClient,
    live_api: APIClient,
    httpserver: HTTPServer,
    settings: Any,
) -> dict[str, str]:
    """The merchant's orders, one in each state a page shows differently."""
    settings.ALLOW_PRIVATE_URLS = True
    settings.LAB_SIMULATOR_SECONDS = 0
    complete = photo_order(sandbox_api, httpserver, "done")
    assert run_in_process(complete).stage == Stage.COMPLETE
    allocated = order_allocated(sandbox_api)
    troubled = order_via_api(sandbox_api)
    OrderIssue.objects.create(
        order=troubled,
        object_id=troubled.public_id,
        error_code=issues.ITEM_UNAVAILABLE,
        description="GLOBAL-PHO-4X6 is unavailable.",
    )
    Order.objects.filter(id=troubled.id).update(download_assets=DetailState.ERROR)
    document_rewritten(troubled)
    cancelled = order_via_api(sandbox_api)
    assert order_cancel(order=cancelled).outcome == "Cancelled"
    awaiting = order_create_via_api(live_api)
    paid = order_via_api(live_api)
    assert order_payment_authorise(order=paid).authorised
    _pause(card, PauseMode.MINUTES, 30)
    held = order_create_via_api(sandbox_api, outcome="OnHold")
    _pause(card, PauseMode.INDEFINITE)
    held_by_hand = order_create_via_api(sandbox_api, outcome="OnHold")
    submitted = order_via_api(sandbox_api, outcome="OnHold")
    assert order_submit_now(order=submitted)
    return {
        "complete": complete,
        "allocated": allocated.public_id,
        "troubled": troubled.public_id,
        "cancelled": cancelled.public_id,
        "awaiting": awaiting,
        "paid": paid.public_id,
        "held": held,
        "held_by_hand": held_by_hand,
        "submitted": submitted.public_id,
    }


def test_no_dashboard_page_shows_an_api_name_or_a_raw_enum_value(
    card: CreatedMerchant, orders_in_every_state: dict[str, str]
) -> None:
    owner: Client = signed_in_client(card.merchant)
    pages = [
        "/dashboard/",
        "/dashboard/orders",
        "/dashboard/orders?attention=1",
        "/dashboard/catalogue",
        "/dashboard/settings",
        "/dashboard/settings/rotate-secret",
        "/dashboard/callbacks",
        "/dashboard/invoices",
        "/dashboard/keys",
    ]
    for order_id in orders_in_every_state.values():
        pages += [
            f"/dashboard/orders/{order_id}",
            f"/dashboard/pay/{order_id}",
            f"/dashboard/orders/{order_id}/cancel",
        ]
    found: dict[str, list[str]] = {}
    for kind in ("Sandbox", "Live"):
        owner.post("/dashboard/environment", {"kind": kind})
        for path in pages:
            response = owner.get(path)
            assert response.status_code == 200, (path, response.status_code)
            if names := raw_names(response.content.decode()):
                found[f"{kind} {path}"] = names
        issued = owner.post("/dashboard/keys", {"name": "shop"})
        if names := raw_names(issued.content.decode()):
            found[f"{kind} new key"] = names

    assert found == {}
