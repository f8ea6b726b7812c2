"""The seeded strategies draw each schedule from that schedule's own bits.

Every seeded strategy (random, pct, pos, surw) draws through
``racecheck.strategies.stream`` (one generator seeded per 64 schedule numbers,
not a Mersenne Twister seeded every schedule). Schedule N must stay a pure
function of (seed, N), whatever ran before it (shards and replays rely on
it), and each strategy must keep its distribution: PCT's guarantee rests on
uniform priorities and uniformly placed change points. (The bits themselves:
tests/core/test_random_stream.py.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from itertools import combinations, permutations

import pytest

from racecheck.strategies import pct, pos, random, surw
from racecheck.strategies.base import BaseChooser
from racecheck.strategies.pct import MAX_RANDOM_DEPTH, PCTChooser
from racecheck.strategies.pos import POSChooser
from racecheck.strategies.random import RandomChooser
from racecheck.strategies.surw import SURWChooser

#: candidate lists a run offers, step by step (a few actors coming and going)
STEPS: list[Sequence[int]] = [[1, 2, 3], [1, 2, 3], [2, 3], [1, 2, 3, 4], [3, 4], [1, 4], [4, 1, 2]]

MAKERS: dict[str, Callable[[int], BaseChooser]] = {
    "random": RandomChooser,
    "pct": PCTChooser,
    "pct-random": lambda seed: PCTChooser(seed, depth="random"),
    "pos": POSChooser,
    "surw": SURWChooser,
}


def _run(chooser: BaseChooser, run: int) -> list[int]:
    chooser.begin(run)
    picks = [chooser.choose(candidates, step) for step, candidates in enumerate(STEPS, 1)]
    chooser.end([(len(c), p) for c, p in zip(STEPS, picks, strict=True)], False, len(STEPS))
    return picks


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("seed", [0, 3, -2])
def test_schedule_n_does_not_depend_on_the_schedules_before(name: str, seed: int) -> None:
    make = MAKERS[name]
    warmed = make(seed)
    _run(warmed, 1)  # the natural run (PCT learns its k from it)
    # in order, back, strided, across the 64-schedule groups of the stream
    history = {run: _run(warmed, run) for run in (7, 2, 9, 7, 2, 40, 130, 64, 63)}
    for run in (7, 2, 9, 40, 130, 64, 63):
        fresh = make(seed)
        _run(fresh, 1)
        assert _run(fresh, run) == history[run], f"{name} schedule {run} depends on history"


def test_each_strategy_draws_a_stream_of_its_own() -> None:
    """Strategies run side by side on one seed (the portfolio) must not share draws."""
    salts = [random._SALT, pct._SALT, pos._SALT, surw._SALT]
    assert len(set(salts)) == len(salts)


def _within(counts: Counter[object], outcomes: int, draws: int, tolerance: float) -> bool:
    share = draws / outcomes
    return len(counts) == outcomes and all(
        abs(count - share) < tolerance * share for count in counts.values()
    )


def test_pct_change_points_are_a_uniform_set_of_steps() -> None:
    """Depth 3 over k = 8 steps: each of the 28 pairs of steps about equally often."""
    chooser = PCTChooser(2, depth=3)
    chooser.calibrate(8)
    pairs: Counter[object] = Counter()
    for run in range(2, 2802):
        chooser.begin(run)
        pairs[tuple(p for p, _ in chooser._change_points)] += 1
    assert set(pairs) == set(combinations(range(1, 9), 2))
    assert _within(pairs, 28, 2800, 0.3), pairs


def test_pct_change_points_take_every_step_when_the_depth_asks_for_more() -> None:
    chooser = PCTChooser(0, depth=12)
    chooser.calibrate(8)
    chooser.begin(5)
    assert [p for p, _ in chooser._change_points] == list(range(1, 9))


def test_pct_priorities_order_the_actors_uniformly() -> None:
    """Three actors first seen together: each of the 6 orders about equally often."""
    chooser = PCTChooser(9, depth=1)
    orders: Counter[object] = Counter()
    for run in range(2, 1802):
        chooser.begin(run)
        chooser.choose([1, 2, 3], 1)
        ranks = chooser._priority
        orders[tuple(sorted(ranks, key=ranks.__getitem__))] += 1
    assert set(orders) == set(permutations([1, 2, 3]))
    assert _within(orders, 6, 1800, 0.15), orders


def test_pct_random_depth_is_uniform() -> None:
    chooser = PCTChooser(4, depth="random")
    for run in range(2, 2002):
        chooser.begin(run)
    assert _within(Counter(chooser.per_depth), MAX_RANDOM_DEPTH, 2000, 0.15), chooser.per_depth


def test_pos_first_choice_is_uniform() -> None:
    chooser = POSChooser(6)
    picks = Counter(_run(chooser, run)[0] for run in range(2, 1502))
    assert _within(picks, 3, 1500, 0.15), picks


def test_surw_picks_each_actor_in_proportion_to_its_remaining_steps() -> None:
    """Estimates 3 and 1 steps: the first choice is actor 1 three times in four."""
    chooser = SURWChooser(8)
    chooser.estimate = {1: 3, 2: 1}
    first: Counter[int] = Counter()
    for run in range(2, 4002):
        chooser.begin(run)
        first[chooser.choose([1, 2], 1)] += 1
    assert abs(first[0] - 3000) < 0.05 * 3000, first
