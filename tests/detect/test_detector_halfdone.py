"""A lazy module whose ``__dict__`` is a property (issue 14, fifth round: apipkg 2.0.0).

The detector read instance state through ``object.__getattribute__(obj,
"__dict__")``. On a class that makes ``__dict__`` a property (apipkg's
``ApiModule`` loads every lazy attribute there) that runs the library's
code from inside the detector: it ran apipkg's first-access hook itself,
the race was gone, and the buggy release ran clean with and without its
assertion. The shapes are ``halfdone_models.py``: the detector must never
run the property, must flag the unlocked set-up with its assertion removed,
and must leave the locked one clean.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import racecheck

sys.path.insert(0, str(Path(__file__).parent))
import halfdone_models as models

from racecheck.detect.detector import RaceDetected


def _unasserted(target: object) -> object:
    def run() -> None:
        try:
            target()  # type: ignore[operator]
        except AssertionError as error:
            if isinstance(error, RaceDetected):
                raise

    return run


def test_the_detector_runs_no_dict_property() -> None:
    models.PROPERTY_READS.clear()
    racecheck.check(
        models.hook_under_the_lock, detect=True, schedules=30, seed=0, backend="threads"
    )
    assert models.PROPERTY_READS == [], "the detector ran the class's __dict__ property"


def test_the_unlocked_set_up_is_found_with_the_detector_on() -> None:
    # the assertion kept: the detector must not make the race go away
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(
            models.hook_half_done, detect=True, schedules=200, seed=0, backend="threads"
        )


def test_the_unlocked_set_up_is_flagged_with_its_assertion_removed() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(
            _unasserted(models.hook_half_done),
            detect=True,
            schedules=200,
            seed=0,
            backend="threads",
        )
    assert info.value.kind in ("atomicity-violation", "data-race"), info.value


def test_the_set_up_under_one_lock_is_clean() -> None:
    report = racecheck.check(
        models.hook_under_the_lock, detect=True, schedules=200, seed=0, backend="threads"
    )
    assert report.schedules_run >= 1
