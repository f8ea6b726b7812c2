"""janus 1.1.0: ``async_q.join()`` can spin forever after a thread's ``task_done()``.

A consumer thread's last ``sync_q.task_done()`` sets the loop's "finished"
``asyncio.Event`` through ``call_soon_threadsafe``; a ``put`` on the loop
clears it right away. When the clear runs between ``task_done`` and the
deferred ``set``, the event ends up set while an item is unfinished, and
``join()`` loops on an ``Event.wait()`` that never suspends, starving the loop.
The user's consumer hands each result back to the loop before ``task_done``
(``run_coroutine_threadsafe(...).result()``), so a starved loop never lets it
finish the last item: ``join`` spins for ever (a step-limit), as it hangs for
real. Without such a hand-back the spin would end once the thread finishes on
its own, and there would be nothing to fail. 1.2.0 replaces the event with an
``asyncio.Condition``.

The consumer runs in ``asyncio.to_thread``: racecheck moves such a target to
the threads backend, where the executor's thread is scheduled line by line
next to the loop's tasks (it once ran inline on the loop's thread, and the
consumer's ``sync_q.get()`` blocked the loop itself: a StuckError on both
releases). The fixed release now runs clean. The buggy release's window needs
the loop's ``sleep(0.01)`` to end while the consumer thread could still run.
racecheck's virtual clock once moved only when every actor waited, so that
order was never tried and the buggy release passed; an idle loop's timer may
now fire while a thread could still run (within the threads backend's
TIMER_SLACK), which is how the bug is found.
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest

pytest.importorskip("janus")

USER_TEST = """
import asyncio

import janus
import pytest


@pytest.mark.racecheck
async def test_join_returns_once_the_thread_is_done():
    queue = janus.Queue()
    loop = asyncio.get_running_loop()
    handled = []

    async def report(item):
        handled.append(item)

    def consumer():
        for _ in range(2):
            item = queue.sync_q.get()
            # the thread hands each result back to the loop before it marks the item done
            asyncio.run_coroutine_threadsafe(report(item), loop).result()
            queue.sync_q.task_done()

    worker = asyncio.create_task(asyncio.to_thread(consumer))
    await queue.async_q.put(1)
    await asyncio.sleep(0.01)  # producing the next item
    await queue.async_q.put(2)
    await queue.async_q.join()
    assert handled == [1, 2]
    await worker
    queue.close()
    await queue.wait_closed()
"""


class TestJanus(FailsItsUserTest):
    library = "janus"
    module = "janus"
    user_test = USER_TEST
    symptom = "step-limit"
