"""anyio 4.13.0 (asyncio backend): a lock waiter that times out can wedge the Lock.

When a waiter's cancel scope expires in the same loop iteration as the owner
releases, ``release()`` skips the waiter's already-cancelled future and leaves
the lock ownerless, but the cancelled waiter is still queued until its task
runs again. A task that calls ``acquire()`` in between sees a non-empty queue,
queues behind it, and nobody ever hands the lock over: the program hangs.
4.14.0 fixes the hand-off ("deadlocks caused by cancelled waiters left queued").
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

pytest.importorskip("anyio")

USER_TEST = """
import anyio
import pytest


@pytest.mark.racecheck
async def test_lock_still_works_after_a_waiter_times_out():
    lock = anyio.Lock()
    done = []

    async def holder():
        async with lock:
            await anyio.sleep(1)
        done.append("holder")

    async def impatient():
        await anyio.sleep(0)
        with anyio.move_on_after(1):
            async with lock:
                done.append("impatient")

    async def latecomer():
        await anyio.sleep(1)
        async with lock:
            done.append("latecomer")

    async with anyio.create_task_group() as tg:
        tg.start_soon(holder)
        tg.start_soon(impatient)
        tg.start_soon(latecomer)
    assert "latecomer" in done
"""

SYMPTOM = "deadlock"


def test_buggy_release_is_found_and_replays(pytester: pytest.Pytester) -> None:
    require_pin("anyio", "buggy")
    pytester.makepyfile(test_user_anyio=USER_TEST)
    found = expect_found(pytester, SYMPTOM)
    save_token("anyio", found.token)
    expect_replay_fails(pytester, found, SYMPTOM)
    print(f"realcode anyio buggy: found after {found.schedules} ({found.strategy})")


def test_fixed_release_runs_clean(pytester: pytest.Pytester) -> None:
    require_pin("anyio", "fixed")
    pytester.makepyfile(test_user_anyio=USER_TEST)
    print(expect_clean(pytester))


def test_fixed_release_does_not_fail_on_the_buggy_token(pytester: pytest.Pytester) -> None:
    require_pin("anyio", "fixed")
    pytester.makepyfile(test_user_anyio=USER_TEST)
    print("realcode anyio fixed, buggy token:", expect_replay_after_fix(pytester, "anyio", SYMPTOM))


def test_buggy_release_is_flagged_by_the_detector_alone(pytester: pytest.Pytester) -> None:
    """Assertion removed, anyio traced: the detector names the race itself."""
    require_pin("anyio", "buggy")
    pytester.makepyfile(test_user_anyio=without_assertions(USER_TEST))
    output = expect_detector_finding(pytester, "anyio", "stale hand-off")
    assert "_asyncio.py:" in output, output


def test_fixed_release_is_clean_under_the_detector(pytester: pytest.Pytester) -> None:
    """No false alarm on the fixed release, anyio traced as code under test."""
    require_pin("anyio", "fixed")
    pytester.makepyfile(test_user_anyio=USER_TEST)
    expect_detector_clean(pytester, "anyio")
