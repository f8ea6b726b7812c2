"""Replay: follow a recorded schedule exactly, and say where a run leaves it."""

from __future__ import annotations

from collections.abc import Sequence

from racecheck.errors import DivergenceError
from racecheck.schedule import Decision
from racecheck.strategies.base import BaseChooser


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
                f"replay diverged at decision {i + 1}: the schedule ended after"
                f" {len(self.decisions)} decisions but the run kept going",
                step=i + 1,
            )
        n, choice = self.decisions[i]
        if n != len(candidates):
            raise DivergenceError(
                f"replay diverged at decision {i + 1}: {len(candidates)} actors were enabled,"
                f" the schedule recorded {n} (the code changed, or it depends on time,"
                " randomness, I/O, or the iteration order of a set of strings —"
                " run with PYTHONHASHSEED=0 to pin that)",
                step=i + 1,
            )
        return choice
