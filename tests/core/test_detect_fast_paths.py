"""The detector's and the controlled loop's fast paths see what the slow ones saw.

On 3.11 a detected task step gets opcode events only from a line's start up
to its last access (``racecheck.detect._PrunedFrameFeed``): an access later
in the same line, reached after an ``await`` resumes the frame or by a jump
forward, must still reach the detector. The controlled loop writes
``call_soon`` out (``ControlledLoop.call_soon``): its handles must be
asyncio's, in debug mode too. No timings here: ``racecheck bench`` and
docs/architecture.md measure the speed.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest

import racecheck
from racecheck.detect import RaceDetected

_request: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")


class Totals:
    def __init__(self) -> None:
        self.total = 0
        self.spare = 0


async def add_after_await_in_one_line() -> None:
    totals = Totals()

    async def add(amount: int) -> None:
        # the read, the await and the write share one line: the write comes
        # after the frame resumes in the middle of the line
        totals.total = totals.total + await asyncio.sleep(0, amount)

    await asyncio.gather(add(1), add(2))


async def conditional_in_one_line() -> None:
    totals = Totals()

    async def add(use_spare: bool) -> None:
        # a forward jump inside the line skips to the access after it
        current = totals.spare if use_spare else totals.total
        await asyncio.sleep(0)
        totals.total = current + 1

    await asyncio.gather(add(False), add(False))


def _finding(target: Any) -> Any:
    with pytest.raises(racecheck.RaceFound) as caught:
        racecheck.check(target, detect=True, schedules=50, strategy="random", seed=0)
    assert isinstance(caught.value.cause, RaceDetected)
    return caught.value.cause.finding


def test_a_write_after_an_await_in_the_same_line_is_seen() -> None:
    finding = _finding(add_after_await_in_one_line)
    assert finding.pattern == "lost update"
    assert [a.action for a in finding.accesses] == ["read", "wrote", "wrote"]
    assert {a.target for a in finding.accesses} == {"totals.total"}
    # both sides of the update sit on the one line
    assert len({a.lineno for a in finding.accesses}) == 1


def test_a_read_reached_by_a_jump_forward_in_the_line_is_seen() -> None:
    finding = _finding(conditional_in_one_line)
    assert finding.pattern == "lost update"
    assert finding.accesses[0].action == "read"
    assert finding.accesses[0].target == "totals.total"
    assert "totals.spare if use_spare else totals.total" in finding.accesses[0].line


def test_call_soon_handles_are_asyncios_own() -> None:
    seen: list[Any] = []

    async def target() -> None:
        loop = asyncio.get_running_loop()
        _request.set("inside")
        order: list[str] = []
        context = contextvars.copy_context()
        first: Any = loop.call_soon(order.append, "first")
        second = loop.call_soon(lambda: order.append(_request.get()))
        third: Any = loop.call_soon(order.append, "third", context=context)
        await asyncio.sleep(0)
        seen.append((first, second, third, context, list(order)))

    racecheck.check(target, schedules=3, strategy="random")
    assert len(seen) == 3
    for first, second, third, context, order in seen:
        assert (first._callback.__name__, first._args) == ("append", ("first",))
        assert not first._cancelled and first._source_traceback is None
        assert type(first) is asyncio.Handle
        assert third._context is context
        assert second._context is not context  # a copy of the caller's, taken then
        # FIFO, and the callback ran in a copy of the context current at call_soon
        assert order == ["first", "inside", "third"]
        assert "Handle" in repr(first)


def test_call_soon_in_debug_mode_keeps_asyncios_checks() -> None:
    seen: list[Any] = []

    async def target() -> None:
        loop = asyncio.get_running_loop()
        loop.set_debug(True)
        try:
            handle: Any = loop.call_soon(lambda: None)
            seen.append(handle._source_traceback)
            with pytest.raises(TypeError, match="coroutines cannot be used with call_soon"):
                loop.call_soon(target)
        finally:
            loop.set_debug(False)

    racecheck.check(target, schedules=2, strategy="random")
    assert seen and all(trace for trace in seen)
