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
from realcode_support import FailsItsUserTest, FlaggedByTheDetector

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


class TestAnyio(FailsItsUserTest, FlaggedByTheDetector):
    library = "anyio"
    module = "anyio"
    user_test = USER_TEST
    symptom = "deadlock"
    finding = "stale hand-off"
    finding_shows = ("_asyncio.py:",)
