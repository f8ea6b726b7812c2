"""Random bits for each schedule: a pure function of (seed, schedule number).

Schedule N of a seed must be the same whatever ran before it (shards run
disjoint schedule numbers on their own, replays and pinned results name
schedule N), so each schedule needs a stream of its own. Seeding a Mersenne
Twister for every schedule gave that, for about 27k instructions of serially
dependent multiplications a schedule: a tenth of a small asyncio schedule's
whole time, and more than anything else racecheck adds to one.

Here one generator is seeded for every :data:`GROUP` consecutive schedule
numbers, and schedule N takes the :data:`BLOCK_BITS` bits at its own place in
its group's stream (``(N mod GROUP)``-th block). Moving to that place is
cheap in order (the next block) and bounded out of order (a shard's strided
numbers skip a few blocks; going back reseeds). A schedule that needs more
bits than its block (hundreds of decisions) gets further blocks from
BLAKE2b over (seed, salt, N, block), each as good and as independent.

:class:`ScheduleDraws` turns those bits into what the strategies draw: a
uniform index below ``n`` and a uniform fraction. Every seeded strategy (the
random walk, PCT, POS, SURW) draws through it, each with a salt of its own.
"""

from __future__ import annotations

import _random
from hashlib import blake2b

#: consecutive schedule numbers that share one seeding of the generator
GROUP = 64

#: the bits each schedule gets at its place in its group's stream, and in
#: each further block
BLOCK_BITS = 512


class ScheduleBits:
    """Where a strategy gets each schedule's random bits.

    ``salt`` keeps the streams of strategies that share a seed apart.
    """

    __slots__ = ("_generator", "_group", "_key", "_next_slot", "_salt", "_seed")

    def __init__(self, seed: int, salt: int) -> None:
        if not 0 <= salt < 256:
            raise ValueError(f"salt must be in range(256), not {salt!r}")
        self._seed = seed
        self._salt = salt
        # The generator's seed names (seed, salt, group) one to one: the seed
        # folded onto the naturals (the generator takes the absolute value of
        # a negative one), the salt and the group in fields of their own.
        folded = 2 * seed if seed >= 0 else -2 * seed - 1
        self._key = ((folded << 8) | salt) << 48
        self._generator = _random.Random(0)
        #: the group the generator is seeded for, and the next block it hands out
        self._group = -1
        self._next_slot = 0

    def first(self, run: int) -> int:
        """Schedule ``run``'s first :data:`BLOCK_BITS` bits, as an int."""
        group, slot = divmod(run, GROUP)
        generator = self._generator
        if group != self._group or slot < self._next_slot:
            generator.seed(self._key | group)
            self._group = group
            self._next_slot = 0
        if slot > self._next_slot:
            generator.getrandbits(BLOCK_BITS * (slot - self._next_slot))  # the skipped blocks
        self._next_slot = slot + 1
        return generator.getrandbits(BLOCK_BITS)

    def more(self, run: int, block: int) -> int:
        """Schedule ``run``'s further block number ``block`` (from 1), as an int."""
        text = b"%d %d %d %d" % (self._seed, self._salt, run, block)
        return int.from_bytes(blake2b(text).digest(), "little")


#: the bits of a fraction drawn by :meth:`ScheduleDraws._fraction`: random.random()'s
FRACTION_BITS = 53
_FRACTION_SCALE = 1.0 / (1 << FRACTION_BITS)


class ScheduleDraws:
    """A chooser's draws for its current schedule, from that schedule's bits alone.

    A mixin: the chooser calls :meth:`_start_draws` once, :meth:`_begin_draws`
    at each schedule's start, then draws. The bits are fetched at the first
    draw, so a schedule that draws nothing (the natural one) pays nothing.
    """

    _source: ScheduleBits
    #: the schedule drawn for
    _run: int
    #: the schedule's unused bits, and how many there are (-1: none fetched yet)
    _pool: int
    _bits: int
    #: further blocks this schedule fetched
    _blocks: int

    def _start_draws(self, seed: int, salt: int) -> None:
        self._source = ScheduleBits(seed, salt)
        self._run = 0
        self._pool = 0
        self._bits = -1
        self._blocks = 0

    def _begin_draws(self, run: int) -> None:
        self._run = run
        self._bits = -1
        self._blocks = 0

    def _below(self, n: int) -> int:
        """A uniform index in ``range(n)``."""
        return self._draw(n, (n - 1).bit_length())

    def _fraction(self) -> float:
        """A uniform float in [0, 1), on :data:`FRACTION_BITS` bits as random.random()."""
        return self._draw(1 << FRACTION_BITS, FRACTION_BITS) * _FRACTION_SCALE

    def _draw(self, n: int, k: int) -> int:
        """A uniform index below ``n``: the next ``k`` bits, drawn again while they are not."""
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
