"""3.12+: a call's callee recipe judged at the CALL event answers as the INSTRUCTION road.

In a race-detection run (no DPOR step log) the monitoring feed leaves a
call's ``callee`` recipe to the ``CALL`` event that follows the call's
``INSTRUCTION`` event, which hands over the callable: a function, method or
class written in Python ends there, unless a write waits to be settled or
the actor changed (racecheck.detect.stepmon). Each program below runs with
that road and with it closed (every callee recipe taken at its INSTRUCTION
event, as before); the verdict, the finding and the schedule it was found in
must be the same. The programs put a call where the detector has work to
do: right after a write, first in a resumed step (an actor switch), C
callable objects handed shared state, a class made in Python.
"""

from __future__ import annotations

import asyncio
import functools
import operator
import sys
from collections.abc import Callable
from typing import Any

import pytest

import racecheck
from racecheck.detect import detector as detector_module
from racecheck.detect import finding_of, stepmon

pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 12), reason="the CALL event is sys.monitoring's (3.12+)"
)


class Box:
    def __init__(self) -> None:
        self.n = 0
        self.items: list[int] = []
        self.seen = -1


def _note(box: Box) -> None:
    box.seen = box.n


async def _bump_then_note(box: Box) -> None:
    current = box.n
    await asyncio.sleep(0)
    box.n = current + 1
    _note(box)  # a Python call right after a write: the write is settled first


def _idle() -> None:
    pass


async def _resume_into_a_call(box: Box) -> None:
    idle = _idle  # a local: the call below is the first event of the resumed step
    current = box.n
    await asyncio.sleep(0)
    idle()
    box.n = current + 1


_GET_N = operator.attrgetter("n")


async def _read_through_c(box: Box) -> None:
    current = _GET_N(box)  # a C callable object reads the shared attribute
    await asyncio.sleep(0)
    box.n = current + 1


async def _read_through_partial(box: Box) -> None:
    current = functools.partial(getattr, box)("n")  # a C callable object calling C
    await asyncio.sleep(0)
    box.n = current + 1


async def _locked_bump(box: Box, lock: asyncio.Lock) -> None:
    async with lock:
        current = box.n
        await asyncio.sleep(0)
        box.n = current + 1
        _note(Box())  # a class made in Python, then a function: nothing to report


def _twice(step: Callable[[Box], Any]) -> Callable[[], Any]:
    async def target() -> None:
        box = Box()
        await asyncio.gather(step(box), step(box))

    return target


async def locked() -> None:
    box, lock = Box(), asyncio.Lock()
    await asyncio.gather(_locked_bump(box, lock), _locked_bump(box, lock))


PROGRAMS: dict[str, tuple[Callable[[], Any], bool]] = {
    "a Python call after a write": (_twice(_bump_then_note), True),
    "a resumed step starting at a call": (_twice(_resume_into_a_call), True),
    "a C callable object handed shared state": (_twice(_read_through_c), True),
    "a C callable object calling C": (_twice(_read_through_partial), True),
    "classes and functions under a lock": (locked, False),
}


def _outcome(target: Callable[[], Any]) -> tuple[Any, ...]:
    """The verdict, the finding, and where it was found (or how much ran clean)."""
    try:
        report = racecheck.check(target, detect=True, strategy="random", schedules=40, seed=0)
    except racecheck.RaceFound as exc:
        return ("found", exc.kind, exc.schedule, exc.schedules_run, finding_of(exc))
    return ("clean", report.schedules_run, report.distinct_schedules)


def _instruction_road_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stepmon, "_CALL_OPCODES", frozenset())


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_call_road_answers_as_the_instruction_road(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    target, expect_finding = PROGRAMS[name]
    call_road = _outcome(target)
    assert (call_road[0] == "found") is expect_finding, call_road
    _instruction_road_only(monkeypatch)
    assert _outcome(target) == call_road


def _callees_reaching_the_detector(monkeypatch: pytest.MonkeyPatch) -> int:
    counted = [0]
    on_recipe = detector_module.Detector.on_recipe

    def counting(self: Any, frame: Any, recipe: Any, actor: int, hb: int) -> None:
        counted[0] += recipe.op == "callee"
        on_recipe(self, frame, recipe, actor, hb)

    with monkeypatch.context() as patch:
        patch.setattr(detector_module.Detector, "on_recipe", counting)
        _outcome(locked)
    return counted[0]


def test_the_call_road_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Otherwise the comparison above proves little: Python callees end at the CALL event."""
    taken = _callees_reaching_the_detector(monkeypatch)
    _instruction_road_only(monkeypatch)
    closed = _callees_reaching_the_detector(monkeypatch)
    assert closed > 0
    assert taken < closed / 2
