"""The detector sees a frame that CPython 3.11 resumes without a call event.

A task cancelled while it awaits a helper coroutine (``await helper()``) is
resumed by a throw that goes straight to the innermost frame; when the helper
catches the cancellation and returns, 3.11 resumes the outer frame past its
``await`` without the call event that gives each step's frame its trace
function. That frame kept the trace function of the step it last ran in, whose
feed is over, and every access it made after the ``await`` went unseen: by
the race detector (no report), and by DPOR (a program verified with states left
out: tests/core/test_dpor_cancelled_waits.py). 3.12+ reports these frames
through sys.monitoring and never lost them.
"""

from __future__ import annotations

import asyncio

import pytest

import racecheck
from racecheck.detect import finding_of


async def _swallow_cancellation(awaitable: object) -> None:
    try:
        await awaitable  # type: ignore[misc]
    except asyncio.CancelledError:
        asyncio.current_task().uncancel()  # type: ignore[union-attr]


class Counter:
    def __init__(self) -> None:
        self.value = 0


async def unguarded_increments_after_a_swallowed_cancellation() -> None:
    counter = Counter()
    event = asyncio.Event()

    async def bump_after_cancel() -> None:
        me = asyncio.current_task()
        asyncio.get_running_loop().call_soon(me.cancel)  # type: ignore[union-attr]
        await _swallow_cancellation(event.wait())
        counter.value += 1  # between bump()'s read and write: a lost update

    async def bump() -> None:
        current = counter.value
        await asyncio.sleep(0)
        counter.value = current + 1

    await asyncio.gather(bump_after_cancel(), bump())


async def a_write_on_the_await_line_after_a_swallowed_cancellation() -> None:
    counter = Counter()
    event = asyncio.Event()

    async def store() -> None:
        me = asyncio.current_task()
        asyncio.get_running_loop().call_soon(me.cancel)  # type: ignore[union-attr]
        # the store runs after the resumption, on the await's own line
        counter.value = await _value_after(_swallow_cancellation(event.wait()))

    async def bump() -> None:
        current = counter.value
        await asyncio.sleep(0)
        counter.value = current + 1

    await asyncio.gather(store(), bump())


async def _value_after(awaitable: object) -> int:
    await awaitable  # type: ignore[misc]
    return 1


@pytest.mark.parametrize(
    "target",
    [
        unguarded_increments_after_a_swallowed_cancellation,
        a_write_on_the_await_line_after_a_swallowed_cancellation,
    ],
)
def test_the_detector_sees_accesses_after_a_swallowed_cancellation(target: object) -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(target, strategy="random", schedules=50, detect=True)  # type: ignore[arg-type]
    finding = finding_of(found.value)
    assert finding is not None, found.value
    assert any(access["target"].endswith(".value") for access in finding["accesses"]), finding
