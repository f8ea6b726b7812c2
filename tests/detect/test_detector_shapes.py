"""Shapes real libraries use that the detector must see (issue 14): attribute access
through ``getattr``/``setattr``/``vars``/``__dict__``, closure cells per activation,
class attributes."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import racecheck

sys.path.insert(0, str(Path(__file__).parent))
import marsys_getattr

DETECTOR_KINDS = ("atomicity-violation", "data-race")


def detect(target: Callable[[], Any], schedules: int = 60) -> Any:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=schedules)
    assert info.value.kind in DETECTOR_KINDS, info.value
    return info.value.cause.finding  # type: ignore[union-attr]


def clean(target: Callable[[], Any], schedules: int = 40) -> None:
    report = racecheck.check(target, detect=True, schedules=schedules)
    assert report.schedules_run == schedules or report.exhausted


# -- 1. attribute access spelled as a call or a dictionary ----------------------------


def test_marsys_getattr_shape_is_flagged_on_the_write_and_the_read() -> None:
    finding = detect(marsys_getattr.buggy)
    assert finding.pattern == "overwritten before read"
    first, middle, last = finding.accesses
    assert first.target == last.target == "self._current_instance"
    assert (first.action, middle.action, last.action) == ("wrote", "wrote", "read")
    write, read = marsys_getattr.marked("write"), marsys_getattr.marked("read")
    assert (first.lineno, middle.lineno, last.lineno) == (write, write, read)
    assert first.actor == last.actor != middle.actor


def test_marsys_getattr_fixed_is_clean() -> None:
    clean(marsys_getattr.fixed)


class Box:
    def __init__(self) -> None:
        self.value = "none"


def _handlers(write: Callable[[Box, str], None], read: Callable[[Box], Any]) -> Callable[[], Any]:
    async def target() -> None:
        box = Box()

        async def handle(name: str) -> Any:
            write(box, name)
            await asyncio.sleep(0)
            return read(box)

        await asyncio.gather(handle("a"), handle("b"))

    return target


def _vars_write(box: Box, name: str) -> None:
    vars(box)["value"] = name


def _vars_read(box: Box) -> Any:
    return vars(box)["value"]


def _dict_write(box: Box, name: str) -> None:
    box.__dict__["value"] = name


def _dict_read(box: Box) -> Any:
    return box.__dict__["value"]


def _setattr_dynamic(box: Box, name: str) -> None:
    attribute = "value"
    setattr(box, attribute, name)


@pytest.mark.parametrize(
    ("write", "read"),
    [
        (_vars_write, _vars_read),
        (_dict_write, _dict_read),
        (_setattr_dynamic, _dict_read),
        (_dict_write, lambda box: getattr(box, "value")),  # noqa: B009
    ],
    ids=["vars", "__dict__", "setattr-by-name", "dict-then-getattr"],
)
def test_attribute_through_its_namespace(
    write: Callable[[Box, str], None], read: Callable[[Box], Any]
) -> None:
    finding = detect(_handlers(write, read))
    assert finding.pattern == "overwritten before read"
    assert all(a.target.endswith(".value") for a in finding.accesses), finding


def test_getattr_of_another_name_is_not_that_attribute() -> None:
    def write(box: Box, name: str) -> None:
        setattr(box, "value", name)  # noqa: B010

    clean(_handlers(write, lambda box: getattr(box, "other", None)))
