"""What the DPOR soundness tests ask of a verdict, said once.

``assert_dpor_finds``: DPOR must raise RaceFound on a buggy program; a pass
(verified or not) fails the test with the run's notes. ``assert_dpor_verifies``:
the safe twin is still "verified". Imported by test modules; no fixtures here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import racecheck


def assert_dpor_finds(
    target: Callable[[], Any], *, backend: str = "threads", detect: bool = False
) -> None:
    with pytest.raises(racecheck.RaceFound):
        report = racecheck.check(
            target,
            strategy="dpor",
            backend=backend,
            schedules=200,
            detect=detect,
            minimize=False,
        )
        pytest.fail(f"DPOR passed a bug ({report.schedules_run} schedules): {report.notes}")


def assert_dpor_verifies(
    target: Callable[[], Any], *, backend: str = "threads", detect: bool = False
) -> racecheck.Report:
    report = racecheck.check(target, strategy="dpor", backend=backend, schedules=200, detect=detect)
    assert report.verified, report.notes
    return report
