"""The exact choice of labs for a basket, on integer cents and nothing else.

The problem is an uncapacitated facility location: choosing a set of labs ``S`` costs the
shipment price of every lab in ``S``, and each item then goes to its cheapest lab in ``S``.
The optimum uses at most one lab per item, so sets are enumerated by size ``k = 1, 2, ...``;
for size ``k`` no plan can cost less than ``sum of each item's cheapest cost anywhere + the k
smallest shipment prices``, and enumeration stops once that bound reaches the best total found
(a larger set also means more shipments, which loses a tie). For realistic baskets (a handful
of labs can make each item) this visits a few dozen sets.

Ties between plans of equal total break on fewer shipments, then on the lab codes given to the
items in basket order (lexicographically smallest), so the result never depends on iteration
order. ``tests/labs/test_optimiser.py`` checks it against brute force over all assignments.
"""

from collections.abc import Mapping, Sequence
from itertools import combinations

PlanKey = tuple[int, int, tuple[str, ...]]


def plan_key(
    assignment: Sequence[str],
    item_costs: Sequence[Mapping[str, int]],
    shipment_costs: Mapping[str, int],
) -> PlanKey:
    """What a plan is ranked by: (total cents, number of shipments, lab code per item)."""
    used = set(assignment)
    total = sum(costs[lab] for costs, lab in zip(item_costs, assignment, strict=True))
    total += sum(shipment_costs[lab] for lab in used)
    return total, len(used), tuple(assignment)


def cheapest_assignment(
    item_costs: Sequence[Mapping[str, int]], shipment_costs: Mapping[str, int]
) -> tuple[str, ...]:
    """The lab for each item (in item order) of the cheapest plan.

    ``item_costs[i]`` maps each lab that can take item ``i`` to what the item costs there;
    ``shipment_costs`` maps every such lab to the price of one shipment from it. Every item
    must have at least one lab; costs are non-negative.
    """
    if not item_costs:
        return ()
    if any(not costs for costs in item_costs):
        raise ValueError("Every item needs at least one candidate lab.")
    labs = sorted({lab for costs in item_costs for lab in costs})
    cheapest_anywhere = sum(min(costs.values()) for costs in item_costs)
    fixed_sorted = sorted(shipment_costs[lab] for lab in labs)
    best: PlanKey | None = None
    for size in range(1, min(len(item_costs), len(labs)) + 1):
        bound = cheapest_anywhere + sum(fixed_sorted[:size])
        if best is not None and bound >= best[0]:
            break
        for subset in combinations(labs, size):
            assignment = []
            for costs in item_costs:
                options = [(costs[lab], lab) for lab in subset if lab in costs]
                if not options:
                    break
                assignment.append(min(options)[1])
            else:
                key = plan_key(assignment, item_costs, shipment_costs)
                if best is None or key < best:
                    best = key
    assert best is not None  # size 1..n always includes one lab per item's own best
    return best[2]
