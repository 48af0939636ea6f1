"""Long lists cut into pieces, so that no one query carries more parameters than a database
driver takes (PostgreSQL's protocol stops at 65,535)."""

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")

# The most values one ``IN (...)`` of a query over a sheet's rows carries.
QUERY_CHUNK = 1000


def chunks(values: Iterable[T], size: int = QUERY_CHUNK) -> Iterator[list[T]]:
    """``values`` in lists of at most ``size``, in order."""
    iterator = iter(values)
    while piece := list(islice(iterator, size)):
        yield piece
