"""A position located in a worker, handed back and applied stale: threads and trio.

``handback_models.py`` holds the shapes. On asyncio the same shape is
``window_models.py`` (limits 5.2.0).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import racecheck

sys.path.insert(0, str(Path(__file__).parent))
import handback_models as models

DETECTOR_KINDS = ("atomicity-violation", "data-race")


def _finding(target: Callable[[], Any], schedules: int, **options: Any) -> Any:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=schedules, seed=0, **options)
    assert info.value.kind in DETECTOR_KINDS, info.value
    return info.value.cause.finding  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("target", "act"),
    [
        # the future's result passes through a Condition: notify -> wait is a signal
        pytest.param(models.pool_buggy, "act", id="thread-pool"),
        pytest.param(models.joined_buggy, "act (joined)", id="joined-thread"),
    ],
)
def test_threads_worker_position_applied_stale_is_flagged(
    target: Callable[[], None], act: str
) -> None:
    finding = _finding(target, 300, backend="threads")
    assert finding.kind == "atomicity-violation", finding
    assert finding.pattern == "stale index", finding
    measure, insert, acted = finding.accesses
    assert measure.lineno == models.marked("measure"), finding
    assert insert.action == "wrote a slice of", finding
    assert acted.lineno == models.marked(act), finding
    assert acted.action == "deleted a slice of", finding
    # the worker measured, another thread inserted, the thread that handed the job acted
    assert len({measure.actor, insert.actor, acted.actor}) == 3, finding


@pytest.mark.parametrize(
    "target",
    [models.pool_fixed, models.joined_remeasured, models.joined_then_appended],
    ids=lambda t: t.__name__,
)
def test_threads_worker_position_under_the_lock_or_relocated_is_clean(
    target: Callable[[], None],
) -> None:
    # no RaceFound is the verdict; the run must have explored
    report = racecheck.check(target, detect=True, schedules=200, seed=0, backend="threads")
    assert report.schedules_run >= 1


def test_trio_to_thread_position_applied_stale_is_flagged() -> None:
    pytest.importorskip("trio")
    finding = _finding(models.trio_buggy, 300, backend="trio")
    assert finding.kind == "atomicity-violation", finding
    assert finding.pattern == "stale index", finding
    measure, insert, acted = finding.accesses
    assert measure.lineno == models.marked("measure"), finding
    assert insert.action == "wrote a slice of", finding
    assert acted.lineno == models.marked("act (trio)"), finding
    # trio runs the worker inline: the task that awaited it measured and acted
    assert measure.actor == acted.actor != insert.actor, finding


def test_trio_to_thread_position_under_the_lock_is_clean() -> None:
    pytest.importorskip("trio")
    report = racecheck.check(models.trio_fixed, detect=True, schedules=200, seed=0, backend="trio")
    assert report.schedules_run >= 1


def test_threads_position_from_a_future_already_done_applied_stale_is_flagged() -> None:
    # result() on a done future never waits on its Condition: the hand-back is the
    # future's own (set_result -> result), not the notify
    finding = _finding(models.pool_polled_buggy, 300, backend="threads")
    assert finding.kind == "atomicity-violation", finding
    assert finding.pattern == "stale index", finding
    measure, insert, acted = finding.accesses
    assert measure.lineno == models.marked("measure"), finding
    assert insert.action == "wrote a slice of", finding
    assert acted.lineno == models.marked("act (polled)"), finding
    assert len({measure.actor, insert.actor, acted.actor}) == 3, finding


@pytest.mark.parametrize(
    "target",
    [models.pool_polled_relocated, models.future_answer_read_back],
    ids=lambda t: t.__name__,
)
def test_threads_future_already_done_is_followed_and_clean(target: Callable[[], None]) -> None:
    report = racecheck.check(target, detect=True, schedules=200, seed=0, backend="threads")
    assert report.schedules_run >= 1


def test_threads_write_by_a_job_nobody_waited_for_is_still_flagged() -> None:
    # the future hands over its own job's writes, not those of another job of the pool
    finding = _finding(models.future_answer_overwritten_after_it_finished, 300, backend="threads")
    lines = {access.lineno for access in finding.accesses}
    assert models.marked("late job") in lines, finding
    assert lines <= {
        models.marked("late job"),
        models.marked("asked"),
        models.marked("read back"),
    }, finding
