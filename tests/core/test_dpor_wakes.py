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


#: program, its traces: the orders of its conflicting steps. In ``shielded`` and
#: ``wait_for_future`` the waking callback is queued either behind the helper's next
#: step or ahead of it (test_dpor_wake_placement.py), an order that decides nothing
#: here: the helper shares nothing with what runs after the wake, and DPOR, which
#: reverses a placement only when a later step conflicts with the step queued ahead
#: (dpor.DPORChooser._placements), counts one trace, not 2
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


@pytest.mark.parametrize(
    ("program", "expected"), PROGRAMS, ids=lambda p: getattr(p, "__name__", "")
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


# -- an await of a future that is done already ------------------------------------------------
#
# It does not suspend, and calls nothing a profile hook sees: the step goes on only because
# the step that finished the future ran first. Unseen, the step's later conflicts with that
# step (its update of the box below; on a loop inside a thread, asyncio.run's shutdown
# against the loop's reads of its ready queue) made a race whose reversal ran the await
# first, which suspended: the same trace again, blocked by its sleep set.


async def await_done_task() -> None:
    box = Box()

    async def child() -> None:
        box.value = 1

    task = asyncio.create_task(child())
    await asyncio.sleep(0)
    await task  # done already
    box.value += 1
    assert box.value == 2


async def await_done_future() -> None:
    box = Box()
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def setter() -> None:
        box.value = 1
        future.set_result(None)

    task = asyncio.create_task(setter())
    await asyncio.sleep(0)
    await future  # set already
    box.value += 1
    await task
    assert box.value == 2


@pytest.mark.parametrize("program", [await_done_task, await_done_future])
def test_an_await_of_a_done_future_follows_the_step_that_finished_it(
    program: Callable[[], Coroutine[Any, Any, None]],
) -> None:
    report = racecheck.check(program, strategy="dpor", schedules=100)
    assert report.verified, report.notes
    assert traces(report) == 1, report.notes
    assert blocked_runs(report.notes) == 0, report.notes


# -- soundness: what a step did before an order-only read still races --------------------------
#
# An order-only read (an await of a done task, a get that took an item, a finished join)
# follows its write without racing it: run first, the step would have waited there. What
# the same step did *before* that point could have run first all the same. Ordered after the
# write with the rest of the step, a real race was dropped and DPOR said "verified".


async def read_then_await_done_task() -> None:
    box = Box()
    seen: list[int] = []

    async def writer() -> None:
        box.value = 1

    task = asyncio.create_task(writer())

    async def reader() -> None:
        value = box.value  # may run before the writer: then the await below waits
        await task
        seen.append(value)

    await asyncio.gather(reader())
    assert seen == [1], "the reader ran before the writer"


async def read_then_get() -> None:
    box = Box()
    queue: asyncio.Queue[int] = asyncio.Queue()
    seen: list[int] = []

    async def producer() -> None:
        box.value = 1
        queue.put_nowait(1)

    async def consumer() -> None:
        value = box.value  # may run before the producer: then the get below waits
        await queue.get()
        seen.append(value)

    await asyncio.gather(producer(), consumer())
    assert seen == [1], "the consumer read before the producer wrote"


@pytest.mark.parametrize("program", [read_then_await_done_task, read_then_get])
def test_a_read_before_an_order_only_read_still_races(
    program: Callable[[], Coroutine[Any, Any, None]],
) -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(program, strategy="dpor", schedules=100)
    assert "before" in str(found.value.cause)


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


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
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
    reaches_what_exhaustive_search_reaches(
        lambda seen, forbidden=None: _wake_target(program, seen, forbidden), data
    )


def reaches_what_exhaustive_search_reaches(
    make: Callable[..., Callable[[], Awaitable[None]]],
    data: Any,
    budget: int = 800,
    **options: Any,
) -> None:
    """DPOR on ``make(seen)`` verifies, reaching the final states exhaustive search
    reaches, and finds any one of them made forbidden (``make(seen, forbidden)``).

    ``options``: for every check (``backend="trio"``).
    """
    everything: set[Any] = set()
    try:
        full = racecheck.check(
            make(everything),
            strategy="exhaustive",
            preemption_bound=10**6,  # one pass, no bound: every schedule once
            schedules=budget,
            **options,
        )
    except racecheck.RaceFound:
        # an actor that gets before its own put may wait for ever: not a program
        # whose final states can be compared
        assume(False)
        raise
    assume(full.exhausted)
    reduced: set[Any] = set()
    dpor = racecheck.check(make(reduced), strategy="dpor", schedules=budget, **options)
    assert dpor.verified, dpor.notes
    assert reduced == everything
    forbidden = data.draw(st.sampled_from(sorted(everything)), label="forbidden")
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(
            make(set(), forbidden), strategy="dpor", schedules=budget, minimize=False, **options
        )
