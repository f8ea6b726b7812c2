"""PCT: probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010).

Each actor gets a random priority; the highest-priority enabled actor always
runs. ``depth - 1`` change points, drawn uniformly over the run's decisions,
demote whichever actor is running there below everyone. A bug of depth ``d``
(one needing ``d`` ordering constraints) is then hit with probability at least
``1 / (n * k**(d-1))`` per run for ``n`` actors and ``k`` decisions — a bound
that, unlike a random walk's, does not decay with the length of the run.

``n`` and ``k`` are not known in advance. Actors get a priority when first
seen. ``k`` is the length of the natural-order run (schedule 1), in scheduling
steps, and stays fixed after it: then schedule N is a pure function of (seed,
N), whatever ran before it, which is what lets shards of one exploration run
disjoint schedule numbers on their own (:mod:`racecheck.sharding`). A ``k``
learnt from every run so far would tie schedule N to schedules 1..N-1. The
natural run does the same work as the others; a run that spins much longer
gets its change points early in the run, which still demotes.

Schedule 1 is the runtime's natural order, before any priority is drawn: a bug
that the uncontrolled program hits every time is found at once.

The bound holds only for bugs of depth at most ``depth``; a bug that needs one
more ordering constraint has no such guarantee, and a shallow-looking bug in
real code often does. So the notes state the assumed depth and what the budget
buys under it, never a "missed with probability at most ..." that would read
as reassurance about bugs it does not cover.

``depth="random"`` (the ``pct-random`` strategy) draws the depth afresh for
every schedule, uniformly from 1 to :data:`MAX_RANDOM_DEPTH`: no depth has to
be guessed in advance, at the price of spending only a fifth of the budget at
each. The notes then count the schedules run at each depth, since the
per-run bound of depth ``d`` applies only to the schedules that drew at least
``d``.
"""

from __future__ import annotations

from collections.abc import Sequence

from racecheck.schedule import Decision
from racecheck.strategies.base import BaseChooser
from racecheck.strategies.stream import ScheduleDraws

#: the deepest depth ``depth="random"`` draws: most real bugs need at most a
#: handful of ordering constraints, and each extra level divides the per-run
#: bound by ``k``, so deeper draws would buy almost nothing
MAX_RANDOM_DEPTH = 5

#: keeps PCT's stream apart from other strategies' on one seed
_SALT = 2

#: a step no run reaches: no change point pending
_NEVER = 1 << 62


class PCTChooser(BaseChooser, ScheduleDraws):
    name = "pct"

    def __init__(self, seed: int = 0, depth: int | str = 3) -> None:
        #: draw the depth per schedule (``depth="random"``)
        self.random_depth = depth == "random"
        if self.random_depth:
            depth = MAX_RANDOM_DEPTH
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
            raise ValueError(f"pct depth must be an integer >= 1 or 'random', not {depth!r}")
        #: the depth of the current schedule (fixed unless random_depth)
        self.depth = depth
        #: schedules run at each depth, for the notes (random depth)
        self.per_depth: dict[int, int] = {}
        self.max_actors = 2
        #: k: the longest run seen, in scheduling *steps*. Counting only the
        #: steps with a choice would censor itself: once a change point ends
        #: the contention early, every run looks short, and a task can never be
        #: starved for longer than the first estimate.
        self.max_steps = 8
        #: each schedule's draws (racecheck.strategies.stream)
        self._start_draws(seed, _SALT)
        self._priority: dict[int, float] = {}
        self._change_points: list[tuple[int, float]] = []
        #: the step of the first pending change point (_NEVER: none left), so
        #: that a decision with no change point due costs one comparison
        self._next_change = _NEVER
        self._natural = False

    def begin(self, run: int) -> None:
        self._natural = run == 1
        # One stream per (seed, run): schedule N is the same whatever ran before.
        self._begin_draws(run)
        self._priority = {}
        if self._natural:
            # Every choice is 0: nothing to draw (the depth drawn for the notes
            # would not be a schedule run at that depth anyway).
            self._change_points = []
            self._next_change = _NEVER
            return
        if self.random_depth:
            self.depth = 1 + self._below(MAX_RANDOM_DEPTH)
        self.per_depth[self.depth] = self.per_depth.get(self.depth, 0) + 1
        k = self.max_steps
        points = sorted(self._change_steps(min(self.depth - 1, k), k))
        # Later change points demote further: level depth-1 .. 1, all below the
        # initial priorities (which live in (depth, depth+1)).
        self._change_points = [(p, float(self.depth - 1 - i)) for i, p in enumerate(points)]
        self._next_change = points[0] if points else _NEVER

    def _change_steps(self, count: int, k: int) -> set[int]:
        """``count`` distinct steps of 1..k, every such set equally likely (as random.sample)."""
        steps: set[int] = set()
        while len(steps) < count:
            steps.add(1 + self._below(k))  # a step drawn again is drawn anew
        return steps

    def choose(self, candidates: Sequence[int], step: int) -> int:
        if self._natural:
            return 0
        priority = self._priority
        # _highest, written out for the usual case where every candidate has
        # its priority already (one Python call less at every decision)
        best, best_priority, index = 0, -1.0, 0
        for actor in candidates:
            value = priority.get(actor)
            if value is None:
                best = self._highest(candidates, priority)  # draws in candidate order
                break
            if value > best_priority:
                best, best_priority = index, value
            index += 1
        if step >= self._next_change:
            pending = self._change_points
            while pending and pending[0][0] <= step:
                # A change point fell on this step or on a step with no choice
                # since the last decision: demote whoever would run now.
                _, level = pending.pop(0)
                priority[candidates[best]] = level
                best = self._highest(candidates, priority)
            self._next_change = pending[0][0] if pending else _NEVER
        return best

    def _highest(self, candidates: Sequence[int], priority: dict[int, float]) -> int:
        best, best_priority = 0, -1.0
        for i, actor in enumerate(candidates):
            value = priority.get(actor)
            if value is None:
                value = priority[actor] = self.depth + self._fraction()
            if value > best_priority:
                best, best_priority = i, value
        return best

    def end(self, decisions: Sequence[Decision], failed: bool, steps: int) -> None:
        self.max_actors = max(self.max_actors, len(self._priority))
        if self._natural:
            self.calibrate(steps)

    def calibrate(self, natural_steps: int) -> None:
        """Fix ``k`` from the natural-order run (the portfolio's first schedule, for members)."""
        self.max_steps = max(8, natural_steps)

    def bound(self, depth: int | None = None) -> float:
        d = self.depth if depth is None else depth
        return 1.0 / (self.max_actors * self.max_steps ** (d - 1))

    def notes(self, schedules_run: int) -> list[str]:
        if self.random_depth:
            return self._random_depth_notes()
        p = self.bound()
        expected = p * max(schedules_run - 1, 0)
        return [
            f"pct assumed bug depth <= {self.depth} (n={self.max_actors} actors,"
            f" k={self.max_steps} steps): each run hits such a bug with probability >="
            f" 1/(n*k^(d-1)) = {p:.3g}, about {expected:.3g} expected hits over this budget;"
            f" bugs needing more than {self.depth} ordering constraints are not covered by"
            " this bound"
        ]

    def _random_depth_notes(self) -> list[str]:
        counts = ", ".join(f"depth {d}: {self.per_depth[d]}" for d in sorted(self.per_depth))
        # A bug of depth d is hit with the per-run bound only by the schedules
        # that drew a depth of at least d.
        covers = "; ".join(
            f"d={d}: {sum(c for k, c in self.per_depth.items() if k >= d)} runs at >= "
            f"{self.bound(d):.3g} each"
            for d in range(1, MAX_RANDOM_DEPTH + 1)
        )
        return [
            f"pct drew the bug depth per schedule from 1 to {MAX_RANDOM_DEPTH} (schedules per"
            f" depth: {counts or 'none'}; n={self.max_actors} actors, k={self.max_steps}"
            f" steps); a bug of depth d is hit per run with probability >= 1/(n*k^(d-1)) only"
            f" in the runs that drew at least d ({covers}); bugs needing more than"
            f" {MAX_RANDOM_DEPTH} ordering constraints are not covered by this bound"
        ]
