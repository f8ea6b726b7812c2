"""The one interface every strategy implements.

A strategy sees a run as a sequence of decisions. At each one it receives the
enabled actors (stable ids; index 0 is the natural order) and returns the index
of the actor to run. It never sees asyncio, threads or trio: that is what lets
one strategy drive every backend, and a new strategy touch nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from racecheck.schedule import Decision

if TYPE_CHECKING:
    from racecheck.accesses import Access


class Chooser(Protocol):
    name: str

    def begin(self, run: int) -> None:
        """A new schedule starts (``run`` counts from 1)."""

    def choose(self, candidates: Sequence[int], step: int) -> int:
        """Return an index into ``candidates`` (actor ids, natural order first).

        ``step`` counts every scheduling step of the run so far, including the
        ones where a single actor was enabled (no decision was needed there).
        """

    def end(self, decisions: Sequence[Decision], failed: bool, steps: int) -> None:
        """The schedule finished: ``decisions`` is what it did, in ``steps`` steps."""

    def observe(
        self, step: int, actor: int, accesses: Sequence[Access], enabled: Sequence[int]
    ) -> None:
        """A step finished (only when the run records accesses: see racecheck.accesses).

        ``step`` counts every step of the run from 0, ``actor`` ran it from a
        state where ``enabled`` could run (natural order first), and
        ``accesses`` is what it touched.
        """

    def has_more(self) -> bool:
        """False when the strategy has nothing left to try (exhaustive search)."""

    @property
    def exhausted(self) -> bool:
        """True only when the whole (bounded) space was explored."""

    def notes(self, schedules_run: int) -> list[str]:
        """Human-readable facts about the exploration (PCT's bound, ...)."""


class BaseChooser:
    """Defaults shared by the strategies that do not need them."""

    name = "base"

    def begin(self, run: int) -> None:
        pass

    def end(self, decisions: Sequence[Decision], failed: bool, steps: int) -> None:
        pass

    def observe(
        self, step: int, actor: int, accesses: Sequence[Access], enabled: Sequence[int]
    ) -> None:
        pass

    def has_more(self) -> bool:
        return True

    @property
    def exhausted(self) -> bool:
        return False

    def notes(self, schedules_run: int) -> list[str]:
        return []
