"""limits 5.2.0 (asyncio memory storage): a burst lets more requests through than the limit.

The storage's background expiry pass computes where the expired entries of a
moving window begin *before* taking the key's lock (it awaits a thread for the
bisect), then slices the list at that index under the lock. A hit that lands
in between inserts its entry at the front, so the slice drops the oldest entry
that had not expired: the window forgets a request and admits one too many.
5.3.0 computes the cut-off under the lock.
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest, FlaggedByTheDetector

pytest.importorskip("limits")

USER_TEST = """
import asyncio

import pytest
from limits import parse
from limits.aio.storage import MemoryStorage
from limits.aio.strategies import MovingWindowRateLimiter


@pytest.mark.racecheck
async def test_a_burst_never_exceeds_the_limit():
    limiter = MovingWindowRateLimiter(MemoryStorage())
    limit = parse("2/day")

    async def request():
        await asyncio.sleep(0.01)  # requests arrive together
        return await limiter.hit(limit, "user-1")

    results = await asyncio.gather(*(request() for _ in range(3)))
    assert results.count(True) == 2, f"{results.count(True)} requests let through, limit 2"
"""


class TestLimits(FailsItsUserTest, FlaggedByTheDetector):
    library = "limits"
    module = "limits"
    user_test = USER_TEST
    symptom = "3 requests let through, limit 2"
    finding = "stale index"
    finding_shows = ("memory.py:69", "memory.py:172", "memory.py:76")
