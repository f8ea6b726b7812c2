"""DPOR on asyncio: where a waking callback lands among the tasks' steps.

``gather``, ``asyncio.wait``, ``shield``, ``wait_for`` and a ``TaskGroup``
wake their waiter from a done-callback: the child's end queues it, and the
loop runs it when it reaches the head of the ready queue, behind every task
step queued before it. The waiter can run only after those steps. Which
steps those are depends on the order of the appends to the ready queue: a
task that yielded before the child's end is ahead of the callback, and one
that yields after it is behind it.

The wake was recorded as ordered after the child's end alone (accesses.WAKE),
and the queue's order was not recorded at all. So DPOR took the step that ran
the callback for the waiter's cause, and never tried the order where the
child ends before that task yields. In every program below, DPOR called the
program verified after one run, and missed the state where the waiter reads
before the other task writes. Plain exhaustive search reaches that state.
The ``ensure_future`` join is the guard: a task's end wakes an awaiting task
directly, with no callback in between.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import racecheck

Outcome = tuple[Any, ...]


async def _child() -> int:
    return 1


async def _gather() -> None:
    await asyncio.gather(_child())


async def _wait() -> None:
    await asyncio.wait([asyncio.ensure_future(_child())])


async def _shield() -> None:
    await asyncio.shield(_child())


async def _wait_for() -> None:
    await asyncio.wait_for(_child(), 1)


async def _wait_for_zero() -> None:
    try:
        await asyncio.wait_for(asyncio.Event().wait(), 0)
    except TimeoutError:
        pass


async def _task_group() -> None:
    async with asyncio.TaskGroup() as group:
        group.create_task(_child())


async def _awaited_task() -> None:
    await asyncio.ensure_future(_child())


JOINS: dict[str, Callable[[], Awaitable[None]]] = {
    "gather": _gather,
    "asyncio.wait": _wait,
    "shield": _shield,
    "wait_for with a timeout": _wait_for,
    "wait_for that times out at once": _wait_for_zero,
    "TaskGroup": _task_group,
    "an awaited task (guard)": _awaited_task,
}


def _program(join: Callable[[], Awaitable[None]]) -> Callable[[set[Outcome]], Any]:
    """A read-then-write task against a task that joins a child, then reads."""

    def make(seen: set[Outcome]) -> Callable[[], Awaitable[None]]:
        async def target() -> None:
            state = {"x": 0}

            async def updater() -> int:
                seen_first = state["x"]
                await asyncio.sleep(0)
                state["x"] = seen_first + 1
                return seen_first

            async def joiner() -> int:
                await join()
                return state["x"]

            seen.add(tuple(await asyncio.gather(updater(), joiner())))

        return target

    return make


def _states(make: Callable[[set[Outcome]], Any], strategy: str, **options: Any) -> Any:
    seen: set[Outcome] = set()
    report = racecheck.check(make(seen), strategy=strategy, schedules=2000, **options)
    return seen, report


@pytest.mark.parametrize("name", list(JOINS))
def test_dpor_tries_a_waking_callback_ahead_of_a_task_that_yielded(name: str) -> None:
    make = _program(JOINS[name])
    everything, full = _states(make, "exhaustive", preemption_bound=10**6)
    assert full.exhausted
    assert everything == {(0, 0), (0, 1)}, "the joiner reads before or after the write"
    reached, dpor = _states(make, "dpor")
    assert dpor.verified, dpor
    assert reached == everything


def test_dpor_fails_where_the_joiner_reads_before_the_write() -> None:
    """The state DPOR left out, forbidden: DPOR must find it."""

    async def target() -> None:
        state = {"x": 0}

        async def updater() -> None:
            seen_first = state["x"]
            await asyncio.sleep(0)
            state["x"] = seen_first + 1

        async def joiner() -> None:
            await asyncio.gather(_child())
            assert state["x"] == 1, "read before the update"

        await asyncio.gather(updater(), joiner())

    with pytest.raises(racecheck.RaceFound):
        racecheck.check(target, strategy="dpor", schedules=2000, minimize=False)
