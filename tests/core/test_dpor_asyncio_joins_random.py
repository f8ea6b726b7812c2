"""DPOR against plain exhaustive search on random asyncio programs that join children.

Every join below wakes its waiter through a done-callback that lands behind
the task steps queued before it (test_dpor_wake_placement.py), and DPOR
reverses that placement only when it can decide something (see
strategies/dpor.py, ``DPORChooser._placements``). These programs
draw the joins test_dpor_asyncio_sync_random.py does not: nested and
two-child gathers, ``shield``, ``asyncio.wait``, a ``TaskGroup``,
``wait_for`` on a child with a deadline that may run out, against reads,
writes, sleeps and direct cancellations. DPOR must reach exactly the final
states exhaustive search reaches.

A cancel through ``loop.call_soon`` is drawn too: DPOR had taken the
``call_soon(child.cancel)`` handle for a step of the child (a Task-bound
callback), so where it lands among the steps was never explored
(``test_a_child_cancelled_through_call_soon``, found by this property).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_dpor_random import (
    _CI,
    _SLOW,
    Op,
    Outcome,
    Program,
    _apply,
    _simple,
    actor_bodies,
    gathered_target,
)
from test_dpor_wakes import reaches_what_exhaustive_search_reaches

import racecheck

#: ("r", var) / ("w", var, k) as in test_dpor_random; ("gather", ops) the ops in a
#: child joined through gather; ("nested", ops) through a gather of a gather;
#: ("pair", ops, ops) two children in one gather; ("shield", ops), ("wait", ops),
#: ("group", ops) a child awaited through shield, asyncio.wait, a TaskGroup;
#: ("waitfor", ops, t) a child awaited through wait_for with t seconds (0: it runs
#: out at once); ("cancel",) cancels the children started so far (a cancelled child
#: counts 1000), ("cancel_soon",) does it through loop.call_soon;
#: ("yield",) asyncio.sleep(0)

JOINS = ("gather", "nested", "shield", "wait", "group")


@st.composite
def programs(draw: Any, actors: int = 3, ops: int = 2) -> Program:
    variables = draw(st.integers(1, 2))
    simple = _simple(variables)
    block = st.lists(simple, min_size=1, max_size=2).map(tuple)
    joins = JOINS if sys.version_info >= (3, 11) else JOINS[:-1]
    op = st.one_of(
        simple,
        st.tuples(st.sampled_from(joins), block),
        st.tuples(st.just("pair"), block, block),
        st.tuples(st.just("waitfor"), block, st.integers(0, 1)),
        st.sampled_from((("cancel",), ("cancel_soon",), ("yield",))),
    )
    return Program(variables, actor_bodies(draw, op, actors, ops))


@dataclass
class _World:
    state: dict[str, int]
    children: list[asyncio.Task[int]] = field(default_factory=list)


async def _block(world: _World, ops: Sequence[Op]) -> int:
    acc = 0
    for inner in ops:
        acc = _apply(world.state, inner, acc)
        await asyncio.sleep(0)
    return acc


def _child(world: _World, ops: Sequence[Op]) -> asyncio.Task[int]:
    child = asyncio.ensure_future(_block(world, ops))
    world.children.append(child)
    return child


async def _join(world: _World, op: Op) -> int:
    kind = op[0]
    if kind == "gather":
        (got,) = await asyncio.gather(_child(world, op[1]))
        return got
    if kind == "nested":
        ((got,),) = await asyncio.gather(asyncio.gather(_child(world, op[1])))
        return got
    if kind == "pair":
        first, second = await asyncio.gather(_child(world, op[1]), _child(world, op[2]))
        return first + 10 * second
    if kind == "shield":
        return await asyncio.shield(_child(world, op[1]))
    if kind == "wait":
        child = _child(world, op[1])
        await asyncio.wait([child])
        return child.result()
    if kind == "group":
        async with asyncio.TaskGroup() as group:  # type: ignore[attr-defined]
            child = group.create_task(_block(world, op[1]))
            world.children.append(child)
        return child.result()
    if kind == "waitfor":
        try:
            return await asyncio.wait_for(_child(world, op[1]), op[2])
        except TimeoutError:
            return 70
    raise AssertionError(kind)


async def _run_task(world: _World, ops: Sequence[Op]) -> int:
    acc = 0
    for op in ops:
        kind = op[0]
        if kind == "cancel":
            for child in world.children:
                child.cancel()
        elif kind == "cancel_soon":
            loop = asyncio.get_running_loop()
            for child in world.children:
                loop.call_soon(child.cancel)
        elif kind == "yield":
            await asyncio.sleep(0)
        elif kind in ("r", "w"):
            acc = _apply(world.state, op, acc)
        else:
            try:
                acc += await _join(world, op)
            except asyncio.CancelledError:
                if asyncio.current_task().cancelling():  # type: ignore[union-attr]
                    raise
                acc += 1000
        await asyncio.sleep(0)
    return acc


def make_target(
    program: Program, seen: set[Outcome], forbidden: Outcome | None = None
) -> Callable[[], Any]:
    return gathered_target(program, seen, forbidden, lambda state: _World(state), _run_task)


#: RC_EXAMPLES=N runs N slow examples
SLOW = settings(_SLOW, max_examples=int(os.environ.get("RC_EXAMPLES", _SLOW.max_examples)))


@_CI
@given(program=programs(actors=3, ops=2), data=st.data())
def test_dpor_matches_exhaustive_search_on_asyncio_joins(program: Program, data: Any) -> None:
    reaches_what_exhaustive_search_reaches(partial(make_target, program), data, 600)


@pytest.mark.slow
@SLOW
@given(program=programs(actors=3, ops=3), data=st.data())
def test_dpor_matches_exhaustive_search_on_asyncio_joins_larger(
    program: Program, data: Any
) -> None:
    reaches_what_exhaustive_search_reaches(partial(make_target, program), data, 3000)


def test_a_child_cancelled_through_call_soon() -> None:
    """Found by the slow property (3.13, seed 5): the cancel lands before the child's
    second step only if it is queued before the child's first step appends that step."""
    program = Program(1, ((("gather", (("r", "x"),)),), (("r", "x"), ("cancel_soon",))))
    everything: set[Outcome] = set()
    full = racecheck.check(
        make_target(program, everything),
        strategy="exhaustive",
        preemption_bound=10**6,
        schedules=3000,
    )
    assert full.exhausted
    assert ((0,), (1000, 0)) in everything, "the child is cancelled before its second step"
    reached: set[Outcome] = set()
    dpor = racecheck.check(make_target(program, reached), strategy="dpor", schedules=3000)
    assert dpor.verified, dpor.notes
    assert reached == everything
