"""A flag or a check returned by a helper and tested by the caller (issue 14).

The detector judged what a read is for from the reading frame alone, so
``with self._lock: return self._answered`` looked like a value only
displayed (the ``with``'s exit pops its own result before the return), and
a value returned at all decided nothing it could follow. Two results:

* a false alarm on correct code: the asker polls ``box.answered()`` until
  the answer is there, then reads it back, and was told its own question
  was "overwritten before read" (a flag checked in place hands the
  answerer's publishing step over; one checked through a helper did not);
* a missed race: ``if pool.has_room():`` outside the lock, then
  ``pool.open_one()`` under it, in two threads, overfills a pool of one.

Partners keep the real races flagged: an answer overwritten after its flag
was published, still through the helper, and correct re-checks stay clean.
``helperflag_models.py`` holds the shapes.
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
        models.answer_polled_through_a_helper,
        models.answer_state_compared_through_a_helper,
        models.room_rechecked_under_the_lock,
        models.room_checked_under_the_lock_through_a_helper,
    ],
    ids=lambda t: t.__name__,
)
def test_a_flag_returned_by_a_helper_and_tested_by_the_caller_is_clean(
    target: Callable[[], None],
) -> None:
    # no RaceFound is the verdict; the run must have explored
    report = racecheck.check(target, detect=True, schedules=200, seed=0, backend="threads")
    assert report.schedules_run >= 1


def test_an_answer_overwritten_after_a_helper_flag_is_still_flagged() -> None:
    # the flag found through the helper hands over the publishing step only
    finding = _finding(models.answer_overwritten_after_a_helper_flag)
    assert finding.kind == "atomicity-violation", finding
    assert finding.pattern == "overwritten before read", finding
    lines = [access.lineno for access in finding.accesses]
    assert lines == [models.marked("ask"), models.marked("late"), models.marked("take")], finding


def test_a_check_returned_by_a_helper_decides_the_callers_act() -> None:
    # if pool.has_room(): (outside the lock) ... pool.open_one() (under it), two threads
    finding = _finding(models.room_checked_through_a_helper)
    first, *_, last = finding.accesses
    assert first.lineno == models.marked("room"), finding
    assert last.lineno == models.marked("open"), finding
    assert first.actor == last.actor, finding
    assert finding.accesses[1].actor != last.actor, finding
    assert finding.accesses[1].lineno == models.marked("open"), finding


def test_an_update_through_locked_accessors_is_a_lost_update() -> None:
    # ``with self._lock: return self._value`` looked like a value only displayed
    # (the with's exit pops its own result before the return), so the getter's
    # read decided nothing and ``counter.value += 1`` in two threads was clean
    finding = _finding(models.locked_accessors_unlocked_update)
    assert finding.kind == "atomicity-violation", finding
    assert finding.pattern == "lost update", finding
    lines = [access.lineno for access in finding.accesses]
    assert lines == [
        models.marked("locked get"),
        models.marked("locked set"),
        models.marked("locked set"),
    ], finding
