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
from realcode_support import FailsItsUserTest, FlaggedByTheDetector

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


class TestAiorwlock(FailsItsUserTest, FlaggedByTheDetector):
    """The lock's miscount is a sequential mistake on cancellation, not a race of its own.
    What the detector sees is its consequence: the user's critical section no longer
    excludes the other writer, and the two writers' accesses to ``inside`` race.
    """

    library = "aiorwlock"
    module = "aiorwlock"
    user_test = USER_TEST
    symptom = "2 writers inside at once"
    finding = "lost update"
    finding_shows = ("on inside",)
