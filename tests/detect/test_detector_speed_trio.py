"""trio task steps reach the race detector through ``sys.monitoring`` on 3.12+.

A per-step ``sys.settrace`` function is the slow road there: setting one
re-instruments the code it reaches, step after step (a detected trio run
cost about 5x an undetected one on 3.13, against about 2.6x on 3.11). The
steps take :mod:`racecheck.detect.stepmon`'s road, as asyncio's do; a step
under another tracer (a caller's, the trace recorder's in a replay) keeps
the settrace road. Both roads must find the same race, and the monitoring
tool must not outlive the exploration.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

trio = pytest.importorskip("trio")

import racecheck  # noqa: E402

needs_monitoring = pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12+")


class Counter:
    def __init__(self) -> None:
        self.value = 0


async def lost_update() -> None:
    counter = Counter()

    async def bump() -> None:
        current = counter.value
        await trio.sleep(0)
        counter.value = current + 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(bump)
        nursery.start_soon(bump)


async def locked_update() -> None:
    counter = Counter()
    lock = trio.Lock()

    async def bump() -> None:
        async with lock:
            current = counter.value
            await trio.sleep(0)
            counter.value = current + 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(bump)
        nursery.start_soon(bump)


def _tools() -> list[Any]:
    return [sys.monitoring.get_tool(tool) for tool in range(6)]  # type: ignore[attr-defined]


@needs_monitoring
def test_trio_steps_use_a_monitoring_tool_that_is_freed_after_the_run() -> None:
    tools_seen: list[list[Any]] = []
    tracers_seen: list[Any] = []

    async def target() -> None:
        tools_seen.append(_tools())
        tracers_seen.append(sys.gettrace())
        await locked_update()

    report = racecheck.check(
        target, backend="trio", detect=True, schedules=20, seed=0, strategy="random"
    )
    assert report.schedules_run == 20
    assert all("racecheck-detect" in tools for tools in tools_seen)
    assert tracers_seen and all(tracer is None for tracer in tracers_seen)
    assert "racecheck-detect" not in _tools()


def _finding(**options: Any) -> tuple[str, int, str, Any]:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(lost_update, backend="trio", detect=True, schedules=50, seed=3, **options)
    found = info.value
    assert found.trace is not None  # the traced replay (settrace road) found it again
    cause = found.cause
    accesses = [(a.actor, a.action, a.target, a.lineno, a.locks) for a in cause.finding.accesses]
    return found.kind, found.schedules_run, str(found.detail), accesses


def test_trio_monitoring_and_settrace_roads_report_the_same_finding() -> None:
    plain = _finding()

    def caller_trace(frame: Any, event: str, arg: Any) -> None:
        return None  # a caller's tracer: every step takes the settrace road under it

    previous = sys.gettrace()
    sys.settrace(caller_trace)
    try:
        traced = _finding()
    finally:
        sys.settrace(previous)
    assert plain == traced
    assert plain[0] == "atomicity-violation"
    assert "racecheck-detect" not in (_tools() if sys.version_info >= (3, 12) else [])


def test_the_bench_measures_the_detector_on_trio() -> None:
    """``racecheck bench`` has a trio row: the detector's cost there is a printed number too."""
    from racecheck.bench.overhead import overhead

    rows = overhead(schedules=5, rounds=1, only="trio")
    assert [row["workload"] for row in rows] == ["trio, detect=True vs racecheck"]
    assert rows[0]["racecheck_per_s"] > 0 and rows[0]["cpu_cost_ratio"] > 0


def test_the_bench_trio_workload_is_fixed_code_the_detector_leaves_alone() -> None:
    # every schedule must run to its end, or the row measures failures, not the detector
    from racecheck.bench.trio_workloads import trio_deposits

    report = racecheck.check(
        trio_deposits,
        backend="trio",
        strategy="random",
        schedules=30,
        seed=0,
        detect=True,
        saturation=0,
    )
    assert report.schedules_run == 30
