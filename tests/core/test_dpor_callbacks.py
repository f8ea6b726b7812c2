"""DPOR on asyncio: what a plain callback does, and where it lands, are explored.

A plain callback (a ``call_soon``, a future's done callback, a timer) is not
an actor: the loop runs it when it reaches the head of the ready queue,
inside whichever step comes next. Two holes let DPOR call programs verified
with a reachable state never run: on a loop of its own (an ``async def``
target) a callback's accesses were not recorded at all, and on both backends
the loop's own appends (a task's next step, a user's callback) were
independent of each other, so the order that lands the callback after
another task's step was never tried. Each program below is checked against
plain exhaustive search.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_dpor_wakes import Box, reaches_what_exhaustive_search_reaches

import racecheck

# -- soundness: what a plain callback does is seen, and where it runs is explored ---------------


async def callback_between_a_read_and_its_write() -> None:
    """A ``call_soon``'d bump runs between the other task's read and its write (or not).

    The natural order runs the bump inside the updater's first step, after
    its read: the bump is lost (1). With the updater's steps both before
    the bump is queued, or the bump first, it is kept (11). DPOR called this
    verified with the natural order alone: on a loop of its own the bump's
    accesses were not recorded at all, and on both backends the append of
    the bump and the updater's own appends were independent, so the order
    that runs the bump after the write was never tried.
    """
    state = {"x": 0}
    loop = asyncio.get_running_loop()

    def bump() -> None:
        state["x"] += 10

    async def queue_bump() -> None:
        loop.call_soon(bump)

    async def update() -> None:
        value = state["x"]
        await asyncio.sleep(0)
        state["x"] = value + 1

    await asyncio.gather(queue_bump(), update())
    assert state["x"] == 1, "the bump was not lost"


def callback_between_a_read_and_its_write_in_a_thread() -> None:
    asyncio.run(callback_between_a_read_and_its_write())


@pytest.mark.parametrize(
    "program",
    [callback_between_a_read_and_its_write, callback_between_a_read_and_its_write_in_a_thread],
)
def test_a_callback_that_lands_between_a_read_and_a_write_is_explored(
    program: Callable[[], Any],
) -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(program, strategy="dpor", schedules=100)
    assert "not lost" in str(found.value.cause)


# -- soundness: DPOR against plain exhaustive search, with callbacks ---------------------------

#: ("r", var) acc += state[var]; ("w", var, k) state[var] = acc + k; ("soon", var, k) a
#: call_soon of state[var] = state[var] * 2 + k; ("set",) the future's result set (once);
#: ("on", var) a done callback on the future that logs state[var]; ("child", var, k) a task
#: writing state[var] = k, with a done callback that logs state[var], awaited at the end
CallbackOp = tuple[Any, ...]


def _callback_ops(variables: int) -> Any:
    var = st.sampled_from(("x", "y")[:variables])
    return st.one_of(
        st.tuples(st.just("r"), var),
        st.tuples(st.just("w"), var, st.integers(0, 2)),
        st.tuples(st.just("soon"), var, st.integers(0, 2)),
        st.just(("set",)),
        st.tuples(st.just("on"), var),
        st.tuples(st.just("child"), var, st.integers(1, 2)),
    )


@st.composite
def callback_programs(draw: Any) -> tuple[int, tuple[tuple[CallbackOp, ...], ...]]:
    variables = draw(st.integers(1, 2))
    op = _callback_ops(variables)
    count = draw(st.integers(2, 3))
    return variables, tuple(tuple(draw(st.lists(op, min_size=1, max_size=2))) for _ in range(count))


def _callback_target(
    program: tuple[int, tuple[tuple[CallbackOp, ...], ...]],
    seen: set[Any],
    forbidden: Any = None,
) -> Callable[[], Awaitable[None]]:
    variables, bodies = program
    names = ("x", "y")[:variables]

    async def target() -> None:
        loop = asyncio.get_running_loop()
        state = dict.fromkeys(names, 0)
        future: asyncio.Future[int] = loop.create_future()
        log: list[tuple[str, int]] = []

        def doubled(var: str, k: int) -> None:
            state[var] = state[var] * 2 + k

        async def write(var: str, k: int) -> None:
            state[var] = k

        async def run(ops: tuple[CallbackOp, ...]) -> int:
            acc = 0
            children = []
            for op in ops:
                kind = op[0]
                if kind == "r":
                    acc += state[op[1]]
                elif kind == "w":
                    state[op[1]] = acc + op[2]
                elif kind == "soon":
                    loop.call_soon(doubled, op[1], op[2])
                elif kind == "set":
                    if not future.done():
                        future.set_result(acc)
                elif kind == "on":
                    var = op[1]
                    future.add_done_callback(lambda _, v=var: log.append((v, state[v])))
                else:
                    child = asyncio.create_task(write(op[1], op[2]))
                    var = op[1]
                    child.add_done_callback(lambda _, v=var: log.append((v, state[v])))
                    children.append(child)
                await asyncio.sleep(0)
            for child in children:
                await child
            return acc

        accs = await asyncio.gather(*(run(body) for body in bodies))
        if not future.done():
            future.set_result(-1)
        await asyncio.sleep(0)  # the callbacks left run
        final = (tuple(state[n] for n in names), tuple(accs), tuple(log))
        seen.add(final)
        assert final != forbidden, "reached the forbidden state"

    return target


def matches_exhaustive_search(
    program: tuple[int, tuple[tuple[CallbackOp, ...], ...]], data: Any
) -> None:
    reaches_what_exhaustive_search_reaches(
        lambda seen, forbidden=None: _callback_target(program, seen, forbidden), data
    )


@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(program=callback_programs(), data=st.data())
def test_dpor_matches_exhaustive_search_with_callbacks(
    program: tuple[int, tuple[tuple[CallbackOp, ...], ...]], data: Any
) -> None:
    matches_exhaustive_search(program, data)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(program=callback_programs(), data=st.data())
def test_dpor_matches_exhaustive_search_with_callbacks_more(
    program: tuple[int, tuple[tuple[CallbackOp, ...], ...]], data: Any
) -> None:
    """The CI case's property over more programs, not derandomized."""
    matches_exhaustive_search(program, data)


async def one_callback() -> None:
    box = Box()
    asyncio.get_running_loop().call_soon(setattr, box, "value", 1)
    await asyncio.sleep(0)
    assert box.value == 1


def test_with_the_detector_on_a_callback_is_no_proof() -> None:
    """detect=True runs the full race detector, which does not trace plain callbacks."""
    report = racecheck.check(one_callback, strategy="dpor", schedules=50, detect=True)
    assert not report.verified
    assert any("detect=True" in note for note in report.notes), report.notes
    plain = racecheck.check(one_callback, strategy="dpor", schedules=50)
    assert plain.verified, plain.notes
