"""Replay: follow a recorded schedule exactly, and say where a run leaves it.

A replayed run can leave its schedule in two ways only, and they mean
different things for someone checking a fix:

* it needs a decision after the token's last one ("needs-more"): on this code
  the run goes on where the recorded one had already failed, so the schedule
  no longer says what should happen;
* at a decision point another number of actors is enabled than the token
  recorded ("not-enabled"): the recorded choice names another actor, or none.

Ending early is neither: a run that stops before the last recorded decision
without failing followed the schedule as far as it went and did not fail,
which is what replaying a buggy token on fixed code usually looks like.
"""

from __future__ import annotations

from collections.abc import Sequence

from racecheck.errors import DivergenceError
from racecheck.schedule import Decision
from racecheck.strategies.base import BaseChooser

#: what a divergence means for whoever is checking a fix
_VERDICT = (
    "this schedule does not tell whether the fix holds; explore the changed code"
    " (racecheck.check / racecheck run) to check it"
)


class ReplayChooser(BaseChooser):
    name = "replay"

    def __init__(self, decisions: Sequence[Decision]) -> None:
        self.decisions = tuple(decisions)
        self.position = 0

    def begin(self, run: int) -> None:
        self.position = 0

    def choose(self, candidates: Sequence[int], step: int) -> int:
        i = self.position
        self.position += 1
        if i >= len(self.decisions):
            raise DivergenceError(
                f"replay diverged at decision {i + 1}: the token holds {len(self.decisions)}"
                " decisions and the run needed another (on this code it goes on where the"
                f" recorded run had stopped); {_VERDICT}",
                step=i + 1,
                reason="needs-more",
            )
        n, choice = self.decisions[i]
        if n != len(candidates):
            raise DivergenceError(
                f"replay diverged at decision {i + 1}: {len(candidates)} actors were enabled"
                f" where the schedule recorded {n}, so the recorded choice does not name the"
                " same actor (the code changed, or it depends on time, randomness, I/O, or"
                " the iteration order of a set of strings — PYTHONHASHSEED=0 pins that);"
                f" {_VERDICT}",
                step=i + 1,
                reason="not-enabled",
            )
        return choice

    def finished_early(self) -> bool:
        return self.position < len(self.decisions)
