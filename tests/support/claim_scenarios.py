"""The pipeline's claims (``orders.pipeline.claims``) in scenarios that end the same on every
database: ``claim_outcomes`` runs them on the database of this process and says how each ended,
orders named by their part in it, never by id, so two databases' outcomes compare as they are.

``outcomes_printed`` does it on a database of its own: in a process on the embedded default
(no ``DATABASE_URL``: a SQLite file under ``VAR_DIR``), it migrates that database and prints the
outcomes as JSON (``tests/orders/test_claims_alike.py`` runs it so beside the suite's own
database, PostgreSQL).

Claims race in threads, each with its own connection, as the workers' claims do, each write
of an order row delayed (``_late_order_writes``) so that claimers overlap between reading an
order and claiming it: a claim that did not lock what it read would take an order twice. What
they queue is recorded instead of sent (the broker is no part of a claim).
"""

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from unittest import mock

from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from orders.models import Order, PipelineStep
from orders.pipeline.claims import downloads_wake, order_claim
from tests.merchants.factories import EnvironmentFactory
from tests.orders.factories import OrderFactory

# What every scenario ends with, on any database.
EXPECTED: dict[str, Any] = {
    "one claimer": {
        "due": ["claimed", "refused"],
        "due later": ["refused", "refused"],
        "at another step": ["refused", "refused"],
        "done": ["refused", "refused"],
        "claimed by another": ["refused", "refused"],
        "its claim expired": ["claimed", "refused"],
    },
    "racing claimers": {"claims of each order": [1] * 6, "errors": []},
    "download share": {
        "racing": {"merchant's two orders": ["claimed", "deferred"], "neighbour": "claimed"},
        "woken once a download ends": ["deferred"],
        "queued": [["deferred", "Download"]],
        "the woken one claimed": "claimed",
    },
}


def claim_outcomes() -> dict[str, Any]:
    """Every scenario run on this process's database (its data made here, and left)."""
    with override_settings(DOWNLOADS_PER_MERCHANT=1, DOWNLOAD_DEFER_SECONDS=30):
        return {
            "one claimer": _one_claimer(),
            "racing claimers": _racing_claimers(),
            "download share": _download_share(),
        }


def _claimed(order: Order, claimed: Order | None) -> str:
    """``claimed`` (``order_claim``'s answer for ``order``) in words: ``claimed`` only when the
    row holds that claim and the order came with its environment and merchant."""
    if claimed is None:
        row = Order.objects.get(id=order.id)
        deferred = row.download_deferred_at is not None and row.claimed_until is None
        later = row.due_at is not None and row.due_at > timezone.now()
        return "deferred" if deferred and later else "refused"
    stored = Order.objects.get(id=order.id)
    held = (stored.claimed_until, stored.claim_token) == (
        claimed.claimed_until,
        claimed.claim_token,
    )
    loaded = claimed.environment.merchant_id == order.environment.merchant_id
    live = stored.claimed_until is not None and stored.claimed_until > timezone.now()
    return "claimed" if held and loaded and live else "wrong"


def _one_claimer() -> dict[str, list[str]]:
    """Each order claimed twice in a row at the Allocate step."""
    now = timezone.now()
    past, later = now - timedelta(seconds=5), now + timedelta(minutes=1)
    orders = {
        "due": OrderFactory.create(allocating=True, due_at=past),
        "due later": OrderFactory.create(allocating=True, due_at=later),
        "at another step": OrderFactory.create(preparing=True, due_at=past),
        "done": OrderFactory.create(complete=True),
        "claimed by another": OrderFactory.create(
            allocating=True, due_at=past, claimed_until=later, claim_token=1
        ),
        "its claim expired": OrderFactory.create(
            allocating=True, due_at=past, claimed_until=past, claim_token=2
        ),
    }
    return {
        part: [
            _claimed(order, order_claim(order_id=order.id, step=PipelineStep.ALLOCATE))
            for _ in range(2)
        ]
        for part, order in orders.items()
    }


def _late_order_writes(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
) -> Any:
    """A connection's execute wrapper: an UPDATE of the order table sent 50 ms late."""
    if sql.startswith(f'UPDATE "{Order._meta.db_table}"'):
        time.sleep(0.05)
    return execute(sql, params, many, context)


def _in_threads(work: list[Callable[[], None]]) -> list[str]:
    """Run each of ``work`` in a thread of its own, all started together, its order writes
    late; the errors raised."""
    start = threading.Barrier(len(work))
    errors: list[str] = []

    def run(one: Callable[[], None]) -> None:
        try:
            start.wait(30)
            with connection.execute_wrapper(_late_order_writes):
                one()
        except BaseException as exc:
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(one,)) for one in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return errors


def _racing_claimers() -> dict[str, Any]:
    """Four claimers take six due orders, each trying every order in the same order."""
    past = timezone.now() - timedelta(seconds=5)
    ids = [OrderFactory.create(allocating=True, due_at=past).id for _ in range(6)]
    taken: list[tuple[int, int | None]] = []

    def claimer() -> None:
        for order_id in ids:
            claimed = order_claim(order_id=order_id, step=PipelineStep.ALLOCATE)
            if claimed is not None:
                taken.append((order_id, claimed.claim_token))

    errors = _in_threads([claimer] * 4)
    claims = Counter(order_id for order_id, _ in taken)
    stored = dict(Order.objects.filter(id__in=ids).values_list("id", "claim_token"))
    return {
        "claims of each order": [claims[order_id] for order_id in ids],
        "errors": errors + [f"{i}: not the claim stored" for i, t in taken if stored[i] != t],
    }


def _download_share() -> dict[str, Any]:
    """A merchant's two orders and a neighbour's claimed at once at the Download step, one
    download a merchant; then the merchant's download ends, and its deferred order is woken."""
    past = timezone.now() - timedelta(seconds=5)
    merchant, neighbour = EnvironmentFactory.create(), EnvironmentFactory.create()
    orders = [OrderFactory.create(environment=merchant, due_at=past) for _ in range(2)]
    other = OrderFactory.create(environment=neighbour, due_at=past)
    answers: dict[int, Order | None] = {}

    def claim(order: Order) -> Callable[[], None]:
        def claimer() -> None:
            answers[order.id] = order_claim(order_id=order.id, step=PipelineStep.DOWNLOAD)

        return claimer

    errors = _in_threads([claim(order) for order in (*orders, other)])
    ended = {order.id: _claimed(order, answers.get(order.id)) for order in (*orders, other)}
    racing = {
        "merchant's two orders": sorted(ended[order.id] for order in orders),
        "neighbour": ended[other.id],
    }
    parts = {
        order.id: "deferred" if ended[order.id] == "deferred" else "downloading" for order in orders
    }
    # The download ends: the order moves on and its claim is released.
    downloading = [order_id for order_id, part in parts.items() if part == "downloading"]
    Order.objects.filter(id__in=downloading).update(
        pipeline_step=PipelineStep.ALLOCATE, claimed_until=None, claim_token=None
    )
    queued: list[list[str]] = []

    def record(*, order_id: int, step: str) -> None:
        queued.append([parts[order_id], str(step)])

    with mock.patch("orders.pipeline.claims.order_enqueue", record):
        woken = downloads_wake(merchant_id=merchant.merchant_id)
    claimed = [
        _claimed(order, order_claim(order_id=order.id, step=PipelineStep.DOWNLOAD))
        for order in orders
        if order.id in woken
    ]
    return {
        "racing": racing if not errors else {"errors": errors},
        "woken once a download ends": [parts[order_id] for order_id in woken],
        "queued": queued,
        "the woken one claimed": claimed[0] if len(claimed) == 1 else claimed,
    }


def outcomes_printed() -> None:
    """Migrate this process's database, run the scenarios on it and print which database it is
    (``sqlite``, ``postgresql``) and their outcomes."""
    call_command("migrate", verbosity=0)
    print(json.dumps({"database": connection.vendor, "outcomes": claim_outcomes()}))
