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

import os
from collections.abc import Callable
from typing import Any


def interleave(target: Callable[[], Any], data: Any, **options: Any) -> None:
    """Run ``target`` once under a schedule drawn from hypothesis ``data``."""
    __tracebackhide__ = True  # the user's test is where it failed, not racecheck
    _quiet_explanations()
    from racecheck.found import Found, race_found, trace_failing
    from racecheck.session import Session, make_settings, supervise
    from racecheck.strategies.hypothesis import HypothesisChooser, draw_length

    options = dict(options)
    settings = make_settings(target, options)
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
            trace, traced = trace_failing(session, decisions)
            failure = (
                traced
                if traced is not None and traced.kind == controller.failure.kind
                else controller.failure
            )
            return Found(failure, decisions, decisions, 1, trace)
        finally:
            settings.backend.uninstall()

    found = supervise(session, work)
    if found is not None:
        error = race_found(session, found, "hypothesis", 0)
        _note(f"racecheck schedule: {error.schedule}")
        raise error


def _note(text: str) -> None:
    """Shown with the failing example, next to hypothesis's own inputs."""
    try:
        from hypothesis import note

        note(text)
    except Exception:  # outside a hypothesis test: the RaceFound says it all
        pass


_PACKAGE = os.path.dirname(os.path.abspath(__file__))
#: the pattern racecheck added to hypothesis's filter, until it is taken out again
_added: str | None = None


def _quiet_explanations() -> None:
    """Keep hypothesis's "explanation" to the user's lines.

    Its explain phase lists lines that only failing examples ran; racecheck's
    failure handling (the traced replay, the recorder) is such code, and says
    nothing about the bug. hypothesis drops its own and the stdlib's lines and
    anything matching ``UNHELPFUL_LOCATIONS``: racecheck's package is added
    there. It only filters what is reported; no behaviour changes. The
    explanation is printed after the last example, outside any call of ours,
    so the pattern stays until :func:`restore_explanations` (the pytest plugin
    calls it when the test ends).
    """
    global _added
    if _added is not None:
        return
    try:
        from hypothesis.internal import scrutineer
    except ImportError:
        return
    # hypothesis's globs use "/" and "**" for any depth
    pattern = _PACKAGE.replace(os.sep, "/") + "/**"
    locations = getattr(scrutineer, "UNHELPFUL_LOCATIONS", None)
    if isinstance(locations, tuple) and pattern not in locations:
        scrutineer.UNHELPFUL_LOCATIONS = (*locations, pattern)
        _added = pattern


def restore_explanations() -> None:
    """Take racecheck's pattern out of hypothesis's filter: nothing we patch outlives a test."""
    global _added
    if _added is None:
        return
    from hypothesis.internal import scrutineer

    locations = getattr(scrutineer, "UNHELPFUL_LOCATIONS", ())
    scrutineer.UNHELPFUL_LOCATIONS = tuple(p for p in locations if p != _added)
    _added = None


__all__ = ["interleave"]
