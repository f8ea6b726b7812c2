"""DPOR on asyncio: a wait that can end by cancellation is no stutter.

An asyncio operation that waits (a lock's acquire, an event's wait, a
queue's get or put) records only that it looked: it does not race the
release, set or put that ends its wait, because with that operation first it
would simply have gone on, which its woken step does anyway; and a get that
found its item is ordered after the put of it (accesses._ATTEMPTS, ITEM).
That holds only when the wait really ends by its wake. In asyncio any wait
can end by cancellation instead: a deadline (``asyncio.timeout``,
``wait_for``) or another task's ``cancel()`` lands before the woken step, or
before anyone wakes it, and the task goes on with ``CancelledError`` where,
run after the release, it would have got the lock, the item or the event.
DPOR never tried that order and called seven of the programs below verified
after one run, with a final state plain exhaustive search reaches left
unreached (found by test_dpor_asyncio_sync_random.py's slow property). The
others are guards: orders the earlier rules already reached.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from test_dpor_asyncio_sync_random import times_out

import racecheck

Outcome = tuple[Any, ...]
Program = Callable[[], Awaitable[Outcome]]


async def get_with_a_deadline_against_a_put() -> Outcome:
    queue: asyncio.Queue[int] = asyncio.Queue(maxsize=1)

    async def getter() -> bool:
        return await times_out(queue.get(), 0)

    async def putter() -> None:
        queue.put_nowait(1)

    gave_up, _ = await asyncio.gather(getter(), putter())
    return gave_up, queue.qsize()


async def put_against_a_get_with_a_deadline() -> Outcome:
    """The put's task first: the get finds its item and goes on (test_dpor_random's twin)."""
    queue: asyncio.Queue[int] = asyncio.Queue(maxsize=1)

    async def putter() -> None:
        queue.put_nowait(1)

    async def getter() -> bool:
        return await times_out(queue.get(), 0)

    _, gave_up = await asyncio.gather(putter(), getter())
    return gave_up, queue.qsize()


async def get_against_a_put_with_a_deadline() -> Outcome:
    """The get's task first: the put finds room and goes on."""
    queue: asyncio.Queue[int] = asyncio.Queue(maxsize=1)
    queue.put_nowait(0)

    async def getter() -> int:
        return queue.get_nowait()

    async def putter() -> bool:
        return await times_out(queue.put(1), 0)

    got, gave_up = await asyncio.gather(getter(), putter())
    return gave_up, got, queue.qsize()


async def put_against_a_get_under_wait_for() -> Outcome:
    """``wait_for``'s deadline falls due with the put: on 3.11 the get is a task of its own."""
    queue: asyncio.Queue[int] = asyncio.Queue()

    async def putter() -> None:
        await asyncio.sleep(0.5)
        queue.put_nowait(1)

    async def getter() -> bool:
        try:
            await asyncio.wait_for(queue.get(), 0.5)
        except TimeoutError:
            return True
        return False

    _, gave_up = await asyncio.gather(putter(), getter())
    return gave_up, queue.qsize()


async def put_with_a_deadline_against_a_get() -> Outcome:
    queue: asyncio.Queue[int] = asyncio.Queue(maxsize=1)
    queue.put_nowait(0)

    async def putter() -> bool:
        return await times_out(queue.put(1), 0)

    async def getter() -> int:
        return queue.get_nowait()

    gave_up, got = await asyncio.gather(putter(), getter())
    return gave_up, got, queue.qsize()


async def event_wait_with_a_deadline_against_a_set() -> Outcome:
    event = asyncio.Event()

    async def waiter() -> bool:
        return await times_out(event.wait(), 0)

    async def setter() -> None:
        event.set()

    gave_up, _ = await asyncio.gather(waiter(), setter())
    return (gave_up,)


async def acquire_with_a_deadline_against_a_release() -> Outcome:
    lock = asyncio.Lock()

    async def holder() -> None:
        async with lock:
            await asyncio.sleep(0)

    async def late() -> bool:
        await asyncio.sleep(0)
        gave_up = await times_out(lock.acquire(), 0)
        if not gave_up:
            lock.release()
        return gave_up

    _, gave_up = await asyncio.gather(holder(), late())
    return (gave_up,)


async def semaphore_with_a_deadline_against_a_release() -> Outcome:
    semaphore = asyncio.Semaphore(1)

    async def holder() -> None:
        async with semaphore:
            await asyncio.sleep(0)

    async def late() -> bool:
        await asyncio.sleep(0)
        gave_up = await times_out(semaphore.acquire(), 0)
        if not gave_up:
            semaphore.release()
        return gave_up

    _, gave_up = await asyncio.gather(holder(), late())
    return (gave_up,)


async def acquire_with_a_deadline_against_another_tasks_release() -> Outcome:
    lock = asyncio.Lock()
    await lock.acquire()

    async def releaser() -> None:
        lock.release()

    async def waiter() -> bool:
        gave_up = await times_out(lock.acquire(), 0)
        if not gave_up:
            lock.release()
        return gave_up

    gave_up, _ = await asyncio.gather(waiter(), releaser())
    return (gave_up,)


async def semaphore_with_a_deadline_against_another_tasks_release() -> Outcome:
    semaphore = asyncio.Semaphore(1)
    await semaphore.acquire()

    async def releaser() -> None:
        semaphore.release()

    async def waiter() -> bool:
        gave_up = await times_out(semaphore.acquire(), 0)
        if not gave_up:
            semaphore.release()
        return gave_up

    gave_up, _ = await asyncio.gather(waiter(), releaser())
    return (gave_up,)


async def get_cancelled_by_another_task() -> Outcome:
    queue: asyncio.Queue[int] = asyncio.Queue()
    got: list[int] = []

    async def getter() -> None:
        got.append(await queue.get())

    task = asyncio.ensure_future(getter())

    async def putter() -> None:
        queue.put_nowait(1)

    async def canceller() -> None:
        task.cancel()

    await asyncio.gather(putter(), canceller())
    await asyncio.gather(task, return_exceptions=True)
    return tuple(got), queue.qsize()


async def read_twice_against_a_write_after_a_deadline() -> Outcome:
    """Where the deadline's expiry lands among the other task's steps (a callback's place)."""
    state = {"x": 0}
    event = asyncio.Event()

    async def reader() -> int:
        seen = state["x"]
        await asyncio.sleep(0)
        seen += state["x"]
        await asyncio.sleep(0)
        return seen

    async def writer() -> None:
        await asyncio.sleep(0)
        await times_out(event.wait(), 0)
        state["x"] = 50

    seen, _ = await asyncio.gather(reader(), writer())
    return (seen,)


async def _swallow_cancellation(awaitable: Awaitable[Any]) -> None:
    try:
        await awaitable
    except asyncio.CancelledError:
        asyncio.current_task().uncancel()  # type: ignore[union-attr]


async def a_write_after_a_helper_swallowed_a_cancellation() -> Outcome:
    """3.11: the write runs in a frame resumed without a call event (a throw through an await)."""
    state = {"x": 0}
    event = asyncio.Event()

    async def reader() -> int:
        seen = state["x"]
        await asyncio.sleep(0)
        return seen + state["x"]

    async def writer() -> None:
        me = asyncio.current_task()
        asyncio.get_running_loop().call_soon(me.cancel)  # type: ignore[union-attr]
        await _swallow_cancellation(event.wait())
        state["x"] = 50

    seen, _ = await asyncio.gather(reader(), writer())
    return (seen,)


async def condition_wait_with_a_deadline_against_a_notify() -> Outcome:
    """The expiry runs inside whichever step comes next: here the reader's, which has
    nothing to do with the condition, so only the cancel it delivers orders the two."""
    state = {"x": 0}
    condition = asyncio.Condition()

    async def reader() -> None:
        state["x"] += 0

    async def notifier() -> None:
        async with condition:
            condition.notify_all()

    async def waiter() -> bool:
        async def wait() -> None:
            async with condition:
                await condition.wait()

        return await times_out(wait(), 0)

    _, _, gave_up = await asyncio.gather(reader(), notifier(), waiter())
    return (gave_up,)


PROGRAMS: dict[str, Program] = {
    "queue get vs put": get_with_a_deadline_against_a_put,
    "queue put vs get": put_with_a_deadline_against_a_get,
    "queue put first, get with a deadline": put_against_a_get_with_a_deadline,
    "queue get first, put with a deadline": get_against_a_put_with_a_deadline,
    "event wait vs set": event_wait_with_a_deadline_against_a_set,
    "lock acquire vs release": acquire_with_a_deadline_against_a_release,
    "semaphore acquire vs release": semaphore_with_a_deadline_against_a_release,
    "lock acquire vs another task's release": acquire_with_a_deadline_against_another_tasks_release,
    "semaphore acquire vs another task's release": (
        semaphore_with_a_deadline_against_another_tasks_release
    ),
    "queue get vs put, cancelled by a task": get_cancelled_by_another_task,
    "a read against a write after a deadline": read_twice_against_a_write_after_a_deadline,
    "condition wait with a deadline vs notify": condition_wait_with_a_deadline_against_a_notify,
    "a write after a helper swallowed a cancellation": (
        a_write_after_a_helper_swallowed_a_cancellation
    ),
}


if sys.version_info < (3, 12):
    # 3.12+'s wait_for is a timeout scope, whose handler runs first at the tie: one state
    PROGRAMS["queue put first, get under wait_for"] = put_against_a_get_under_wait_for


def _states(program: Program, strategy: str, **options: Any) -> tuple[set[Outcome], Any]:
    seen: set[Outcome] = set()

    async def target() -> None:
        seen.add(await program())

    report = racecheck.check(target, strategy=strategy, schedules=2000, **options)
    return seen, report


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_dpor_reaches_what_a_cancelled_wait_makes_reachable(name: str) -> None:
    everything, full = _states(PROGRAMS[name], "exhaustive", preemption_bound=10**6)
    assert full.exhausted
    assert len(everything) > 1, "the program must have more than one final state"
    reached, dpor = _states(PROGRAMS[name], "dpor")
    assert dpor.verified, dpor
    assert reached == everything
