"""Random walk: at every decision, a uniformly random enabled actor (seeded).

Schedule 1 is the runtime's natural order (every choice 0): a bug that plain
``asyncio.run`` or plain threads hit every time must be found first, not after
a random walk happens upon the FIFO order.
"""

from __future__ import annotations

from collections.abc import Sequence

from racecheck.strategies.base import BaseChooser
from racecheck.strategies.stream import BLOCK_BITS, ScheduleBits

#: keeps the random walk's stream apart from other strategies' on one seed
_SALT = 1


class RandomChooser(BaseChooser):
    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self._seed = seed
        self._run = 0
        #: where each schedule's bits come from (racecheck.strategies.stream)
        self._source = ScheduleBits(seed, _SALT)
        #: the schedule's unused bits, and how many there are (-1: none fetched yet)
        self._pool = 0
        self._bits = -1
        #: further blocks this schedule fetched
        self._blocks = 0
        self._natural = False

    def begin(self, run: int) -> None:
        # One stream per schedule, derived from (seed, run): schedule N is the
        # same whatever happened in schedules 1..N-1 (xdist workers agree).
        # Fetched at the schedule's first real choice: a schedule that never
        # chooses (the natural first one, a run with one actor ready at a
        # time) need not pay for it.
        self._run = run
        self._bits = -1
        self._blocks = 0
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

    def _draw(self, n: int, k: int) -> int:
        """The draw of :meth:`choose`, from the same bits, when they run out or name none."""
        mask = (1 << k) - 1
        pool, bits = self._pool, self._bits
        while True:
            if bits < k:
                pool, bits = self._refill(bits), BLOCK_BITS
            choice = pool & mask
            pool >>= k
            bits -= k
            if choice < n:
                self._pool, self._bits = pool, bits
                return choice

    def _refill(self, bits: int) -> int:
        """The schedule's next block (what is left of the last one is not used)."""
        if bits < 0:
            return self._source.first(self._run)
        self._blocks += 1
        return self._source.more(self._run, self._blocks)
