"""racecheck under load: many schedules, many actors, very long schedules.

- Memory stays flat over a long exploration: the resident set is sampled every
  few thousand schedules (through the ``progress`` callback, so inside the one
  ``check``) and may not grow. The slow test is the full claim (100,000
  schedules, sampled every 10,000, growth under 5%); CI runs a bounded
  version with a generous bound.
- 200 asyncio tasks, or 50 threads, per schedule work and a planted bug among
  them is found.
- A schedule that would run for ever stops at ``max_steps`` with a step-limit
  report that names the limit and says how to raise it.

No timing is asserted.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from typing import Any

import pytest

import racecheck

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_STATM = "/proc/self/statm"

needs_statm = pytest.mark.skipif(
    not os.path.exists(_STATM), reason="reads the resident set size from /proc"
)


def _rss() -> int:
    with open(_STATM) as statm:
        return int(statm.read().split()[1]) * _PAGE


# -- flat memory ------------------------------------------------------------------


class Account:
    def __init__(self) -> None:
        self.balance = 0
        self.lock = asyncio.Lock()

    async def deposit(self, amount: int) -> None:
        async with self.lock:
            current = self.balance
            await asyncio.sleep(0)
            self.balance = current + amount


async def deposits() -> None:
    account = Account()
    await asyncio.gather(account.deposit(1), account.deposit(2), account.deposit(3))
    assert account.balance == 6


class Tally:
    def __init__(self) -> None:
        self.total = 0
        self.lock = threading.Lock()

    def add(self, amount: int) -> None:
        with self.lock:
            self.total += amount


def two_threads() -> None:
    tally = Tally()
    threads = [threading.Thread(target=tally.add, args=(n,)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert tally.total == 3


def _rss_samples(target: Callable[[], Any], schedules: int, every: int) -> list[int]:
    samples: list[int] = []

    def progress(done: int, total: int) -> None:
        if done % every == 0:
            samples.append(_rss())

    # saturation off: a small program repeats itself, and the point is to run them all
    report = racecheck.check(
        target, strategy="random", schedules=schedules, seed=0, progress=progress, saturation=0
    )
    assert report.schedules_run == schedules
    assert len(samples) == schedules // every
    return samples


def _growth(samples: list[int]) -> float:
    """Growth from the first sample (the run warmed up) to the largest later one."""
    return (max(samples[1:]) - samples[0]) / samples[0]


@needs_statm
@pytest.mark.parametrize("target", [deposits, two_threads], ids=["asyncio", "threads"])
@pytest.mark.slow  # CI time: its siblings cover the feature in CI
def test_memory_stays_flat_over_20000_schedules(target: Callable[[], Any]) -> None:
    samples = _rss_samples(target, 20_000, 4_000)
    # Generous: CI machines allocate in bursts. A leak of a few hundred bytes
    # per schedule (a kept task, frame or decision list) shows as tens of
    # percent here.
    assert _growth(samples) < 0.10, [f"{s / 2**20:.1f} MiB" for s in samples]


@needs_statm
@pytest.mark.slow
@pytest.mark.parametrize("target", [deposits, two_threads], ids=["asyncio", "threads"])
def test_memory_stays_flat_over_100000_schedules(target: Callable[[], Any]) -> None:
    samples = _rss_samples(target, 100_000, 10_000)
    assert _growth(samples) < 0.05, [f"{s / 2**20:.1f} MiB" for s in samples]


# -- many actors --------------------------------------------------------------------

TASKS = 200


class Counter:
    def __init__(self) -> None:
        self.value = 0


async def many_tasks(counter: Counter, locked: bool) -> None:
    lock = asyncio.Lock()

    async def bump() -> None:
        if locked:
            async with lock:
                current = counter.value
                await asyncio.sleep(0)
                counter.value = current + 1
        else:
            current = counter.value
            await asyncio.sleep(0)
            counter.value = current + 1

    await asyncio.gather(*(bump() for _ in range(TASKS)))
    assert counter.value == TASKS, f"{counter.value} != {TASKS}"


def test_200_tasks_per_schedule_run_and_a_correct_program_passes() -> None:
    async def target() -> None:
        await many_tasks(Counter(), locked=True)

    report = racecheck.check(target, strategy="random", schedules=20, seed=0)
    assert report.schedules_run == 20


def test_200_tasks_per_schedule_a_lost_update_is_found() -> None:
    async def target() -> None:
        await many_tasks(Counter(), locked=False)

    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(target, strategy="random", schedules=50, seed=0, minimize=False)
    assert found.value.kind == "exception"
    assert f"!= {TASKS}" in str(found.value.cause)
    # The token replays the failure on its own.
    with pytest.raises(racecheck.RaceFound):
        racecheck.replay(target, found.value.schedule)


THREADS = 50


class Registry:
    """Check-then-act on a shared dict: two threads may both see the key missing."""

    def __init__(self) -> None:
        self.entries: dict[str, int] = {}
        self.created = 0
        self.lock = threading.Lock()

    def get_or_create(self, key: str, locked: bool) -> None:
        if locked:
            with self.lock:
                self._get_or_create(key)
        else:
            self._get_or_create(key)

    def _get_or_create(self, key: str) -> None:
        if key not in self.entries:
            self.created += 1
            self.entries[key] = self.created


def fifty_threads(locked: bool) -> None:
    registry = Registry()
    threads = [
        threading.Thread(target=registry.get_or_create, args=(f"k{n % 10}", locked))
        for n in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert registry.created == 10, f"created {registry.created} entries for 10 keys"


def test_50_threads_per_schedule_run_and_a_correct_program_passes() -> None:
    report = racecheck.check(lambda: fifty_threads(True), strategy="random", schedules=10, seed=0)
    assert report.schedules_run == 10


def test_50_threads_per_schedule_a_check_then_act_race_is_found() -> None:
    def target() -> None:
        fifty_threads(False)

    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(target, strategy="random", schedules=50, seed=0, minimize=False)
    assert found.value.kind == "exception"
    assert "entries for 10 keys" in str(found.value.cause)
    with pytest.raises(racecheck.RaceFound):
        racecheck.replay(target, found.value.schedule)


# -- very long schedules ----------------------------------------------------------------


async def spinning() -> None:
    """Two tasks that never finish: every step is a decision, for ever."""
    stop = asyncio.Event()

    async def spin() -> None:
        while not stop.is_set():
            await asyncio.sleep(0)

    await asyncio.gather(spin(), spin())


def _step_limit(max_steps: int) -> racecheck.RaceFound:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(spinning, strategy="random", schedules=1, seed=0, max_steps=max_steps)
    return found.value


def _assert_clear_step_limit(found: racecheck.RaceFound, max_steps: int) -> None:
    assert found.kind == "step-limit"
    assert found.schedules_run == 1
    text = str(found)
    assert f"max_steps={max_steps}" in text
    # It says how to raise the limit, in the API and in pytest.
    assert "max_steps=" in text and "check(" in text, text
    assert "@pytest.mark.racecheck(max_steps=" in text, text


def test_a_long_schedule_stops_at_max_steps_with_a_clear_report() -> None:
    # Past both bounds the long runs need: a step-limit run over
    # SHRINK_STEP_LIMIT_UP_TO (20,000) steps is not shrunk (shrinking it would
    # run to the bound again and again) and the trace keeps only its first 200
    # and last KEEP_LAST (5,000) steps. The slow twins run 100,000 and 1,000,000.
    _assert_clear_step_limit(_step_limit(25_000), 25_000)


@pytest.mark.slow
def test_a_100000_step_schedule_stops_at_max_steps_with_a_clear_report() -> None:
    _assert_clear_step_limit(_step_limit(100_000), 100_000)


@pytest.mark.slow
def test_one_million_steps_in_one_schedule_stop_at_max_steps() -> None:
    _assert_clear_step_limit(_step_limit(1_000_000), 1_000_000)


# -- the per-schedule collection ---------------------------------------------------------


def test_the_heap_older_than_the_exploration_is_frozen_while_it_runs() -> None:
    """Each schedule ends with a full collection; it must walk the run's objects only.

    CPython 3.12 starts with a few hundred objects counted as frozen, which
    racecheck read as "the caller froze the heap" and so froze nothing: every
    schedule's collection then walked every object of the process.
    """
    import gc

    old_objects = len(gc.get_objects())
    frozen: list[int] = []

    def progress(done: int, total: int) -> None:
        frozen.append(gc.get_freeze_count())

    racecheck.check(deposits, strategy="random", schedules=3, seed=0, progress=progress)
    assert min(frozen) >= old_objects // 2, (frozen, old_objects)


# -- the distinct-schedule count ----------------------------------------------------------


def test_the_distinct_schedule_count_is_exact_and_costs_8_bytes_a_schedule() -> None:
    """It was a set of ints (about 50 bytes each): the one thing 100,000 schedules grew."""
    import random

    from racecheck.distinct import HashSet

    rng = random.Random(0)
    values = [rng.getrandbits(64) - 2**63 for _ in range(30_000)]
    values += [*values[:5_000], 0, -1, 2**63 - 1, -(2**63)]
    rng.shuffle(values)
    seen = HashSet()
    expected: set[int] = set()
    for value in values:
        seen.add(value)
        expected.add(value)
        assert len(seen) == len(expected)
    assert set(seen) == expected
    assert all(value in seen for value in values[:1000])
    assert 12345 not in seen or 12345 in expected
    assert seen.nbytes() <= 8 * len(expected) * 1.2
