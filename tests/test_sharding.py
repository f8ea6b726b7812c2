"""Sharding one exploration (racecheck.sharding): real explorations, split 1, 2 and 4 ways.

The claim under test: the shards together run exactly the schedules of one
process, and the reported failure (lowest schedule number, shrunk and traced by
its shard) is the same whatever the shard count, token included.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

import racecheck
from racecheck.errors import UsageError
from racecheck.sharding import Shard, ShardResult, SliceState, merge, parse_shard
from sharding_programs import ORDERS, recorded, recorded_threads, three_workers


def first_failure(strategy: str, shards: int, schedules: int = 3000) -> tuple[int, str]:
    """The lowest-numbered failure over ``shards`` slices: (schedule number, token)."""
    found: list[tuple[int, str]] = []
    for i in range(1, shards + 1):
        try:
            racecheck.check(
                three_workers, strategy=strategy, schedules=schedules, shard=f"{i}/{shards}"
            )
        except racecheck.RaceFound as exc:
            found.append((exc.schedules_run, exc.schedule))
    assert found, f"no shard of {shards} found the race"
    return min(found)


@pytest.mark.parametrize("strategy", ["auto", "random", "pct"])
def test_first_failure_and_token_do_not_depend_on_the_shard_count(strategy: str) -> None:
    with pytest.raises(racecheck.RaceFound) as single:
        racecheck.check(three_workers, strategy=strategy, schedules=3000)
    expected = (single.value.schedules_run, single.value.schedule)
    assert expected[0] > 1  # a race the natural order does not hit: shards matter
    for shards in (1, 2, 4):
        assert first_failure(strategy, shards) == expected, f"{shards} shards"


def test_every_shard_token_replays_on_its_own() -> None:
    tokens = []
    for i in range(1, 5):
        try:
            racecheck.check(three_workers, strategy="random", schedules=3000, shard=f"{i}/4")
        except racecheck.RaceFound as exc:
            tokens.append(exc.schedule)
    assert len(tokens) >= 2
    for token in tokens:
        with pytest.raises(racecheck.RaceFound) as again:
            racecheck.replay(three_workers, token)
        assert again.value.schedule == token


# auto's sliced runs give its DPOR member split DPOR, not the unsliced run's
# plain DPOR: their union is the one-slice run's (tests/test_sharding_auto.py)
@pytest.mark.parametrize("target", [recorded, recorded_threads])
@pytest.mark.parametrize("strategy", ["random", "pct"])
@pytest.mark.parametrize("shards", [2, 4])
def test_the_shards_together_run_exactly_the_schedules_of_one_process(
    target: object, strategy: str, shards: int
) -> None:
    ORDERS.clear()
    single = racecheck.check(target, strategy=strategy, schedules=120, coverage=False)  # type: ignore[arg-type]
    one = Counter(ORDERS)
    assert sum(one.values()) == single.schedules_run
    natural = ORDERS[0]
    ORDERS.clear()
    ran = 0
    for i in range(1, shards + 1):
        report = racecheck.check(target, strategy=strategy, schedules=120, shard=f"{i}/{shards}")  # type: ignore[arg-type]
        ran += report.schedules_run
    together = Counter(ORDERS)
    # Every shard but the first runs schedule 1 (the natural order) to calibrate.
    together[natural] -= shards - 1
    assert together == one
    assert ran == single.schedules_run


def test_a_complete_systematic_search_ends_every_shard_at_the_same_schedule() -> None:
    async def small() -> None:
        async def step() -> None:
            await asyncio.sleep(0)

        await asyncio.gather(step(), step())

    single = racecheck.check(small, schedules=1000)
    assert single.exhausted and single.schedules_run < 1000
    results = []
    for i in (1, 2):
        state = SliceState(Shard(i, 2))
        racecheck.check(small, schedules=1000, shard=state)
        results.append(ShardResult.from_dict(state.to_dict(), None))
    # its only trace ran at schedule 1: auto's split DPOR ends there in every
    # slice (racecheck.sharding_auto), and the merge says so
    merged = merge(results)
    assert merged.ended and merged.exhausted
    assert merged.schedules_run == single.schedules_run


@pytest.mark.parametrize("text", ["5/4", "0/4", "x", "1/0", "2", "1/2/3", "-1/4", ""])
def test_a_bad_shard_is_a_one_line_usage_error(text: str) -> None:
    with pytest.raises(UsageError) as info:
        racecheck.check(three_workers, shard=text)
    assert "\n" not in str(info.value)
    assert "I/N" in str(info.value) or "between 1 and N" in str(info.value)


def test_parse_shard() -> None:
    assert parse_shard("2/4") == Shard(2, 4)
    assert parse_shard(" 1 / 1 ") == Shard(1, 1)


def test_a_sequential_strategy_runs_whole_on_shard_one() -> None:
    # A bounded DPOR is not split (unbounded DPOR is: tests/test_sharding_dpor.py;
    # the exhaustive search too, by subtrees: tests/test_sharding_tree.py)
    options = {"strategy": "dpor", "schedules": 3000, "bound": 3}
    with pytest.raises(racecheck.RaceFound) as single:
        racecheck.check(three_workers, **options)
    with pytest.raises(racecheck.RaceFound) as first:
        racecheck.check(three_workers, **options, shard="1/2")
    other = racecheck.check(three_workers, **options, shard="2/2")
    assert first.value.schedule == single.value.schedule
    assert first.value.schedules_run == single.value.schedules_run
    assert other.schedules_run == 0
    assert any("shard 1 runs all of it" in note for note in other.notes)


def _result(index: int, count: int, failure: int | None, **kw: object) -> ShardResult:
    return ShardResult(Shard(index, count), ran=10, covered=20, budget=40, failure=failure, **kw)  # type: ignore[arg-type]


def test_merge_takes_the_lowest_failure_and_needs_every_slice() -> None:
    merged = merge([_result(1, 3, 30), _result(2, 3, None), _result(3, 3, 12)])
    assert (merged.winner, merged.schedules_run, merged.total_ran) == (2, 12, 30)
    merged = merge([_result(1, 2, None), _result(2, 2, None)])
    assert (merged.winner, merged.schedules_run) == (None, 40)
    # a failure past the end of a completed search is not one a single process meets
    merged = merge([_result(1, 2, None, ended_at=7), _result(2, 2, 9)])
    assert (merged.winner, merged.schedules_run, merged.ended) == (None, 7, True)
    with pytest.raises(UsageError, match="missing shard 2 of 3"):
        merge([_result(1, 3, None), _result(3, 3, None)])
    with pytest.raises(UsageError, match="given twice"):
        merge([_result(1, 2, None), _result(1, 2, 4)])
    with pytest.raises(UsageError, match="does not belong"):
        merge([_result(1, 2, None), _result(2, 3, None)])


def test_a_pinned_schedule_fails_first_in_every_shard() -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(three_workers, strategy="random", schedules=3000)
    token = found.value.schedule
    for i in (1, 2):
        with pytest.raises(racecheck.RaceFound) as again:
            racecheck.check(three_workers, replay=token, shard=f"{i}/2")
        assert again.value.schedule == token
