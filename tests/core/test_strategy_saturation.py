"""Saturation: a strategy that keeps repeating itself stops (or hands its turns on) and says so."""

from __future__ import annotations

import asyncio
import itertools

import pytest

import racecheck
from racecheck.errors import UsageError
from racecheck.saturation import DEFAULT_WINDOW, access_fingerprint


async def correct_pool() -> None:
    """A correct async pool: workers drain a queue; almost nothing left to reorder."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    done: list[int] = []

    async def worker() -> None:
        while True:
            item = await queue.get()
            done.append(item * item)
            queue.task_done()

    for i in range(3):
        queue.put_nowait(i)
    workers = [asyncio.create_task(worker()) for _ in range(2)]
    await queue.join()
    for w in workers:
        w.cancel()
    assert sorted(done) == [0, 1, 4]


def test_a_correct_pool_stops_long_before_20000_pct_schedules() -> None:
    report = racecheck.check(correct_pool, strategy="pct", schedules=20_000)
    assert report.saturated
    assert not report.exhausted  # saturation is not a proof
    assert report.schedules_run < 2 * DEFAULT_WINDOW
    text = str(report)
    assert "saturated" in text.splitlines()[0]
    assert f"the last {DEFAULT_WINDOW} pct schedules added no new decision sequence" in text
    assert "stopped early" in text
    assert "not ruled out" in text


def test_with_access_information_it_measures_conflict_orders() -> None:
    report = racecheck.check(correct_pool, strategy="random", schedules=20_000, coverage=True)
    assert report.saturated
    assert "ordering of conflicting accesses" in str(report)


def test_saturation_zero_spends_the_whole_budget() -> None:
    report = racecheck.check(correct_pool, strategy="pct", schedules=1_200, saturation=0)
    assert report.schedules_run == 1_200
    assert not report.saturated
    assert "saturated" not in str(report)


def test_a_smaller_window_stops_sooner() -> None:
    report = racecheck.check(correct_pool, strategy="pct", schedules=5_000, saturation=50)
    assert report.saturated and report.schedules_run < 100


def test_a_strategy_still_finding_new_schedules_is_not_stopped() -> None:
    async def many() -> None:
        async def work() -> None:
            for _ in range(4):
                await asyncio.sleep(0)

        await asyncio.gather(*[work() for _ in range(4)])

    report = racecheck.check(many, strategy="random", schedules=1_500)
    assert report.schedules_run == 1_500 and not report.saturated


@pytest.mark.parametrize("value", [-1, 2.5, "many", True])
def test_a_bad_saturation_window_is_a_usage_error(value: object) -> None:
    with pytest.raises(UsageError, match="saturation"):
        racecheck.check(correct_pool, strategy="pct", schedules=5, saturation=value)


def test_exhaustive_search_is_exempt() -> None:
    """Systematic search never samples: its coverage claim is its own, not cut short."""
    report = racecheck.check(correct_pool, strategy="exhaustive", schedules=5_000, saturation=1)
    assert not report.saturated
    assert report.exhausted


def test_portfolio_members_hand_their_turns_on_then_stop() -> None:
    """Systematic search drops out (nondeterministic target); the samplers saturate one by one."""
    runs = itertools.count()

    async def nondeterministic() -> None:
        done: list[int] = []

        async def work() -> None:
            # a shared write: DPOR has an alternative to replay, and then sees
            # the target change under it (one task fewer or more)
            done.append(1)
            await asyncio.sleep(0)

        await asyncio.gather(*[work() for _ in range(next(runs) % 2 + 2)])

    report = racecheck.check(nondeterministic, strategy="auto", schedules=20_000, saturation=50)
    assert report.saturated and report.schedules_run < 20_000
    text = str(report)
    assert "its remaining turns went to the other members" in text
    assert "every sampling member has saturated: stopped early" in text
    assert "(saturated)" in text  # listed among the dropped members
    assert "dpor (the target is not deterministic)" in text
    assert not report.verified


def test_the_access_fingerprint_ignores_the_order_of_reads_between_writes() -> None:
    one = [(1, "w:x"), (2, "r:x"), (3, "r:x"), (1, "w:x")]
    two = [(1, "w:x"), (3, "r:x"), (2, "r:x"), (1, "w:x")]
    swapped = [(2, "r:x"), (1, "w:x"), (3, "r:x"), (1, "w:x")]
    assert access_fingerprint(one) == access_fingerprint(two)
    assert access_fingerprint(one) != access_fingerprint(swapped)
