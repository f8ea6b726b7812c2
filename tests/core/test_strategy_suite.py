"""Held-out check: the default strategy finds every classic bug within 2,000 schedules.

Every buggy target of the classic suite (tests/classic: lost updates,
check-then-act, ABBA deadlocks on asyncio and threads, missed wake-ups,
cancellation leaks, ordering bugs that need one actor starved), plus the
SCTBench-style shapes written here (reorder-N, two-stage, wrong lock, stack
pop) and the issue's late-start shapes, for seeds 0, 1 and 2, with
``strategy`` left at its default. The full grid is marked slow; a bounded
version (one target per bug class, every seed) runs in CI.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import racecheck

# pytest imports test files by basename (no packages): importing the classic
# modules the same way shares one module object with their own collection.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "classic"))
import test_asyncio_bugs as classic_asyncio
import test_thread_bugs as classic_threads
from test_honest_search import late_abba, late_second_deposit

SEEDS = (0, 1, 2)
BUDGET = 2000

# -- SCTBench-style shapes, in racecheck's own words --------------------------------------


def reorder_threads(setters: int) -> Callable[[], None]:
    """N setters write a pair in two steps; a checker must never see half a pair."""

    def reorder() -> None:
        pair = {"a": 0, "b": 0}

        def setter() -> None:
            pair["a"] = 1
            pair["b"] = -1

        def checker() -> None:
            a, b = pair["a"], pair["b"]
            assert (a, b) in ((0, 0), (1, -1)), f"half a pair: {(a, b)}"

        threads = [threading.Thread(target=setter) for _ in range(setters)]
        threads.append(threading.Thread(target=checker))
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    reorder.__name__ = reorder.__qualname__ = f"reorder_{setters + 1}_threads"
    return reorder


def reorder_async(setters: int) -> Callable[[], Any]:
    async def reorder() -> None:
        pair = {"a": 0, "b": 0}

        async def setter() -> None:
            pair["a"] = 1
            await asyncio.sleep(0)
            pair["b"] = -1

        async def checker() -> None:
            a, b = pair["a"], pair["b"]
            assert (a, b) in ((0, 0), (1, -1)), f"half a pair: {(a, b)}"

        await asyncio.gather(*[setter() for _ in range(setters)], checker())

    reorder.__name__ = reorder.__qualname__ = f"reorder_{setters + 1}_async"
    return reorder


def two_stage_threads() -> None:
    """Stage 2 is published under its own lock: a reader sees stage 1 without it."""
    first, second = threading.Lock(), threading.Lock()
    data = {"one": 0, "two": 0}

    def writer() -> None:
        with first:
            data["one"] = 1
        with second:
            data["two"] = data["one"] + 1

    def reader() -> None:
        with first:
            if data["one"] == 0:
                return
        with second:
            assert data["two"] == data["one"] + 1, "stage 2 not published yet"

    ts = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


async def two_stage_async() -> None:
    first, second = asyncio.Lock(), asyncio.Lock()
    data = {"one": 0, "two": 0}

    async def writer() -> None:
        async with first:
            data["one"] = 1
        await asyncio.sleep(0)
        async with second:
            data["two"] = data["one"] + 1

    async def reader() -> None:
        async with first:
            if data["one"] == 0:
                return
        async with second:
            assert data["two"] == data["one"] + 1, "stage 2 not published yet"

    await asyncio.gather(writer(), reader())


def wrong_lock_threads() -> None:
    """Two threads update one counter, each under a different lock."""
    mine, yours = threading.Lock(), threading.Lock()
    counter = {"n": 0}

    def bump(lock: Any) -> None:
        with lock:
            value = counter["n"]
            counter["n"] = value + 1

    ts = [threading.Thread(target=bump, args=(mine,)), threading.Thread(target=bump, args=(yours,))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert counter["n"] == 2, counter


async def wrong_lock_async() -> None:
    mine, yours = asyncio.Lock(), asyncio.Lock()
    counter = {"n": 0}

    async def bump(lock: asyncio.Lock) -> None:
        async with lock:
            value = counter["n"]
            await asyncio.sleep(0)
            counter["n"] = value + 1

    await asyncio.gather(bump(mine), bump(yours))
    assert counter["n"] == 2, counter


class _Stack:
    def __init__(self) -> None:
        self.items: list[int] = []
        self.lock = threading.Lock()

    def push(self, item: int) -> None:
        with self.lock:
            self.items.append(item)

    def pop(self) -> int:
        with self.lock:
            return self.items.pop()


def stack_pop_threads() -> None:
    """Each popper checks the size outside the lock, then pops under it."""
    stack = _Stack()
    stack.push(1)

    def popper() -> None:
        if len(stack.items) > 0:
            stack.pop()

    ts = [threading.Thread(target=popper) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


async def stack_pop_async() -> None:
    items = [1]
    lock = asyncio.Lock()

    async def popper() -> None:
        if items:
            async with lock:
                await asyncio.sleep(0)  # work under the lock: a suspension point
                items.pop()

    await asyncio.gather(popper(), popper())


EXTRA: list[tuple[Callable[[], Any], str, Any]] = [
    (reorder_threads(2), "exception", AssertionError),
    (reorder_threads(5), "exception", AssertionError),
    (reorder_async(2), "exception", AssertionError),
    (reorder_async(5), "exception", AssertionError),
    (two_stage_threads, "exception", AssertionError),
    (two_stage_async, "exception", AssertionError),
    (wrong_lock_threads, "exception", AssertionError),
    (wrong_lock_async, "exception", AssertionError),
    (stack_pop_threads, "exception", IndexError),
    (stack_pop_async, "exception", IndexError),
    # the shapes: a bug three awaits from the natural order
    (late_second_deposit, "exception", AssertionError),
    (late_abba, "deadlock", None),
]

ALL: list[tuple[Callable[[], Any], str, Any]] = [
    *classic_asyncio.BUGGY,
    *classic_threads.BUGGY,
    *EXTRA,
]

#: one target per bug class, for the bounded (non-slow) run
BOUNDED = {
    "lost_update_closure",
    "cache_stampede",
    "abba_async_with",
    "abba_with",
    "swallowed_event_set",
    "cancel_leaks_slot",
    "starved_observer",
    "starved_reader",
    "condition_if",
    "reorder_6_threads",
    "two_stage_async",
    "wrong_lock_threads",
    "stack_pop_threads",
    "late_second_deposit",
    "late_abba",
}


def _params(bounded: bool) -> list[Any]:
    return [
        pytest.param(target, kind, cause, seed, id=f"{target.__name__}-seed{seed}")
        for target, kind, cause in ALL
        for seed in SEEDS
        if (target.__name__ in BOUNDED) == bounded or not bounded
    ]


def _find(target: Callable[[], Any], kind: str, cause: Any, seed: int) -> None:
    try:
        report = racecheck.check(target, schedules=BUDGET, seed=seed, minimize=False)
    except racecheck.RaceFound as found:
        assert found.kind == kind, (found.kind, found.detail, found.cause)
        if cause is not None:
            assert isinstance(found.cause, cause), repr(found.cause)
        assert found.strategy.startswith("auto: "), found.strategy
        assert found.schedules_run <= BUDGET
        return
    pytest.fail(
        f"{target.__name__}: the default strategy found nothing in {report.schedules_run}"
        f" schedules (seed {seed}):\n{report}"
    )


@pytest.mark.parametrize(("target", "kind", "cause", "seed"), _params(bounded=True))
def test_default_strategy_finds_each_bug_class(
    target: Callable[[], Any], kind: str, cause: Any, seed: int
) -> None:
    _find(target, kind, cause, seed)


@pytest.mark.slow
@pytest.mark.parametrize(("target", "kind", "cause", "seed"), _params(bounded=False))
def test_default_strategy_finds_every_classic_bug(
    target: Callable[[], Any], kind: str, cause: Any, seed: int
) -> None:
    _find(target, kind, cause, seed)


def test_the_default_strategy_is_the_portfolio() -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(late_abba)
    assert found.value.strategy.startswith("auto: ")


def test_the_grid_covers_every_classic_buggy_target() -> None:
    names = {t.__name__ for t, _, _ in ALL}
    assert {t.__name__ for t, _, _ in classic_asyncio.BUGGY} <= names
    assert {t.__name__ for t, _, _ in classic_threads.BUGGY} <= names
    assert BOUNDED <= names, BOUNDED - names
