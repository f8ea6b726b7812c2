"""Interleaving coverage counts distinct orderings of conflicting accesses."""

from __future__ import annotations

import asyncio
import threading

import pytest

import racecheck
from racecheck.coverage import ordered_conflicts


def test_only_conflicting_pairs_of_different_actors_count() -> None:
    accesses = [
        (1, "r:x"),
        (2, "r:x"),  # two reads: no conflict
        (2, "w:x"),
        (1, "r:x"),  # write then read by another actor: conflict
        (1, "w:y"),
        (1, "w:y"),  # same actor: no conflict
        (3, "lock:Lock#1"),
        (2, "lock:Lock#1"),  # lock hand-over: conflict
    ]
    assert ordered_conflicts(accesses) == {
        ("x", 2, "w", 1, "r"),
        ("Lock#1", 3, "lock", 2, "lock"),
    }


class Box:
    def __init__(self) -> None:
        self.value = 0


async def two_writers() -> None:
    box = Box()

    async def write(n: int) -> None:
        box.value = n
        await asyncio.sleep(0)
        box.value += n

    await asyncio.gather(write(1), write(2))


def two_thread_writers() -> None:
    box, lock = Box(), threading.Lock()

    def write(n: int) -> None:
        with lock:
            box.value += n

    threads = [threading.Thread(target=write, args=(n,)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.mark.parametrize("target", [two_writers, two_thread_writers])
def test_exploring_more_orders_sees_more_orderings(target: object) -> None:
    one = racecheck.check(target, strategy="pct", schedules=1, coverage=True)  # type: ignore[arg-type]
    many = racecheck.check(
        target,  # type: ignore[arg-type]
        strategy="exhaustive",
        schedules=500,
        coverage=True,
        preemption_bound=2,
    )
    assert 0 < one.distinct_orderings < many.distinct_orderings
    assert many.exhausted


def test_coverage_is_off_unless_asked() -> None:
    report = racecheck.check(two_writers, schedules=20)
    assert report.distinct_orderings == 0
    assert report.distinct_schedules > 1
