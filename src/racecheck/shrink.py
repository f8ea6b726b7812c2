"""Minimise a failing schedule: fewer preemptions, shorter trace, same failure.

Delta debugging over the preemption list (Zeller, 2002): try to put whole
chunks of preemptions back to the natural order (choice 0), halving the chunk
size when no chunk can go. A candidate is *run*, never assumed: it counts only
if the run fails with the same kind (and exception type) as the original, so
shrinking can shorten the story but never change the verdict. The decisions
the candidate run actually took become the new schedule, which is why the
result always replays.

Bounded by ``minimize_runs`` candidate runs — a count, so the result is the
same on a fast machine, a loaded one, and under pytest-xdist — with
``minimize_time`` seconds as a safety net only. Whatever was reached is kept.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from racecheck.schedule import Decision
from racecheck.strategies.base import BaseChooser, Chooser

if TYPE_CHECKING:
    from racecheck.engine import Controller, Failure


class Runner(Protocol):
    """What shrinking needs from an exploration: run one schedule, and know when to stop.

    :class:`racecheck.session.Session` is one. Naming the two members here,
    not the class, keeps imports pointing downward: explore uses shrink,
    shrink knows only the engine.
    """

    @property
    def interrupted(self) -> bool: ...

    def run(self, chooser: Chooser, run: int) -> Controller: ...


class GuidedChooser(BaseChooser):
    """Follow a candidate schedule where it still fits, natural order elsewhere."""

    name = "shrink"

    def __init__(self, decisions: Sequence[Decision]) -> None:
        self.decisions = decisions
        self.position = 0

    def begin(self, run: int) -> None:
        self.position = 0

    def choose(self, candidates: Sequence[int], step: int) -> int:
        i = self.position
        self.position += 1
        if i < len(self.decisions):
            choice = self.decisions[i][1]
            if choice < len(candidates):
                return choice
        return 0


def _cost(decisions: Sequence[Decision]) -> tuple[int, int]:
    return (sum(1 for _, c in decisions if c), len(decisions))


def _same(a: Failure, b: Failure) -> bool:
    if a.kind != b.kind:
        return False
    if a.cause is None or b.cause is None:
        return a.cause is None and b.cause is None
    return type(a.cause) is type(b.cause)


def shrink(
    session: Runner,
    failure: Failure,
    decisions: tuple[Decision, ...],
    *,
    runs: int,
    seconds: float,
) -> tuple[Failure, tuple[Decision, ...]]:
    deadline = time.monotonic() + seconds
    best, best_failure = decisions, failure
    budget = [runs]

    def exhausted() -> bool:
        return budget[0] <= 0 or time.monotonic() >= deadline or session.interrupted

    def attempt(candidate: list[Decision]) -> bool:
        nonlocal best, best_failure
        budget[0] -= 1
        controller = session.run(GuidedChooser(candidate), 0)
        got = controller.failure
        taken = tuple(controller.decisions)
        if got is not None and _same(got, failure) and _cost(taken) < _cost(best):
            best, best_failure = taken, got
            return True
        return False

    # Lower every choice to 1 first: "some other actor" is simpler than "the 4th".
    lowered = [(n, min(c, 1)) for n, c in best]
    if lowered != list(best):
        attempt(lowered)
    chunk = max(1, len([c for _, c in best if c]) // 2)
    while not exhausted():
        preemptions = [i for i, (_, c) in enumerate(best) if c]
        if not preemptions:
            break
        chunk = min(chunk, len(preemptions))
        progressed = False
        for start in range(len(preemptions) - chunk, -1, -chunk):
            if exhausted():
                break
            drop = set(preemptions[start : start + chunk])
            candidate = [(n, 0 if i in drop else c) for i, (n, c) in enumerate(best)]
            if attempt(candidate):
                progressed = True
                break
        if not progressed:
            if chunk == 1:
                break
            chunk = max(1, chunk // 2)
    return best_failure, best
