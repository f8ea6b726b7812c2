"""DPOR split across shards by schedule prefix (racecheck.sharding_dpor).

Real explorations, sliced 1, 2 and 4 ways and merged with the rule the pytest
plugin, ``racecheck run -j`` and ``racecheck report merge`` use. The claims:
the verdict (first failure's number and token, or the end of the search) is
the same for every slice count; each slice's token replays on its own; the
slices share the work; a correct program is verified by the merge alone, and
the slices together reach every final state the exhaustive search reaches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import racecheck
from racecheck.sharding import Merged, SliceState
from sharding_programs import FINALS, common_race, counters, run_slices, three_workers


def split(
    target: Callable[[], Any], shards: int, **options: Any
) -> tuple[Merged, list[SliceState], list[Any]]:
    """Every slice of a DPOR exploration, merged: (verdict, slice states, outcomes)."""
    return run_slices(target, shards, strategy="dpor", **options)


#: three_workers' failure sits deep in subtree 0 (about 1,700 schedules in shard 1):
#: CI runs the bounded case, `-m slow` both
_TARGETS = [pytest.param(three_workers, marks=pytest.mark.slow), common_race]


@pytest.mark.parametrize("target", _TARGETS)
def test_the_verdict_is_the_same_for_one_two_and_four_slices(
    target: Callable[[], Any],
) -> None:
    verdicts = []
    for shards in (1, 2, 4):
        merged, states, outcomes = split(target, shards, schedules=3000)
        assert all(s.plan == "dpor subtrees" for s in states)
        assert merged.winner is not None
        winner = outcomes[merged.winner]
        assert isinstance(winner, racecheck.RaceFound)
        verdicts.append((merged.schedules_run, winner.schedule))
    assert len(set(verdicts)) == 1, verdicts


@pytest.mark.parametrize("target", _TARGETS)
def test_each_slices_token_replays_on_its_own(target: Callable[[], Any]) -> None:
    tokens: list[tuple[Callable[[], Any], str]] = []
    for shards in (2, 4):
        _, _, outcomes = split(target, shards, schedules=3000)
        tokens += [(target, o.schedule) for o in outcomes if isinstance(o, racecheck.RaceFound)]
    assert len(tokens) >= 2
    for target, token in tokens:
        with pytest.raises(racecheck.RaceFound) as again:
            racecheck.replay(target, token)
        assert again.value.schedule == token


@pytest.mark.slow  # CI time: its siblings cover the feature in CI
def test_a_correct_program_is_verified_by_the_merge_alone() -> None:
    FINALS.clear()
    racecheck.check(counters, strategy="exhaustive", schedules=20_000, coverage=False)
    reachable = set(FINALS)
    assert len(reachable) > 1  # the conflicts are real: orders give different states
    verdicts = set()
    for shards in (1, 2, 4):
        FINALS.clear()
        merged, states, outcomes = split(counters, shards, schedules=20_000, coverage=False)
        # sound: the slices together reach every state the exhaustive search reaches
        assert set(FINALS) == reachable
        assert not any(o.verified or o.exhausted for o in outcomes)
        assert (merged.winner, merged.ended, merged.exhausted, merged.verified) == (
            None,
            True,
            True,
            True,
        )
        verdicts.add(merged.schedules_run)
        if shards > 1:
            assert max(s.ran for s in states) < merged.schedules_run  # the work is shared
    assert len(verdicts) == 1


def test_a_slice_out_of_budget_leaves_the_search_unverified() -> None:
    merged, _, outcomes = split(counters, 2, schedules=10, coverage=False)
    assert not any(o.verified for o in outcomes)
    assert (merged.winner, merged.ended, merged.exhausted, merged.verified) == (
        None,
        False,
        False,
        False,
    )


def test_a_bounded_dpor_still_runs_whole_in_shard_one() -> None:
    with pytest.raises(racecheck.RaceFound) as single:
        racecheck.check(three_workers, strategy="dpor", schedules=3000, bound=3)
    with pytest.raises(racecheck.RaceFound) as first:
        racecheck.check(three_workers, strategy="dpor", schedules=3000, bound=3, shard="1/2")
    other = racecheck.check(three_workers, strategy="dpor", schedules=3000, bound=3, shard="2/2")
    assert first.value.schedule == single.value.schedule
    assert other.schedules_run == 0
