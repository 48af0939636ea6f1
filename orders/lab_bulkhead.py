"""The web tier's bulkhead per lab: how many web requests may wait on one lab at once.

An order action after lab submission and a staff shipment operation call the shipment's lab
inside the request (``orders.actions``, ``orders.shipments``), and a lab whose site hangs
holds each such request for all of ``LAB_CALLS_BUDGET_SECONDS``: a merchant firing requests
at orders at that lab could hold every web worker while every other merchant waited. So such a
request first takes a place among ``LAB_WEB_CALLS_PER_LAB`` of each real lab it will call,
over all web workers (``common.concurrency``: Redis, or the embedded setup's file cache), and
holds it until it ends. With one lab's places all taken it does not start: ``LabBusy``,
answered at once (``503 ServiceUnavailable`` with ``Retry-After`` in the API, a message in the
admin and the dashboard). So one lab holds at most that many web workers, whatever is asked of
it. The simulator waits on nothing and takes no place; ``GET .../actions`` calls no lab
(``orders.actions.actions_available``) and takes none either.

The pipeline's lab calls have their own limit on the workers' side
(``orders.pipeline.lanes.lab_call_place``).
"""

from collections.abc import Collection, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager

from django.conf import settings

from common.concurrency import places_in_use, places_release, places_take
from common.errors import LabBusy
from labs.connectors import connector_for
from orders.models import Order, Shipment, ShipmentStatus

# A place outlives the request it was taken for by this much at most (a worker that died):
# the request's lab calls end within LAB_CALLS_BUDGET_SECONDS.
_PLACE_MARGIN_SECONDS = 60.0


def _limit_name(lab_code: str) -> str:
    return f"lab-web-calls:{lab_code}"


@contextmanager
def lab_web_places(lab_codes: Collection[str]) -> Iterator[None]:
    """Hold a place in each lab's share of the web workers until the block ends (every lab's
    or none); ``LabBusy``, holding nothing, when one lab's ``LAB_WEB_CALLS_PER_LAB`` places
    are all taken."""
    if not lab_codes:
        yield
        return
    limit = int(settings.LAB_WEB_CALLS_PER_LAB)
    seconds = float(settings.LAB_CALLS_BUDGET_SECONDS) + _PLACE_MARGIN_SECONDS
    codes = sorted(set(lab_codes))
    places = places_take({_limit_name(code): limit for code in codes}, seconds=seconds)
    if places is None:
        full = next((c for c in codes if places_in_use(_limit_name(c), limit) >= limit), codes[0])
        raise LabBusy(full, float(settings.LAB_BUSY_RETRY_SECONDS))
    try:
        yield
    finally:
        places_release(places)


def _real_labs(shipments: Iterable[Shipment], *, sandbox: bool) -> list[str]:
    """The labs of ``shipments`` that a call would reach over the network (not the simulator)."""
    codes = sorted({shipment.lab_code for shipment in shipments})
    return [code for code in codes if not connector_for(lab_code=code, sandbox=sandbox).simulated]


def order_lab_web_places(*, order: Order) -> AbstractContextManager[None]:
    """The places an order action needs: one at each real lab holding a shipment of the order
    that it may ask (at its lab, not cancelled, shipped or recorded in production)."""
    shipments = Shipment.objects.filter(
        order_id=order.id,
        status=ShipmentStatus.PROCESSING,
        submitted_at__isnull=False,
        in_production_at__isnull=True,
    )
    return lab_web_places(_real_labs(shipments, sandbox=order.environment.is_sandbox))


def shipment_lab_web_places(*, shipment: Shipment) -> AbstractContextManager[None]:
    """The place a staff operation on ``shipment`` needs: one at its lab while the lab order
    is there (neither cancelled nor shipped) and the lab is a real one."""
    at_lab = Shipment.objects.filter(
        id=shipment.id, status=ShipmentStatus.PROCESSING, submitted_at__isnull=False
    ).exists()
    sandbox = shipment.order.environment.is_sandbox
    return lab_web_places(_real_labs([shipment] if at_lab else [], sandbox=sandbox))
