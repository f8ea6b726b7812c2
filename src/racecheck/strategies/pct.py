"""PCT: probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010).

Each actor gets a random priority; the highest-priority enabled actor always
runs. ``depth - 1`` change points, drawn uniformly over the run's decisions,
demote whichever actor is running there below everyone. A bug of depth ``d``
(one needing ``d`` ordering constraints) is then hit with probability at least
``1 / (n * k**(d-1))`` per run for ``n`` actors and ``k`` decisions — a bound
that, unlike a random walk's, does not decay with the length of the run.

``n`` and ``k`` are not known in advance: they are learnt from the runs so far
(actors get a priority when first seen; ``k`` is the longest run observed).
"""

from __future__ import annotations

import random as _random
from collections.abc import Sequence

from racecheck.schedule import Decision
from racecheck.strategies.base import BaseChooser


class PCTChooser(BaseChooser):
    name = "pct"

    def __init__(self, seed: int = 0, depth: int = 3) -> None:
        if depth < 1:
            raise ValueError("pct depth must be at least 1")
        self._seed = seed
        self.depth = depth
        self.max_actors = 2
        #: k: the longest run seen, in scheduling *steps*. Counting only the
        #: steps with a choice would censor itself: once a change point ends
        #: the contention early, every run looks short, and a task can never be
        #: starved for longer than the first estimate.
        self.max_steps = 8
        self._rng = _random.Random(seed)
        self._priority: dict[int, float] = {}
        self._change_points: list[tuple[int, float]] = []

    def begin(self, run: int) -> None:
        # One stream per (seed, run): schedule N is the same whatever ran before.
        self._rng = rng = _random.Random((self._seed << 32) ^ run)
        self._priority = {}
        k = self.max_steps
        points = sorted(rng.sample(range(1, k + 1), min(self.depth - 1, k)))
        # Later change points demote further: level depth-1 .. 1, all below the
        # initial priorities (which live in (depth, depth+1)).
        self._change_points = [(p, float(self.depth - 1 - i)) for i, p in enumerate(points)]

    def choose(self, candidates: Sequence[int], step: int) -> int:
        priority = self._priority
        best = self._highest(candidates, priority)
        pending = self._change_points
        while pending and pending[0][0] <= step:
            # A change point fell on this step or on a step with no choice
            # since the last decision: demote whoever would run now.
            _, level = pending.pop(0)
            priority[candidates[best]] = level
            best = self._highest(candidates, priority)
        return best

    def _highest(self, candidates: Sequence[int], priority: dict[int, float]) -> int:
        best, best_priority = 0, -1.0
        for i, actor in enumerate(candidates):
            value = priority.get(actor)
            if value is None:
                value = priority[actor] = self.depth + self._rng.random()
            if value > best_priority:
                best, best_priority = i, value
        return best

    def end(self, decisions: Sequence[Decision], failed: bool, steps: int) -> None:
        self.max_actors = max(self.max_actors, len(self._priority))
        self.max_steps = max(self.max_steps, steps)

    def bound(self) -> float:
        return 1.0 / (self.max_actors * self.max_steps ** (self.depth - 1))

    def notes(self, schedules_run: int) -> list[str]:
        p = self.bound()
        miss = (1.0 - p) ** max(schedules_run, 0)
        return [
            f"pct depth {self.depth}: n={self.max_actors} actors, k={self.max_steps} steps"
            f" -> per-run bound 1/(n*k^(d-1)) = {p:.3g};"
            f" a depth-{self.depth} bug is missed by {schedules_run} runs with probability"
            f" <= {miss:.3g}"
        ]
