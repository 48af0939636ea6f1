"""Primary keys: unique and growing within a process, fresh in a forked one; public ids read
one way everywhere."""

import multiprocessing
import threading

import pytest

from common import ids
from common.errors import ValidationFailed
from common.ids import id_number, new_id, parse_id


def test_keys_made_in_a_burst_are_unique_and_grow() -> None:
    # Thousands a millisecond: drawn at random each time, some would repeat.
    made = [new_id() for _ in range(200_000)]

    assert made == sorted(made)
    assert len(set(made)) == len(made)


def test_keys_made_by_threads_at_once_are_unique() -> None:
    made: list[list[int]] = [[] for _ in range(4)]

    def make(into: list[int]) -> None:
        into.extend(new_id() for _ in range(20_000))

    threads = [threading.Thread(target=make, args=(into,)) for into in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    every = [key for keys in made for key in keys]
    assert len(set(every)) == len(every)
    assert all(keys == sorted(keys) for keys in made)


def _child_key(answers: "multiprocessing.Queue[tuple[int, int]]") -> None:
    answers.put((ids._last, new_id()))


def test_a_forked_process_does_not_count_on_from_its_parents_last_key() -> None:
    fork = multiprocessing.get_context("fork")
    parent_last = new_id()
    answers: multiprocessing.Queue[tuple[int, int]] = fork.Queue()
    child = fork.Process(target=_child_key, args=(answers,))
    child.start()
    inherited, child_key = answers.get(timeout=30)
    child.join(timeout=30)

    # Forgotten at the fork: the child draws its own starting point, where a sibling forked
    # alongside would otherwise make the same keys as it.
    assert inherited == 0
    assert child_key != parent_last + 1
    assert new_id() > parent_last


@pytest.mark.parametrize(
    ("value", "allow_bare", "number"),
    [
        ("ord_123", False, 123),
        (" ORD_123 ", False, 123),
        ("123", True, 123),
        ("123", False, None),
        ("shp_123", True, None),
        ("ord_\uff11\uff12\uff13", False, None),  # full-width digits
        ("ord_\u0661\u0662", False, None),  # Arabic-Indic digits
        ("ord_\u00b2", False, None),  # a superscript two: a digit to str.isdigit
        (f"ord_{2**63 - 1}", False, 2**63 - 1),
        (f"ord_{2**63}", False, None),
        ("ord_", False, None),
        ("ord_-1", False, None),
        ("ord_12 3", False, None),
    ],
)
def test_an_id_is_its_prefix_in_any_case_and_ascii_digits_below_two_to_the_63(
    value: str, allow_bare: bool, number: int | None
) -> None:
    assert id_number("ord_", value, allow_bare=allow_bare) == number
    if number is None:
        with pytest.raises(ValidationFailed) as refused:
            parse_id("ord_", value, field="orderId", allow_bare=allow_bare)
        assert refused.value.failures == {
            "orderId": [("InvalidId", f"'{value}' is not a valid id; expected 'ord_' and digits.")]
        }
    else:
        assert parse_id("ord_", value, allow_bare=allow_bare) == number
