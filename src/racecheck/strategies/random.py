"""Random walk: at every decision, a uniformly random enabled actor (seeded)."""

from __future__ import annotations

import random as _random
from collections.abc import Sequence

from racecheck.strategies.base import BaseChooser


class RandomChooser(BaseChooser):
    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self._seed = seed
        self._rng = _random.Random(seed)

    def begin(self, run: int) -> None:
        # One stream per schedule, derived from (seed, run): schedule N is the
        # same whatever happened in schedules 1..N-1 (xdist workers agree).
        self._rng = _random.Random((self._seed << 32) ^ run)

    def choose(self, candidates: Sequence[int], step: int) -> int:
        return self._rng.randrange(len(candidates))
