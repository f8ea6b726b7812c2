"""Measure schedules per second against the uninstrumented run, in one process.

Ratios come from the same process, back to back, so machine noise cancels as
far as it can. Nothing here asserts a timing: numbers are printed, not tested.
"""

from __future__ import annotations

import asyncio
import importlib.util
import statistics
import time
from collections.abc import Callable
from typing import Any

import racecheck
from racecheck.bench.workloads import asyncio_deposits, two_threads

#: the overhead rows, in the order they are measured (the trio row needs trio)
ROW_NAMES = (
    "asyncio: 3 tasks, lock, gather",
    "threads: 2 threads x ~10 traced lines",
    "asyncio, detect=True vs racecheck",
    "threads, detect=True vs racecheck",
    "trio, detect=True vs racecheck",
)


def detector_feed() -> str:
    """How a detected asyncio or trio step reaches the detector on this interpreter.

    The detector rows' cost depends on it far more than on anything else
    (see docs/architecture.md): sys.monitoring on 3.12+, a per-step
    sys.settrace function on 3.11. Threads are traced by their own tracer.
    """
    from racecheck.detect.stepmon import AVAILABLE

    return "sys.monitoring (3.12+)" if AVAILABLE else "sys.settrace (3.11)"


def _seconds(func: Callable[[], Any]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (every thread of the process) that ``func`` took."""
    start, cpu = time.perf_counter(), time.process_time()
    func()
    return time.perf_counter() - start, time.process_time() - cpu


def overhead(
    schedules: int = 2000, rounds: int = 5, only: str | None = None
) -> list[dict[str, Any]]:
    """The cost of each controlled run against its baseline, in one process.

    Each row runs its baseline and its controlled version back to back,
    ``rounds`` times, and reports medians: the machine may be shared, and a
    burst of someone else's load then spoils one round, not the ratio.

    Baselines, the strictest fair ones:
    - asyncio: the same coroutine run ``schedules`` times on *one reused*
      plain event loop (``loop.run_until_complete``), not ``asyncio.run``,
      which pays for a new loop every time;
    - threads: the same function run ``schedules`` times, each run starting
      and joining its two real OS threads;
    - the ``detect=True`` rows: racecheck on the same workload without the
      detector, so the ratio is what the detector adds.

    ``only``: measure just the rows whose name contains it (a quicker look).
    """
    rows = []

    def plain_asyncio() -> None:
        loop = asyncio.new_event_loop()
        try:
            for _ in range(schedules):
                loop.run_until_complete(asyncio_deposits())
        finally:
            loop.close()

    # saturation=0: the rate divides by ``schedules``, so every one of them must
    # run (the fixed workload has few distinct schedules, and a saturated
    # exploration stopped at about 1,150 of 2,000)
    def controlled_asyncio() -> None:
        racecheck.check(
            asyncio_deposits, strategy="random", schedules=schedules, seed=0, saturation=0
        )

    def plain_threads() -> None:
        for _ in range(schedules):
            two_threads()

    def controlled_threads() -> None:
        racecheck.check(two_threads, strategy="pct", schedules=schedules, seed=0, saturation=0)

    def detected_asyncio() -> None:
        racecheck.check(
            asyncio_deposits,
            strategy="random",
            schedules=schedules,
            seed=0,
            detect=True,
            saturation=0,
        )

    def detected_threads() -> None:
        racecheck.check(
            two_threads, strategy="pct", schedules=schedules, seed=0, detect=True, saturation=0
        )

    for name, plain, controlled in (
        (ROW_NAMES[0], plain_asyncio, controlled_asyncio),
        (ROW_NAMES[1], plain_threads, controlled_threads),
        (ROW_NAMES[2], controlled_asyncio, detected_asyncio),
        (ROW_NAMES[3], controlled_threads, detected_threads),
        *_trio_rows(schedules),
    ):
        if only is not None and only not in name:
            continue
        plain()  # warm up imports and caches
        controlled()
        bases: list[float] = []
        runs: list[float] = []
        ratios: list[float] = []
        cpu_ratios: list[float] = []
        for _ in range(rounds):
            base, base_cpu = _seconds(plain)
            run, run_cpu = _seconds(controlled)
            bases.append(base)
            runs.append(run)
            ratios.append(run / base)
            cpu_ratios.append(run_cpu / base_cpu if base_cpu > 0 else float("nan"))
        rows.append(
            {
                "workload": name,
                "uninstrumented_per_s": schedules / statistics.median(bases),
                "racecheck_per_s": schedules / statistics.median(runs),
                "cost_ratio": statistics.median(ratios),
                "ratios": ratios,
                # CPU time of the whole process: on a shared machine the wall
                # clock also counts the time other processes held the cores
                "cpu_cost_ratio": statistics.median(cpu_ratios),
            }
        )
    return rows


def _trio_rows(schedules: int) -> list[tuple[str, Callable[[], Any], Callable[[], Any]]]:
    """The detector on trio, when trio is installed: racecheck's run without it, and with it."""
    if importlib.util.find_spec("trio") is None:
        return []
    from racecheck.bench.trio_workloads import trio_deposits

    def controlled_trio() -> None:
        racecheck.check(
            trio_deposits,
            backend="trio",
            strategy="random",
            schedules=schedules,
            seed=0,
            saturation=0,
        )

    def detected_trio() -> None:
        racecheck.check(
            trio_deposits,
            backend="trio",
            strategy="random",
            schedules=schedules,
            seed=0,
            detect=True,
            saturation=0,
        )

    return [(ROW_NAMES[4], controlled_trio, detected_trio)]
