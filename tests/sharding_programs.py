"""Small target programs the sharding tests share, and the run of every slice.

A sharded search must explore exactly what one process explores, so most of
the sharding tests run the same few programs both ways. They live here once;
the programs that record what they saw append to the module's lists, which
each test clears before its first run.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import racecheck
from racecheck.sharding import Merged, Shard, ShardResult, SliceState, merge

#: the order the workers of :func:`recorded`/:func:`recorded_threads` ran in, one per run
ORDERS: list[str] = []

#: :func:`counters`' final state, one per run
FINALS: list[tuple[int, ...]] = []


async def three_workers() -> None:
    """Fails only when worker c runs its four steps before a and b have done much."""
    log: list[str] = []

    async def worker(name: str, n: int) -> None:
        for _ in range(n):
            log.append(name)
            await asyncio.sleep(0)

    await asyncio.gather(worker("a", 4), worker("b", 4), worker("c", 4))
    text = "".join(log)
    assert "cccc" not in text[:6], text


async def common_race() -> None:
    """Fails whenever worker c runs twice in a row early on: many subtrees hold a failure."""
    log: list[str] = []

    async def worker(name: str) -> None:
        for _ in range(3):
            log.append(name)
            await asyncio.sleep(0)

    await asyncio.gather(worker("a"), worker("b"), worker("c"))
    assert "cc" not in "".join(log)[:5]


async def five_tasks() -> None:
    """Many conflicting steps: a DPOR space far larger than any budget here."""
    log: list[str] = []

    async def worker(name: str) -> None:
        for _ in range(4):
            log.append(name)
            await asyncio.sleep(0)

    await asyncio.gather(*(worker(name) for name in "abcde"))


async def counters() -> None:
    """Correct, with real conflicts: two counters read and written by three tasks."""
    state = [0, 0]

    async def bump(index: int, by: int) -> None:
        value = state[index]
        await asyncio.sleep(0)
        state[index] = value + by
        await asyncio.sleep(0)

    await asyncio.gather(bump(0, 1), bump(1, 10), bump(0, 100))
    FINALS.append(tuple(state))


async def _record_workers(steps: int) -> None:
    log: list[str] = []

    async def worker(name: str) -> None:
        for _ in range(steps):
            log.append(name)
            await asyncio.sleep(0)

    await asyncio.gather(worker("a"), worker("b"), worker("c"))
    ORDERS.append("".join(log))


async def recorded() -> None:
    """Three workers of three steps; no assertion: records the order they ran in."""
    await _record_workers(3)


async def recorded_short() -> None:
    """Three workers of two steps: a space small enough to walk whole."""
    await _record_workers(2)


def recorded_threads() -> None:
    """Two threads taking one lock twice each; records the order they took it in."""
    log: list[str] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        for _ in range(2):
            with lock:
                log.append(name)

    threads = [threading.Thread(target=worker, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ORDERS.append("".join(log))


def run_slices(
    target: Callable[[], Any], shards: int, **options: Any
) -> tuple[Merged, list[SliceState], list[Any]]:
    """Every slice of one exploration run in turn, merged: (verdict, slice states, outcomes).

    An outcome is the slice's :class:`racecheck.Report`, or the
    :class:`racecheck.RaceFound` it raised.
    """
    states: list[SliceState] = []
    outcomes: list[Any] = []
    results: list[ShardResult] = []
    for i in range(1, shards + 1):
        state = SliceState(Shard(i, shards))
        failure = None
        try:
            outcome: Any = racecheck.check(target, shard=state, **options)
        except racecheck.RaceFound as exc:
            outcome, failure = exc, exc.schedules_run
        states.append(state)
        outcomes.append(outcome)
        results.append(ShardResult.from_dict(state.to_dict(), failure))
    return merge(results), states, outcomes
