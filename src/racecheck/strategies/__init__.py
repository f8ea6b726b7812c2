"""Strategies: one module each, all behind :class:`~racecheck.strategies.base.Chooser`."""

from __future__ import annotations

from typing import Any

from racecheck.errors import UsageError
from racecheck.strategies.base import BaseChooser, Chooser

STRATEGIES = (
    "auto",
    "pct",
    "pct-random",
    "pos",
    "surw",
    "random",
    "exhaustive",
    "dpor",
    "hypothesis",
)


def make_chooser(name: str, *, seed: int, options: dict[str, Any]) -> Chooser:
    """Build the named strategy, consuming the options it understands."""
    if name == "auto":
        from racecheck.strategies.portfolio import PortfolioChooser

        return PortfolioChooser(seed=seed)
    if name in ("pct", "pct-random"):
        from racecheck.strategies.pct import PCTChooser

        depth = options.pop("depth", "random" if name == "pct-random" else 3)
        if isinstance(depth, str) and depth.strip().isdigit():
            depth = int(depth)  # from an ini file or the command line
        try:
            return PCTChooser(seed=seed, depth=depth)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"depth: {exc}") from None
    if name == "pos":
        from racecheck.strategies.pos import POSChooser

        return POSChooser(seed=seed)
    if name == "surw":
        from racecheck.strategies.surw import SURWChooser

        return SURWChooser(seed=seed)
    if name == "random":
        from racecheck.strategies.random import RandomChooser

        return RandomChooser(seed=seed)
    if name == "exhaustive":
        from racecheck.strategies.exhaustive import ExhaustiveChooser

        bound = options.pop("preemption_bound", None)
        try:
            return ExhaustiveChooser(preemption_bound=None if bound is None else int(bound))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"preemption_bound: {exc}") from None
    if name == "dpor":
        from racecheck.strategies.dpor import DPORChooser

        bound = options.pop("bound", None)
        if isinstance(bound, bool) or not (bound is None or isinstance(bound, int)):
            raise UsageError(f"bound must be a whole number of delays or None, not {bound!r}")
        try:
            return DPORChooser(bound=bound)
        except ValueError as exc:
            raise UsageError(f"bound: {exc}") from None
    raise UsageError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")


__all__ = ["STRATEGIES", "BaseChooser", "Chooser", "make_chooser"]
