"""Sleep sets compare a step of an earlier run with this run's: which objects are the same?

A sleeping actor's next step was recorded in an earlier run, which numbered
objects by first touch (accesses.StepLog.ordinal) like this run, but not
necessarily alike. DPOR compares it with this run's steps exactly on the
objects both runs' identical earlier steps touched, and by type on the others
(DPORChooser._wakes). Wrongly kept asleep, an actor's order is never
explored: a final state the program can reach is never reached, and the
search still says "verified". So the programs here touch several objects of
one type, some first touched only after the state where an actor fell asleep,
in orders that differ from run to run, and the search's own runs (not the runs
a sleep set cut short, nor the probes: dpor._probe_prefix) must reach every
final state that a random walk (threads) or plain exhaustive search (asyncio)
reaches.

The first two programs are the smallest where comparing every object exactly
(by its ordinal alone) loses a final state; the third, where comparing
exactly the objects both runs touched before the state loses one unless the
two runs' accesses up to there are checked to be the same. The random
programs test the rule more widely.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import racecheck
from racecheck.strategies.dpor import DPORChooser

#: (every cell's value at the end, each actor's result)
Outcome = tuple[tuple[int, ...], tuple[int, ...]]


class Cell:
    """Objects of one type; the class attribute lets a read come before any write."""

    value = 0


@contextmanager
def _analysed_outcomes(last: list[Outcome]) -> Iterator[set[Outcome]]:
    """The final states of the runs DPOR analysed (``last[-1]`` is each run's)."""
    reached: set[Outcome] = set()
    plain_end = DPORChooser.end

    def end(self: DPORChooser, decisions: Any, failed: bool, steps: int) -> None:
        probe = self._probe is not None
        plain_end(self, decisions, failed, steps)
        if not probe and not self._blocked and last:
            reached.add(last[-1])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DPORChooser, "end", end)
        yield reached


def _dpor_reaches(
    make: Callable[[set[Outcome], list[Outcome]], Callable[[], Any]], budget: int
) -> tuple[set[Outcome], racecheck.Report]:
    last: list[Outcome] = []
    with _analysed_outcomes(last) as reached:
        report = racecheck.check(make(set(), last), strategy="dpor", schedules=budget)
    return reached, report


def _sampled(make: Callable[[set[Outcome], list[Outcome]], Callable[[], Any]]) -> set[Outcome]:
    seen: set[Outcome] = set()
    for strategy in ("random", "pct"):
        racecheck.check(make(seen, []), strategy=strategy, schedules=200, seed=3)
    return seen


# -- the smallest cases --------------------------------------------------------------


def reader_and_late_writer(seen: set[Outcome], last: list[Outcome]) -> Callable[[], None]:
    """``p`` reads ``a``; ``q`` reads ``b``, then writes ``a``. Neither cell is touched first.

    The natural order runs ``p`` first: its read numbers ``a`` next. Its race
    with ``q``'s write is reversed: ``q`` first, ``p`` asleep. There ``q``'s
    read numbers ``b`` as ``p``'s run numbered ``a``, and ``q``'s write of
    ``a`` gets the number after: compared by number, nothing wakes ``p``.
    """

    def program() -> None:
        a, b = Cell(), Cell()
        results = [0, 0]

        def p() -> None:
            results[0] = a.value

        def q() -> None:
            results[1] = b.value
            a.value = 1

        threads = [threading.Thread(target=p), threading.Thread(target=q)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        outcome = ((a.value, b.value), tuple(results))
        seen.add(outcome)
        last.append(outcome)

    return program


def reader_and_late_writer_tasks(seen: set[Outcome], last: list[Outcome]) -> Callable[[], Any]:
    """The same on asyncio tasks, each access a step of its own."""

    async def program() -> None:
        a, b = Cell(), Cell()
        results = [0, 0]

        async def p() -> None:
            results[0] = a.value

        async def q() -> None:
            results[1] = b.value
            await asyncio.sleep(0)
            a.value = 1

        await asyncio.gather(p(), q())
        outcome = ((a.value, b.value), tuple(results))
        seen.add(outcome)
        last.append(outcome)

    return program


def reader_and_writer_of_a_cell_touched_between_starts(
    seen: set[Outcome], last: list[Outcome]
) -> Callable[[], None]:
    """``a`` is touched before the branch, but numbered differently in the first run.

    The first run's first thread start touches racecheck's own objects,
    which later runs do not: every number given after it is larger there.
    ``p``, asleep with its read recorded in the first run, must still be
    woken by ``q``'s write in a later run, though both runs touched ``a``
    before the state and gave it different numbers: the accesses before the
    state differ, so the numbers say nothing (compared as numbers, ``p`` is
    never woken and never reads 1).
    """

    def program() -> None:
        a = Cell()
        results = [0]

        def p() -> None:
            results[0] = a.value

        def q() -> None:
            a.value = 1

        reader, writer = threading.Thread(target=p), threading.Thread(target=q)
        reader.start()
        a.value = 0
        writer.start()
        reader.join()
        writer.join()
        outcome = ((a.value,), tuple(results))
        seen.add(outcome)
        last.append(outcome)

    return program


@pytest.mark.parametrize(
    "make",
    [
        reader_and_late_writer,
        reader_and_late_writer_tasks,
        reader_and_writer_of_a_cell_touched_between_starts,
    ],
    ids=["threads", "asyncio", "touched_between_starts"],
)
def test_a_cell_first_touched_after_the_branch_still_wakes_the_sleeper(
    make: Callable[[set[Outcome], list[Outcome]], Callable[[], Any]],
) -> None:
    expected = _sampled(make)
    assert len({results[0] for _, results in expected}) == 2  # p read 0, and read 1
    reached, report = _dpor_reaches(make, 500)
    assert report.verified, report.notes
    assert expected <= reached, report.notes


# -- what it saves -------------------------------------------------------------------


async def three_tasks_two_locks_each() -> None:
    """Three tasks, each holding two of three locks (taken in one global order).

    The locks are objects of one type: compared by type only, a sleeper that
    took one lock is woken by any other task taking any lock, and the search
    runs 111 schedules, 69 of them repeating a trace; told apart where both
    runs touched them, 41 and none.
    """
    locks = [asyncio.Lock() for _ in range(3)]

    async def task(i: int) -> None:
        first, second = sorted((i, (i + 1) % 3))
        async with locks[first]:
            await asyncio.sleep(0)
            async with locks[second]:
                await asyncio.sleep(0)

    await asyncio.gather(*(task(i) for i in range(3)))


def _count(report: racecheck.Report, what: str) -> int:
    found = re.search(rf"(\d+) runs? {what}", " ".join(report.notes))
    return int(found.group(1)) if found else 0


def test_objects_both_runs_touched_are_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    reports = {}
    for shared in (False, True):
        monkeypatch.setattr(DPORChooser, "shared_identity", shared)
        report = racecheck.check(three_tasks_two_locks_each, strategy="dpor", schedules=1000)
        assert report.verified, report.notes
        reports[shared] = report
    by_type, told_apart = reports[False], reports[True]
    assert _count(told_apart, "repeated") < _count(by_type, "repeated"), told_apart.notes
    assert told_apart.schedules_run < by_type.schedules_run, told_apart.notes


# -- random programs over cells of one type -------------------------------------------

#: ("r", cell) acc += cell.value; ("w", cell, k) cell.value = acc + k
Op = tuple[Any, ...]


@dataclass(frozen=True)
class Program:
    cells: int
    #: the cells the main actor writes before it starts the others, and after
    before: tuple[int, ...]
    after: tuple[int, ...]
    actors: tuple[tuple[Op, ...], ...]


@st.composite
def programs(draw: Any, actors: int = 2, ops: int = 3) -> Program:
    cells = draw(st.integers(2, 3))
    cell = st.integers(0, cells - 1)
    op = st.one_of(st.tuples(st.just("r"), cell), st.tuples(st.just("w"), cell, st.integers(1, 2)))
    count = draw(st.integers(2, actors))
    bodies = tuple(tuple(draw(st.lists(op, min_size=1, max_size=ops))) for _ in range(count))
    before = tuple(draw(st.lists(cell, max_size=2)))
    after = tuple(draw(st.lists(cell, max_size=1)))
    return Program(cells, before, after, bodies)


def _apply(cells: Sequence[Cell], op: Op, acc: int) -> int:
    if op[0] == "r":
        return acc + cells[op[1]].value
    cells[op[1]].value = acc + op[2]
    return acc


def _run_thread(cells: Sequence[Cell], ops: Sequence[Op], results: list[int], me: int) -> None:
    acc = 0
    for op in ops:
        acc = _apply(cells, op, acc)
    results[me] = acc


async def _run_task(cells: Sequence[Cell], ops: Sequence[Op]) -> int:
    acc = 0
    for op in ops:
        acc = _apply(cells, op, acc)
        await asyncio.sleep(0)
    return acc


def make_target(program: Program, backend: str) -> Callable[..., Callable[[], Any]]:
    def make(seen: set[Outcome], last: list[Outcome]) -> Callable[[], Any]:
        def finish(cells: Sequence[Cell], results: Sequence[int]) -> None:
            outcome = (tuple(cell.value for cell in cells), tuple(results))
            seen.add(outcome)
            last.append(outcome)

        if backend == "asyncio":

            async def async_target() -> None:
                cells = [Cell() for _ in range(program.cells)]
                for i in program.before:
                    cells[i].value = 0
                tasks = [asyncio.ensure_future(_run_task(cells, ops)) for ops in program.actors]
                for i in program.after:
                    cells[i].value = 0
                finish(cells, await asyncio.gather(*tasks))

            return async_target

        def thread_target() -> None:
            cells = [Cell() for _ in range(program.cells)]
            results = [0] * len(program.actors)
            for i in program.before:
                cells[i].value = 0
            threads = [
                threading.Thread(target=_run_thread, args=(cells, ops, results, me))
                for me, ops in enumerate(program.actors)
            ]
            for thread in threads:
                thread.start()
            for i in program.after:
                cells[i].value = 0
            for thread in threads:
                thread.join()
            finish(cells, results)

        return thread_target

    return make


def compare(program: Program, backend: str, budget: int) -> None:
    make = make_target(program, backend)
    if backend == "asyncio":
        expected: set[Outcome] = set()
        full = racecheck.check(
            make(expected, []), strategy="exhaustive", preemption_bound=10**6, schedules=budget
        )
        if not full.exhausted:
            return
    else:
        expected = _sampled(make)
    reached, report = _dpor_reaches(make, budget)
    if not report.verified:
        return
    assert expected <= reached, (program, report.notes)


_CI = settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
_SLOW = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@_CI
@given(program=programs(actors=3, ops=2))
def test_random_programs_over_one_type_on_asyncio(program: Program) -> None:
    compare(program, "asyncio", 2000)


@_CI
@given(program=programs(actors=2, ops=3))
def test_random_programs_over_one_type_on_threads(program: Program) -> None:
    compare(program, "threads", 3000)


@pytest.mark.slow
@_SLOW
@given(program=programs(actors=3, ops=3))
def test_random_programs_over_one_type_on_asyncio_larger(program: Program) -> None:
    compare(program, "asyncio", 5000)


@pytest.mark.slow
@_SLOW
@given(program=programs(actors=3, ops=2))
def test_random_programs_over_one_type_on_threads_larger(program: Program) -> None:
    compare(program, "threads", 5000)
