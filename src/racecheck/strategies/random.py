"""Random walk: at every decision, a uniformly random enabled actor (seeded).

Schedule 1 is the runtime's natural order (every choice 0): a bug that plain
``asyncio.run`` or plain threads hit every time must be found first, not after
a random walk happens upon the FIFO order.
"""

from __future__ import annotations

from collections.abc import Sequence

from racecheck.strategies.base import BaseChooser
from racecheck.strategies.stream import ScheduleDraws

#: keeps the random walk's stream apart from other strategies' on one seed
_SALT = 1


class RandomChooser(BaseChooser, ScheduleDraws):
    name = "random"

    def __init__(self, seed: int = 0) -> None:
        #: each schedule's bits (racecheck.strategies.stream)
        self._start_draws(seed, _SALT)
        self._natural = False

    def begin(self, run: int) -> None:
        # One stream per schedule, derived from (seed, run): schedule N is the
        # same whatever happened in schedules 1..N-1 (xdist workers agree).
        # Fetched at the schedule's first real choice: a schedule that never
        # chooses (the natural first one, a run with one actor ready at a
        # time) need not pay for it.
        self._begin_draws(run)
        self._natural = run == 1

    def choose(self, candidates: Sequence[int], step: int) -> int:
        if self._natural:
            return 0
        # A uniform index below n: the next k bits of the schedule's stream,
        # drawn again while they name no candidate (n a power of two never
        # redraws; a lone candidate takes no bits). The usual case, bits at
        # hand and a first draw that names a candidate, is written out here.
        n = len(candidates)
        k = (n - 1).bit_length()
        bits = self._bits - k
        if bits >= 0:
            pool = self._pool
            choice = pool & ((1 << k) - 1)
            if choice < n:
                self._pool = pool >> k
                self._bits = bits
                return choice
        return self._draw(n, k)
