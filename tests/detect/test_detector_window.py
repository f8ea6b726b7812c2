"""Slice stores and stale positions (issue 14): the shape of limits 5.2.0's expiry pass.

limits 5.2.0 computes a cut-off index in a worker thread (``await
asyncio.to_thread(bisect...)``), then, under the key's lock, slices the window
at that index; a hit landing in between inserts at the front with a slice
store (``events[key][:0] = [...]``) and the stale index drops a live entry.
``window_models.py`` is that storage, buggy and fixed.
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

sys.path.insert(0, str(Path(__file__).parent))
import window_models

DETECTOR_KINDS = ("atomicity-violation", "data-race")


def detect(target: Callable[[], Any], schedules: int = 100) -> Any:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=schedules)
    assert info.value.kind in DETECTOR_KINDS, info.value
    return info.value.cause.finding  # type: ignore[union-attr]


def clean(target: Callable[[], Any], schedules: int = 100) -> None:
    report = racecheck.check(target, detect=True, schedules=schedules)
    assert report.schedules_run == schedules or report.exhausted


# -- the limits 5.2.0 shape ------------------------------------------------------------


def test_the_model_is_faithful_its_assertion_fails_buggy_and_holds_fixed() -> None:
    with pytest.raises(racecheck.RaceFound, match="3 requests let through"):
        racecheck.check(window_models.buggy_asserted, schedules=100)
    racecheck.check(window_models.fixed_asserted, schedules=100)


def test_stale_index_computed_in_a_worker_thread_is_flagged() -> None:
    finding = detect(window_models.buggy)
    assert finding.kind == "atomicity-violation", finding
    assert finding.pattern == "stale index", finding
    measure, insert, act = finding.accesses
    lines = (measure.lineno, insert.lineno, act.lineno)
    assert lines == tuple(window_models.marked(m) for m in ("measure", "insert", "act"))
    assert all(a.filename == window_models.__file__ for a in finding.accesses)
    assert act.target == "self.events['user-1']", finding
    # three actors: the worker that measured, the request that inserted, the expiry pass
    assert len({measure.actor, insert.actor, act.actor}) == 3, finding


def test_index_computed_under_the_lock_is_clean() -> None:
    clean(window_models.fixed, schedules=150)


async def _own_stale_index() -> None:
    items = [5, 3, 1]

    async def trim() -> None:
        cut = items.index(1)  # one's own measure, not a worker's
        await asyncio.sleep(0)
        del items[cut:]

    async def add() -> None:
        items[:0] = [9]

    await asyncio.gather(trim(), add())


def test_own_stale_index_applied_after_an_await_is_flagged() -> None:
    finding = detect(_own_stale_index)
    assert finding.pattern == "stale index", finding
    assert [a.action for a in finding.accesses][1:] == ["wrote a slice of", "deleted a slice of"]


async def _index_taken_again() -> None:
    items = [5, 3, 1]

    async def trim() -> None:
        await asyncio.sleep(0)
        cut = items.index(1)
        del items[cut:]

    async def add() -> None:
        items[:0] = [9]

    await asyncio.gather(trim(), add())


def test_index_taken_in_the_step_that_uses_it_is_clean() -> None:
    clean(_index_taken_again)


# -- slice stores are container writes ---------------------------------------------------


def _threads(*targets: Callable[[], None]) -> None:
    workers = [threading.Thread(target=t) for t in targets]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def _iterate_against_slice_store() -> None:
    items = [1, 2, 3]
    seen: list[int] = []

    def read() -> None:
        for x in items:
            seen.append(x)

    def prepend() -> None:
        items[:0] = [0]

    _threads(read, prepend)


def _iterate_against_slice_delete() -> None:
    items = [1, 2, 3]
    seen: list[int] = []

    def read() -> None:
        for x in items:
            seen.append(x)

    def trim() -> None:
        del items[1:]

    _threads(read, trim)


@pytest.mark.parametrize(
    ("target", "action"),
    [
        (_iterate_against_slice_store, "wrote a slice of"),
        (_iterate_against_slice_delete, "deleted a slice of"),
    ],
)
def test_slice_store_against_iteration_in_another_thread(
    target: Callable[[], None], action: str
) -> None:
    finding = detect(target)
    assert finding.kind == "data-race", finding
    assert sorted(a.action for a in finding.accesses) == sorted(["iterated", action]), finding


def _slice_store_under_a_lock() -> None:
    items = [1, 2, 3]
    seen: list[int] = []
    lock = threading.Lock()

    def read() -> None:
        with lock:
            for x in items:
                seen.append(x)

    def prepend() -> None:
        with lock:
            items[:0] = [0]

    _threads(read, prepend)


def test_slice_store_under_a_lock_is_clean() -> None:
    clean(_slice_store_under_a_lock, schedules=60)


async def _slice_copy_then_replace() -> None:
    class Holder:
        def __init__(self) -> None:
            self.items = [1, 2]

    holder = Holder()

    async def keep_odd() -> None:
        snapshot = holder.items[:]
        await asyncio.sleep(0)
        holder.items[:] = [x for x in snapshot if x % 2]

    async def add() -> None:
        holder.items.append(3)

    await asyncio.gather(keep_odd(), add())


def test_slice_copy_then_slice_store_across_an_await_is_a_lost_update() -> None:
    finding = detect(_slice_copy_then_replace)
    assert finding.pattern == "lost update", finding
    assert [a.action for a in finding.accesses] == [
        "copied a slice of",
        "called .append() on",
        "wrote a slice of",
    ], finding
