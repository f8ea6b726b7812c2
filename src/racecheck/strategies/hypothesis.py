"""Hypothesis-driven exploration: every choice is drawn through hypothesis.

The schedule *is* a hypothesis choice sequence, so hypothesis's shrinker
minimises it for free, towards index 0 — the natural order. Hypothesis is
imported only when this strategy is used. This module holds the choosers;
the loop that runs hypothesis's examples is :mod:`racecheck.explore_hypothesis`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from racecheck.strategies.base import BaseChooser


class HypothesisChooser(BaseChooser):
    """Choices come from a byte string drawn through hypothesis *before* the run.

    Drawing lazily at each decision would be neater, but decisions are taken
    on whichever thread holds the baton, and hypothesis only draws on the
    thread running the test. A byte per decision (``byte % n``) shrinks the
    same way — towards zero bytes, the natural order — and past the end of the
    drawn bytes every choice is natural.
    """

    name = "hypothesis"

    def __init__(self, data: Any, length: int) -> None:
        from hypothesis import strategies as st

        self._choices: bytes = draw_quietly(data, st.binary(min_size=length, max_size=length))
        self._position = 0

    def choose(self, candidates: Sequence[int], step: int) -> int:
        i = self._position
        self._position += 1
        if i >= len(self._choices):
            return 0
        return self._choices[i] % len(candidates)


def draw_quietly(data: Any, strategy: Any) -> Any:
    """Draw from ``st.data()`` without a ``Draw N: b'...'`` line in the failure report.

    A schedule's bytes mean nothing to a reader (racecheck prints its token
    instead), and numbering them would shift the user's own draws. The
    draw goes to the example's choice sequence directly, so hypothesis still
    shrinks and replays it; ``DataObject.draw`` is the fallback.
    """
    underlying = getattr(data, "conjecture_data", None)
    if underlying is not None and callable(getattr(underlying, "draw", None)):
        return underlying.draw(strategy)
    return data.draw(strategy)


def draw_length(longest: int) -> int:
    """Bytes to draw for every run: room for twice the natural-order run."""
    return max(64, min(4096, 2 * longest))


class NaturalOrder(BaseChooser):
    """Always the natural order: the calibration run that sizes every draw."""

    name = "hypothesis"

    def choose(self, candidates: Sequence[int], step: int) -> int:
        return 0
