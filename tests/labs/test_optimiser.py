"""The exact lab choice against brute force over every assignment of items to labs."""

from collections.abc import Mapping, Sequence
from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labs.allocation.optimiser import PlanKey, cheapest_assignment, plan_key

LABS = ["aa1", "bb1", "cc1", "dd1", "ee1", "ff1"]


def brute_force(
    item_costs: Sequence[Mapping[str, int]], shipment_costs: Mapping[str, int]
) -> PlanKey:
    choices = [sorted(costs) for costs in item_costs]
    return min(plan_key(assignment, item_costs, shipment_costs) for assignment in product(*choices))


@st.composite
def baskets(draw: st.DrawFn) -> tuple[list[dict[str, int]], dict[str, int]]:
    labs = draw(st.lists(st.sampled_from(LABS), min_size=1, max_size=6, unique=True))
    # Small cost ranges make ties frequent, which is where tie-breaking can go wrong.
    cost = st.integers(min_value=0, max_value=draw(st.sampled_from([3, 50, 5000])))
    items = draw(
        st.lists(
            st.dictionaries(st.sampled_from(labs), cost, min_size=1),
            min_size=1,
            max_size=6,
        )
    )
    shipping = {lab: draw(cost) for lab in labs}
    return items, shipping


@settings(max_examples=600, deadline=None)
@given(baskets())
def test_cheapest_assignment_equals_brute_force_including_tie_breaks(
    basket: tuple[list[dict[str, int]], dict[str, int]],
) -> None:
    item_costs, shipment_costs = basket

    chosen = cheapest_assignment(item_costs, shipment_costs)

    assert plan_key(chosen, item_costs, shipment_costs) == brute_force(item_costs, shipment_costs)


def test_one_shipment_when_shipping_outweighs_the_saving() -> None:
    items = [{"aa1": 500, "bb1": 450}, {"aa1": 500, "bb1": 700}]

    assert cheapest_assignment(items, {"aa1": 300, "bb1": 300}) == ("aa1", "aa1")


def test_split_when_the_saving_outweighs_shipping() -> None:
    items = [{"aa1": 500, "bb1": 100}, {"aa1": 500, "bb1": 900}]

    assert cheapest_assignment(items, {"aa1": 300, "bb1": 300}) == ("bb1", "aa1")


def test_equal_plans_prefer_fewer_shipments_then_lower_lab_codes() -> None:
    # Either lab alone costs 1100.
    items = [{"bb1": 400, "aa1": 400}, {"bb1": 400, "aa1": 400}]
    assert cheapest_assignment(items, {"bb1": 300, "aa1": 300}) == ("aa1", "aa1")
    # bb1 alone costs 800 (500 + 300 + 0), as does splitting (300 + 300 + 200 + 0).
    items = [{"aa1": 300, "bb1": 500}, {"aa1": 500, "bb1": 300}]
    assert cheapest_assignment(items, {"aa1": 200, "bb1": 0}) == ("bb1", "bb1")


def test_every_item_needs_a_candidate() -> None:
    with pytest.raises(ValueError, match="candidate"):
        cheapest_assignment([{"aa1": 1}, {}], {"aa1": 1})
    assert cheapest_assignment([], {}) == ()
