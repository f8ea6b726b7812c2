"""Hypothesis's exploration loop: every schedule is one hypothesis example.

The choices come from :class:`~racecheck.strategies.hypothesis.HypothesisChooser`
(the strategy), and hypothesis's own engine runs the examples and shrinks the
failing one; this loop sits beside :func:`racecheck.explore._explore`, on the
same session and failure pipeline, so the two share everything but the loop.
Hypothesis is imported only when this strategy is used.

Shrinking is bounded by ``minimize_time``: past it, the smallest failing
schedule seen so far is kept and hypothesis is stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from racecheck.errors import UsageError
from racecheck.schedule import Decision
from racecheck.strategies.hypothesis import HypothesisChooser, NaturalOrder, draw_length

if TYPE_CHECKING:
    from racecheck.engine import Failure
    from racecheck.outcome import Report
    from racecheck.session import Settings


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
    from racecheck.found import Found, race_found, shrink_and_trace, trace_failing
    from racecheck.outcome import Report
    from racecheck.session import Session, supervise

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
            calibration = session.run(NaturalOrder(), 1)
            state["runs"] = 1
            decisions = tuple(calibration.decisions)
            if calibration.failure is not None:
                return shrink_and_trace(session, calibration.failure, decisions, 1)
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
            trace, traced = trace_failing(session, best)
            failure = (
                traced
                if traced is not None and traced.kind == state["failure"].kind
                else state["failure"]
            )
            return Found(failure, best, state["original"], state["first"], trace)
        finally:
            settings.backend.uninstall()

    try:
        outcome = supervise(session, work)
    except KeyboardInterrupt:
        from racecheck.session import interrupted

        session.explored, session.budget = state["first"] or state["runs"], schedules
        if state["failure"] is not None:
            session.found_so_far = (state["failure"], state["best"], state["first"])
        raise interrupted(session, "hypothesis", seed) from None
    if isinstance(outcome, Found):
        raise race_found(session, outcome, "hypothesis", seed)
    outcome.seconds = time.perf_counter() - started
    return outcome
