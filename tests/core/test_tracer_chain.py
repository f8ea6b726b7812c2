"""racecheck's tracers chain the caller's tracer, and may be stacked on each other.

During a traced replay the detector's step feed sits on top of the recorder's
line collector, which chains the caller's tracer (a debugger's, or a test's).
Each link used to assume it was the one ``sys.gettrace()`` returns, so an inner
link re-installed itself and chained the outer one: a cycle, a RecursionError
inside the event loop, and on 3.13 "Cannot close a running event loop".
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

from racecheck.linetrace import LineSink, chained_tracer


def _work() -> int:
    total = 0
    for value in range(3):
        total += value
    return total


def test_stacked_tracers_keep_their_links_and_call_the_caller_once_per_frame() -> None:
    calls: list[str] = []

    def caller_trace(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is _work.__code__:
            calls.append(frame.f_code.co_name)

    inner = chained_tracer(LineSink(), caller_trace)
    outer = chained_tracer(LineSink(), inner)
    previous = sys.gettrace()
    sys.settrace(outer)
    try:
        assert _work() == 3
        installed = sys.gettrace()
    finally:
        sys.settrace(previous)
    assert installed is outer
    assert inner.chained() is caller_trace  # type: ignore[attr-defined]
    assert outer.chained() is inner  # type: ignore[attr-defined]
    assert calls == ["_work"]


def test_a_chained_tracer_that_replaces_itself_is_followed_without_losing_the_top() -> None:
    replaced: list[str] = []

    def successor(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is _work.__code__:
            replaced.append("successor")

    def installer(frame: FrameType, event: str, arg: Any) -> None:
        # coverage's per-thread installer hands over to its real tracer this way
        sys.settrace(successor)
        return successor(frame, event, arg)

    inner = chained_tracer(LineSink(), installer)
    outer = chained_tracer(LineSink(), inner)
    previous = sys.gettrace()
    sys.settrace(outer)
    try:
        _work()
        _work()
        installed = sys.gettrace()
    finally:
        sys.settrace(previous)
    assert installed is outer
    assert inner.chained() is successor  # type: ignore[attr-defined]
    assert outer.chained() is inner  # type: ignore[attr-defined]
    assert replaced == ["successor", "successor"]
