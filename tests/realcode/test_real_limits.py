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

SYMPTOM = "3 requests let through, limit 2"
LIBRARY = "limits"


def test_buggy_release_is_found_and_replays(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "buggy")
    pytester.makepyfile(test_user_limits=USER_TEST)
    found = expect_found(pytester, SYMPTOM)
    save_token(LIBRARY, found.token)
    expect_replay_fails(pytester, found, SYMPTOM)
    print(f"realcode limits buggy: found after {found.schedules} ({found.strategy})")


def test_fixed_release_runs_clean(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_limits=USER_TEST)
    print(expect_clean(pytester))


def test_fixed_release_does_not_fail_on_the_buggy_token(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_limits=USER_TEST)
    print(
        "realcode limits fixed, buggy token:", expect_replay_after_fix(pytester, LIBRARY, SYMPTOM)
    )


def test_buggy_release_is_flagged_by_the_detector_alone(pytester: pytest.Pytester) -> None:
    """Assertion removed, limits traced: the detector names the race itself."""
    require_pin(LIBRARY, "buggy")
    pytester.makepyfile(test_user_limits=without_assertions(USER_TEST))
    output = expect_detector_finding(pytester, "limits", "stale index")
    assert "memory.py:69" in output, output
    assert "memory.py:172" in output, output
    assert "memory.py:76" in output, output


def test_fixed_release_is_clean_under_the_detector(pytester: pytest.Pytester) -> None:
    """No false alarm on the fixed release, limits traced as code under test."""
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_limits=USER_TEST)
    expect_detector_clean(pytester, "limits")
