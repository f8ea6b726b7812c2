"""Measure schedules per second against the uninstrumented run, in one process.

Ratios come from the same process, back to back, so machine noise cancels as
far as it can. Nothing here asserts a timing: numbers are printed, not tested.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import racecheck
from racecheck.bench.workloads import asyncio_deposits, two_threads


def _rate(func: Callable[[], Any], count: int) -> float:
    start = time.perf_counter()
    func()
    return count / (time.perf_counter() - start)


def overhead(schedules: int = 2000) -> list[dict[str, Any]]:
    rows = []

    def plain_asyncio() -> None:
        for _ in range(schedules):
            asyncio.run(asyncio_deposits())

    def controlled_asyncio() -> None:
        racecheck.check(asyncio_deposits, strategy="random", schedules=schedules, seed=0)

    def plain_threads() -> None:
        for _ in range(schedules):
            two_threads()

    def controlled_threads() -> None:
        racecheck.check(two_threads, strategy="pct", schedules=schedules, seed=0)

    def detected_asyncio() -> None:
        racecheck.check(
            asyncio_deposits, strategy="random", schedules=schedules, seed=0, detect=True
        )

    def detected_threads() -> None:
        racecheck.check(two_threads, strategy="pct", schedules=schedules, seed=0, detect=True)

    # The last two rows price the race detector: their "plain" is racecheck
    # without it, so the ratio is what detect=True costs on top.
    for name, plain, controlled in (
        ("asyncio: 3 tasks, lock, gather", plain_asyncio, controlled_asyncio),
        ("threads: 2 threads x ~10 traced lines", plain_threads, controlled_threads),
        ("asyncio, detect=True vs racecheck", controlled_asyncio, detected_asyncio),
        ("threads, detect=True vs racecheck", controlled_threads, detected_threads),
    ):
        _rate(plain, schedules)  # warm up imports and caches
        base = _rate(plain, schedules)
        rate = _rate(controlled, schedules)
        rows.append(
            {
                "workload": name,
                "uninstrumented_per_s": base,
                "racecheck_per_s": rate,
                "cost_ratio": base / rate,
            }
        )
    return rows
