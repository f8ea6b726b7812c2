"""SURW: a selectively uniform random walk (in the spirit of Zhao et al., ASPLOS 2025).

A random walk that flips a fair coin between two actors almost never lets one
of them run far ahead: an interleaving where actor B waits for all 40 steps of
actor A has probability 2**-40. Uniform sampling over interleavings gives it
1/41. The walk gets there by weighting each enabled actor by the work it has
*left*: with ``r_i`` steps remaining for actor ``i``, choosing ``i`` with
probability ``r_i / sum(r)`` draws every interleaving of the remaining steps
with the same probability (the number of interleavings is a multinomial, and
this is its sequential sampler).

The remaining work is not known before a run; it is estimated from the
natural-order run, schedule 1, a profile of the program. For each actor id
(ids are given in creation order, so the same actor of a deterministic
program keeps its id from run to run) the walk keeps the steps it took there.
An actor not seen in the profile is weighted as the average known actor.
Only schedule 1 teaches: learning from every run would make schedule N depend
on the schedules before it, and shards of one exploration
(:mod:`racecheck.sharding`) skip the numbers other shards own; with the
profile alone, schedule N is a function of (seed, N) and the program.

Counting an actor's steps. The chooser is asked only at decisions; the steps
in between, where a single actor was enabled, are counted too (``step`` tells
how many went by): after a decision among two actors, the one that did not
run is the only one that can be running alone until the next decision (the
chosen one finished or blocked; the other, enabled and not run, is still
enabled). Among more than two, the gap is not attributed. This over-counts
now and then (a woken actor taking over inside a gap), which only makes the
walk a little less uniform, never unsound: every choice keeps a positive
weight, so every schedule stays reachable.

"Selectively": SURW restricts uniformity to the events that matter for the
bug (the ones touching the shared resources under test) and keeps the rest
out of the count. Here the selected events are the *contested* steps, the
ones that ran while another actor could have run, plus the uncontested tail
estimated above; with per-step access information from the engine (the
``observe`` hook a later engine may call) the count could be restricted to
steps touching shared state. That refinement is not implemented.

Schedule 1 is the natural order; schedule 2 on uses the estimates.
"""

from __future__ import annotations

from collections.abc import Sequence

from racecheck.schedule import Decision
from racecheck.strategies.base import BaseChooser
from racecheck.strategies.stream import ScheduleDraws

#: keeps SURW's stream apart from other strategies' on one seed
_SALT = 4


class SURWChooser(BaseChooser, ScheduleDraws):
    name = "surw"
    #: learns from the natural-order run: the portfolio hands it schedule 1
    profiles_natural_order = True

    def __init__(self, seed: int = 0) -> None:
        #: each schedule's draws (racecheck.strategies.stream)
        self._start_draws(seed, _SALT)
        self._natural = False
        #: actor id -> the most steps it took in one run so far
        self.estimate: dict[int, int] = {}
        #: this run: actor id -> steps counted so far
        self._done: dict[int, int] = {}
        #: the last decision: (step, candidates, chosen actor)
        self._previous: tuple[int, tuple[int, ...], int] | None = None
        self.runs = 0

    def begin(self, run: int) -> None:
        self._begin_draws(run)
        self._natural = run == 1
        self._done = {}
        self._previous = None
        self.runs = run

    def _attribute_gap(self, step: int) -> None:
        """Credit the steps since the last decision to the actor that ran them alone."""
        previous = self._previous
        if previous is None:
            return
        last_step, candidates, chosen = previous
        gap = step - last_step - 1
        if gap > 0 and len(candidates) == 2:
            alone = candidates[0] if candidates[1] == chosen else candidates[1]
            self._done[alone] = self._done.get(alone, 0) + gap

    def choose(self, candidates: Sequence[int], step: int) -> int:
        self._attribute_gap(step)
        if self._natural:
            index = 0
        else:
            index = self._weighted(candidates)
        actor = candidates[index]
        self._done[actor] = self._done.get(actor, 0) + 1
        self._previous = (step, tuple(candidates), actor)
        return index

    def _weighted(self, candidates: Sequence[int]) -> int:
        estimate = self.estimate
        known = [estimate[a] for a in candidates if a in estimate]
        default = max(1, round(sum(known) / len(known))) if known else 1
        weights = [
            max(1, estimate.get(actor, default) - self._done.get(actor, 0)) for actor in candidates
        ]
        # the weights are whole steps: an index below their sum picks each
        # candidate with probability weight / sum, exactly
        pick = self._below(sum(weights))
        for i, weight in enumerate(weights):
            pick -= weight
            if pick < 0:
                return i
        return len(candidates) - 1

    def end(self, decisions: Sequence[Decision], failed: bool, steps: int) -> None:
        self._attribute_gap(steps + 1)
        if not self._natural:
            return
        for actor, count in self._done.items():
            if count > self.estimate.get(actor, 0):
                self.estimate[actor] = count

    def notes(self, schedules_run: int) -> list[str]:
        sampled = max(self.runs - 1, 0)
        return [
            f"surw sampled {sampled} schedule(s) after the natural order, weighting each"
            f" actor by its remaining steps as estimated from the natural-order run"
            f" ({len(self.estimate)} actors seen); sampling gives no coverage guarantee:"
            " nothing here bounds the chance of a miss"
        ]
