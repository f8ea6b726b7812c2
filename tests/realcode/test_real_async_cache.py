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
from realcode_support import (
    expect_clean,
    expect_detector_clean,
    expect_detector_finding,
    expect_found,
    expect_replay_after_fix,
    expect_replay_fails,
    require_pin,
    save_token,
    without_assertions,
)

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

LIBRARY = "async-cache"
SYMPTOM = "one key computed twice"


def test_buggy_release_is_found_and_replays(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "buggy")
    pytester.makepyfile(test_user_async_cache=USER_TEST)
    found = expect_found(pytester, SYMPTOM)
    save_token(LIBRARY, found.token)
    expect_replay_fails(pytester, found, SYMPTOM)
    print(f"realcode async-cache buggy: found after {found.schedules} ({found.strategy})")


def test_buggy_release_is_flagged_by_the_detector_alone(pytester: pytest.Pytester) -> None:
    """Assertion removed, the package traced: the miss, another task's store, then the store."""
    require_pin(LIBRARY, "buggy")
    pytester.makepyfile(test_user_async_cache=without_assertions(USER_TEST))
    output = expect_detector_finding(pytester, "cache", "stale check")
    assert "async_ttl.py:18" in output and "lru.py:15" in output, output


def test_fixed_release_runs_clean(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_async_cache=USER_TEST)
    print(expect_clean(pytester))


def test_fixed_release_does_not_fail_on_the_buggy_token(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_async_cache=USER_TEST)
    print(
        "realcode async-cache fixed, buggy token:",
        expect_replay_after_fix(pytester, LIBRARY, SYMPTOM),
    )


def test_fixed_release_is_clean_under_the_detector(pytester: pytest.Pytester) -> None:
    """No false alarm on the fixed release: one pending future per key."""
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_async_cache=USER_TEST)
    expect_detector_clean(pytester, "cache")
