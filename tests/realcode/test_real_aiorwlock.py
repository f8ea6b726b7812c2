"""aiorwlock 1.5.0: a writer that gives up while queued lets two writers in.

A waiting writer whose wait is cancelled (a timeout) took one off the count of
writers inside (``self._w_state -= 1``) even though it had never been counted
in: with a writer holding the lock, the count drops to zero, the waker runs,
and the next writer is let in beside the holder. 1.5.1 takes the count back
only from a waiter that had been woken (``if fut.done() and not
fut.cancelled()``).

The fixed release is also a held-out check of two detector rules: its lock
keeps its state in ``__slots__`` (once invisible to the detector), and its
release walks the writers' queue, waking the first live one and leaving its
entry for the woken writer to remove (a stale hand-off only when the walk
passed an entry over).
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

pytest.importorskip("aiorwlock")

USER_TEST = """
import asyncio

import pytest
from aiorwlock import RWLock


@pytest.mark.racecheck
async def test_writers_never_overlap_when_a_waiter_gives_up():
    rw = RWLock()
    inside = []
    seen = []

    async def write(name):
        async with rw.writer_lock:
            inside.append(name)
            seen.append(len(inside))
            await asyncio.sleep(0.01)
            inside.remove(name)

    async def impatient():
        try:
            async with asyncio.timeout(0.005):
                await rw.writer_lock.acquire()
        except TimeoutError:
            return
        rw.writer_lock.release()

    await asyncio.gather(write("a"), impatient(), write("b"), write("c"))
    assert max(seen) == 1, f"{max(seen)} writers inside at once"
"""

SYMPTOM = "2 writers inside at once"
LIBRARY = "aiorwlock"


def test_buggy_release_is_found_and_replays(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "buggy")
    pytester.makepyfile(test_user_aiorwlock=USER_TEST)
    found = expect_found(pytester, SYMPTOM)
    save_token(LIBRARY, found.token)
    expect_replay_fails(pytester, found, SYMPTOM)
    print(f"realcode aiorwlock buggy: found after {found.schedules} ({found.strategy})")


def test_fixed_release_runs_clean(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_aiorwlock=USER_TEST)
    print(expect_clean(pytester))


def test_fixed_release_does_not_fail_on_the_buggy_token(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_aiorwlock=USER_TEST)
    print(
        "realcode aiorwlock fixed, buggy token:",
        expect_replay_after_fix(pytester, LIBRARY, SYMPTOM),
    )


def test_buggy_release_is_flagged_by_the_detector_alone(pytester: pytest.Pytester) -> None:
    """Assertion removed, aiorwlock traced: the two writers' accesses to ``inside`` race.

    The lock's miscount is a sequential mistake on cancellation, not a race of
    its own; what the detector sees is its consequence, the user's critical
    section no longer excluding the other writer.
    """
    require_pin(LIBRARY, "buggy")
    pytester.makepyfile(test_user_aiorwlock=without_assertions(USER_TEST))
    output = expect_detector_finding(pytester, "aiorwlock", "lost update")
    assert "on inside" in output, output


def test_fixed_release_is_clean_under_the_detector(pytester: pytest.Pytester) -> None:
    """No false alarm on the fixed release, aiorwlock traced as code under test."""
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_aiorwlock=USER_TEST)
    expect_detector_clean(pytester, "aiorwlock")
