"""A flag or a check returned on through more than one helper (issue 14).

The detector followed a returned value one level up: what ``_is_set``'s
read is for was read in ``done``, its caller, and ``done`` only returns it
again. So a value relayed by two helpers counted as unknown ("flow"):

* a false alarm: the asker polls ``box.done()`` (``return self._is_set()``,
  which reads the flag under the lock) until the answer is there, then reads
  the answer back, and was told its question was "overwritten before read";
* a miss: ``if pool.has_room():`` (``return self._room()``, which reads
  ``self.opened < self.max`` outside the lock), then ``pool.open_one()``
  under the lock, in two threads, was clean, while the same check written
  inline or one helper deep is flagged.

The partners keep real races flagged and re-checks clean through the same
helpers. ``helperflag_models.py`` holds the shapes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import racecheck

sys.path.insert(0, str(Path(__file__).parent))
import helperflag_models as models


def _finding(target: Callable[[], Any], schedules: int = 300) -> Any:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=schedules, seed=0, backend="threads")
    assert info.value.kind in ("atomicity-violation", "data-race"), info.value
    return info.value.cause.finding


@pytest.mark.parametrize(
    "target",
    [
        models.answer_polled_through_two_helpers,
        models.answer_polled_through_four_calls,
        models.room_rechecked_under_the_lock_through_two_helpers,
    ],
    ids=lambda t: t.__name__,
)
def test_a_flag_relayed_by_helpers_and_tested_by_the_caller_is_clean(
    target: Callable[[], None],
) -> None:
    # no RaceFound is the verdict; the run must have explored
    report = racecheck.check(target, detect=True, schedules=200, seed=0, backend="threads")
    assert report.schedules_run >= 1


def test_an_answer_overwritten_after_a_relayed_flag_is_still_flagged() -> None:
    finding = _finding(models.answer_overwritten_after_a_flag_relayed_by_two_helpers)
    assert finding.kind == "atomicity-violation", finding
    assert finding.pattern == "overwritten before read", finding
    lines = [access.lineno for access in finding.accesses]
    assert lines == [
        models.marked("ask"),
        models.marked("relayed late"),
        models.marked("take"),
    ], finding


def test_a_check_relayed_by_two_helpers_decides_the_callers_act() -> None:
    # flagged like ``if pool.opened < pool.max: pool.open_one()`` written inline
    finding = _finding(models.room_checked_through_two_helpers)
    first, *_, last = finding.accesses
    assert first.lineno == models.marked("relayed room"), finding
    assert last.lineno == models.marked("open"), finding
    assert first.actor == last.actor, finding
    assert finding.accesses[1].actor != last.actor, finding
    assert finding.accesses[1].lineno == models.marked("open"), finding


@pytest.mark.parametrize(
    "target",
    [models.room_awaited_from_a_helper, models.room_awaited_through_two_helpers],
    ids=["one helper", "two helpers"],
)
def test_a_check_a_coroutine_returns_decides_the_awaiting_callers_act(
    target: Callable[[], Any],
) -> None:
    # ``if await pool.has_room():`` ... ``await pool.open_one()`` in two tasks: the
    # await's result was never followed (its SEND loop looked like a yield)
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=200, seed=0)
    finding = info.value.cause.finding
    assert finding.pattern == "stale check", finding
    lines = [access.lineno for access in finding.accesses]
    assert lines == [
        models.marked("awaited room"),
        models.marked("awaited open"),
        models.marked("awaited open"),
    ], finding


def test_a_coroutines_check_made_again_before_the_act_is_clean() -> None:
    report = racecheck.check(
        models.room_awaited_and_rechecked_before_opening, detect=True, schedules=200, seed=0
    )
    assert report.schedules_run >= 1
