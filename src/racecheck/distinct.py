"""An exact set of 64-bit schedule hashes in 8 bytes each.

An exploration counts its distinct schedules (``Report.distinct_schedules``)
by hashing each schedule's decisions. A Python ``set`` of those hashes costs
about 50 bytes a schedule (an int object and a slot), which was the only thing
that grew in a 100,000-schedule exploration. Here the hashes live in a sorted
``array`` (8 bytes each) plus a small ``set`` of recent ones, merged into the
array when the set passes an eighth of it, so merging costs O(1) amortised.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from array import array
from collections.abc import Iterable, Iterator

_MIN_BUFFER = 1024


class HashSet:
    """``add``/``len``/``in``/iteration over signed 64-bit ints, exact."""

    __slots__ = ("_recent", "_sorted")

    def __init__(self, items: Iterable[int] = ()) -> None:
        self._sorted = array("q")
        self._recent: set[int] = set()
        self.update(items)

    def add(self, item: int) -> None:
        if item in self._recent or self._in_sorted(item):
            return
        self._recent.add(item)
        if len(self._recent) > max(_MIN_BUFFER, len(self._sorted) // 8):
            self._merge()

    def update(self, items: Iterable[int]) -> None:
        for item in items:
            self.add(item)

    def __contains__(self, item: object) -> bool:
        return isinstance(item, int) and (item in self._recent or self._in_sorted(item))

    def __len__(self) -> int:
        return len(self._sorted) + len(self._recent)

    def __iter__(self) -> Iterator[int]:
        return itertools.chain(self._sorted, self._recent)

    def nbytes(self) -> int:
        """Bytes held by the sorted part (the set part is bounded by an eighth of it)."""
        return self._sorted.buffer_info()[1] * self._sorted.itemsize

    def _in_sorted(self, item: int) -> bool:
        values = self._sorted
        at = bisect.bisect_left(values, item)
        return at < len(values) and values[at] == item

    def _merge(self) -> None:
        # The recent hashes are never in the sorted part, so a merge keeps it distinct.
        merged = array("q")
        merged.extend(heapq.merge(self._sorted, sorted(self._recent)))
        self._sorted = merged
        self._recent = set()
