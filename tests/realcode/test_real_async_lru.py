"""async-lru 2.0.3: clearing the cache while a call is in flight hangs that call.

``cache_clear()`` empties the wrapper's set of running tasks. When the
in-flight task finishes, its done-callback ``remove``s itself from that set,
raises ``KeyError`` inside the event loop's callback, and never resolves the
future the caller is awaiting: the caller waits forever. 2.0.4 uses
``discard``, so the callback goes on and hands the result over. racecheck
reports the ``KeyError`` escaping the loop callback as the failure (outside
racecheck, asyncio only logs it and the caller hangs).
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest

pytest.importorskip("async_lru")

USER_TEST = """
import asyncio

import pytest
from async_lru import alru_cache


@alru_cache(maxsize=64)
async def fetch_profile(user_id):
    await asyncio.sleep(0.05)  # stands for a request to a profile service
    return {"id": user_id}


@pytest.mark.racecheck
async def test_clearing_the_cache_never_strands_a_reader():
    fetch_profile.cache_clear()

    async def reader():
        return await fetch_profile(7)

    async def on_logout():
        await asyncio.sleep(0.05)  # the user logs out while the profile loads
        fetch_profile.cache_clear()

    profile, _ = await asyncio.gather(reader(), on_logout())
    assert profile == {"id": 7}
"""


class TestAsyncLru(FailsItsUserTest):
    library = "async-lru"
    module = "async_lru"
    user_test = USER_TEST
    symptom = "KeyError"
