"""3.11's detected task step stops tracing once the task's own coroutine has suspended.

What runs after that in the step is asyncio's C bookkeeping and the loop's
``call_soon``: tracing it cost every instruction the interpreter's slow road
and every Python call a call event. It stops only when the coroutine yielded
nothing or one of asyncio's C futures: a future class written in Python has
its ``add_done_callback`` called in that tail, and that code is the user's.
The loop's ``get_debug``, asked by every C future and task made in a step,
is a C callable on the detecting loop for the same reason.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

import racecheck
from racecheck.backends.asyncio_loop import DetectingLoop


class Subscribed(asyncio.Future):  # type: ignore[type-arg]
    """A future class written in Python: its add_done_callback is user code."""

    traced: list[bool]

    def add_done_callback(self, fn: Any, *, context: Any = None) -> None:
        # runs in the awaiting task's step, after its coroutine has suspended
        self.traced.append(sys.gettrace() is not None)
        self.set_result(None)
        super().add_done_callback(fn, context=context)


def awaits(make: Any, seen: list[bool]) -> Any:
    async def target() -> None:
        fut = make()
        fut.traced = seen
        await fut

    return target


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11's settrace road")
def test_tracing_stays_on_when_the_coroutine_suspends_on_a_python_future() -> None:
    seen: list[bool] = []
    racecheck.check(awaits(Subscribed, seen), detect=True, schedules=3)
    assert seen and all(seen), seen


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11's settrace road")
def test_the_steps_tail_after_a_bare_yield_runs_untraced() -> None:
    """The loop's call_soon after ``sleep(0)`` sees no trace function (and the
    accesses before the suspension were all fed: the race is still found)."""
    traced: list[bool] = []
    original = DetectingLoop.call_soon

    def call_soon(self: Any, callback: Any, *args: Any, context: Any = None) -> Any:
        # a task rescheduling itself after a bare yield: the step's tail
        if getattr(callback, "__self__", None) is asyncio.current_task(self):
            traced.append(sys.gettrace() is not None)
        return original(self, callback, *args, context=context)

    class Box:
        def __init__(self) -> None:
            self.n = 0

    async def bump(box: Any) -> None:
        seen = box.n
        await asyncio.sleep(0)
        box.n = seen + 1

    async def target() -> None:
        box = Box()
        await asyncio.gather(bump(box), bump(box))

    DetectingLoop.call_soon = call_soon  # type: ignore[method-assign]
    try:
        with pytest.raises(racecheck.RaceFound) as info:
            racecheck.check(target, detect=True, schedules=20)
    finally:
        DetectingLoop.call_soon = original  # type: ignore[method-assign]
    assert info.value.cause.finding.pattern == "lost update"  # type: ignore[union-attr]
    # (the failing schedule's replay records a trace: that road traces the whole step)
    assert False in traced, traced


def test_the_detecting_loops_get_debug_follows_set_debug() -> None:
    loop = DetectingLoop(None)
    try:
        assert loop.get_debug() is False
        loop.set_debug(True)
        assert loop.get_debug() is True
        loop.set_debug(False)
        assert loop.get_debug() is False
    finally:
        loop.close()
