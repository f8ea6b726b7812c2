"""DPOR and ``asyncio.all_tasks()``: making a task and ending one change what it returns.

``all_tasks()`` reads the process's task registry, which ``Task.__init__``
adds to and a task's end takes out of (``all_tasks`` skips done tasks).
Neither was recorded (``all_tasks`` counted as a pure function), so a look
at ``all_tasks()`` was independent of every task's birth and end, and DPOR
never tried a task made (or ended) between another actor's earlier read and
its look: it called programs "verified" whose failing order exhaustive search
reaches. The bridge scenario's async cleanup (``scenarios/cleveragents_7105_bridge.py``,
``buggy``) fails only in such an order: a pool thread's task is made before
the cleanup's audit and added to the tracked set after the cleanup's snapshot.

Now a task's birth and its end write the registry (each actor its own key, so
births and ends by different actors commute) and ``all_tasks()`` reads all of it.
"""

from __future__ import annotations

import asyncio

import pytest

import racecheck


async def _graph_run() -> None:
    await asyncio.sleep(0)


def _graph_runs_not_tracked(tracked: set[asyncio.Task[None]]) -> list[asyncio.Task[None]]:
    me = asyncio.current_task()
    return [
        task
        for task in asyncio.all_tasks()
        if task is not me and task not in tracked and task.get_coro().__name__ == "_graph_run"
    ]


async def made_between_a_look_and_the_add() -> None:
    """The auditor looks while the maker's task exists but is not tracked yet.

    Natural order: the auditor looks first (nothing made yet), then the maker
    makes and adds. Only its add conflicts with the auditor's read of the set;
    reversed there, the maker's task is made *and* added before the look. The
    failing order puts the look between the making and the add.
    """
    tracked: set[asyncio.Task[None]] = set()
    missed: list[asyncio.Task[None]] = []

    async def auditor() -> None:
        missed.extend(_graph_runs_not_tracked(tracked))

    async def maker() -> None:
        task = asyncio.ensure_future(_graph_run())
        await asyncio.sleep(0)
        tracked.add(task)

    await asyncio.gather(auditor(), maker())
    assert not missed, "a task made but not tracked yet was seen by the audit"


async def ended_before_the_look() -> None:
    """The auditor's second step looks at ``all_tasks()``; the graph run may end first."""
    running: list[int] = []

    async def auditor() -> None:
        await asyncio.sleep(0)
        running.append(len(asyncio.all_tasks()))

    await asyncio.gather(auditor(), _graph_run())
    # the gather's own task, the auditor, and the graph run while it has not ended
    assert running == [3], "the graph run ended before the audit looked"


@pytest.mark.parametrize("program", [made_between_a_look_and_the_add, ended_before_the_look])
def test_dpor_orders_a_task_birth_or_end_against_a_look_at_all_tasks(program: object) -> None:
    """Before the fix DPOR said "verified" after 2 and 1 runs; exhaustive fails both."""
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(program, strategy="dpor", schedules=200)
    with pytest.raises(racecheck.RaceFound):
        racecheck.replay(program, found.value.schedule)


def test_the_same_programs_fail_under_exhaustive_search() -> None:
    """The failing orders are reachable: the tests above are about DPOR, not the programs."""
    for program in (made_between_a_look_and_the_add, ended_before_the_look):
        with pytest.raises(racecheck.RaceFound):
            racecheck.check(program, strategy="exhaustive", schedules=200)


async def two_makers() -> None:
    """Two tasks each make a task and await it; nobody looks at ``all_tasks()``."""

    async def maker() -> None:
        task = asyncio.ensure_future(_graph_run())
        await asyncio.sleep(0)
        await task

    await asyncio.gather(maker(), maker())


def test_births_and_ends_by_different_actors_commute() -> None:
    """One trace: each actor writes its own key of the registry. With one key for all,
    every birth and end raced every other (20 traces)."""
    report = racecheck.check(two_makers, strategy="dpor", schedules=200)
    assert report.verified, report.notes
    assert report.notes[0].startswith("verified: all 1 non-equivalent"), report.notes
