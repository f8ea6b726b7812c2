"""aiojobs 1.0.0: a scheduler at its pending limit stops starting jobs and hangs.

``Scheduler.spawn`` counted a job among the scheduler's jobs *before* waiting
for a free place in the pending queue. While one ``spawn`` waits there, its
job is counted as active though it is neither running nor queued: a running
job that finishes meanwhile computes how many pending jobs it may start from
that overcount (``limit - active_count``), starts none, and the queue never
drains. The waiting ``spawn`` and every job behind it wait forever (upstream
aio-libs/aiojobs PR 135, "Fix scheduler blocking forever when pending limit is
reached", released in 1.1.0; reported as issues 97 and 98, "Scheduler stops
scheduling tasks"). 1.1.0 adds the job to its set only once it is started or
queued.

The user's test uses ``create_scheduler``, the API of 1.0.0 that 1.1.0 still
has (deprecated), and waits for its jobs through a list they fill: 1.0.0's
``Job.wait`` uses ``async_timeout.timeout`` as a plain ``with``, which the
async-timeout 4 it requires no longer allows.
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest

pytest.importorskip("aiojobs")

USER_TEST = """
import asyncio

import aiojobs
import pytest


@pytest.mark.racecheck
@pytest.mark.filterwarnings("ignore:Scheduler can now be instantiated:DeprecationWarning")
async def test_every_job_runs_when_spawning_waits_for_the_pending_queue():
    done = []

    async def job(name):
        await asyncio.sleep(0.01)
        done.append(name)

    scheduler = await aiojobs.create_scheduler(limit=1, pending_limit=1)
    for name in "abc":
        await scheduler.spawn(job(name))
    while len(done) < 3:
        await asyncio.sleep(0.01)
    await scheduler.close()
    assert sorted(done) == ["a", "b", "c"]
"""


class TestAiojobs(FailsItsUserTest):
    """The bug is a miscount in one task's bookkeeping, not a race on memory: no
    detector finding is asked of the buggy release (the run hangs either way), and
    the fixed release must run clean under the detector like every other."""

    library = "aiojobs"
    module = "aiojobs"
    user_test = USER_TEST
    symptom = "deadlock"
