"""What the periodic sweepers queue: due rows, each once per reason.

The rows carry a time they were last queued by a sweeper (``swept_field``), a due time
(``due_field``) and, when a worker claims them, the end of its claim (``claim_field``); the
caller names these fields of its model. Without the swept test every sweep would queue again
the rows whose message is still waiting behind a backlog. Each row is queued at most once per
reason (a new due time, an expired claim) and once per ``PIPELINE_CLAIM_SECONDS`` after that: a
lost message delays a row, it never strands it.
"""

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import F, Q, QuerySet
from django.utils import timezone


def unswept_since_due(*, swept_field: str, due_field: str, claim_field: str | None) -> Q:
    """Rows not queued since they became due (or since their claim was taken: ``claim_field``,
    None for rows no worker claims), and rows queued longer than a claim period ago that are
    still waiting (their message is presumed lost)."""
    presumed_lost = timezone.now() - timedelta(seconds=float(settings.PIPELINE_CLAIM_SECONDS))
    swept = swept_field
    unswept = Q(**{f"{swept}__isnull": True}) | Q(**{f"{swept}__lt": F(due_field)})
    if claim_field is not None:
        unswept |= Q(**{f"{swept}__lt": F(claim_field)})
    return unswept | Q(**{f"{swept}__lt": presumed_lost})


def sweep_batch_mark(
    queryset: QuerySet[Any],
    *,
    swept_field: str,
    due_field: str,
    claim_field: str | None,
    batch: int,
) -> list[int]:
    """The ids of up to ``batch`` due rows to queue, earliest first, marked as swept."""
    rows = sweep_batch_mark_values(
        queryset,
        swept_field=swept_field,
        due_field=due_field,
        claim_field=claim_field,
        batch=batch,
        fields=("id",),
    )
    return [row_id for (row_id,) in rows]


def sweep_batch_mark_values(
    queryset: QuerySet[Any],
    *,
    swept_field: str,
    due_field: str,
    claim_field: str | None,
    batch: int,
    fields: tuple[str, ...],
) -> list[tuple[Any, ...]]:
    """``fields`` (``id`` first) of up to ``batch`` due rows to queue, earliest first, marked
    as swept: what a task message needs besides the id (the queue may depend on it)."""
    due = unswept_since_due(swept_field=swept_field, due_field=due_field, claim_field=claim_field)
    rows = list(queryset.filter(due).order_by(due_field).values_list(*fields)[:batch])
    if rows:
        queryset.model.objects.filter(id__in=[row[0] for row in rows]).update(
            **{swept_field: timezone.now()}
        )
    return rows
