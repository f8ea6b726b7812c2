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
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

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
PROGRAMS: list[tuple[Callable[[], Coroutine[Any, Any, None]], int]] = [
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


@pytest.mark.parametrize(
    ("program", "expected"), PROGRAMS, ids=lambda p: getattr(p, "__name__", "")
)
def test_a_wake_through_a_callback_is_ordered_after_its_cause(
    program: Callable[[], Awaitable[None]], expected: int
) -> None:
    report = racecheck.check(program, strategy="dpor", schedules=500)
    assert report.verified, report.notes
    assert traces(report) == expected, report.notes
    assert blocked_runs(report.notes) == 0, report.notes


#: An ``await`` of a task or future that is already done does not suspend and
#: calls nothing racecheck sees, so the step is not ordered after the step that
#: finished it. On a loop inside a thread, ``asyncio.run``'s shutdown then races
#: the loop's reads of its ready queue, and the reversal DPOR tries runs the
#: await first, which suspends: the same trace, blocked by its sleep set.
_AWAIT_OF_DONE = pytest.mark.xfail(
    strict=True, reason="an await of an already-done future is not seen (one blocked run)"
)
#: On 3.13 the shutdown no longer meets wait_for_future's await that way (it verifies there).
_AWAIT_OF_DONE_BEFORE_313 = pytest.mark.xfail(
    sys.version_info < (3, 13),
    strict=True,
    reason="an await of an already-done future is not seen (one blocked run)",
)
_IN_A_THREAD = [
    pytest.param(program, expected, marks=_AWAIT_OF_DONE)
    if program is shielded
    else pytest.param(program, expected, marks=_AWAIT_OF_DONE_BEFORE_313)
    if program is wait_for_future
    else (program, expected)
    for program, expected in PROGRAMS
]


@pytest.mark.parametrize(
    ("program", "expected"), _IN_A_THREAD, ids=lambda p: getattr(p, "__name__", "")
)
def test_the_same_wakes_on_a_loop_inside_a_thread(
    program: Callable[[], Coroutine[Any, Any, None]], expected: int
) -> None:
    """``asyncio.run`` from a plain ``def``: the threads backend hosts the loop."""

    def target() -> Any:
        return asyncio.run(program())

    report = racecheck.check(target, strategy="dpor", schedules=500)
    assert report.verified, report.notes
    assert blocked_runs(report.notes) == 0, report.notes


# -- soundness: DPOR against plain exhaustive search, with queues, futures and joins -------

#: ("r", var) acc += state[var]; ("w", var, k) state[var] = acc + k; ("put", k) a put of
#: acc + k; ("get",) a get that waits; ("peek",) get_nowait if not empty; ("child", ops)
#: the ops in a task of its own, awaited at the actor's end; ("set",) the future's result
#: set (once); ("done",) acc += 1 if the future is done
WakeOp = tuple[Any, ...]


def _wake_ops(variables: int) -> Any:
    var = st.sampled_from(("x", "y")[:variables])
    simple = st.one_of(
        st.tuples(st.just("r"), var),
        st.tuples(st.just("w"), var, st.integers(0, 2)),
        st.tuples(st.just("put"), st.integers(0, 2)),
        st.just(("peek",)),
        st.just(("set",)),
        st.just(("done",)),
    )
    return st.one_of(
        simple,
        st.just(("get",)),
        st.tuples(st.just("child"), st.lists(simple, min_size=1, max_size=2).map(tuple)),
    )


@st.composite
def wake_programs(draw: Any) -> tuple[int, tuple[tuple[WakeOp, ...], ...], bool, bool]:
    variables = draw(st.integers(1, 2))
    op = _wake_ops(variables)
    count = draw(st.integers(2, 3))
    bodies = tuple(tuple(draw(st.lists(op, min_size=1, max_size=2))) for _ in range(count))
    every = [o for body in bodies for o in body]
    every += [inner for o in every if o[0] == "child" for inner in o[1]]
    # no get waits for ever: never more takers than puts (puts never wait)
    assume(sum(o[0] in ("get", "peek") for o in every) <= sum(o[0] == "put" for o in every))
    # a LIFO queue's items are not numbered: its operations stay plain writes
    return variables, bodies, draw(st.booleans()), draw(st.booleans())


def _wake_target(
    program: tuple[int, tuple[tuple[WakeOp, ...], ...], bool, bool],
    seen: set[Any],
    forbidden: Any = None,
) -> Callable[[], Awaitable[None]]:
    variables, bodies, by_gather, lifo = program
    names = ("x", "y")[:variables]

    async def target() -> None:
        state = dict.fromkeys(names, 0)
        queue: asyncio.Queue[int] = asyncio.LifoQueue() if lifo else asyncio.Queue()
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        got: list[int] = []

        async def run(ops: tuple[WakeOp, ...]) -> int:
            acc = 0
            children = []
            for op in ops:
                kind = op[0]
                if kind == "r":
                    acc += state[op[1]]
                elif kind == "w":
                    state[op[1]] = acc + op[2]
                elif kind == "put":
                    queue.put_nowait(acc + op[1])
                elif kind == "get":
                    item = await queue.get()
                    got.append(item)
                    acc += item
                elif kind == "peek":
                    if not queue.empty():
                        item = queue.get_nowait()
                        got.append(item)
                        acc += item
                elif kind == "set":
                    if not future.done():
                        future.set_result(acc)
                elif kind == "done":
                    acc += future.done()
                else:
                    children.append(asyncio.create_task(run(op[1])))
                await asyncio.sleep(0)
            for child in children:
                acc += await child
            return acc

        if by_gather:
            accs = await asyncio.gather(*(run(body) for body in bodies))
        else:
            tasks = [asyncio.create_task(run(body)) for body in bodies]
            await asyncio.wait(tasks)
            accs = [task.result() for task in tasks]
        final = (tuple(state[n] for n in names), tuple(accs), tuple(got), queue.qsize())
        seen.add(final)
        assert final != forbidden, "reached the forbidden state"

    return target


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(program=wake_programs(), data=st.data())
def test_dpor_matches_exhaustive_search_with_queues_futures_and_joins(
    program: tuple[int, tuple[tuple[WakeOp, ...], ...], bool, bool], data: Any
) -> None:
    matches_exhaustive_search(program, data)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(program=wake_programs(), data=st.data())
def test_dpor_matches_exhaustive_search_with_queues_futures_and_joins_more(
    program: tuple[int, tuple[tuple[WakeOp, ...], ...], bool, bool], data: Any
) -> None:
    """The CI case's property over more programs, not derandomized."""
    matches_exhaustive_search(program, data)


def matches_exhaustive_search(
    program: tuple[int, tuple[tuple[WakeOp, ...], ...], bool, bool], data: Any
) -> None:
    everything: set[Any] = set()
    full = racecheck.check(
        _wake_target(program, everything),
        strategy="exhaustive",
        preemption_bound=10**6,
        schedules=800,
    )
    assume(full.exhausted)
    reduced: set[Any] = set()
    dpor = racecheck.check(_wake_target(program, reduced), strategy="dpor", schedules=800)
    assert dpor.verified, dpor.notes
    assert reduced == everything
    forbidden = data.draw(st.sampled_from(sorted(everything)), label="forbidden")
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(
            _wake_target(program, set(), forbidden), strategy="dpor", schedules=800, minimize=False
        )
