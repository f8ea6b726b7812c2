"""Stale hand-off decisions on trio and threads (issue 14): a decision read before a
checkpoint or a blocking wait, acted on after it by the task or thread it woke."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trio")

import racecheck

sys.path.insert(0, str(Path(__file__).parent))
import handoff_models_trio as models


def _finding(target: Callable[[], Any], schedules: int, **options: Any) -> Any:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=schedules, seed=0, **options)
    assert info.value.kind == "atomicity-violation", info.value
    return info.value.cause.finding  # type: ignore[union-attr]


def test_trio_rw_lock_two_writers_inside_is_a_stale_handoff() -> None:
    finding = _finding(models.trio_rw_buggy, 300, backend="trio")
    assert finding.pattern == "stale hand-off"
    check, between, act = finding.accesses
    assert check.target == act.target == "self._w_state"
    assert "if self._r_state == 0 and self._w_state == 0" in check.line
    assert "self._w_state += 1" in act.line
    assert len({check.actor, between.actor, act.actor}) == 3


@pytest.mark.parametrize(
    "target", [models.trio_rw_fixed, models.trio_condition_recheck], ids=lambda t: t.__name__
)
def test_trio_handoff_carrying_the_state_or_rechecking_is_clean(target: Any) -> None:
    report = racecheck.check(target, detect=True, schedules=300, seed=0, backend="trio")
    assert report.schedules_run >= 1


def test_thread_rw_lock_two_writers_inside_is_a_stale_handoff() -> None:
    finding = _finding(models.thread_rw_buggy, 300)
    check, between, act = finding.accesses
    assert check.target == act.target == "self._w_state"
    assert "self._w_state += 1" in act.line
    if finding.pattern == "stale check":
        # the woken writer's own check before its wait, a third thread's write, its act
        assert check.actor == act.actor != between.actor
        assert "if self._w_state == 0" in check.line
        return
    assert finding.pattern == "stale hand-off"
    assert len({check.actor, between.actor, act.actor}) == 3


@pytest.mark.parametrize(
    "target", [models.thread_rw_fixed, models.thread_event_recheck], ids=lambda t: t.__name__
)
def test_thread_handoff_carrying_the_state_or_rechecking_is_clean(target: Any) -> None:
    report = racecheck.check(target, detect=True, schedules=300, seed=0)
    assert report.schedules_run >= 1


def test_trio_handoff_token_replays_to_the_same_finding() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(models.trio_rw_buggy, detect=True, schedules=300, seed=0, backend="trio")
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(models.trio_rw_buggy, info.value.schedule, detect=True)
    assert str(again.value.cause) == str(info.value.cause)


def test_trio_condition_waited_with_if_is_flagged() -> None:
    """Three users, one slot: woken by ``notify``, a waiter that does not check again
    takes a slot a newcomer took in between (``if`` where ``while`` belongs)."""
    finding = _finding(models.trio_condition_if, 300, backend="trio")
    assert finding.accesses[-1].target == "state['free']"
    assert finding.pattern in ("stale check", "stale hand-off", "lost update")


def test_thread_fifo_lock_whose_release_wakes_the_head_is_clean() -> None:
    """The releaser wakes the first waiter and leaves its entry for it to remove; newcomers
    line up behind it. No waiter gives up here, so nothing is passed over and left queued:
    the queue keeps its order (this model was once reported as a stale hand-off)."""
    report = racecheck.check(models.thread_fifo_buggy, detect=True, schedules=300, seed=0)
    assert report.schedules_run >= 1


def test_thread_fifo_lock_popping_in_release_is_clean() -> None:
    report = racecheck.check(models.thread_fifo_fixed, detect=True, schedules=300, seed=0)
    assert report.schedules_run >= 1


# -- a walked queue whose woken waiter removes its own entry (aiorwlock 1.5) --------------

import walkqueue_models  # noqa: E402


def test_walked_queue_woken_head_removing_itself_is_clean() -> None:
    report = racecheck.check(walkqueue_models.writers, detect=True, schedules=200, seed=0)
    assert report.schedules_run >= 1
