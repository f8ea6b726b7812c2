"""Task names in a trace: the ✗ line names tasks as the columns do, and equal names
are told apart (real asyncio explorations)."""

from __future__ import annotations

import asyncio

import pytest

import racecheck

pytestmark = pytest.mark.usefixtures("real_engine")


class Box:
    def __init__(self) -> None:
        self.owner = ""


async def claim(box: Box) -> None:
    me = asyncio.current_task()
    assert me is not None
    if not box.owner:
        await asyncio.sleep(0)
        if box.owner:
            raise AssertionError(f"{me.get_name()} found the box taken by {box.owner}")
        box.owner = me.get_name()


async def two_claims() -> None:
    box = Box()
    await asyncio.gather(claim(box), claim(box))


def _trace(target: object) -> racecheck.RaceFound:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, schedules=100)  # type: ignore[arg-type]
    assert info.value.trace is not None
    return info.value


def test_the_failure_line_uses_the_traces_task_names() -> None:
    found = _trace(two_claims)
    trace = found.trace
    assert trace is not None and trace.failure is not None
    columns = {a.name.split(" · ")[0] for a in trace.actors}
    named = set(__import__("re").findall(r"Task-\d+", trace.failure.message))
    assert named, trace.failure.message
    assert named <= columns, (named, columns)
    # and the headline says the same
    assert set(__import__("re").findall(r"Task-\d+", found.summary)) == named


async def same_names() -> None:
    box = Box()
    first = asyncio.create_task(claim(box), name="claimer")
    second = asyncio.create_task(claim(box), name="claimer")
    await asyncio.gather(first, second)


def test_tasks_with_the_same_name_are_told_apart() -> None:
    trace = _trace(same_names).trace
    assert trace is not None
    names = [a.name for a in trace.actors if a.name.startswith("claimer")]
    assert len(names) == 2 and len(set(names)) == 2, names
