"""async-cache 1.1.1: two tasks missing one key both compute it and both store it.

``AsyncTTL``'s wrapper checks ``key in self.ttl``, awaits the function, then
stores the result: every task that misses while the first computation is
still running computes again, and each store overwrites the last. 2.0.0,
which the maintainer gave as the fix of a concurrency report (upstream issue
18, a ``KeyError`` from the LRU), keeps one pending future per key ("thundering
herd protection": the others await the first computation) and locks the
LRU's methods. The cache
is an ``OrderedDict`` subclass whose Python ``__contains__``/``__setitem__``
reach the storage through ``key in self.keys()`` and ``super().__setitem__``:
before this round the detector read neither, and missed the bug
(``tests/detect/test_detector_subclass_items.py``).
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest, FlaggedByTheDetector

pytest.importorskip("cache")

USER_TEST = """
import asyncio

import pytest
from cache import AsyncTTL


@pytest.mark.racecheck
async def test_concurrent_misses_compute_once():
    calls = []

    @AsyncTTL(time_to_live=60, maxsize=8)
    async def fetch(n):
        calls.append(n)
        await asyncio.sleep(0)
        return n * 10

    await asyncio.gather(fetch(1), fetch(1))
    assert calls == [1], "one key computed twice"
"""


class TestAsyncCache(FailsItsUserTest, FlaggedByTheDetector):
    """What the detector sees: the miss, another task's store, then the store.
    The fixed release keeps one pending future per key.
    """

    library = "async-cache"
    module = "cache"
    user_test = USER_TEST
    symptom = "one key computed twice"
    finding = "stale check"
    finding_shows = ("async_ttl.py:18", "lru.py:15")
