"""The asyncio backend makes its event loop when it installs, before the first run.

Made there, the loop joins the heap the exploration freezes, and the
collection after every schedule no longer walks it (racecheck.session's
``quiet_gc``). These tests keep what that must not change: the loop made ahead
is the one the runs use, it never outlives the check on any road out (a pass,
a race, detection, a move to the threads backend), and runs on it behave as
runs on a loop made inside the first run did.
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import racecheck
from racecheck.backends.asyncio_loop import ControlledLoop, DetectingLoop


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _loops() -> list[ControlledLoop]:
    return [o for o in gc.get_objects() if isinstance(o, ControlledLoop)]


@pytest.fixture
def no_loop_left() -> Iterator[None]:
    gc.collect()
    before_fds = _open_fds()
    before = {id(loop) for loop in _loops()}
    yield
    gc.collect()
    new = [loop for loop in _loops() if id(loop) not in before]
    assert all(loop.is_closed() for loop in new), "a controlled loop outlived the check"
    assert _open_fds() <= before_fds, "the check left file descriptors open"


class Counter:
    def __init__(self) -> None:
        self.value = 0
        self.lock = asyncio.Lock()


async def _bump(counter: Counter, locked: bool) -> None:
    if locked:
        async with counter.lock:
            current = counter.value
            await asyncio.sleep(0)
            counter.value = current + 1
    else:
        current = counter.value
        await asyncio.sleep(0)
        counter.value = current + 1


def _counting(locked: bool) -> Callable[[], Any]:
    async def target() -> None:
        counter = Counter()
        await asyncio.gather(_bump(counter, locked), _bump(counter, locked))
        assert counter.value == 2, f"lost update: {counter.value}"

    return target


def test_every_run_uses_the_loop_made_at_install(no_loop_left: None) -> None:
    seen: list[asyncio.AbstractEventLoop] = []

    async def target() -> None:
        seen.append(asyncio.get_running_loop())
        await asyncio.sleep(0)

    report = racecheck.check(target, strategy="random", schedules=20, seed=0, saturation=0)
    assert report.schedules_run == 20
    assert len({id(loop) for loop in seen}) == 1, "the runs did not share one reused loop"
    assert type(seen[0]) is ControlledLoop


def test_the_collection_between_runs_does_not_walk_the_loop() -> None:
    """The loop is part of the frozen heap, which ``gc.get_objects`` leaves out."""
    from racecheck.session import _FROZEN_AT_START  # 3.12 starts with a few hundred

    if gc.get_freeze_count() > _FROZEN_AT_START:
        pytest.skip("someone froze the heap: the exploration then leaves it alone")
    walked: list[bool] = []

    async def target() -> None:
        loop = asyncio.get_running_loop()
        walked.append(any(o is loop for o in gc.get_objects()))
        await asyncio.sleep(0)

    racecheck.check(target, strategy="random", schedules=5, seed=0, saturation=0)
    assert walked == [False] * 5


def test_a_detecting_exploration_makes_a_detecting_loop_ahead(no_loop_left: None) -> None:
    seen: list[asyncio.AbstractEventLoop] = []

    async def target() -> None:
        seen.append(asyncio.get_running_loop())
        await asyncio.sleep(0)

    racecheck.check(target, strategy="random", schedules=10, seed=0, detect=True, saturation=0)
    assert len({id(loop) for loop in seen}) == 1, "the loop made ahead was replaced"
    assert isinstance(seen[0], DetectingLoop)


def test_the_loop_made_ahead_is_closed_after_a_passing_check(no_loop_left: None) -> None:
    report = racecheck.check(_counting(True), strategy="random", schedules=30, seed=0)
    assert report.schedules_run >= 1


def test_the_loop_made_ahead_is_closed_after_a_race(no_loop_left: None) -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(_counting(False), strategy="random", schedules=200, seed=0)
    assert "lost update" in str(found.value)
    del found


def test_the_loop_made_ahead_is_closed_when_the_target_moves_to_threads(
    no_loop_left: None,
) -> None:
    def work(box: list[int]) -> None:
        box[0] += 1

    async def target() -> None:
        box = [0]
        loop = asyncio.get_running_loop()
        await asyncio.gather(
            loop.run_in_executor(None, work, box), loop.run_in_executor(None, work, box)
        )
        assert box[0] in (1, 2)

    report = racecheck.check(target, strategy="random", schedules=10, seed=0)
    assert "threads" in report.backend


def test_the_first_schedule_on_the_loop_made_ahead_is_the_natural_order() -> None:
    """Schedule 1 is the runtime's own order, on a loop no run has used yet."""
    order: list[str] = []

    async def step(name: str) -> None:
        order.append(f"{name}1")
        await asyncio.sleep(0)
        order.append(f"{name}2")

    async def target() -> None:
        if order:
            return
        await asyncio.gather(step("a"), step("b"))

    racecheck.check(target, strategy="random", schedules=1, seed=0)
    assert order == ["a1", "b1", "a2", "b2"]
