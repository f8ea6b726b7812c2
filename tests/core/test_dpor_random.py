"""DPOR against plain exhaustive search on many small random programs (hypothesis).

Each program has 2–3 actors (asyncio tasks or threads) that read and write a
few shared variables, some of it under a lock. Plain exhaustive search, with
no bound and no reduction, runs every schedule; DPOR must reach exactly the
same final states, find a failure exactly when exhaustive search does, run no
more schedules, and call the program verified. On threads, where exhaustive
search cannot finish even tiny programs in CI, the reference is every state
that many random and PCT schedules reach.

The interpreter below is ordinary traced code (programs are data, not
generated source: code racecheck could not see would prove nothing).
"""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import racecheck

#: ("r", var) acc += state[var]; ("w", var, k) state[var] = acc + k;
#: ("lock", ops) the ops under the program's one lock; threads only: ("lock2", ops)
#: under a second lock, ("try", ops) under the first if acquire(False) got it,
#: ("next",) acc += next(a shared counter)
Op = tuple[Any, ...]
VARS = ("x", "y", "z")


@dataclass(frozen=True)
class Program:
    variables: int
    actors: tuple[tuple[Op, ...], ...]


def _simple(variables: int) -> st.SearchStrategy[Op]:
    var = st.sampled_from(VARS[:variables])
    return st.one_of(
        st.tuples(st.just("r"), var),
        st.tuples(st.just("w"), var, st.integers(0, 2)),
    )


def actor_bodies(
    draw: Any, op: st.SearchStrategy[Op], actors: int, ops: int
) -> tuple[tuple[Op, ...], ...]:
    """Two to ``actors`` actors' bodies, each one to ``ops`` draws of ``op``."""
    count = draw(st.integers(2, actors))
    return tuple(tuple(draw(st.lists(op, min_size=1, max_size=ops))) for _ in range(count))


@st.composite
def programs(draw: Any, actors: int = 3, ops: int = 2) -> Program:
    variables = draw(st.integers(1, 3))
    simple = _simple(variables)
    op = st.one_of(
        simple,
        st.tuples(st.just("lock"), st.lists(simple, min_size=1, max_size=2).map(tuple)),
    )
    return Program(variables, actor_bodies(draw, op, actors, ops))


@st.composite
def box_programs(draw: Any, actors: int = 3, ops: int = 2) -> Program:
    """asyncio: also dataclasses built around the shared state, and async generators.

    Where accesses._NARROW_WRITES makes library code write less than all it is
    handed: a dataclass's generated ``__init__`` (``box``: independent of the
    state; ``count``: its ``__post_init__`` changes it, a real conflict) and
    the loop's first-iteration hook for async generators (``agen``).
    """
    variables = draw(st.integers(1, 3))
    simple = _simple(variables)
    var = st.sampled_from(VARS[:variables])
    op = st.one_of(
        simple,
        st.tuples(st.sampled_from(("box", "count")), var),
        st.just(("agen",)),
        st.tuples(st.just("lock"), st.lists(simple, min_size=1, max_size=2).map(tuple)),
    )
    return Program(variables, actor_bodies(draw, op, actors, ops))


@st.composite
def thread_programs(draw: Any, actors: int = 2, ops: int = 2) -> Program:
    """Threads only: also a second lock, a try-acquire, and next() on a shared counter.

    These are where the threads backend's conflict relation is most precise
    (an acquire recorded where it takes effect, a blocked acquire as a
    stutter, a failed attempt as a read, next() as a write to its iterator):
    each must still tell apart every order that matters.
    """
    variables = draw(st.integers(1, 3))
    simple = _simple(variables)
    block = st.lists(simple, min_size=1, max_size=2).map(tuple)
    op = st.one_of(
        simple,
        st.tuples(st.sampled_from(("lock", "lock2", "try")), block),
        st.just(("next",)),
    )
    return Program(variables, actor_bodies(draw, op, actors, ops))


# -- the interpreters (traced like any user code) ----------------------------------------


async def _run_task(state: dict[str, int], ops: Sequence[Op], lock: asyncio.Lock) -> int:
    acc = 0
    for op in ops:
        if op[0] == "agen":
            async for number in _numbers():
                acc += number
        elif op[0] == "lock":
            async with lock:
                for inner in op[1]:
                    acc = _apply(state, inner, acc)
                    await asyncio.sleep(0)
        else:
            acc = _apply(state, op, acc)
        await asyncio.sleep(0)
    return acc


def _run_thread(
    state: dict[str, int],
    ops: Sequence[Op],
    locks: Sequence[threading.Lock],
    out: list[int],
    me: int,
    counter: Iterator[int],
) -> None:
    acc = 0
    for op in ops:
        if op[0] == "lock":
            with locks[0]:
                for inner in op[1]:
                    acc = _apply(state, inner, acc)
        elif op[0] == "lock2":
            with locks[1]:
                for inner in op[1]:
                    acc = _apply(state, inner, acc)
        elif op[0] == "try":
            # a failed attempt changes nothing, but what it saw is in acc
            if locks[0].acquire(blocking=False):
                try:
                    for inner in op[1]:
                        acc = _apply(state, inner, acc)
                finally:
                    locks[0].release()
            else:
                acc += 100
        elif op[0] == "next":
            acc += next(counter)
        else:
            acc = _apply(state, op, acc)
    out[me] = acc


@dataclass
class _Box:
    """Built around the shared state: its generated ``__init__`` only stores it."""

    state: dict[str, int]
    var: str


@dataclass
class _CountingBox(_Box):
    """The twin whose construction does change the state it is given."""

    def __post_init__(self) -> None:
        self.state[self.var] += 1


async def _numbers() -> Any:
    yield 1
    await asyncio.sleep(0)
    yield 2


def _apply(state: dict[str, int], op: Op, acc: int) -> int:
    if op[0] == "r":
        return acc + state[op[1]]
    if op[0] == "box":
        return acc + len(_Box(state, op[1]).var)
    if op[0] == "count":
        _CountingBox(state, op[1])
        return acc
    state[op[1]] = acc + op[2]
    return acc


Outcome = tuple[tuple[int, ...], tuple[int, ...]]


def gathered_target(
    program: Program,
    seen: set[Outcome],
    forbidden: Outcome | None,
    new_world: Callable[[dict[str, int]], Any],
    run_task: Callable[[Any, Sequence[Op]], Awaitable[int]],
) -> Callable[[], Any]:
    """An ``async def`` target: a world made per run, its actors gathered, the outcome kept.

    ``new_world`` makes the run's world from its variables (each property file's
    own, with the objects its ops use); ``run_task`` runs one actor's ops in it.
    """
    names = VARS[: program.variables]

    async def target() -> None:
        world = new_world(dict.fromkeys(names, 0))
        accs = await asyncio.gather(*(run_task(world, ops) for ops in program.actors))
        final = (tuple(world.state[name] for name in names), tuple(accs))
        seen.add(final)
        assert final != forbidden, "reached the forbidden state"

    return target


def make_target(
    program: Program, backend: str, seen: set[Outcome], forbidden: Outcome | None = None
) -> Callable[[], Any]:
    names = VARS[: program.variables]

    def outcome(state: dict[str, int], accs: Sequence[int]) -> Outcome:
        final = (tuple(state[name] for name in names), tuple(accs))
        seen.add(final)
        return final

    if backend == "asyncio":

        async def async_target() -> None:
            state = dict.fromkeys(names, 0)
            lock = asyncio.Lock()
            accs = await asyncio.gather(*(_run_task(state, ops, lock) for ops in program.actors))
            assert outcome(state, accs) != forbidden, "reached the forbidden state"

        return async_target

    def thread_target() -> None:
        state = dict.fromkeys(names, 0)
        locks = (threading.Lock(), threading.Lock())
        counter = itertools.count(1)
        accs = [0] * len(program.actors)
        workers = [
            threading.Thread(target=_run_thread, args=(state, ops, locks, accs, i, counter))
            for i, ops in enumerate(program.actors)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert outcome(state, accs) != forbidden, "reached the forbidden state"

    return thread_target


def compare(program: Program, backend: str, budget: int, data: Any) -> None:
    everything: set[Outcome] = set()
    full = racecheck.check(
        make_target(program, backend, everything),
        strategy="exhaustive",
        preemption_bound=10**6,  # one pass, no bound: every schedule once
        schedules=budget,
    )
    assume(full.exhausted)
    reduced: set[Outcome] = set()
    dpor = racecheck.check(
        make_target(program, backend, reduced), strategy="dpor", schedules=budget
    )
    assert dpor.verified, dpor
    assert reduced == everything
    # the search itself never runs more; its few probe runs are extra (dpor._probe_prefix)
    assert dpor.schedules_run - _probe_runs(dpor) <= full.schedules_run
    _forbid(program, backend, budget, data, everything)


def _probe_runs(report: racecheck.Report) -> int:
    found = re.search(r"(\d+) probe runs? off the search", " ".join(report.notes))
    return int(found.group(1)) if found else 0


def _forbid(
    program: Program, backend: str, budget: int, data: Any, reachable: set[Outcome]
) -> None:
    """The failures: forbidding any reachable final state must make DPOR fail too."""
    forbidden = data.draw(st.sampled_from(sorted(reachable)), label="forbidden")
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(
            make_target(program, backend, set(), forbidden),
            strategy="dpor",
            schedules=budget,
            minimize=False,
        )


def compare_sampled(program: Program, budget: int, data: Any) -> None:
    """Threads: every access is a scheduling point, so even a two-line program has more
    schedules than exhaustive search can run in CI. The reference is then every state
    a random walk and PCT reach in many schedules: DPOR must reach each of them."""
    sampled: set[Outcome] = set()
    for strategy in ("random", "pct"):
        racecheck.check(
            make_target(program, "threads", sampled), strategy=strategy, schedules=300, seed=7
        )
    reduced: set[Outcome] = set()
    dpor = racecheck.check(
        make_target(program, "threads", reduced), strategy="dpor", schedules=budget
    )
    assume(dpor.exhausted)
    assert dpor.verified, dpor
    assert sampled <= reduced
    _forbid(program, "threads", budget, data, sampled)


_CI = settings(
    max_examples=5,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
_SLOW = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@_CI
@given(program=programs(actors=3, ops=2), data=st.data())
def test_dpor_matches_exhaustive_search_on_asyncio(program: Program, data: Any) -> None:
    compare(program, "asyncio", 600, data)


@settings(_CI, max_examples=5)
@given(program=box_programs(actors=3, ops=2), data=st.data())
def test_dpor_matches_exhaustive_search_with_dataclasses_and_async_generators(
    program: Program, data: Any
) -> None:
    compare(program, "asyncio", 600, data)


@settings(_CI, max_examples=3)
@given(program=programs(actors=2, ops=2), data=st.data())
def test_dpor_reaches_every_sampled_state_on_threads(program: Program, data: Any) -> None:
    compare_sampled(program, 3000, data)


@settings(_CI, max_examples=3)
@given(program=thread_programs(actors=2, ops=2), data=st.data())
def test_dpor_reaches_every_sampled_state_with_two_locks_try_and_next(
    program: Program, data: Any
) -> None:
    compare_sampled(program, 3000, data)


@pytest.mark.slow
@_SLOW
@given(program=thread_programs(actors=3, ops=2), data=st.data())
def test_dpor_reaches_every_sampled_state_with_two_locks_try_and_next_larger(
    program: Program, data: Any
) -> None:
    compare_sampled(program, 20_000, data)


@pytest.mark.slow
@_SLOW
@given(program=programs(actors=3, ops=3), data=st.data())
def test_dpor_matches_exhaustive_search_on_asyncio_larger(program: Program, data: Any) -> None:
    compare(program, "asyncio", 5000, data)


@pytest.mark.slow
@_SLOW
@given(program=programs(actors=3, ops=2), data=st.data())
def test_dpor_reaches_every_sampled_state_on_threads_larger(program: Program, data: Any) -> None:
    compare_sampled(program, 20_000, data)
