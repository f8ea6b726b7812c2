"""Exhaustive search: depth-first over every schedule, fewest preemptions first.

The bound counts decisions other than the natural order (index 0). What that
is depends on the backend, and the notes say it in its words:

* asyncio: running a ready task other than the head of the FIFO ready queue.
  asyncio switches only at awaits, so this is a *delay* of the head task, not
  a CHESS-style preemption: "at most 2" means "all schedules with at most 2
  delays from FIFO order";
* trio: the same, against the order of trio's run queue;
* threads: switching away from a thread that could have kept running, a
  preemption in the CHESS sense (at the granularity's scheduling points).

Most concurrency bugs need very few (Musuvathi & Qadeer, PLDI 2007).

With no ``preemption_bound`` (the default) the search deepens iteratively:
every schedule with 0 preemptions, then every one with at most 1, then 2, and
so on, until a level prunes nothing — then *every* schedule has been run, and
:attr:`exhausted` is a statement about the whole program. Shallow bugs are
still found first. With an explicit bound the search stops at that level, and
``exhausted`` means "every schedule with at most that many preemptions": the
notes say so in words, because a bug needing one more is not covered.

Each run follows a prefix of forced choices, then takes the natural order.
After it, the deepest decision that can still be bumped to its next choice
within the bound becomes the new prefix.
"""

from __future__ import annotations

from collections.abc import Sequence

from racecheck.errors import UsageError
from racecheck.schedule import Decision
from racecheck.strategies.base import BaseChooser


class NondeterminismError(UsageError, RuntimeError):
    """A forced prefix could not be followed: the target is not deterministic.

    A usage error, like a state leak: the target is not fit for systematic
    search, and the pytest plugin and the CLI say so in one line.
    """


class ExhaustiveChooser(BaseChooser):
    name = "exhaustive"
    #: systematic: never repeats a schedule, so saturation does not apply
    samples = False

    def __init__(self, preemption_bound: int | None = None) -> None:
        if preemption_bound is not None and preemption_bound < 0:
            raise ValueError("preemption_bound must be at least 0")
        #: the user's bound; None deepens until nothing is pruned
        self.limit = preemption_bound
        self.preemption_bound = 0 if preemption_bound is None else preemption_bound
        self._prefix: list[Decision] = []
        self._position = 0
        self._done = False
        #: did the bound prune an alternative at the current level?
        self._pruned = False

    def begin(self, run: int) -> None:
        self._position = 0

    def choose(self, candidates: Sequence[int], step: int) -> int:
        i = self._position
        self._position += 1
        if i < len(self._prefix):
            n, choice = self._prefix[i]
            if n != len(candidates):
                raise NondeterminismError(
                    f"decision {i + 1} had {len(candidates)} enabled actors,"
                    f" an earlier run had {n}:"
                    " the target depends on something racecheck does not control"
                )
            return choice
        return 0

    def end(self, decisions: Sequence[Decision], failed: bool, steps: int) -> None:
        if self.bump(decisions) < 0:
            self.next_level()

    def bump(self, decisions: Sequence[Decision], below: int | None = None) -> int:
        """Make the next prefix from the deepest decision that can take its next choice.

        Only decisions before index ``below`` are considered when it is given:
        a shard that does not own the subtree under the first ``below``
        decisions steps over it (racecheck.sharding_tree). Returns the index
        of the bumped decision, or -1 when none can be: the level is over.
        """
        used = [0] * (len(decisions) + 1)
        for i, (_, choice) in enumerate(decisions):
            used[i + 1] = used[i] + (1 if choice else 0)
        top = len(decisions) if below is None else min(below, len(decisions))
        for i in range(top - 1, -1, -1):
            n, choice = decisions[i]
            if choice + 1 < n:
                if used[i] + 1 <= self.preemption_bound:
                    self._prefix = [*decisions[:i], (n, choice + 1)]
                    return i
                self._pruned = True
        return -1

    def next_level(self) -> None:
        """The level's search is over: go one deeper if the bound cut something, else stop."""
        if self.limit is None and self._pruned:
            # The level is complete but the bound cut something: go one deeper.
            # Its DFS runs the shallower schedules again, a cost bounded by
            # the (much smaller) shallower levels.
            self.preemption_bound += 1
            self._pruned = False
            self._prefix = []
            return
        self._done = True

    def has_more(self) -> bool:
        return not self._done

    @property
    def exhausted(self) -> bool:
        return self._done

    @property
    def pruned(self) -> bool:
        """The bound cut an alternative at the current level (so far)."""
        return self._pruned

    @property
    def complete(self) -> bool:
        """Every schedule of the program ran (no level pruned anything)."""
        return self._done and not self._pruned

    def for_backend(self, backend: str) -> None:
        """The backend that runs: the notes then name what a bound counts there."""
        self.backend = backend

    def unit(self, count: int = 2) -> str:
        """What the bound counts, in the words of the backend that runs."""
        plural = "" if count == 1 else "s"
        return {
            "asyncio": f"delay{plural} from FIFO order",
            "trio": f"delay{plural} from trio's run-queue order",
            "threads": f"preemption{plural} (a switch away from a thread that could go on)",
        }.get(getattr(self, "backend", ""), f"deviation{plural} from the natural order")

    def notes(self, schedules_run: int) -> list[str]:
        bound = self.preemption_bound
        if self.complete:
            return [
                f"exhaustive: every schedule racecheck can make of this program ran"
                f" ({schedules_run} runs, up to {bound} {self.unit(bound)})"
            ]
        if self._done:
            return [
                f"exhaustive: all schedules with at most {bound} {self.unit(bound)} ran;"
                " schedules needing more were not run: this is not a proof for bugs that"
                " need more"
            ]
        finished = bound - 1
        if finished >= 0 and self.limit is None:
            return [
                f"exhaustive: the budget ran out at {bound} {self.unit(bound)};"
                f" all schedules with at most {finished} {self.unit(finished)} ran"
            ]
        return [
            f"exhaustive: the budget ran out before all schedules with {bound}"
            f" {self.unit(bound)} were covered"
        ]
