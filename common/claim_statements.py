"""The pipeline's claims as statements written by hand, each behind a function that also takes
the portable way (the ORM's, given by the caller) where the database cannot run it.

Hand-written only where it pays (``bench/bench_steps.py``: every step of every order starts
with a claim): on PostgreSQL a claim and the read of the order it claims, with its environment
and merchant, are one ``UPDATE ... RETURNING`` (the ORM sends an update and a read); a Download
claim counts the merchant's running downloads and claims the order or defers it in one
statement, under the merchant's row lock taken without blocking inserts that refer to it; the
wake of a freed download slot chooses and updates in one statement.

The tables and the values the statements compare come from the caller (``ClaimTables``):
this module sits below the apps whose tables they are. Parameters are named as the statements
use them: ``order``, ``steps``, ``now``, ``until`` and ``token`` (the claim's lease and token),
``merchant``, ``share``, ``deferred_to``.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.db import connection
from django.db.models import Model

from common.db import locks_without_key_update, update_returning_joined
from common.joined import JoinedRead, TableColumns


@dataclass(frozen=True)
class ClaimTables:
    """What the claim statements are written over: the order table joined with its
    environment and merchant, the asset (with its item) and file tables a download fetches,
    and the values compared: the step whose detail each step shows as started (``started``:
    step → column, shown as ``in_progress``), the Download step, and the status of an asset
    or file still to download."""

    order: type[Model]
    environment: type[Model]
    merchant: type[Model]
    asset: type[Model]
    item: type[Model]
    order_file: type[Model]
    started: Mapping[str, str]
    in_progress: str
    download: str
    to_download: str


# One order due and unclaimed (``orders_due_unclaimed``'s conditions).
_DUE_UNCLAIMED = (
    "id = %(order)s AND due_at <= %(now)s AND (claimed_until IS NULL OR claimed_until < %(now)s)"
)
# The claimed row returned whole, joined with the order's environment and merchant.
_RETURNED = (
    " RETURNING *) SELECT {columns} FROM c JOIN {environment} e ON e.id = c.environment_id "
    "JOIN {merchant} m ON m.id = e.merchant_id"
)
# The merchant's orders claimed at the Download step (their ``due_at`` passed when they were
# claimed, which keeps the scan on the partial index of due orders).
_RUNNING_DOWNLOADS = (
    "SELECT count(*) FROM {order} r JOIN {environment} re ON re.id = r.environment_id "
    "WHERE re.merchant_id = %(merchant)s AND r.pipeline_step = %(download)s "
    "AND r.due_at <= %(now)s AND r.claimed_until > %(now)s"
)
# The merchant of an order due and unclaimed at the Download step.
_MERCHANT = (
    "SELECT e.merchant_id FROM {order} o JOIN {environment} e ON e.id = o.environment_id "
    "WHERE o.id = %(order)s AND o.pipeline_step = %(download)s AND o.due_at <= %(now)s "
    "AND (o.claimed_until IS NULL OR o.claimed_until < %(now)s)"
)


class ClaimStatements:
    """The claim statements over ``tables``, each written once per process on first use."""

    def __init__(self, tables: ClaimTables) -> None:
        self.tables = tables

    def _read(self, template: str, *columns: TableColumns) -> JoinedRead:
        """A statement whose template names the tables as ``ClaimTables`` does."""
        t = self.tables
        named = {
            "order": t.order, "environment": t.environment, "merchant": t.merchant,
            "asset": t.asset, "item": t.item, "order_file": t.order_file,
        }  # fmt: skip
        for alias, model in named.items():
            template = template.replace("{" + alias + "}", "{" + str(model._meta.model_name) + "}")
        return JoinedRead(template, *columns, models=self._models)

    # --- the statements -------------------------------------------------------------------

    @cached_property
    def _models(self) -> list[type[Model]]:
        t = self.tables
        return [t.order, t.environment, t.merchant, t.asset, t.item, t.order_file]

    @cached_property
    def _columns(self) -> tuple[TableColumns, ...]:
        t = self.tables
        return (
            TableColumns(t.order, "c"),
            TableColumns(t.environment, "e"),
            TableColumns(t.merchant, "m"),
        )

    @cached_property
    def _started(self) -> str:
        """The claimed step's started detail shown, ``last_updated`` when it was not yet."""
        started, shown = self.tables.started.items(), self.tables.in_progress
        return ", ".join(
            f"{column} = CASE WHEN pipeline_step = '{step}' THEN '{shown}' ELSE {column} END"
            for step, column in started
        ) + ", last_updated = CASE WHEN {} THEN %(now)s ELSE last_updated END".format(
            " OR ".join(
                f"(pipeline_step = '{step}' AND {column} <> '{shown}')" for step, column in started
            )
        )

    def _claim(self, *, started: bool) -> JoinedRead:
        return self._read(
            "WITH c AS (UPDATE {order} SET claimed_until = %(until)s, claim_token = %(token)s"
            + (", " + self._started if started else "")
            + " WHERE " + _DUE_UNCLAIMED + " AND pipeline_step = ANY(%(steps)s)" + _RETURNED,
            *self._columns,
        )  # fmt: skip

    def _download_claim(self, *, started: bool) -> JoinedRead:
        """The running downloads counted, and the order claimed below the share or deferred at
        it (two exclusive UPDATEs of the row)."""
        return self._read(
            "WITH running AS (" + _RUNNING_DOWNLOADS + "), "
            "deferred AS (UPDATE {order} SET due_at = %(deferred_to)s, "
            "download_deferred_at = %(now)s "
            "WHERE " + _DUE_UNCLAIMED + " AND pipeline_step = %(download)s "
            "AND (SELECT count FROM running) >= %(share)s), "
            "c AS (UPDATE {order} SET claimed_until = %(until)s, claim_token = %(token)s, "
            "download_deferred_at = NULL"
            + (", " + self._started if started else "")
            + " WHERE " + _DUE_UNCLAIMED + " AND pipeline_step = %(download)s "
            "AND (SELECT count FROM running) < %(share)s" + _RETURNED,
            *self._columns,
        )  # fmt: skip

    @cached_property
    def _claims(self) -> dict[tuple[str, bool], JoinedRead]:
        return {
            ("step", False): self._claim(started=False),
            ("step", True): self._claim(started=True),
            ("download", False): self._download_claim(started=False),
            ("download", True): self._download_claim(started=True),
        }

    @cached_property
    def _merchant(self) -> JoinedRead:
        return self._read(_MERCHANT)

    @cached_property
    def _merchant_locked(self) -> JoinedRead:
        """``_MERCHANT``'s merchant row, locked until the transaction ends (no key update:
        rows referring to it may still be inserted)."""
        return self._read(
            "SELECT m.id FROM {merchant} m WHERE m.id = (" + _MERCHANT + ") FOR NO KEY UPDATE"
        )

    @cached_property
    def _wake(self) -> JoinedRead:
        """The longest-deferred of the merchant's deferred orders with an asset or file due,
        as many as it has free slots, made due."""
        return self._read(
            "WITH woken AS (SELECT o.id FROM {order} o JOIN {environment} e "
            "ON e.id = o.environment_id WHERE e.merchant_id = %(merchant)s "
            "AND o.pipeline_step = %(download)s AND o.due_at > %(now)s "
            "AND o.download_deferred_at IS NOT NULL "
            "AND (o.claimed_until IS NULL OR o.claimed_until < %(now)s) "
            "AND (EXISTS (SELECT 1 FROM {asset} a JOIN {item} i ON i.id = a.item_id "
            "WHERE i.order_id = o.id AND a.status = %(to_download)s "
            "AND (a.next_attempt_at IS NULL OR a.next_attempt_at <= %(now)s)) "
            "OR EXISTS (SELECT 1 FROM {order_file} f WHERE f.order_id = o.id "
            "AND f.status = %(to_download)s "
            "AND (f.next_attempt_at IS NULL OR f.next_attempt_at <= %(now)s))) "
            "ORDER BY o.id LIMIT GREATEST(%(share)s - (" + _RUNNING_DOWNLOADS + "), 0)) "
            "UPDATE {order} SET due_at = %(now)s, swept_at = %(now)s "
            "WHERE id IN (SELECT id FROM woken) AND pipeline_step = %(download)s "
            "AND download_deferred_at IS NOT NULL "
            "AND (claimed_until IS NULL OR claimed_until < %(now)s) RETURNING id"
        )

    # --- what the claims call -------------------------------------------------------------

    def order_claimed(
        self,
        parameters: dict[str, Any],
        *,
        started: bool,
        portable: Callable[[], Model | None],
    ) -> Model | None:
        """The order claimed (``order``, due and unclaimed at one of ``steps``, claimed with
        ``until`` and ``token``; ``started``: its step's detail shown as started), read as
        the claim left it with its environment and merchant; None when it was not claimed.
        Where one statement cannot do it, ``portable`` does (and shows nothing as started)."""
        if not update_returning_joined():
            return portable()
        return self._joined(self._claims[("step", started)], parameters)

    def download_claimed(
        self,
        parameters: dict[str, Any],
        *,
        started: bool,
        portable: Callable[[], Model | None],
    ) -> Model | None:
        """The Download order claimed if fewer than ``share`` of the merchant's orders are
        downloading, else deferred to ``deferred_to`` (and None): the count, and the claim or
        the deferral, together. The caller holds the merchant's lock
        (``download_merchant_locked``). Where one statement cannot do it, ``portable`` does."""
        if not update_returning_joined():
            return portable()
        parameters = {**parameters, "download": self.tables.download}
        return self._joined(self._claims[("download", started)], parameters)

    def download_merchant_locked(self, *, order_id: int, now: Any) -> int | None:
        """The merchant of the order if it is due and unclaimed at the Download step, its row
        locked until the transaction ends where the database locks rows (elsewhere a write
        locks the whole database anyway); None when the order is not such."""
        read = self._merchant_locked if locks_without_key_update() else self._merchant
        with connection.cursor() as cursor:
            cursor.execute(
                read.sql(), {"order": order_id, "download": self.tables.download, "now": now}
            )
            row = cursor.fetchone()
        return None if row is None else int(row[0])

    def downloads_woken(
        self, parameters: dict[str, Any], *, portable: Callable[[], list[int]]
    ) -> list[int]:
        """The merchant's longest-deferred Download orders with an asset or file due, as many
        as ``share`` less its running downloads, made due now and marked as queued: their ids,
        in order. Where one statement cannot do it, ``portable`` does."""
        if not update_returning_joined():
            return portable()
        parameters = {
            **parameters,
            "download": self.tables.download,
            "to_download": self.tables.to_download,
        }
        with connection.cursor() as cursor:
            cursor.execute(self._wake.sql(), parameters)
            return sorted(row[0] for row in cursor.fetchall())

    @staticmethod
    def _joined(claim: JoinedRead, parameters: dict[str, Any]) -> Model | None:
        rows = claim.rows(parameters)
        if not rows:
            return None
        order, environment, merchant = rows[0]
        environment.merchant = merchant  # as select_related gives them
        order.environment = environment
        return order  # type: ignore[no-any-return]
