"""The race detector's two roads into asyncio task steps (racecheck.detect.stepmon).

On 3.12+ task steps reach the detector through ``sys.monitoring``; a step
run under a ``sys.settrace`` function (a caller's tracer, the trace
recorder) takes the settrace road. Both must see the same accesses, and
the monitoring tool must not outlive the exploration.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

import racecheck

needs_monitoring = pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12+")


class Counter:
    def __init__(self) -> None:
        self.value = 0


async def lost_update() -> None:
    counter = Counter()

    async def bump() -> None:
        current = counter.value
        await asyncio.sleep(0)
        counter.value = current + 1

    await asyncio.gather(bump(), bump())


async def locked_update() -> None:
    counter = Counter()
    lock = asyncio.Lock()

    async def bump() -> None:
        async with lock:
            current = counter.value
            await asyncio.sleep(0)
            counter.value = current + 1

    await asyncio.gather(bump(), bump())


def _tools() -> list[Any]:
    return [sys.monitoring.get_tool(tool) for tool in range(6)]  # type: ignore[attr-defined]


@needs_monitoring
def test_detected_steps_use_a_monitoring_tool_that_is_freed_after_the_run() -> None:
    seen: list[list[Any]] = []

    async def target() -> None:
        seen.append(_tools())
        await locked_update()

    report = racecheck.check(target, detect=True, schedules=20, seed=0, strategy="random")
    assert report.schedules_run == 20
    assert any("racecheck-detect" in tools for tools in seen)
    assert "racecheck-detect" not in _tools()


def _finding(**options: Any) -> tuple[str, int, str]:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(lost_update, detect=True, schedules=50, seed=3, **options)
    found = info.value
    assert found.trace is not None  # the traced replay found it again
    return found.kind, found.schedules_run, str(found.detail)


def test_monitoring_and_settrace_roads_report_the_same_finding() -> None:
    plain = _finding()

    def caller_trace(frame: Any, event: str, arg: Any) -> None:
        return None  # a do-nothing tracer the explorer inherits: every step takes settrace

    previous = sys.gettrace()
    sys.settrace(caller_trace)
    try:
        traced = _finding()
    finally:
        sys.settrace(previous)
    assert plain == traced
    assert plain[0] in ("atomicity-violation", "data-race")


def test_correct_code_stays_quiet_on_both_roads() -> None:
    # random: auto's DPOR member would verify this tiny program and stop early
    report = racecheck.check(locked_update, detect=True, schedules=30, seed=1, strategy="random")
    assert report.schedules_run == 30


async def awaits_and_copies() -> None:
    box = {"n": 0}

    async def bump() -> None:
        current = box["n"]
        await asyncio.sleep(0)
        box["n"] = current + 1  # ``current + 1`` reads ``current`` whole: DPOR's step log does

    await asyncio.gather(bump(), bump())


def _recipes_handed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """(recipe op, does the run record DPOR's steps?) for each recipe handed to the detector."""
    from racecheck.detect.detector import Detector

    handed: list[tuple[str, bool]] = []
    on_recipe = Detector.on_recipe

    def counted(self: Detector, frame: Any, recipe: Any, actor: int, hb: int) -> None:
        handed.append((recipe.op, self.access_log is not None))
        on_recipe(self, frame, recipe, actor, hb)

    monkeypatch.setattr(Detector, "on_recipe", counted)
    return handed


@needs_monitoring
def test_step_log_only_recipes_stop_in_the_callback_unless_dpor_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``await``, whole reads and in-place operators are for DPOR's step log alone.

    Without one the detector returns at once for them, so the monitoring
    callback does not hand them over; with one (a DPOR run) it still does.
    """
    from racecheck.detect.operands import STEP_LOG_OPS

    handed = _recipes_handed(monkeypatch)
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(awaits_and_copies, strategy="random", schedules=20, seed=0, detect=True)
    assert "lost update" in str(found.value)
    assert handed and not any(op in STEP_LOG_OPS for op, _ in handed)
    handed.clear()
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(awaits_and_copies, strategy="dpor", schedules=20, seed=0, detect=True)
    assert any(op in STEP_LOG_OPS and logged for op, logged in handed)


@needs_monitoring
def test_a_step_log_free_exploration_switches_them_off_and_a_logging_step_back_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Explored by random (no run records DPOR's steps), those recipes' events go for good.

    They come back for a step that records DPOR's steps: here a DPOR
    exploration that finds the tool still claimed (its release is held back),
    so nothing else would restart them.
    """
    from racecheck.detect import stepmon
    from racecheck.detect.operands import STEP_LOG_OPS

    handed = _recipes_handed(monkeypatch)
    release = stepmon.release
    monkeypatch.setattr(stepmon, "release", lambda: None)
    monkeypatch.setattr("racecheck.backends.asyncio_backend.release_step_monitor", lambda: None)
    try:
        with pytest.raises(racecheck.RaceFound):
            racecheck.check(awaits_and_copies, strategy="random", schedules=20, seed=0, detect=True)
        assert stepmon.MONITOR.dropped
        assert stepmon.MONITOR.tool is not None  # still claimed
        handed.clear()
        with pytest.raises(racecheck.RaceFound):
            racecheck.check(awaits_and_copies, strategy="dpor", schedules=20, seed=0, detect=True)
        assert any(op in STEP_LOG_OPS and logged for op, logged in handed)
        assert not stepmon.MONITOR.dropped
    finally:
        release()
