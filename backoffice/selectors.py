"""Reads of the back-office: the shipments a sheet's rows name."""

from collections.abc import Iterable, Sequence

from django.db.models import Q

from backoffice.rows import SheetRow
from common.chunks import chunks
from common.ids import PREFIXES, format_id
from orders.models import Shipment


def rows_shipments(rows: Sequence[SheetRow]) -> dict[int, Shipment | str]:
    """Each row naming a lab order (by sheet row number) with its shipment, or the sentence
    saying why none: ``shp_123`` and ``123`` are our shipment ids, any other text (and digits
    naming no shipment of ours) the lab's own order reference. Rows with an empty
    ``Lab Order Id`` are left out; the shipments are read in chunks of ``QUERY_CHUNK`` ids,
    never row by row."""
    named = [row for row in rows if row.lab_order_text]
    by_id = _by_id(row.lab_order_id for row in named if row.lab_order_id is not None)
    references = {row.lab_order_text for row in named if row.lab_order_id not in by_id}
    by_reference: dict[str, list[Shipment]] = {}
    for piece in chunks(sorted(references)):
        for shipment in _shipments(Q(lab_order_reference__in=piece)):
            by_reference.setdefault(shipment.lab_order_reference, []).append(shipment)
    found: dict[int, Shipment | str] = {}
    for row in named:
        if row.lab_order_id is not None and row.lab_order_id in by_id:
            found[row.row_index] = by_id[row.lab_order_id]
            continue
        matches = by_reference.get(row.lab_order_text, [])
        if len(matches) == 1:
            found[row.row_index] = matches[0]
        elif matches:
            ids = ", ".join(format_id(PREFIXES["shipment"], s.id) for s in matches)
            found[row.row_index] = (
                f"Lab order reference '{row.lab_order_text}' names several lab orders ({ids}); "
                "give the shipment id."
            )
        else:
            found[row.row_index] = f"Unknown lab order '{row.lab_order_text}'."
    return found


def _by_id(ids: Iterable[int]) -> dict[int, Shipment]:
    return {s.id: s for piece in chunks(sorted(set(ids))) for s in _shipments(Q(id__in=piece))}


def _shipments(condition: Q) -> list[Shipment]:
    return list(
        Shipment.objects.filter(condition).select_related("order__environment").order_by("id")
    )
