"""DPOR on random threaded programs with the threading module's waits and timeouts.

test_dpor_random.py's thread programs use plain locks, a try-acquire and a
shared counter. Real threaded code synchronises with more: an ``Event``
waited on with a timeout, a ``Condition`` notified while another thread
waits (or gives up), a ``Semaphore`` acquired with a timeout, an ``RLock``
taken twice, and a bounded ``queue.Queue`` whose ``put`` and ``get`` give up
after a while. Each wait can end two ways (woken, or the virtual clock
reaching its deadline when no thread can run), and which one depends on the
order of the other threads' steps: exactly where a conflict relation that
calls a wait a stutter could lose a state.

Every access of a thread is a scheduling point, so plain exhaustive search
cannot finish these programs; the reference is every final state that random
walks, PCT and bounded exhaustive search reach. DPOR must cover its whole
space, call the program verified, reach each of those states, and fail when
one of them is forbidden.

The interpreter is ordinary traced code (programs are data).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_dpor_random import _CI, _SLOW, VARS, Op, Outcome, Program, _apply, _simple, actor_bodies

import racecheck

#: ("r", var) acc += state[var]; ("w", var, k) state[var] = acc + k;
#: ("lock", ops) / ("rlock", ops) / ("sem", ops) the ops under a Lock / an RLock taken
#: twice / a Semaphore(1); ("semt", t) acquire the semaphore within t virtual seconds
#: (a give-up counts) and release it; ("set",) / ("clear",) on an Event; ("wait", t)
#: Event.wait(t); ("put", k, t) / ("get", t) on a Queue(maxsize=1) given up after t
#: seconds (t=0: without blocking); ("notify",) notify_all on a Condition; ("cwait", t)
#: a wait on it for t seconds; ("sleep", t) time.sleep(t)


@st.composite
def programs(draw: Any, actors: int = 2, ops: int = 2) -> Program:
    variables = draw(st.integers(1, 2))
    simple = _simple(variables)
    block = st.lists(simple, min_size=1, max_size=2).map(tuple)
    seconds = st.integers(0, 2)
    op = st.one_of(
        simple,
        st.tuples(st.sampled_from(("lock", "rlock", "sem")), block),
        st.sampled_from((("set",), ("clear",), ("notify",))),
        st.tuples(st.sampled_from(("wait", "get", "cwait", "semt", "sleep")), seconds),
        st.tuples(st.just("put"), st.integers(1, 2), seconds),
    )
    return Program(variables, actor_bodies(draw, op, actors, ops))


@dataclass
class _World:
    state: dict[str, int]
    lock: threading.Lock = field(default_factory=threading.Lock)
    rlock: threading.RLock = field(default_factory=threading.RLock)
    semaphore: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(1))
    event: threading.Event = field(default_factory=threading.Event)
    condition: threading.Condition = field(default_factory=threading.Condition)
    items: queue.Queue[int] = field(default_factory=lambda: queue.Queue(maxsize=1))


def _run_thread(world: _World, ops: Sequence[Op], out: list[int], me: int) -> None:
    acc = 0
    for op in ops:
        kind = op[0]
        if kind == "lock":
            with world.lock:
                acc = _run_block(world, op[1], acc)
        elif kind == "rlock":
            with world.rlock, world.rlock:
                acc = _run_block(world, op[1], acc)
        elif kind == "sem":
            with world.semaphore:
                acc = _run_block(world, op[1], acc)
        elif kind == "semt":
            if world.semaphore.acquire(timeout=op[1]):
                world.semaphore.release()
            else:
                acc += 400
        elif kind == "set":
            world.event.set()
        elif kind == "clear":
            world.event.clear()
        elif kind == "wait":
            acc += 50 * (not world.event.wait(op[1]))
        elif kind == "put":
            try:
                world.items.put(op[1], timeout=op[2]) if op[2] else world.items.put_nowait(op[1])
            except queue.Full:
                acc += 200
        elif kind == "get":
            try:
                got = world.items.get(timeout=op[1]) if op[1] else world.items.get_nowait()
                acc += 10 * got
            except queue.Empty:
                acc += 600
        elif kind == "notify":
            with world.condition:
                world.condition.notify_all()
        elif kind == "cwait":
            with world.condition:
                acc += 300 * (not world.condition.wait(op[1]))
        elif kind == "sleep":
            time.sleep(op[1])
        else:
            acc = _apply(world.state, op, acc)
    out[me] = acc


def _run_block(world: _World, ops: Sequence[Op], acc: int) -> int:
    for inner in ops:
        acc = _apply(world.state, inner, acc)
    return acc


def make_target(
    program: Program, seen: set[Outcome], forbidden: Outcome | None = None
) -> Callable[[], None]:
    names = VARS[: program.variables]

    def target() -> None:
        world = _World(state=dict.fromkeys(names, 0))
        accs = [0] * len(program.actors)
        workers = [
            threading.Thread(target=_run_thread, args=(world, ops, accs, i))
            for i, ops in enumerate(program.actors)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        final = (tuple(world.state[name] for name in names), tuple(accs))
        seen.add(final)
        assert final != forbidden, "reached the forbidden state"

    return target


def reaches_what_sampling_reaches(
    make: Callable[..., Callable[[], None]], data: Any, samples: int, budget: int
) -> None:
    """DPOR covers the program's space, verifies it, reaches every final state that
    random walks, PCT and exhaustive search with two preemptions reach, and fails
    when any one of them is forbidden."""
    sampled: set[Outcome] = set()
    for strategy, seed in (("random", 7), ("random", 8), ("pct", 7)):
        racecheck.check(make(sampled), strategy=strategy, schedules=samples, seed=seed)
    racecheck.check(make(sampled), strategy="exhaustive", preemption_bound=2, schedules=samples)
    reduced: set[Outcome] = set()
    dpor = racecheck.check(make(reduced), strategy="dpor", schedules=budget)
    assume(dpor.exhausted)
    assert dpor.verified, dpor.notes
    missed = sampled - reduced
    assert not missed, f"DPOR never reached {sorted(missed)} (it reached {sorted(reduced)})"
    forbidden = data.draw(st.sampled_from(sorted(sampled)), label="forbidden")
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(make(set(), forbidden), strategy="dpor", schedules=budget, minimize=False)


#: RC_EXAMPLES=N runs N slow examples (a longer search than the slow suite's)
SLOW = settings(_SLOW, max_examples=int(os.environ.get("RC_EXAMPLES", _SLOW.max_examples)))


@_CI
@given(program=programs(actors=2, ops=2), data=st.data())
def test_dpor_reaches_what_sampling_reaches_with_threading_waits(
    program: Program, data: Any
) -> None:
    reaches_what_sampling_reaches(partial(make_target, program), data, 150, 1500)


@pytest.mark.slow
@SLOW
@given(program=programs(actors=3, ops=2), data=st.data())
def test_dpor_reaches_what_sampling_reaches_with_threading_waits_larger(
    program: Program, data: Any
) -> None:
    reaches_what_sampling_reaches(partial(make_target, program), data, 400, 4000)
