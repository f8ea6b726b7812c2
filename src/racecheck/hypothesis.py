"""Hypothesis integration: generate inputs and schedules in one ``@given`` test.

::

    from hypothesis import given, strategies as st
    import racecheck.hypothesis as rh

    @given(deposits=st.lists(st.integers(1, 9), min_size=2, max_size=4), data=st.data())
    def test_deposits(deposits, data):
        rh.interleave(lambda: run_deposits(deposits), data)

Every scheduling choice is drawn from ``data``, so a failing example is one
choice sequence covering the inputs *and* the interleaving: hypothesis shrinks
both together, saves it in its example database, and replays it first on the
next run. A failing schedule raises :class:`racecheck.RaceFound` with a token
that ``racecheck.replay`` runs on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def interleave(target: Callable[[], Any], data: Any, **options: Any) -> None:
    """Run ``target`` once under a schedule drawn from hypothesis ``data``."""
    from racecheck.explore import Found, Session, _race_found, _record, _settings, _supervise
    from racecheck.strategies.hypothesis import HypothesisChooser, draw_length

    options = dict(options)
    settings = _settings(target, options)
    if options:
        from racecheck.errors import UsageError

        raise UsageError(f"unknown option(s): {', '.join(sorted(options))}")
    session = Session(settings)
    # Drawn here, on the test's thread: hypothesis refuses draws from others.
    chooser = HypothesisChooser(data, draw_length(256))

    def work() -> Found | None:
        settings.backend.install()
        try:
            controller = session.run(chooser, 1)
            if controller.failure is None:
                return None
            decisions = tuple(controller.decisions)
            trace, traced = _record(session, decisions)
            failure = (
                traced
                if traced is not None and traced.kind == controller.failure.kind
                else controller.failure
            )
            return Found(failure, decisions, decisions, 1, trace)
        finally:
            settings.backend.uninstall()

    found = _supervise(session, work)
    if found is not None:
        raise _race_found(session, found, "hypothesis", 0)


__all__ = ["interleave"]
