"""The portfolio (``strategy="auto"``, the default): several strategies take turns.

No single strategy wins everywhere. A random walk finds a one-preemption
deadlock that PCT at depth 3 keeps missing; PCT finds the deep ordering bug a
random walk dilutes; systematic search finds whatever needs a handful of
precise delays and, on a small program, can prove there is nothing left to
find. Shuttle and Coyote ship a portfolio for the same reason.

The budget is spent round-robin, one schedule per member per round, so a bug
any member finds quickly is found quickly. Schedule 1 is the natural order.
The systematic member (exhaustive search, deepening one preemption at a time)
ends the exploration early when it has run every schedule of the program:
more random schedules could only repeat one. A member that cannot go on (the
systematic one, on a target that is not deterministic) drops out and says so.

Each member keeps its own schedule numbering, so member schedules are the
same whatever the others did, and any failing schedule replays from its
decisions alone, whichever member produced it.
"""

from __future__ import annotations

from collections.abc import Sequence

from racecheck.schedule import Decision
from racecheck.strategies.base import BaseChooser, Chooser
from racecheck.strategies.exhaustive import ExhaustiveChooser, NondeterminismError
from racecheck.strategies.pct import PCTChooser
from racecheck.strategies.random import RandomChooser


class PortfolioChooser(BaseChooser):
    name = "auto"

    def __init__(self, seed: int = 0) -> None:
        self.systematic = ExhaustiveChooser()
        self.members: list[tuple[str, Chooser]] = [
            ("exhaustive", self.systematic),
            ("random", RandomChooser(seed)),
            ("pct depth 2", PCTChooser(seed, depth=2)),
            ("pct depth 3", PCTChooser(seed + 1, depth=3)),
            ("pct depth 5", PCTChooser(seed + 2, depth=5)),
        ]
        self.active = list(range(len(self.members)))
        #: schedules each member has run; random and PCT skip their own
        #: natural-order schedule, which the systematic member runs first
        self.member_runs = [0, 1, 1, 1, 1]
        self.turn = 0
        self.current = 0
        self.dropped: list[str] = []
        self.found_by: str | None = None
        #: the current member failed mid-run (nondeterminism): finish in natural order
        self._failed_member = False

    @property
    def member(self) -> str:
        """The member running the current schedule ("random", "pct depth 3", ...)."""
        return self.members[self.current][0]

    def begin(self, run: int) -> None:
        self.current = self.active[self.turn % len(self.active)]
        self.turn += 1
        self.member_runs[self.current] += 1
        self.members[self.current][1].begin(self.member_runs[self.current])
        self._failed_member = False

    def skip(self, run: int) -> None:
        """Pass over schedule ``run`` without running it (another shard runs it).

        The turn and the member's numbering advance exactly as :meth:`begin`
        would, so the schedules this process does run keep their numbers.
        """
        member = self.active[self.turn % len(self.active)]
        self.turn += 1
        self.member_runs[member] += 1

    def slot_member(self, run: int) -> str:
        """The member that runs schedule ``run`` while every member is active."""
        return self.members[(run - 1) % len(self.members)][0]

    def choose(self, candidates: Sequence[int], step: int) -> int:
        if self._failed_member:
            return 0
        chooser = self.members[self.current][1]
        try:
            return chooser.choose(candidates, step)
        except NondeterminismError:
            # The program does not repeat itself: systematic search cannot
            # work on it. Finish this run in natural order; drop the member.
            self._failed_member = True
            self._drop(self.current, "the target is not deterministic")
            return 0

    def end(self, decisions: Sequence[Decision], failed: bool, steps: int) -> None:
        index = self.current
        if failed:
            self.found_by = self.members[index][0]
        if self.turn == 1:
            # Schedule 1 is the natural order: it sizes every PCT member's k,
            # so their schedule N does not depend on what ran before it.
            for _, member in self.members:
                if isinstance(member, PCTChooser):
                    member.calibrate(steps)
        if index in self.active and not self._failed_member:
            chooser = self.members[index][1]
            chooser.end(decisions, failed, steps)
            if not chooser.has_more() and index in self.active:
                self.active.remove(index)

    def _drop(self, index: int, why: str) -> None:
        if index in self.active:
            self.active.remove(index)
            self.dropped.append(f"{self.members[index][0]} ({why})")

    def has_more(self) -> bool:
        if self.systematic.complete:
            return False  # every schedule ran: nothing left that others could find
        return bool(self.active)

    @property
    def exhausted(self) -> bool:
        return self.systematic.complete

    def notes(self, schedules_run: int) -> list[str]:
        counts = ", ".join(
            f"{name} {self.member_runs[i] - (0 if i == 0 else 1)}"
            for i, (name, _) in enumerate(self.members)
        )
        notes = [f"auto: schedules per member: {counts}"]
        if self.systematic.complete:
            notes += self.systematic.notes(schedules_run)
        elif any(name.startswith("exhaustive") for name in self.dropped):
            pass  # it covered nothing it can vouch for
        else:
            level = self.systematic.preemption_bound
            if level > 0:
                notes.append(
                    f"auto: every schedule with at most {level - 1} preemptions ran"
                    " (systematic member); deeper schedules were sampled, not covered"
                )
        pct = [c for _, c in self.members if isinstance(c, PCTChooser)]
        if pct:
            deepest = max(pct, key=lambda c: c.depth)
            notes.append(
                f"auto: pct members assume bug depths {', '.join(str(c.depth) for c in pct)};"
                f" deeper bugs are not covered by pct's bound (n={deepest.max_actors},"
                f" k={deepest.max_steps})"
            )
        if self.dropped:
            notes.append(f"auto: dropped {', '.join(self.dropped)}")
        return notes
