"""Concurrency limits shared by processes: places in the cache, all or none, given back."""

import uuid

from django.core.cache import cache

from common.concurrency import places_held, places_in_use, places_release, places_take


def named(kind: str) -> str:
    """A limit's name of this test alone (the cache may be shared with other runs)."""
    return f"{kind}-{uuid.uuid4().hex}"


def test_at_most_the_limit_take_a_place_and_a_place_given_back_is_taken_again() -> None:
    work = named("work")
    first = places_take({work: 2}, seconds=60)
    second = places_take({work: 2}, seconds=60)

    assert first is not None and second is not None
    assert places_take({work: 2}, seconds=60) is None
    assert places_in_use(work, 2) == 2

    places_release(first)

    assert places_in_use(work, 2) == 1
    assert places_take({work: 2}, seconds=60) is not None


def test_a_place_is_taken_in_every_limit_or_in_none() -> None:
    every, host_a, host_b = named("all"), named("host-a"), named("host-b")
    host_full = places_take({host_a: 1}, seconds=60)
    assert host_full is not None

    assert places_take({every: 3, host_a: 1}, seconds=60) is None

    assert places_in_use(every, 3) == 0  # the place in "all" was given back
    with places_held({every: 3, host_b: 1}, seconds=60) as taken:
        assert taken is True
        assert (places_in_use(every, 3), places_in_use(host_b, 1)) == (1, 1)
    assert (places_in_use(every, 3), places_in_use(host_b, 1)) == (0, 0)


def test_a_place_another_holder_took_after_it_expired_is_not_given_back_by_the_first() -> None:
    work = named("work")
    first = places_take({work: 1}, seconds=60)
    assert first is not None
    cache.delete(first.keys[0])  # as if it expired
    second = places_take({work: 1}, seconds=60)
    assert second is not None

    places_release(first)

    assert places_in_use(work, 1) == 1
    assert places_take({work: 1}, seconds=60) is None
