"""DPOR against plain exhaustive search on many small random trio programs (hypothesis).

The asyncio and threads twins live in test_dpor_random.py; trio had no such
check, though its backend records its own conflicts (trio's Lock, Event,
memory channels, Semaphore, nursery starts) and its scheduler decides at
every checkpoint. Each program has 2-3 tasks in one nursery that read and
write a few shared variables, under trio's synchronisation objects. Plain
exhaustive search, with no bound and no reduction, runs every schedule; DPOR
must reach exactly the same final states, fail exactly when forbidding one of
them makes exhaustive search fail, and call the program verified.

The interpreter is ordinary traced code (programs are data, not generated
source: code racecheck could not see would prove nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_dpor_asyncio_sync_random import SLOW
from test_dpor_random import _CI, VARS, Op, Outcome, Program, _apply, _simple, actor_bodies
from test_dpor_wakes import reaches_what_exhaustive_search_reaches

trio = pytest.importorskip("trio")

#: ("r", var) acc += state[var]; ("w", var, k) state[var] = acc + k;
#: ("lock", ops) the ops under a trio.Lock; ("sem", ops) under a Semaphore(1);
#: ("limit", ops) under a CapacityLimiter(1); ("send", k) send_nowait(k) on a
#: channel of one slot (WouldBlock counts); ("recv",) receive_nowait()
#: (WouldBlock counts); ("set",) event.set(); ("is_set",) acc += event.is_set();
#: ("wait", ops) the ops after event.wait() with a virtual-time deadline
#: (move_on_after: a wait nobody ends counts as its own outcome);
#: ("spawn", ops) a child task in the nursery runs the ops; ("put", k, t) / ("get", t)
#: a blocking send / receive on the channel given up after t virtual seconds
#: (a give-up counts); ("guarded", ops) the ops in a cancel scope that
#: ("cancel",) cancels (a cancelled block counts); ("notify",) notify_all on a
#: trio.Condition; ("cwait", t) a wait on it given up after t seconds


@st.composite
def programs(draw: Any, actors: int = 3, ops: int = 2) -> Program:
    variables = draw(st.integers(1, 3))
    simple = _simple(variables)
    block = st.lists(simple, min_size=1, max_size=2).map(tuple)
    op = st.one_of(
        simple,
        st.tuples(st.sampled_from(("lock", "sem", "limit", "wait", "spawn")), block),
        st.tuples(st.just("send"), st.integers(1, 2)),
        st.sampled_from((("recv",), ("set",), ("is_set",), ("cancel",), ("notify",))),
        st.tuples(st.just("put"), st.integers(1, 2), st.integers(1, 2)),
        st.tuples(st.sampled_from(("get", "cwait")), st.integers(1, 2)),
        st.tuples(st.just("guarded"), block),
    )
    return Program(variables, actor_bodies(draw, op, actors, ops))


@dataclass
class _World:
    state: dict[str, int]
    lock: Any
    semaphore: Any
    limiter: Any
    event: Any
    send: Any
    receive: Any
    nursery: Any
    accs: list[int]
    condition: Any
    scopes: list[Any]


async def _run_block(world: _World, ops: Sequence[Op], acc: int) -> int:
    for inner in ops:
        acc = _apply(world.state, inner, acc)
        await trio.lowlevel.checkpoint()
    return acc


async def _run_task(world: _World, ops: Sequence[Op], me: int) -> None:
    acc = 0
    for op in ops:
        kind = op[0]
        if kind == "lock":
            async with world.lock:
                acc = await _run_block(world, op[1], acc)
        elif kind == "sem":
            async with world.semaphore:
                acc = await _run_block(world, op[1], acc)
        elif kind == "limit":
            async with world.limiter:
                acc = await _run_block(world, op[1], acc)
        elif kind == "wait":
            with trio.move_on_after(1) as scope:
                await world.event.wait()
            acc += 50 if scope.cancelled_caught else 0
            acc = await _run_block(world, op[1], acc)
        elif kind == "spawn":
            world.accs.append(0)
            world.nursery.start_soon(_run_child, world, op[1], len(world.accs) - 1)
        elif kind == "send":
            try:
                world.send.send_nowait(op[1])
            except trio.WouldBlock:
                acc += 100
        elif kind == "recv":
            try:
                acc += 10 * world.receive.receive_nowait()
            except trio.WouldBlock:
                acc += 100
        elif kind == "put":
            with trio.move_on_after(op[2]) as scope:
                await world.send.send(op[1])
            acc += 200 if scope.cancelled_caught else 0
        elif kind == "get":
            with trio.move_on_after(op[1]) as scope:
                acc += 10 * await world.receive.receive()
            acc += 200 if scope.cancelled_caught else 0
        elif kind == "guarded":
            with trio.CancelScope() as scope:
                world.scopes.append(scope)
                acc = await _run_block(world, op[1], acc)
            acc += 1000 if scope.cancelled_caught else 0
        elif kind == "cancel":
            for scope in world.scopes:
                scope.cancel()
        elif kind == "notify":
            async with world.condition:
                world.condition.notify_all()
        elif kind == "cwait":
            with trio.move_on_after(op[1]) as scope:
                async with world.condition:
                    await world.condition.wait()
            acc += 300 if scope.cancelled_caught else 0
        elif kind == "set":
            world.event.set()
        elif kind == "is_set":
            acc += 7 * world.event.is_set()
        else:
            acc = _apply(world.state, op, acc)
        await trio.lowlevel.checkpoint()
    world.accs[me] = acc


async def _run_child(world: _World, ops: Sequence[Op], me: int) -> None:
    world.accs[me] = await _run_block(world, ops, 0)


def make_target(
    program: Program, seen: set[Outcome], forbidden: Outcome | None = None
) -> Callable[[], Any]:
    names = VARS[: program.variables]

    async def target() -> None:
        send, receive = trio.open_memory_channel(1)
        async with trio.open_nursery() as nursery:
            world = _World(
                state=dict.fromkeys(names, 0),
                lock=trio.Lock(),
                semaphore=trio.Semaphore(1),
                limiter=trio.CapacityLimiter(1),
                event=trio.Event(),
                send=send,
                receive=receive,
                nursery=nursery,
                accs=[0] * len(program.actors),
                condition=trio.Condition(),
                scopes=[],
            )
            for me, ops in enumerate(program.actors):
                nursery.start_soon(_run_task, world, ops, me)
        final = (tuple(world.state[name] for name in names), tuple(world.accs))
        seen.add(final)
        assert final != forbidden, "reached the forbidden state"

    return target


@_CI
@given(program=programs(actors=3, ops=2), data=st.data())
def test_dpor_matches_exhaustive_search_on_trio(program: Program, data: Any) -> None:
    reaches_what_exhaustive_search_reaches(partial(make_target, program), data, 600, backend="trio")


@pytest.mark.slow
@SLOW
@given(program=programs(actors=3, ops=3), data=st.data())
def test_dpor_matches_exhaustive_search_on_trio_larger(program: Program, data: Any) -> None:
    reaches_what_exhaustive_search_reaches(
        partial(make_target, program), data, 5000, backend="trio"
    )
