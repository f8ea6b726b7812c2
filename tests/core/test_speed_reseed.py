"""The seeded strategies reseed one generator per schedule instead of making one.

Schedule N must stay a pure function of (seed, N), whatever ran before it
(shards and replays rely on it), and pct's, pos's and surw's stream must be
the one a new generator seeded the same way gives. (The random walk takes its
bits from ``racecheck.strategies.stream`` instead: tests/core/test_random_stream.py.)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pytest

from racecheck.strategies.base import BaseChooser
from racecheck.strategies.pct import PCTChooser
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
    history = {run: _run(warmed, run) for run in (7, 2, 9, 7, 2, 40)}
    for run in (7, 2, 9, 40):
        fresh = make(seed)
        _run(fresh, 1)
        assert _run(fresh, run) == history[run], f"{name} schedule {run} depends on history"


def test_pct_draws_the_stream_of_a_new_generator() -> None:
    chooser = PCTChooser(4)
    _run(chooser, 1)
    chooser.begin(6)
    reference = random.Random((4 << 32) ^ 6)
    k = chooser.max_steps
    points = sorted(reference.sample(range(1, k + 1), min(chooser.depth - 1, k)))
    assert [p for p, _ in chooser._change_points] == points
