"""A flag or a check relayed through more calls than detect16 followed (issue 14).

A returned value was followed four calls up from its read: past that it was
"flow", a use nobody knew. So a flag polled through a sixth relay was a false
alarm again ("overwritten before read" on the answer read back), and a room
check relayed as deep decided no act (a miss). The walk now goes on while each
caller only returns the value, up to _RETURN_LEVELS (a safety bound far above
what a library relays). The partners keep the late overwrite flagged.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

import racecheck

sys.path.insert(0, str(Path(__file__).parent))
import helperflag_models as models


class DeepExchange(models.RelayedExchange):
    """``settled`` reaches ``_is_set``'s read through six calls."""

    def settled(self) -> bool:
        return self._relay6()

    def _relay6(self) -> bool:
        return self._relay5()

    def _relay5(self) -> bool:
        return self._relay4()

    def _relay4(self) -> bool:
        return self._relay3()


def _answered_deep(late: bool) -> None:
    box = DeepExchange()

    def asker() -> None:
        box.ask("question")
        while not box.settled():
            time.sleep(0.001)
        answer = box.take()
        assert answer in ("answer", "late")

    def answerer() -> None:
        while not box.asked():
            time.sleep(0.001)
        box.answer("answer")
        if late:
            box._v = "late"

    models._run(asker, answerer)


class DeepPool(models.Pool):
    """``has_room``'s check reaches the caller's ``if`` through six calls."""

    def room(self) -> bool:
        return self._r5()

    def _r5(self) -> bool:
        return self._r4()

    def _r4(self) -> bool:
        return self._r3()

    def _r3(self) -> bool:
        return self._r2()

    def _r2(self) -> bool:
        return self.has_room()


def _open_deep(recheck: bool) -> None:
    pool = DeepPool(1)

    def user() -> None:
        if pool.room():
            if recheck:
                with pool._lock:
                    if pool.opened < pool.size:
                        pool.opened += 1
            else:
                pool.open_one()

    models._run(user, user)


def answer_polled_through_six_calls() -> None:
    _answered_deep(late=False)


def answer_overwritten_after_a_flag_relayed_six_calls() -> None:
    _answered_deep(late=True)


def room_checked_through_six_calls() -> None:
    _open_deep(recheck=False)


def room_rechecked_under_the_lock_after_six_calls() -> None:
    _open_deep(recheck=True)


def _check(target: Any) -> racecheck.Report:
    return racecheck.check(target, detect=True, schedules=200, seed=0, backend="threads")


@pytest.mark.parametrize(
    "target",
    [answer_polled_through_six_calls, room_rechecked_under_the_lock_after_six_calls],
    ids=lambda t: t.__name__,
)
def test_a_flag_relayed_through_six_calls_is_clean(target: Any) -> None:
    report = _check(target)  # no RaceFound is the verdict; the run must have explored
    assert report.exhausted or report.schedules_run == 200


def test_an_answer_overwritten_after_a_flag_relayed_six_calls_is_flagged() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        _check(answer_overwritten_after_a_flag_relayed_six_calls)
    finding = info.value.cause.finding
    assert finding.pattern == "overwritten before read", finding
    assert finding.accesses[0].lineno == models.marked("ask"), finding


def test_a_check_relayed_through_six_calls_decides_the_callers_act() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        _check(room_checked_through_six_calls)
    finding = info.value.cause.finding
    first, *_, last = finding.accesses
    assert first.lineno == models.marked("room"), finding
    assert last.lineno == models.marked("open"), finding
    assert first.actor == last.actor, finding
