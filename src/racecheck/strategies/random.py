"""Random walk: at every decision, a uniformly random enabled actor (seeded).

Schedule 1 is the runtime's natural order (every choice 0): a bug that plain
``asyncio.run`` or plain threads hit every time must be found first, not after
a random walk happens upon the FIFO order.
"""

from __future__ import annotations

import random as _random
from collections.abc import Sequence

from racecheck.strategies.base import BaseChooser


class RandomChooser(BaseChooser):
    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self._seed = seed
        self._rng = _random.Random(seed)
        self._natural = False

    def begin(self, run: int) -> None:
        # One stream per schedule, derived from (seed, run): schedule N is the
        # same whatever happened in schedules 1..N-1 (xdist workers agree).
        self._rng = _random.Random((self._seed << 32) ^ run)
        self._natural = run == 1

    def choose(self, candidates: Sequence[int], step: int) -> int:
        if self._natural:
            return 0
        return self._rng.randrange(len(candidates))
