"""racecheck: find, replay and pin down concurrency bugs.

The public API (kept stable; suites outside this repository use it)::

    report = racecheck.check(target, strategy="auto", schedules=1000, seed=0, **options)
    racecheck.replay(target, token)
    @racecheck.pinned(token)  # check() replays the token first, then explores
    racecheck.RaceFound, racecheck.Report, racecheck.Scenario, racecheck.Variant
    report = racecheck.stress(target, runs=1000, parallel=2)  # uncontrolled, statistics

Importing ``racecheck`` is cheap: backends load when a run needs them.
"""

from __future__ import annotations

from racecheck.api import PinnedScheduleWarning, check, replay
from racecheck.errors import (
    DivergenceError,
    StateLeakError,
    StuckError,
    TokenError,
    UsageError,
)
from racecheck.outcome import RaceFound, Report
from racecheck.pinning import pinned
from racecheck.scenario import Scenario, Variant, scenario
from racecheck.stress import StressReport, stress

__all__ = [
    "DivergenceError",
    "PinnedScheduleWarning",
    "RaceFound",
    "Report",
    "Scenario",
    "StateLeakError",
    "StressReport",
    "StuckError",
    "TokenError",
    "UsageError",
    "Variant",
    "check",
    "pinned",
    "replay",
    "scenario",
    "stress",
]
__version__ = "0.1.0"
