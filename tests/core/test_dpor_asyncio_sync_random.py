"""DPOR against plain exhaustive search on random asyncio programs with timeouts and cancellation.

test_dpor_random.py covers reads, writes and one lock; test_dpor_wakes.py
queues, futures and child tasks. What neither draws is the rest of what
asyncio programs synchronise with: an ``Event``, a ``Condition``, a
``Semaphore``, a bounded ``Queue`` waited on with a deadline, a deadline
(``asyncio.timeout``) that runs out while another task acts at the same
virtual instant, and a task cancelled by another. Plain exhaustive search,
with no bound and no reduction, runs every schedule; DPOR must reach exactly
the same final states, fail when one of them is forbidden, and call the
program verified.

The interpreter is ordinary traced code (programs are data).
"""

from __future__ import annotations

import asyncio
import os
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

#: ("r", var) acc += state[var]; ("w", var, k) state[var] = acc + k;
#: ("lock", ops) / ("sem", ops) the ops under an asyncio.Lock / Semaphore(1);
#: ("set",) event.set(); ("clear",) event.clear(); ("wait", t) event.wait() given up
#: after t virtual seconds (a give-up counts); ("put", k, t) / ("get", t) a put /
#: get on a Queue(maxsize=1) given up after t seconds; ("notify",) notify_all on a
#: Condition; ("cwait", t) a wait on it given up after t seconds; ("guarded", ops)
#: the ops in a child task that ("cancel",) cancels (a cancelled child counts),
#: awaited where it was started; ("sleep", t) asyncio.sleep(t); ("cancel_soon",) the
#: same cancel through loop.call_soon; ("waitfor", t) wait_for(event.wait(), t);
#: ("join", ops) the ops in a child joined through gather (its waking callback lands
#: behind whatever task steps were queued first: test_dpor_wake_placement.py)


@st.composite
def programs(draw: Any, actors: int = 3, ops: int = 2) -> Program:
    variables = draw(st.integers(1, 3))
    simple = _simple(variables)
    block = st.lists(simple, min_size=1, max_size=2).map(tuple)
    seconds = st.integers(0, 2)
    op = st.one_of(
        simple,
        st.tuples(st.sampled_from(("lock", "sem", "guarded", "join")), block),
        st.sampled_from((("set",), ("clear",), ("notify",), ("cancel",), ("cancel_soon",))),
        st.tuples(st.sampled_from(("wait", "get", "cwait", "sleep", "waitfor")), seconds),
        st.tuples(st.just("put"), st.integers(1, 2), seconds),
    )
    return Program(variables, actor_bodies(draw, op, actors, ops))


@dataclass
class _World:
    state: dict[str, int]
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    semaphore: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))
    event: asyncio.Event = field(default_factory=asyncio.Event)
    condition: asyncio.Condition = field(default_factory=asyncio.Condition)
    queue: asyncio.Queue[int] = field(default_factory=lambda: asyncio.Queue(maxsize=1))
    children: list[asyncio.Task[int]] = field(default_factory=list)


async def _run_block(world: _World, ops: Sequence[Op], acc: int) -> int:
    for inner in ops:
        acc = _apply(world.state, inner, acc)
        await asyncio.sleep(0)
    return acc


async def times_out(awaitable: Any, seconds: float) -> bool:
    try:
        async with asyncio.timeout(seconds):
            await awaitable
    except TimeoutError:
        return True
    return False


async def _run_task(world: _World, ops: Sequence[Op]) -> int:
    acc = 0
    for op in ops:
        kind = op[0]
        if kind == "lock":
            async with world.lock:
                acc = await _run_block(world, op[1], acc)
        elif kind == "sem":
            async with world.semaphore:
                acc = await _run_block(world, op[1], acc)
        elif kind == "guarded":
            child = asyncio.ensure_future(_run_block(world, op[1], 0))
            world.children.append(child)
            try:
                acc += await child
            except asyncio.CancelledError:
                if asyncio.current_task().cancelling():  # type: ignore[union-attr]
                    raise
                acc += 1000
        elif kind == "join":
            (joined,) = await asyncio.gather(_run_block(world, op[1], 0))
            acc += joined
        elif kind == "cancel":
            for child in world.children:
                child.cancel()
        elif kind == "cancel_soon":
            loop = asyncio.get_running_loop()
            for child in world.children:
                loop.call_soon(child.cancel)
        elif kind == "waitfor":
            try:
                await asyncio.wait_for(world.event.wait(), op[1])
            except TimeoutError:
                acc += 70
        elif kind == "set":
            world.event.set()
        elif kind == "clear":
            world.event.clear()
        elif kind == "wait":
            acc += 50 * await times_out(world.event.wait(), op[1])
        elif kind == "put":
            acc += 200 * await times_out(world.queue.put(op[1]), op[2])
        elif kind == "get":
            got: list[int] = []
            acc += 200 * await times_out(_take(world.queue, got), op[1]) + 10 * sum(got)
        elif kind == "notify":
            async with world.condition:
                world.condition.notify_all()
        elif kind == "cwait":
            acc += 300 * await times_out(_wait_on(world.condition), op[1])
        elif kind == "sleep":
            await asyncio.sleep(op[1])
        else:
            acc = _apply(world.state, op, acc)
        await asyncio.sleep(0)
    return acc


async def _take(queue: asyncio.Queue[int], got: list[int]) -> None:
    got.append(await queue.get())


async def _wait_on(condition: asyncio.Condition) -> None:
    async with condition:
        await condition.wait()


def make_target(
    program: Program, seen: set[Outcome], forbidden: Outcome | None = None
) -> Callable[[], Any]:
    return gathered_target(program, seen, forbidden, lambda state: _World(state), _run_task)


#: RC_EXAMPLES=N runs N slow examples (a longer search than the slow suite's)
SLOW = settings(_SLOW, max_examples=int(os.environ.get("RC_EXAMPLES", _SLOW.max_examples)))


@_CI
@given(program=programs(actors=3, ops=2), data=st.data())
def test_dpor_matches_exhaustive_search_with_asyncio_sync_objects(
    program: Program, data: Any
) -> None:
    reaches_what_exhaustive_search_reaches(partial(make_target, program), data, 600)


@pytest.mark.slow
@SLOW
@given(program=programs(actors=3, ops=3), data=st.data())
def test_dpor_matches_exhaustive_search_with_asyncio_sync_objects_larger(
    program: Program, data: Any
) -> None:
    reaches_what_exhaustive_search_reaches(partial(make_target, program), data, 5000)
