"""Bounded exhaustive search: depth-first over every schedule, CHESS-style.

The space is bounded by preemptions (choices other than the natural order,
index 0): most concurrency bugs need very few (Musuvathi & Qadeer, PLDI 2007),
and the bound keeps the space polynomial in the run's length.

Each run follows a prefix of forced choices, then takes the natural order.
After it, the deepest decision that can still be bumped to its next choice
within the bound becomes the new prefix. When none can, the bounded space has
been fully explored and :attr:`exhausted` becomes True.
"""

from __future__ import annotations

from collections.abc import Sequence

from racecheck.schedule import Decision
from racecheck.strategies.base import BaseChooser


class NondeterminismError(RuntimeError):
    """A forced prefix could not be followed: the target is not deterministic."""


class ExhaustiveChooser(BaseChooser):
    name = "exhaustive"

    def __init__(self, preemption_bound: int = 2) -> None:
        self.preemption_bound = preemption_bound
        self._prefix: list[Decision] = []
        self._position = 0
        self._done = False

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
        used = [0] * (len(decisions) + 1)
        for i, (_, choice) in enumerate(decisions):
            used[i + 1] = used[i] + (1 if choice else 0)
        for i in range(len(decisions) - 1, -1, -1):
            n, choice = decisions[i]
            if choice + 1 < n and used[i] + 1 <= self.preemption_bound:
                self._prefix = [*decisions[:i], (n, choice + 1)]
                return
        self._done = True

    def has_more(self) -> bool:
        return not self._done

    @property
    def exhausted(self) -> bool:
        return self._done

    def notes(self, schedules_run: int) -> list[str]:
        state = "fully explored" if self._done else "not exhausted (schedule budget reached)"
        return [f"exhaustive, preemption bound {self.preemption_bound}: {state}"]
