"""Claims behave alike on SQLite and on PostgreSQL: the same scenarios
(``tests.support.claim_scenarios``) end the same on the suite's database and on the embedded
default's SQLite, in a process of its own: which orders are claimed, none twice however many
claimers race for them, a merchant's download share kept under a race and its deferred order
woken when a download ends.

Where the database locks rows (PostgreSQL), a claim skips an order another transaction holds
instead of waiting for it; SQLite has no row locks and runs writing transactions one at a time.
"""

import json
import os
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from orders.models import Order, PipelineStep
from orders.pipeline.claims import order_claim
from tests.orders.factories import OrderFactory
from tests.support.claim_scenarios import EXPECTED, claim_outcomes
from tests.support.database import ON_POSTGRES, sessions_waiting_for_a_lock

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db(transaction=True)  # the claimers commit on their own


def _outcomes_on_sqlite(var: Path) -> Any:
    """``claim_outcomes`` on a fresh SQLite database of the embedded default in ``var``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL") and not k.startswith("PYTEST")
    }
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings.test", "VAR_DIR": str(var)})
    code = (
        "import django; django.setup(); "
        "from tests.support.claim_scenarios import outcomes_printed; outcomes_printed()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    printed = json.loads(result.stdout.splitlines()[-1])
    assert printed["database"] == "sqlite"
    return printed["outcomes"]


def test_claims_end_alike_on_sqlite_and_on_the_suites_database(tmp_path: Path) -> None:
    """The suite's database is PostgreSQL (``DATABASE_URL``, as ``make test`` runs it)."""
    here = claim_outcomes()
    on_sqlite = _outcomes_on_sqlite(tmp_path)

    assert on_sqlite == here == EXPECTED


def test_a_claim_skips_an_order_another_transaction_holds_where_rows_are_locked() -> None:
    if not ON_POSTGRES:
        pytest.skip("SQLite has no row locks: its writing transactions run one at a time")
    order = OrderFactory.create(allocating=True, due_at=timezone.now() - timedelta(seconds=5))
    holding, release = threading.Event(), threading.Event()

    def holder() -> None:  # another claimer between its read and its commit
        try:
            with transaction.atomic():
                Order.objects.select_for_update(no_key=True).get(id=order.id)
                holding.set()
                release.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert holding.wait(30)
        started = time.monotonic()
        skipped = order_claim(order_id=order.id, step=PipelineStep.ALLOCATE)
        took = time.monotonic() - started
        waiting = sessions_waiting_for_a_lock()
    finally:
        release.set()
        thread.join(30)

    assert (skipped, waiting) == (None, 0)
    assert took < 2.0  # a wait would last until the holder's release, 30 s
    assert Order.objects.get(id=order.id).claimed_until is None
    # Released: the next claim takes it.
    assert order_claim(order_id=order.id, step=PipelineStep.ALLOCATE) is not None
