"""The random strategy's draws are ``Random((seed << 32) ^ run).randrange(n)``, draw for draw.

The chooser seeds lazily and writes ``randrange`` out for speed; schedule N of
a seed must still be the schedule it always was (tokens, shards and recorded
"found at schedule N" results depend on it).
"""

from __future__ import annotations

import random

import pytest

from racecheck.strategies.random import RandomChooser


@pytest.mark.parametrize("seed", [0, 1, 7, 2**40 + 3])
def test_each_schedule_draws_the_stream_of_its_seed_and_number(seed: int) -> None:
    chooser = RandomChooser(seed)
    for run in range(1, 40):
        chooser.begin(run)
        reference = random.Random((seed << 32) ^ run)
        for step in range(30):
            n = 1 + (step * 7 + run) % 11  # one candidate included: fairness can offer one
            got = chooser.choose(list(range(n)), step)
            want = 0 if run == 1 else reference.randrange(n)
            assert got == want, (seed, run, step, n)


def test_a_schedule_does_not_depend_on_the_schedules_before_it() -> None:
    first, second = RandomChooser(5), RandomChooser(5)
    first.begin(3)
    first.choose([1, 2, 3], 1)  # schedule 3 draws; schedule 9 must not notice
    first.begin(9)
    second.begin(9)
    assert [first.choose([1, 2, 3, 4], s) for s in range(20)] == [
        second.choose([1, 2, 3, 4], s) for s in range(20)
    ]
