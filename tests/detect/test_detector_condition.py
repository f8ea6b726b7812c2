"""``threading.Condition`` notify -> wait on the threads backend (issue 14).

A wake-up by ``notify`` is a signal for the detector: the waiter waited for
the notifier. That removes findings, so both sides are pinned here: a race
across a Condition (the notifier writing after its notify, outside the lock)
is still reported, correct Condition-guarded code stays clean, and a value
handed back through a Condition is followed (a position located by a worker
and applied stale is a stale index). An answer found already published (a
flag checked under the lock it was set under, no wait) is followed the same
way, and only the publishing step is: a write after it, a stale position
published through it and cross-talk past a flag are still reported.
``condition_models.py`` holds the shapes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import racecheck

sys.path.insert(0, str(Path(__file__).parent))
import condition_models as models


def _finding(target: Callable[[], Any], schedules: int = 300) -> Any:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=schedules, seed=0, backend="threads")
    assert info.value.kind in ("atomicity-violation", "data-race"), info.value
    return info.value.cause.finding


def test_write_after_notify_outside_the_lock_is_still_a_data_race() -> None:
    finding = _finding(models.write_after_notify)
    assert finding.kind == "data-race", finding
    lines = {access.lineno for access in finding.accesses}
    assert lines == {models.marked("late write"), models.marked("waiter write")}, finding


def test_read_deciding_on_a_write_after_notify_is_still_reported() -> None:
    """The late write races the waiter's check: as a data race on the check, or, when the
    first failing schedule also runs the spend, as the stale check it makes; either names
    the late write (which one comes first depends on the schedule stream)."""
    finding = _finding(models.read_decides_after_notify)
    stale_check = (finding.kind, finding.pattern) == ("atomicity-violation", "stale check")
    assert finding.kind == "data-race" or stale_check, finding
    lines = {access.lineno for access in finding.accesses}
    assert models.marked("late budget") in lines, finding
    assert lines <= {
        models.marked("late budget"),
        models.marked("check budget"),
        models.marked("spend"),
    }, finding


@pytest.mark.parametrize(
    "target",
    [
        models.producer_consumer,
        models.bounded_buffer,
        models.result_written_before_notify,
        models.overwritten_by_whom_one_waited_for,
        models.handed_back_relocated,
    ],
    ids=lambda t: t.__name__,
)
def test_condition_guarded_code_is_clean(target: Callable[[], None]) -> None:
    # no RaceFound is the verdict; the run must have explored
    report = racecheck.check(target, detect=True, schedules=200, seed=0, backend="threads")
    assert report.schedules_run >= 1


def test_position_handed_back_through_a_condition_applied_stale_is_flagged() -> None:
    finding = _finding(models.handed_back_stale)
    assert finding.kind == "atomicity-violation", finding
    assert finding.pattern == "stale index", finding
    measure, insert, acted = finding.accesses
    assert measure.lineno == models.marked("measure"), finding
    assert insert.lineno == models.marked("insert"), finding
    assert acted.lineno == models.marked("act"), finding
    assert len({measure.actor, insert.actor, acted.actor}) == 3, finding


@pytest.mark.parametrize(
    "target",
    [models.answered_before_asked_for, models.answer_polled_under_the_lock],
    ids=lambda t: t.__name__,
)
def test_answer_published_through_a_flag_without_a_wait_is_clean(
    target: Callable[[], None],
) -> None:
    # the asker finds the answer flag set under the lock and reads back the answer
    # stored with it: it expected that value, though it never waited for it
    report = racecheck.check(target, detect=True, schedules=200, seed=0, backend="threads")
    assert report.schedules_run >= 1


def test_answer_overwritten_after_its_flag_was_published_is_still_flagged() -> None:
    # the flag hands over the answerer's publishing step only: a write after it,
    # outside the lock, is not what the asker found published
    finding = _finding(models.answer_overwritten_after_publishing)
    assert finding.kind == "atomicity-violation", finding
    assert finding.pattern == "overwritten before read", finding
    lines = [access.lineno for access in finding.accesses]
    assert lines == [
        models.marked("question"),
        models.marked("late answer"),
        models.marked("read answer"),
    ], finding


def test_position_published_through_a_flag_and_applied_stale_is_flagged() -> None:
    # the trimmer never waits: it polls the flag under the Condition's lock, takes
    # the worker's position, and applies it after another thread shifted the list
    finding = _finding(models.published_position_stale)
    assert finding.kind == "atomicity-violation", finding
    assert finding.pattern == "stale index", finding
    measure, insert, acted = finding.accesses
    assert measure.lineno == models.marked("measure"), finding
    assert insert.lineno == models.marked("polled insert"), finding
    assert acted.lineno == models.marked("polled act"), finding
    assert len({measure.actor, insert.actor, acted.actor}) == 3, finding


def test_position_published_through_a_flag_and_located_again_is_clean() -> None:
    report = racecheck.check(
        models.published_position_relocated, detect=True, schedules=200, seed=0, backend="threads"
    )
    assert report.schedules_run >= 1


def test_a_counter_checked_under_the_lock_does_not_hand_over_an_earlier_write() -> None:
    # the other thread's scratch write was made in an earlier critical section than
    # the flag this thread checked: cross-talk on the scratch slot is still reported
    finding = _finding(models.cross_talk_past_a_flag)
    assert finding.kind == "atomicity-violation", finding
    assert finding.pattern == "overwritten before read", finding
    lines = {access.lineno for access in finding.accesses}
    assert lines == {models.marked("scratch write"), models.marked("scratch read")}, finding
