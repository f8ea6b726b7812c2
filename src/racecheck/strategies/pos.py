"""POS: partial order sampling (Yuan, Yang & Gu, CAV 2018).

Every pending event gets an independent random priority, and the enabled
event with the highest priority runs. After an event runs, the events that
*race* with it get fresh priorities. Resetting the racing events is what
makes the sampling close to uniform over partial orders (Mazurkiewicz traces)
rather than over schedules: two actors whose next steps commute keep their
relative order, so the walk does not spend its randomness re-ordering steps
that cannot change the outcome.

What racecheck can do today. The chooser sees only the enabled actors at each
decision, not what their next step will touch. Without that, every event
is treated as racing with nothing but itself: the actor that just ran gets a
fresh priority for its next step (a new event), and the others keep theirs.
That is POS's basic priority scheduling; it is not a random walk, because a
waiting actor keeps a low priority until the running ones draw below it, so one
actor can fall far behind another, the shape of starvation and ordering bugs a
coin flip at every step dilutes exponentially.

Access information. :meth:`observe` is the Chooser hook the engine calls
after each step when the chooser asks for per-step accesses
(``observes_accesses``; :mod:`racecheck.accesses`): ``actor`` ran a step that
touched ``accesses``, each ``(object, key, is_write, kind)``. With it, POS
does what the paper does: every other actor whose last observed access
conflicts with the step (same object and key, at least one write; a
synchronisation operation is a write) gets a fresh priority too. POS does not
ask for them by default: recording accesses runs the race detector's feed on
every step, which costs more than the better sampling gains on small programs.
The last access of an actor stands in for its *next* one, which the engine
cannot know before the step runs; a step usually touches what the actor's
previous one did (the read and the write of a read-modify-write). Until the
engine calls it, nothing changes.

Schedule 1 is the natural order, as for every sampling strategy here. Each
schedule draws from its own stream derived from (seed, schedule number), so
schedule N is the same whatever ran before it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

from racecheck.accesses import ANY, Access
from racecheck.schedule import Decision
from racecheck.strategies.base import BaseChooser
from racecheck.strategies.stream import ScheduleDraws

#: keeps POS's stream apart from other strategies' on one seed
_SALT = 3


def _conflict(a: Iterable[Access], b: Iterable[Access]) -> bool:
    """Do two sets of accesses touch one location, at least one of them writing?"""
    mine: dict[tuple[int, Hashable], bool] = {}
    for obj, key, write, _ in a:
        mine[(obj, key)] = mine.get((obj, key), False) or write
    for obj, key, write, _ in b:
        wrote = mine.get((obj, key))
        if wrote is not None and (wrote or write):
            return True
        if (obj, ANY) in mine or (key == ANY and any(o == obj for o, _ in mine)):
            return True
    return False


class POSChooser(BaseChooser, ScheduleDraws):
    name = "pos"

    def __init__(self, seed: int = 0) -> None:
        #: each schedule's draws (racecheck.strategies.stream)
        self._start_draws(seed, _SALT)
        self._natural = False
        self._priority: dict[int, float] = {}
        self._last: int | None = None
        #: actor -> the accesses of its last observed step (observe hook)
        self._accesses: dict[int, tuple[Access, ...]] = {}
        #: schedules where the engine reported accesses: the notes say which POS ran
        self.observed_runs = 0
        self._observed = False
        self.runs = 0

    def begin(self, run: int) -> None:
        self._begin_draws(run)
        self._natural = run == 1
        self._priority = {}
        self._last = None
        self._accesses = {}
        self._observed = False
        self.runs = run

    def choose(self, candidates: Sequence[int], step: int) -> int:
        if self._natural:
            return 0
        priority = self._priority
        fraction = self._fraction
        if self._last is not None and not self._observed:
            # The actor that ran last is at a new event; nothing else is known to race.
            priority[self._last] = fraction()
        best, best_priority = 0, -1.0
        for i, actor in enumerate(candidates):
            value = priority.get(actor)
            if value is None:
                value = priority[actor] = fraction()
            if value > best_priority:
                best, best_priority = i, value
        self._last = candidates[best]
        return best

    def observe(
        self, step: int, actor: int, accesses: Sequence[Access], enabled: Sequence[int]
    ) -> None:
        """``actor`` ran a step touching ``accesses``: re-draw it and whoever races with it."""
        if self._natural:
            return
        self._observed = True
        fraction = self._fraction
        self._priority[actor] = fraction()
        touched = tuple(accesses)
        if touched:
            for other, previous in self._accesses.items():
                if other != actor and _conflict(touched, previous):
                    self._priority[other] = fraction()
            self._accesses[actor] = touched

    def end(self, decisions: Sequence[Decision], failed: bool, steps: int) -> None:
        if self._observed:
            self.observed_runs += 1

    def notes(self, schedules_run: int) -> list[str]:
        sampled = max(self.runs - 1, 0)
        if self.observed_runs:
            how = (
                f"priorities re-drawn for the steps that raced with each step in"
                f" {self.observed_runs} of them"
            )
        else:
            how = (
                "no per-step access information, so only the actor that ran got a fresh"
                " priority (POS's priority scheduling without race resets)"
            )
        return [
            f"pos sampled {sampled} schedule(s) after the natural order, {how}; sampling"
            " gives no coverage guarantee: nothing here bounds the chance of a miss"
        ]
