"""Hypothesis-driven exploration: every choice is drawn through hypothesis.

The schedule *is* a hypothesis choice sequence, so hypothesis's shrinker
minimises it for free, towards index 0 — the natural order. Hypothesis is
imported only when this strategy is used.

Shrinking is bounded by ``minimize_time``: past it, the smallest failing
schedule seen so far is kept and hypothesis is stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from racecheck.errors import UsageError
from racecheck.schedule import Decision
from racecheck.strategies.base import BaseChooser

if TYPE_CHECKING:
    from racecheck.engine import Failure
    from racecheck.explore import Settings
    from racecheck.outcome import Report


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


class _NaturalOrder(BaseChooser):
    """Always the natural order: the calibration run that sizes every draw."""

    name = "hypothesis"

    def choose(self, candidates: Sequence[int], step: int) -> int:
        return 0


class _Failed(Exception):
    """Tells hypothesis "this example fails" without exposing racecheck internals."""


class _Stop(BaseException):
    """Out of schedule budget or shrink time: leave hypothesis now."""


def _cost(decisions: Sequence[Decision]) -> tuple[int, int]:
    return (sum(1 for _, c in decisions if c), len(decisions))


def explore_with_hypothesis(
    target: Callable[[], Any],
    settings: Settings,
    schedules: int,
    seed: int,
    options: dict[str, Any],
) -> Report:
    try:
        import hypothesis
        from hypothesis import HealthCheck, Phase, Verbosity, given
        from hypothesis import strategies as st
    except ImportError:
        raise UsageError("strategy='hypothesis' needs hypothesis: pip install hypothesis") from None
    from racecheck.explore import (
        Found,
        Session,
        _found,
        _race_found,
        _record,
        _supervise,
    )
    from racecheck.outcome import Report

    if options:
        raise UsageError(f"unknown option(s): {', '.join(sorted(options))}")
    session = Session(settings)
    started = time.perf_counter()
    state: dict[str, Any] = {
        "runs": 0,
        "first": None,
        "best": None,
        "failure": None,
        "original": None,
        "shrinks": 0,
        "length": 64,
    }

    @hypothesis.seed(seed)
    @hypothesis.settings(
        max_examples=schedules,
        database=None,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.generate, Phase.shrink),
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
    )
    @given(st.data())
    def one_schedule(data: Any) -> None:
        # Draw before anything else, always the same shape: hypothesis keeps a
        # tree of every example's draws and replays them while shrinking, and
        # insists that a draw at the same place has the same constraints. So an
        # example never stops before its draw, and the length never changes.
        chooser = HypothesisChooser(data, state["length"])
        if state["first"] is not None and (
            state["shrinks"] >= settings.minimize_runs or time.monotonic() > state["deadline"]
        ):
            raise _Stop
        if state["first"] is not None:
            state["shrinks"] += 1
        if state["first"] is None and state["runs"] >= schedules:
            raise _Stop
        state["runs"] += 1
        controller = session.run(chooser, state["runs"])
        failure: Failure | None = controller.failure
        if failure is None:
            return
        decisions = tuple(controller.decisions)
        if state["first"] is None:
            state["first"] = state["runs"]
            state["original"] = decisions
            state["failure"] = failure
            state["best"] = decisions
            state["deadline"] = time.monotonic() + (
                settings.minimize_time if settings.minimize else 0
            )
        elif failure.kind == state["failure"].kind and _cost(decisions) < _cost(state["best"]):
            state["best"] = decisions
        raise _Failed

    def work() -> Report | Found:
        settings.backend.install()
        try:
            # Schedule 1 is the natural order; its length sizes every draw after it.
            calibration = session.run(_NaturalOrder(), 1)
            state["runs"] = 1
            decisions = tuple(calibration.decisions)
            if calibration.failure is not None:
                return _found(session, calibration.failure, decisions, 1)
            state["length"] = draw_length(len(decisions))
            try:
                if schedules > 1:
                    one_schedule()
            except (_Failed, _Stop):
                pass
            if state["first"] is None:
                return Report(
                    schedules_run=state["runs"],
                    exhausted=False,
                    strategy="hypothesis",
                    seed=seed,
                    backend=settings.backend.name,
                    distinct_schedules=state["runs"],
                    warnings=session.warnings(),
                )
            best = state["best"]
            trace, traced = _record(session, best)
            failure = (
                traced
                if traced is not None and traced.kind == state["failure"].kind
                else state["failure"]
            )
            return Found(failure, best, state["original"], state["first"], trace)
        finally:
            settings.backend.uninstall()

    try:
        outcome = _supervise(session, work)
    except KeyboardInterrupt:
        from racecheck.explore import interrupted

        session.explored, session.budget = state["first"] or state["runs"], schedules
        if state["failure"] is not None:
            session.found_so_far = (state["failure"], state["best"], state["first"])
        raise interrupted(session, "hypothesis", seed) from None
    if isinstance(outcome, Found):
        raise _race_found(session, outcome, "hypothesis", seed)
    outcome.seconds = time.perf_counter() - started
    return outcome
