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


# -- placements that decide something only through what follows the wake -----------
# DPOR reverses a placement only when, in some run with the callback behind a task
# step r, a later step of another actor that does not happen before the wake
# conflicts with r (strategies/dpor.py, DPORChooser._placements).
# Each program below hides that conflict somewhere else: a third task whose read of
# the woken task's write depends on r's write, the woken task's second step, a task
# the woken one wakes, a cancel, a nested gather, a callback behind two steps.


async def _hidden_by_a_branch(log: list[Any]) -> None:
    """The looker reads z only where x is still 0: behind r, it never reads z."""
    state = {"x": 0, "z": 0}

    async def updater() -> None:
        await asyncio.sleep(0)
        state["x"] = 1

    async def joiner() -> None:
        await asyncio.gather(_child())
        state["z"] = 1

    async def looker() -> None:
        await asyncio.sleep(0)
        log.append(state["z"] if state["x"] == 0 else -1)

    await asyncio.gather(updater(), joiner(), looker())


async def _second_step(log: list[Any]) -> None:
    """The woken task's first step touches nothing of r's; its second reads x."""
    state = {"x": 0}

    async def updater() -> None:
        await asyncio.sleep(0)
        state["x"] = 1

    async def joiner() -> None:
        await asyncio.gather(_child())
        await asyncio.sleep(0)
        log.append(state["x"])

    await asyncio.gather(updater(), joiner())


async def _through_an_event(log: list[Any]) -> None:
    """The woken task sets an event; the task it wakes reads x."""
    state = {"x": 0}
    event = asyncio.Event()

    async def updater() -> None:
        await asyncio.sleep(0)
        state["x"] = 1

    async def joiner() -> None:
        await asyncio.gather(_child())
        event.set()

    async def reader() -> None:
        await event.wait()
        log.append(state["x"])

    await asyncio.gather(updater(), joiner(), reader())


async def _cancels(log: list[Any]) -> None:
    """The woken task cancels the task whose step r was queued first."""
    state = {"x": 0}

    async def updater() -> None:
        try:
            await asyncio.sleep(0)
            state["x"] = 1
        except asyncio.CancelledError:
            state["x"] = 2

    task = asyncio.ensure_future(updater())

    async def joiner() -> None:
        await asyncio.gather(_child())
        task.cancel()

    await asyncio.gather(joiner(), return_exceptions=True)
    await asyncio.gather(task, return_exceptions=True)
    log.append(state["x"])


async def _nested(log: list[Any]) -> None:
    """Two hops: a gather of a gather, then a read of x."""
    state = {"x": 0}

    async def updater() -> None:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        state["x"] = 1

    async def joiner() -> None:
        await asyncio.gather(asyncio.gather(_child()))
        log.append(state["x"])

    await asyncio.gather(updater(), joiner())


async def _two_ahead(log: list[Any]) -> None:
    """Two tasks' steps ahead of the callback: one writes x, the other reads it."""
    state = {"x": 0}

    async def updater() -> None:
        await asyncio.sleep(0)
        state["x"] = 1

    async def peeker() -> None:
        await asyncio.sleep(0)
        log.append(("peek", state["x"]))

    async def joiner() -> None:
        await asyncio.gather(_child())
        state["x"] = 5

    await asyncio.gather(updater(), peeker(), joiner())
    log.append(state["x"])


HIDDEN: dict[str, Callable[[list[Any]], Awaitable[None]]] = {
    "a branch of a third task": _hidden_by_a_branch,
    "the woken task's second step": _second_step,
    "a task the woken one wakes": _through_an_event,
    "a cancel": _cancels,
    "a nested gather": _nested,
    "two steps ahead": _two_ahead,
}


def _logged(program: Callable[[list[Any]], Awaitable[None]]) -> Callable[[set[Outcome]], Any]:
    def make(seen: set[Outcome]) -> Callable[[], Awaitable[None]]:
        async def target() -> None:
            log: list[Any] = []
            await program(log)
            seen.add(tuple(log))

        return target

    return make


@pytest.mark.parametrize("name", list(HIDDEN))
def test_dpor_reaches_what_a_placement_decides_through_later_steps(name: str) -> None:
    make = _logged(HIDDEN[name])
    everything, full = _states(make, "exhaustive", preemption_bound=10**6)
    assert full.exhausted
    reached, dpor = _states(make, "dpor")
    assert dpor.verified, dpor
    assert reached == everything


async def _quick() -> str:
    return "b"


async def _one_yield() -> str:
    await asyncio.sleep(0)
    return "a"


async def _two_yields() -> str:
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return "c"


#: three tasks that finish after 0, 1 and 2 yields, made in this order
_UNEVEN = (_one_yield, _quick, _two_yields)


async def _first_completed(log: list[Any]) -> None:
    """An asyncio.wait(FIRST_COMPLETED) loop (the marsys runtime's waiter): which
    tasks each wake finds done."""

    pending = {asyncio.ensure_future(f()) for f in _UNEVEN}
    while pending:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        log.append(tuple(sorted(task.result() for task in done)))


@pytest.mark.xfail(
    strict=True,
    reason=(
        "open (main too, 3.11 and 3.13): DPOR verifies with [('b',), ('a',), ('c',)]"
        " missing. The second wake's callback, queued with nothing ahead of it, reads"
        " no place, so its step's order against the append of the longer task's last"
        " step is never raced; marking such steps with a read of a place nobody writes"
        " (tried) was not enough: the runs that would show it end in sleep-set blocks"
    ),
)
def test_dpor_reaches_every_done_set_of_a_first_completed_loop() -> None:
    make = _logged(_first_completed)
    everything, full = _states(make, "exhaustive", preemption_bound=10**6)
    assert full.exhausted
    reached, dpor = _states(make, "dpor")
    assert dpor.verified, dpor
    assert reached == everything


async def _as_completed(log: list[Any]) -> None:
    """The same three tasks taken in the order they finish (``asyncio.as_completed``)."""

    # tasks made here, in this order: as_completed would make them in a set's order
    tasks = [asyncio.ensure_future(f()) for f in _UNEVEN]
    for next_done in asyncio.as_completed(tasks):
        log.append(await next_done)


@pytest.mark.parametrize("program", [_first_completed, _as_completed])
def test_dpor_claims_nothing_for_a_join_that_sees_part_of_its_tasks_done(
    program: Callable[[list[Any]], Awaitable[None]],
) -> None:
    """Until the miss above is fixed, a wait that returns with some of its tasks done
    (FIRST_COMPLETED, FIRST_EXCEPTION, as_completed) is no proof: not "verified"."""
    _, dpor = _states(_logged(program), "dpor")
    assert not dpor.verified, dpor
    assert any("some of its tasks done" in note for note in dpor.notes + dpor.warnings), dpor


async def _all_completed(log: list[Any]) -> None:
    async def child(name: str) -> str:
        await asyncio.sleep(0)
        return name

    done, _ = await asyncio.wait({asyncio.ensure_future(child(n)) for n in "ab"})
    log.append(tuple(sorted(task.result() for task in done)))


def test_a_wait_for_all_of_its_tasks_is_still_verified() -> None:
    _, dpor = _states(_logged(_all_completed), "dpor")
    assert dpor.verified, dpor
