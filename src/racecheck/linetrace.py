"""Collect the user-code lines an actor runs, for traces (replay runs only).

Chains whatever tracer was installed before (coverage's, a debugger's), so a
trace replay under ``coverage run`` still counts coverage.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from racecheck.sources import is_user_file

TraceFn = Callable[[FrameType, Any, Any], Any]  # sys.settrace's TraceFunction


class LineSink:
    """Where collected lines go: a list the recorder swaps per step."""

    __slots__ = ("accesses", "lines", "touched")

    def __init__(self) -> None:
        self.lines: list[tuple[str, int]] = []
        self.accesses: list[str] = []
        self.touched: Any = None  # the last asyncio primitive the step used


def _primitive_codes() -> frozenset[Any]:
    """Code objects of asyncio's primitive operations, to name what a step touched."""
    import asyncio

    methods = {
        asyncio.Lock: ("acquire", "release"),
        asyncio.Event: ("set", "wait"),
        asyncio.Condition: ("notify", "notify_all", "wait"),
        asyncio.Semaphore: ("acquire", "release"),
        asyncio.Queue: ("put", "get", "put_nowait", "get_nowait"),
    }
    codes = set()
    for owner, names in methods.items():
        for name in names:
            code = getattr(getattr(owner, name, None), "__code__", None)
            if code is not None:
                codes.add(code)
    return frozenset(codes)


def chained_tracer(sink: LineSink, previous: TraceFn | None) -> TraceFn:
    def local_for(frame: FrameType, prev_local: TraceFn | None) -> TraceFn | None:
        user = is_user_file(frame.f_code.co_filename)
        if not user:
            return prev_local
        state = [prev_local]
        from racecheck.backends.threads.tracer import access_of, points

        table = points(frame.f_code, "access")
        frame.f_trace_opcodes = True

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "opcode":
                operation = table.get(frame.f_lasti)
                if operation is not None:
                    access = access_of(operation)
                    if access is not None:
                        sink.accesses.append(access)
                inner = state[0]
                if inner is not None and getattr(inner, "wants_opcodes", False):
                    state[0] = inner(frame, event, arg)  # the race detector, under the recorder
                return local
            if event == "line":
                sink.lines.append((frame.f_code.co_filename, frame.f_lineno))
            inner = state[0]
            if inner is not None:
                state[0] = inner(frame, event, arg)
            return local

        return local

    primitives = _primitive_codes()

    def global_trace(frame: FrameType, event: str, arg: Any) -> Any:
        prev_local = previous(frame, event, arg) if previous is not None else None
        if frame.f_code in primitives:
            sink.touched = frame.f_locals.get("self")
        return local_for(frame, prev_local)

    return global_trace


class collecting_lines:
    """``with collecting_lines(sink): ...`` traces the current thread into ``sink``."""

    def __init__(self, sink: LineSink) -> None:
        self.sink = sink
        self.previous: TraceFn | None = None

    def __enter__(self) -> LineSink:
        self.previous = sys.gettrace()
        sys.settrace(chained_tracer(self.sink, self.previous))
        return self.sink

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self.previous)


class collecting_accesses:
    """Note the shared-state accesses of one asyncio task step (coverage runs only)."""

    def __init__(self, log: list[tuple[int, str]], actor: int) -> None:
        self.log = log
        self.actor = actor
        self.previous: TraceFn | None = None

    def __enter__(self) -> None:
        from racecheck.backends.threads.tracer import access_of, points

        log, actor = self.log, self.actor
        previous: TraceFn | None = sys.gettrace()
        self.previous = previous

        def global_trace(frame: FrameType, event: str, arg: Any) -> Any:
            prev_local = previous(frame, event, arg) if previous is not None else None
            if not is_user_file(frame.f_code.co_filename):
                return prev_local
            table = points(frame.f_code, "access")
            frame.f_trace_opcodes = True
            chained = [prev_local]

            def local(frame: FrameType, event: str, arg: Any) -> Any:
                if event == "opcode":
                    operation = table.get(frame.f_lasti)
                    if operation is not None:
                        access = access_of(operation)
                        if access is not None:
                            log.append((actor, access))
                    inner = chained[0]
                    if inner is not None and getattr(inner, "wants_opcodes", False):
                        chained[0] = inner(frame, event, arg)  # the race detector's
                    return local
                inner = chained[0]
                if inner is not None:
                    chained[0] = inner(frame, event, arg)
                return local

            return local

        sys.settrace(global_trace)

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self.previous)
