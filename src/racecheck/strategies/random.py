"""Random walk: at every decision, a uniformly random enabled actor (seeded).

Schedule 1 is the runtime's natural order (every choice 0): a bug that plain
``asyncio.run`` or plain threads hit every time must be found first, not after
a random walk happens upon the FIFO order.
"""

from __future__ import annotations

import _random
import random
from collections.abc import Sequence

from racecheck.strategies.base import BaseChooser


class RandomChooser(BaseChooser):
    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self._seed = seed
        self._run = 0
        self._rng: _random.Random | None = random.Random(seed)
        #: the one C generator every schedule reseeds (see choose)
        self._generator = _random.Random(seed)
        self._natural = False

    def begin(self, run: int) -> None:
        # One stream per schedule, derived from (seed, run): schedule N is the
        # same whatever happened in schedules 1..N-1 (xdist workers agree).
        # Seeded at the schedule's first real choice: seeding a Mersenne
        # Twister costs about as much as a small asyncio schedule, and a
        # schedule that never chooses (the natural first one, a run with one
        # actor ready at a time) need not pay it.
        self._run = run
        self._rng = None
        self._natural = run == 1

    def choose(self, candidates: Sequence[int], step: int) -> int:
        if self._natural:
            return 0
        rng = self._rng
        if rng is None:
            # The C generator random.Random is built on: seeded from an int it
            # is the same stream, without random.Random's Python __init__ and
            # seed() in between. Reseeded, not made anew: the same stream as a
            # new _random.Random(n), without allocating and freeing its 2.5 kB
            # state every schedule.
            rng = self._rng = self._generator
            rng.seed((self._seed << 32) ^ self._run)
        # rng.randrange(n), written out (the same draws: Random._randbelow
        # with getrandbits), without its argument checks
        n = len(candidates)
        k = n.bit_length()
        r = rng.getrandbits(k)
        while r >= n:
            r = rng.getrandbits(k)
        return r
