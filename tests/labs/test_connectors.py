"""Lab connectors: the simulator's submissions, timeline and operations, and the registry."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from labs.connectors import (
    CAPABILITIES,
    LabConnector,
    LabOrder,
    LabOrderItem,
    LabProgress,
    LabResult,
    connector_for,
)
from labs.connectors.registry import UnavailableConnector
from labs.connectors.simulator import SimulatorConnector
from labs.models import SimulatedLabOrder
from tests.labs.factories import LabFactory

SUBMITTED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def lab_order(shipment_id: str = "shp_1234", *, method: str = "Standard") -> LabOrder:
    return LabOrder(
        shipment_id=shipment_id,
        order_id="ord_99",
        lab_code="gb1",
        shipping_method=method,
        recipient={"name": "Ada", "address": {"line1": "1 Lane", "countryCode": "GB"}},
        items=(
            LabOrderItem(
                item_id="ori_1",
                sku="GLOBAL-FAP-16X24",
                copies=2,
                attributes={"color": "black"},
                files={"default": "https://files.example/print.jpg"},
            ),
        ),
    )


def simulator(
    *, capabilities: frozenset[str] = frozenset(CAPABILITIES), failure_share: str = "0"
) -> SimulatorConnector:
    return SimulatorConnector(
        lab_code="gb1", capabilities=capabilities, failure_share=Decimal(failure_share)
    )


def test_the_connector_interface_cannot_be_used_without_an_implementation() -> None:
    with pytest.raises(TypeError):
        LabConnector(lab_code="gb1", capabilities=frozenset())  # type: ignore[abstract]


@pytest.mark.django_db
def test_simulator_accepts_a_submission_with_a_reference_from_the_shipment() -> None:
    assert simulator().submit(lab_order("shp_1234")) == LabResult(
        successful=True, reference="SIM-GB1-1234"
    )


@pytest.mark.django_db
def test_simulator_failing_every_submission() -> None:
    result = simulator(failure_share="1").submit(lab_order())

    assert result == LabResult(successful=False, message="Simulated rejection by lab gb1.")
    assert not SimulatedLabOrder.objects.exists()


@pytest.mark.django_db
def test_simulator_records_one_lab_order_per_shipment_and_answers_a_resubmission_with_it() -> None:
    first = simulator().submit(lab_order("shp_555"))
    again = simulator().submit(lab_order("shp_555"))
    other = simulator().submit(lab_order("shp_556"))

    assert first == again == LabResult(successful=True, reference="SIM-GB1-555")
    assert other.reference == "SIM-GB1-556"
    recorded = SimulatedLabOrder.objects.get(shipment_id="shp_555")
    assert (recorded.lab_code, recorded.reference, recorded.submissions) == (
        "gb1",
        "SIM-GB1-555",
        2,
    )
    # Recorded when it was first accepted (in the database's own form of a datetime).
    assert timezone.now() - timedelta(minutes=1) < recorded.created <= timezone.now()
    assert SimulatedLabOrder.objects.count() == 2


@pytest.mark.django_db
def test_simulator_finds_the_lab_order_of_an_accepted_submission_and_only_that() -> None:
    assert simulator().find(lab_order("shp_557")) is None
    simulator().submit(lab_order("shp_557"))

    assert simulator().find(lab_order("shp_557")) == LabResult(True, reference="SIM-GB1-557")
    assert SimulatedLabOrder.objects.get(shipment_id="shp_557").submissions == 1
    assert simulator(failure_share="1").submit(lab_order("shp_558")).successful is False
    assert simulator().find(lab_order("shp_558")) is None


def test_a_lab_that_cannot_look_its_orders_up_finds_none() -> None:
    unavailable = UnavailableConnector(lab_code="gb1", capabilities=frozenset(), message="No.")
    assert unavailable.find(lab_order()) is None


@pytest.mark.django_db
def test_simulator_fails_its_configured_share_deterministically() -> None:
    connector = simulator(failure_share="0.3")
    ids = [f"shp_{n}" for n in range(2000)]

    first = [connector.submit(lab_order(i)).successful for i in ids]
    again = [connector.submit(lab_order(i)).successful for i in ids]

    assert first == again
    failed_share = first.count(False) / len(first)
    assert 0.26 < failed_share < 0.34


def test_simulator_production_timeline_follows_lab_simulator_seconds(settings) -> None:
    settings.LAB_SIMULATOR_SECONDS = 60
    connector = simulator()
    order = lab_order("shp_77", method="Express")
    produced = SUBMITTED + timedelta(seconds=30)
    shipped = SUBMITTED + timedelta(seconds=60)

    waiting = connector.progress(order, submitted_at=SUBMITTED, now=SUBMITTED)
    in_production = connector.progress(order, submitted_at=SUBMITTED, now=produced)
    dispatched = connector.progress(order, submitted_at=SUBMITTED, now=shipped + timedelta(hours=1))

    assert waiting == LabProgress(next_check_at=produced)
    assert in_production == LabProgress(in_production_at=produced, next_check_at=shipped)
    assert dispatched.in_production_at == produced
    assert dispatched.shipped_at == shipped
    assert dispatched.next_check_at is None
    assert (dispatched.carrier_name, dispatched.carrier_service) == ("DHL", "Express Worldwide")
    assert dispatched.tracking_number.startswith("SIM")
    assert len(dispatched.tracking_number) == 15
    assert dispatched.tracking_url == (f"https://tracking.example.com/{dispatched.tracking_number}")


def test_simulator_tracking_is_stable_per_shipment_and_differs_between_shipments() -> None:
    connector = simulator()
    late = SUBMITTED + timedelta(days=1)

    one = connector.progress(lab_order("shp_1"), submitted_at=SUBMITTED, now=late)
    same = connector.progress(lab_order("shp_1"), submitted_at=SUBMITTED, now=late)
    other = connector.progress(lab_order("shp_2"), submitted_at=SUBMITTED, now=late)

    assert one.tracking_number == same.tracking_number
    assert one.tracking_number != other.tracking_number


@pytest.mark.parametrize(
    ("method", "carrier"),
    [
        ("Budget", ("Royal Mail", "2nd Class")),
        ("Standard", ("Royal Mail", "Tracked 48")),
        ("StandardPlus", ("DPD", "Next Day")),
        ("Express", ("DHL", "Express Worldwide")),
        ("Overnight", ("FedEx", "Priority Overnight")),
    ],
)
def test_simulator_carrier_follows_the_shipping_method_when_none_was_planned(
    method: str, carrier
) -> None:
    progress = simulator().progress(
        lab_order(method=method), submitted_at=SUBMITTED, now=SUBMITTED + timedelta(days=1)
    )

    assert (progress.carrier_name, progress.carrier_service) == carrier


def test_simulator_ships_with_the_carrier_planned_for_the_shipment() -> None:
    planned = replace(lab_order(method="Standard"), carrier_name="Evri", carrier_service="Parcel")

    progress = simulator().progress(planned, submitted_at=SUBMITTED, now=SUBMITTED + timedelta(1))

    assert (progress.carrier_name, progress.carrier_service) == ("Evri", "Parcel")


def test_simulator_operations_it_supports_succeed() -> None:
    connector = simulator()
    order = lab_order()

    assert connector.cancel(order).successful is True
    assert connector.hold(order).successful is True
    assert connector.unhold(order).successful is True
    assert connector.update_address(order, {"name": "Bea"}).successful is True
    assert connector.update_shipping_method(order, "Express").successful is True


def test_operations_a_lab_lacks_answer_unsuccessfully_with_a_message() -> None:
    connector = simulator(capabilities=frozenset({"cancel"}))
    order = lab_order()

    assert connector.supports("cancel") is True
    assert connector.supports("hold") is False
    assert connector.cancel(order).successful is True
    assert connector.hold(order) == LabResult(False, message="Lab gb1 does not support hold.")
    assert connector.unhold(order) == LabResult(False, message="Lab gb1 does not support unhold.")
    assert connector.update_address(order, {}) == LabResult(
        False, message="Lab gb1 does not support updateAddress."
    )
    assert connector.update_shipping_method(order, "Budget") == LabResult(
        False, message="Lab gb1 does not support updateShippingMethod."
    )


def test_map_to_json_gives_the_whole_lab_order_as_plain_data() -> None:
    data = simulator().map_to_json(lab_order())

    assert data == {
        "shipment_id": "shp_1234",
        "order_id": "ord_99",
        "lab_code": "gb1",
        "shipping_method": "Standard",
        "recipient": {"name": "Ada", "address": {"line1": "1 Lane", "countryCode": "GB"}},
        "items": (
            {
                "item_id": "ori_1",
                "sku": "GLOBAL-FAP-16X24",
                "copies": 2,
                "attributes": {"color": "black"},
                "files": {"default": "https://files.example/print.jpg"},
                "spine": None,
            },
        ),
        "packing_slip": "",
        "branding": {},
        "reference": "",
        "carrier_name": "",
        "carrier_service": "",
    }
    assert "reference" not in simulator().map_to_json(lab_order(), include_nulls=False)


# --- registry -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_live_simulator_lab_gets_its_own_capabilities_and_failure_share() -> None:
    LabFactory(code="gb7", capabilities=["cancel"], simulator_failure_share=Decimal("0.250"))

    connector = connector_for(lab_code="gb7", sandbox=False)

    assert isinstance(connector, SimulatorConnector)
    assert connector.capabilities == frozenset({"cancel"})
    assert connector.failure_share == Decimal("0.25")


@pytest.mark.django_db
def test_sandbox_always_uses_the_simulator_even_for_a_site_flow_lab() -> None:
    LabFactory(
        code="us2",
        connector="siteflow",
        siteflow_base_url="https://lab.example/api",
        siteflow_token="token",
        siteflow_secret="secret",
    )

    connector = connector_for(lab_code="us2", sandbox=True)

    assert isinstance(connector, SimulatorConnector)
    assert connector.submit(lab_order()).successful is True


@pytest.mark.django_db
def test_an_unknown_lab_code_gets_a_simulator_with_every_capability() -> None:
    connector = connector_for(lab_code="zz9", sandbox=True)

    assert isinstance(connector, SimulatorConnector)
    assert connector.capabilities == frozenset(CAPABILITIES)
    assert connector.failure_share == Decimal(0)


@pytest.mark.django_db
def test_a_live_site_flow_lab_without_credentials_refuses_every_operation_clearly() -> None:
    LabFactory(code="us2", connector="siteflow", siteflow_base_url="https://lab.example/api")
    order = lab_order()
    refused = LabResult(False, message="Site Flow lab us2 is missing its token and secret.")

    connector = connector_for(lab_code="us2", sandbox=False)

    assert connector.submit(order) == refused
    assert connector.cancel(order) == refused
    assert connector.hold(order) == refused
    assert connector.unhold(order) == refused
    assert connector.update_address(order, {"name": "Bea"}) == refused
    assert connector.update_shipping_method(order, "Express") == refused
    later = SUBMITTED + timedelta(days=30)
    progress = connector.progress(order, submitted_at=SUBMITTED, now=later)
    assert (progress.in_production_at, progress.shipped_at) == (None, None)
    assert progress.next_check_at is not None and progress.next_check_at > later


# --- hold -----------------------------------------------------------------------------------


def test_simulator_a_held_lab_order_is_neither_produced_nor_shipped(settings) -> None:  # type: ignore[no-untyped-def]
    settings.LAB_SIMULATOR_SECONDS = 60
    held = replace(lab_order(), held_since=SUBMITTED + timedelta(seconds=10))

    progress = simulator().progress(held, submitted_at=SUBMITTED, now=SUBMITTED + timedelta(days=3))

    assert (progress.in_production_at, progress.shipped_at) == (None, None)
    assert progress.next_check_at == SUBMITTED + timedelta(days=3, seconds=30)


def test_simulator_a_hold_in_production_stops_it_before_shipping(settings) -> None:  # type: ignore[no-untyped-def]
    settings.LAB_SIMULATOR_SECONDS = 60
    held = replace(lab_order(), held_since=SUBMITTED + timedelta(seconds=45))

    progress = simulator().progress(
        held, submitted_at=SUBMITTED, now=SUBMITTED + timedelta(hours=1)
    )

    assert progress.in_production_at == SUBMITTED + timedelta(seconds=30)
    assert progress.shipped_at is None


def test_simulator_a_released_lab_order_resumes_later_by_the_time_held(settings) -> None:  # type: ignore[no-untyped-def]
    settings.LAB_SIMULATOR_SECONDS = 60
    released = replace(lab_order(), held_seconds=100.0)

    before = simulator().progress(
        released, submitted_at=SUBMITTED, now=SUBMITTED + timedelta(seconds=159)
    )
    after = simulator().progress(
        released, submitted_at=SUBMITTED, now=SUBMITTED + timedelta(seconds=160)
    )

    assert before.shipped_at is None
    assert before.in_production_at == SUBMITTED + timedelta(seconds=130)
    assert after.shipped_at == SUBMITTED + timedelta(seconds=160)


def test_the_hold_clock_is_never_sent_to_a_lab() -> None:
    held = replace(lab_order(), held_since=SUBMITTED, held_seconds=5.0)

    assert simulator().map_to_json(held) == simulator().map_to_json(lab_order())


# --- the simulator is a Sandbox tool; its lab-side cancel and failure modes -----------------


@pytest.mark.django_db
def test_a_live_simulator_lab_is_refused_unless_the_development_setting_allows_it(
    settings,  # type: ignore[no-untyped-def]
) -> None:
    LabFactory(code="gb7", simulator_cancel_share=Decimal("0.5"))
    settings.SIMULATOR_PRODUCES_LIVE = False

    live = connector_for(lab_code="gb7", sandbox=False)
    unknown = connector_for(lab_code="zz9", sandbox=False)
    sandbox = connector_for(lab_code="gb7", sandbox=True)

    expected = (
        "Lab gb7 has no connector configured for Live orders; the built-in simulator makes "
        "Sandbox orders only."
    )
    assert isinstance(live, UnavailableConnector)
    assert live.submit(lab_order()) == LabResult(False, message=expected)
    assert not SimulatedLabOrder.objects.exists()
    assert isinstance(unknown, UnavailableConnector)
    assert isinstance(sandbox, SimulatorConnector) and not sandbox.live
    assert sandbox.cancel_share == Decimal("0.5")

    settings.SIMULATOR_PRODUCES_LIVE = True
    allowed = connector_for(lab_code="gb7", sandbox=False)
    assert isinstance(allowed, SimulatorConnector) and allowed.live and allowed.simulated


def test_a_live_shipment_the_simulator_ships_says_simulated_in_its_tracking() -> None:
    order = lab_order("shp_78")
    late = SUBMITTED + timedelta(days=1)
    live = SimulatorConnector(lab_code="gb1", capabilities=frozenset(), live=True)

    sandbox_shipped = simulator().progress(order, submitted_at=SUBMITTED, now=late)
    live_shipped = live.progress(order, submitted_at=SUBMITTED, now=late)

    assert live_shipped.tracking_number == "SIMULATED-" + sandbox_shipped.tracking_number
    assert live_shipped.tracking_url == (
        f"https://tracking.example.com/simulated/{live_shipped.tracking_number}"
    )


@pytest.mark.parametrize(
    ("shares", "ended", "message"),
    [
        ({"cancel_share": Decimal(1)}, "cancelled", "Simulated cancellation by lab gb1."),
        ({"error_share": Decimal(1)}, "error", "Simulated production failure at lab gb1."),
    ],
)
def test_the_simulator_ends_a_lab_order_on_its_side_when_production_would_start(
    settings: Any, shares: dict[str, Decimal], ended: str, message: str
) -> None:
    settings.LAB_SIMULATOR_SECONDS = 60
    connector = SimulatorConnector(
        lab_code="gb1",
        capabilities=frozenset(),
        cancel_share=shares.get("cancel_share", Decimal(0)),
        error_share=shares.get("error_share", Decimal(0)),
    )
    order = lab_order("shp_79")

    before = connector.progress(order, submitted_at=SUBMITTED, now=SUBMITTED)
    at_production = connector.progress(
        order, submitted_at=SUBMITTED, now=SUBMITTED + timedelta(seconds=30)
    )

    assert before == LabProgress(next_check_at=SUBMITTED + timedelta(seconds=30))
    assert at_production == LabProgress(ended=ended, message=message)


def test_the_simulators_cancel_and_error_shares_are_deterministic_per_shipment(settings) -> None:  # type: ignore[no-untyped-def]
    settings.LAB_SIMULATOR_SECONDS = 60
    connector = SimulatorConnector(
        lab_code="gb1",
        capabilities=frozenset(),
        cancel_share=Decimal("0.2"),
        error_share=Decimal("0.25"),
    )
    late = SUBMITTED + timedelta(days=1)

    ends = [
        connector.progress(lab_order(f"shp_{n}"), submitted_at=SUBMITTED, now=late).ended
        for n in range(2000)
    ]
    again = [
        connector.progress(lab_order(f"shp_{n}"), submitted_at=SUBMITTED, now=late).ended
        for n in range(2000)
    ]

    assert ends == again
    assert 0.17 < ends.count("cancelled") / 2000 < 0.23
    # The error share applies to those not cancelled: about 0.25 of the other 80%.
    assert 0.17 < ends.count("error") / 2000 < 0.23
