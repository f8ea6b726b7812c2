"""Minimal counterexamples, and hypothesis generating inputs and schedules together."""

from __future__ import annotations

import asyncio
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase

import racecheck
import racecheck.hypothesis as rh
from racecheck.schedule import Schedule


class Ledger:
    def __init__(self) -> None:
        self.total = 0

    async def add(self, amount: int) -> None:
        for _ in range(3):
            await asyncio.sleep(0)
        current = self.total
        await asyncio.sleep(0)
        self.total = current + amount


async def many_writers() -> None:
    ledger = Ledger()
    await asyncio.gather(*(ledger.add(n) for n in range(1, 5)))
    assert ledger.total == 10, ledger.total


async def staggered_writers() -> None:
    """Clean in the natural order (the writers never overlap), lost updates otherwise."""
    total = [0]

    async def add(amount: int, delay: int) -> None:
        for _ in range(delay):
            await asyncio.sleep(0)
        current = total[0]
        await asyncio.sleep(0)
        total[0] = current + amount

    await asyncio.gather(*(add(n, 3 * n) for n in range(1, 5)))
    assert total[0] == 10, total[0]


def test_random_walk_failures_shrink_to_few_preemptions() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(staggered_writers, strategy="random", schedules=200, seed=3)
    found = info.value
    assert found.schedules_run > 1  # the natural order (schedule 1) is clean
    assert found.original_preemptions > found.preemptions
    assert Schedule.decode(found.schedule).preemptions == found.preemptions
    assert f"preemptions: {found.original_preemptions} -> {found.preemptions}" in str(found)
    assert found.original_schedule in str(found)
    # Both the minimised and the original schedule fail the same way.
    for token in (found.schedule, found.original_schedule):
        with pytest.raises(racecheck.RaceFound) as again:
            racecheck.replay(staggered_writers, token)
        assert again.value.kind == found.kind


def test_minimize_can_be_turned_off_and_never_changes_the_verdict() -> None:
    with pytest.raises(racecheck.RaceFound) as raw:
        racecheck.check(many_writers, strategy="random", schedules=200, seed=3, minimize=False)
    with pytest.raises(racecheck.RaceFound) as shrunk:
        racecheck.check(many_writers, strategy="random", schedules=200, seed=3, minimize_time=0.5)
    assert raw.value.schedule == raw.value.original_schedule
    assert shrunk.value.original_schedule == raw.value.schedule
    assert shrunk.value.kind == raw.value.kind
    assert shrunk.value.schedules_run == raw.value.schedules_run


def test_a_deadlock_shrinks_to_a_deadlock() -> None:
    def abba() -> None:
        a, b = threading.Lock(), threading.Lock()

        def one() -> None:
            with a, b:
                pass

        def two() -> None:
            with b, a:
                pass

        threads = [threading.Thread(target=f) for f in (one, two)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(abba, strategy="random", schedules=500, seed=1)
    assert info.value.kind == "deadlock"
    assert info.value.preemptions <= info.value.original_preemptions


def test_hypothesis_strategy_shrinks_through_the_choice_sequence() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(many_writers, strategy="hypothesis", schedules=300, seed=0)
    assert info.value.kind == "exception"
    assert info.value.preemptions <= 2
    with pytest.raises(racecheck.RaceFound):
        racecheck.replay(many_writers, info.value.schedule)


def make_target(amounts: list[int]) -> object:
    async def deposits() -> None:
        ledger = Ledger()
        await asyncio.gather(*(ledger.add(n) for n in amounts))
        assert ledger.total == sum(amounts)

    return deposits


def test_given_generates_inputs_and_schedules_and_replays_failures_first() -> None:
    database = InMemoryExampleDatabase()
    calls: list[list[int]] = []

    @settings(database=database, max_examples=200, deadline=None)
    @given(amounts=st.lists(st.integers(1, 9), min_size=1, max_size=3), data=st.data())
    def test_deposits(amounts: list[int], data: st.DataObject) -> None:
        calls.append(amounts)
        rh.interleave(make_target(amounts), data)  # type: ignore[arg-type]

    with pytest.raises(racecheck.RaceFound) as first:
        test_deposits()
    assert len(first.value.schedule) > 10
    assert len(calls[-1]) == 2  # shrunk: the smallest input that can race
    assert list(database.data.keys()), "the failing example was saved"
    calls.clear()
    with pytest.raises(racecheck.RaceFound):
        test_deposits()
    assert len(calls[0]) == 2, "the saved failure is replayed first"


async def long_run_that_always_fails() -> None:
    """Fails on the very first schedule, after many more decisions than one draw holds."""

    async def chatter() -> None:
        for _ in range(40):
            await asyncio.sleep(0)

    await asyncio.gather(chatter(), chatter(), chatter())
    raise AssertionError("always")


def test_hypothesis_strategy_replays_a_long_first_failure_consistently() -> None:
    # The choice sequence's length must not depend on runs seen before: hypothesis
    # replays the failing example while shrinking and insists on the same draws.
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(long_run_that_always_fails, strategy="hypothesis", schedules=20)
    assert info.value.schedules_run == 1
    assert "always" in str(info.value.cause)


def test_hypothesis_strategy_without_minimizing_stops_cleanly() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(
            long_run_that_always_fails, strategy="hypothesis", schedules=20, minimize=False
        )
    assert info.value.schedules_run == 1


async def long_clean_run() -> None:
    async def chatter() -> None:
        for _ in range(40):
            await asyncio.sleep(0)

    await asyncio.gather(chatter(), chatter(), chatter())


def test_hypothesis_strategy_keeps_one_draw_shape_across_examples() -> None:
    report = racecheck.check(long_clean_run, strategy="hypothesis", schedules=30)
    assert report.schedules_run == 30
