"""asyncio primitives made at import time belong to no loop of an earlier schedule.

Since Python 3.10 an ``asyncio.Lock`` (Event, Condition, Semaphore, Queue)
binds to the loop it first has to wait under, and a wait under another loop
raises ``RuntimeError: ... is bound to a different event loop``. A lock made
at import time, in a fresh process, binds to the one loop that process runs.
Under racecheck every schedule stands for such a process, but the loops are
racecheck's: a new one for every exploration, and a new one within an
exploration when a run left its loop unfit for reuse. So the second check in
a test session that used a module-level lock failed at its first schedule
with a "race" that was racecheck's own doing, and one exploration whose loop
was replaced reported a state leak.

A primitive bound to no loop of the running schedule now binds to the
schedule's loop when it waits, and gets its binding back when the
exploration ends. Two loops of one schedule are still two loops: reusing a
lock under a second ``asyncio.run`` in one target is still found (the
agent-framework #6776 scenario's bug).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

import racecheck

LOCK = asyncio.Lock()
EVENT = asyncio.Event()
QUEUE: asyncio.Queue[int] = asyncio.Queue()


async def contend_on_module_primitives() -> None:
    shared = {"n": 0}

    async def bump() -> None:
        async with LOCK:
            seen = shared["n"]
            await asyncio.sleep(0)
            shared["n"] = seen + 1
        await QUEUE.put(1)

    async def wait_for_both() -> None:
        await QUEUE.get()
        await QUEUE.get()
        EVENT.set()

    waiter = asyncio.ensure_future(EVENT.wait())
    await asyncio.gather(bump(), bump(), wait_for_both())
    await waiter
    EVENT.clear()
    assert shared["n"] == 2, shared


async def contend_and_retire_the_loop() -> None:
    async def numbers() -> AsyncIterator[int]:
        yield 1
        yield 2

    # Dropped unfinished: the loop is left with a generator to close and is
    # not reused for the next schedule.
    assert await anext(numbers()) == 1
    await contend_on_module_primitives()


@pytest.mark.parametrize("strategy", ["auto", "dpor", "random"])
def test_a_second_check_in_the_same_process_is_not_a_race(strategy: str) -> None:
    racecheck.check(contend_on_module_primitives, strategy="random", schedules=5)
    racecheck.check(contend_on_module_primitives, strategy=strategy, schedules=40)


@pytest.mark.parametrize("strategy", ["auto", "dpor", "random"])
def test_a_replaced_loop_is_not_a_state_leak(strategy: str) -> None:
    racecheck.check(contend_and_retire_the_loop, strategy=strategy, schedules=40)


def test_the_binding_is_given_back_after_the_exploration() -> None:
    racecheck.check(contend_on_module_primitives, strategy="random", schedules=5)
    assert LOCK._loop is None and EVENT._loop is None and QUEUE._loop is None  # type: ignore[attr-defined]

    async def real_use() -> None:  # a real loop after racecheck's: nothing in the way
        await contend_on_module_primitives()

    asyncio.run(real_use())
    # the real run bound them: put back as a fresh import has them, for the next test
    for primitive in (LOCK, EVENT, QUEUE):
        primitive._loop = None  # type: ignore[attr-defined]


SHARED_LOCK = asyncio.Lock()


def two_loops_in_one_run() -> None:
    async def contend() -> None:
        async def hold() -> None:
            async with SHARED_LOCK:
                await asyncio.sleep(0)

        await asyncio.gather(hold(), hold())

    asyncio.run(contend())
    asyncio.run(contend())  # the lock is bound to the first loop: a real bug


def test_a_lock_reused_under_a_second_loop_of_one_run_is_still_found() -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(two_loops_in_one_run, schedules=50)
    assert "bound to a different event loop" in str(found.value)
    assert SHARED_LOCK._loop is None  # type: ignore[attr-defined]
