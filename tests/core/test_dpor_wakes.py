"""DPOR on asyncio: a task's wake is ordered after the step that caused it.

In asyncio a step that resolves a future (a child task's end, ``set_result``)
often does not make the waiting task runnable itself: a done-callback does
(``asyncio.wait``'s, ``gather``'s, ``wait_for``'s, a ``TaskGroup``'s), and the
loop runs it later, behind the other tasks' steps queued before it, inside
another actor's step. Recorded only where it ran, the wake left the waiter's
next step unordered after its real cause, DPOR tried to run it before that
cause, and the run ended with only sleeping actors enabled (a redundant run).

Each program below has a hand-countable number of traces, and a helper task
(``other``) whose steps the callbacks queue behind. The count must be exact
and no run may end blocked by its sleep set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import racecheck


class Box:
    def __init__(self) -> None:
        self.value = 0


async def other() -> None:
    """Steps that do nothing shared: the callbacks queue behind them."""
    for _ in range(3):
        await asyncio.sleep(0)


async def wait_one() -> None:
    box = Box()

    async def child() -> None:
        box.value = 1

    helper = asyncio.create_task(other())
    task = asyncio.create_task(child())
    await asyncio.wait([task])  # woken by wait's done-callback, not by the child's end
    assert box.value == 1
    await helper


async def wait_for_future() -> None:
    box = Box()
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def setter() -> None:
        await asyncio.sleep(0)
        box.value = 1
        future.set_result(None)

    helper = asyncio.create_task(other())
    task = asyncio.create_task(setter())
    await asyncio.wait_for(future, 10)
    box.value += 1
    await helper
    await task


async def gather_two() -> None:
    box = Box()

    async def child(amount: int) -> None:
        box.value += amount

    helper = asyncio.create_task(other())
    await asyncio.gather(child(1), child(2))
    assert box.value == 3
    await helper


async def shielded() -> None:
    box = Box()

    async def child() -> None:
        await asyncio.sleep(0)
        box.value = 1

    helper = asyncio.create_task(other())
    await asyncio.shield(child())
    box.value += 1
    await helper


async def task_group() -> None:
    box = Box()

    async def child(amount: int) -> None:
        box.value += amount

    async with asyncio.TaskGroup() as group:
        group.create_task(other())
        group.create_task(child(1))
        group.create_task(child(2))
    box.value += 1


#: program, its traces: the orders of its conflicting steps
PROGRAMS: list[tuple[Callable[[], Awaitable[None]], int]] = [
    (wait_one, 1),
    (wait_for_future, 1),
    (gather_two, 2),  # the two children's updates, in either order
    (shielded, 1),
    (task_group, 2),
]


def blocked_runs(notes: list[str]) -> int:
    """Runs that ended with every enabled actor asleep (DPOR's note counts them)."""
    for note in notes:
        for part in note.split("; "):
            if "ended in a state whose continuations were all explored" in part:
                return int(part.split()[0])
    return 0


def traces(report: racecheck.Report) -> int:
    (note,) = [n for n in report.notes if n.startswith("verified: all ")]
    return int(note.split()[2])


def test_blocked_runs_reads_the_count_from_the_note() -> None:
    note = (
        "verified: all 2 non-equivalent interleavings explored (4 pruned); 3 runs ended in"
        " a state whose continuations were all explored (sleep sets)"
    )
    assert blocked_runs([note]) == 3
    assert blocked_runs([note.split(";")[0]]) == 0


@pytest.mark.parametrize(("program", "expected"), PROGRAMS, ids=lambda p: getattr(p, "__name__", ""))
def test_a_wake_through_a_callback_is_ordered_after_its_cause(
    program: Callable[[], Awaitable[None]], expected: int
) -> None:
    report = racecheck.check(program, strategy="dpor", schedules=500)
    assert report.verified, report.notes
    assert traces(report) == expected, report.notes
    assert blocked_runs(report.notes) == 0, report.notes


@pytest.mark.parametrize(("program", "expected"), PROGRAMS, ids=lambda p: getattr(p, "__name__", ""))
def test_the_same_wakes_on_a_loop_inside_a_thread(
    program: Callable[[], Awaitable[None]], expected: int
) -> None:
    """``asyncio.run`` from a plain ``def``: the threads backend hosts the loop."""

    def target() -> Any:
        return asyncio.run(program())

    report = racecheck.check(target, strategy="dpor", schedules=500)
    assert report.verified, report.notes
    assert blocked_runs(report.notes) == 0, report.notes
