"""Collect the user-code lines an actor runs, for traces (replay runs only).

Chains whatever tracer was installed before (coverage's, a debugger's), so a
trace replay under ``coverage run`` still counts coverage.

Chaining rules every racecheck trace function follows (here, in the 3.11
threads tracer and in the race detector), learnt from coverage's C tracer:

- A chained tracer may install itself while racecheck calls it: ``CTracer``
  re-installs itself (``PyEval_SetTrace``) on every "call" event it is handed
  through its Python interface. Left alone, racecheck's tracer is gone after
  the first call and sees no more lines. So after handing a "call" event on,
  racecheck puts its own function back in front, and chains whatever the
  other tracer installed (:func:`chain_call`).
- A tracer object is never handed to another thread (:func:`inheritable_trace`).
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from types import FrameType, FunctionType, MethodType
from typing import Any

from racecheck.sources import is_user_file

TraceFn = Callable[[FrameType, Any, Any], Any]  # sys.settrace's TraceFunction


def inheritable_trace() -> TraceFn | None:
    """The caller's trace function, if racecheck may install it in another thread.

    A thread started the usual way does not inherit its parent's tracer: it
    gets ``threading.settrace``'s hook, which coverage uses to give every
    thread a ``CTracer`` of its own. A ``CTracer`` keeps its call stack in C;
    driven from two threads it corrupts that stack and crashes CPython
    (signal 11). So racecheck's own threads (the explorer, pooled workers)
    inherit the caller's tracer only when no hook will give them one and it
    is plain Python code (a debugger's or a test's function), which can be
    shared.
    """
    trace = sys.gettrace()
    if trace is None or threading.gettrace() is not None:
        return None
    return trace if isinstance(trace, FunctionType | MethodType) else None


def chain_call(
    previous: TraceFn, own: TraceFn, frame: FrameType, arg: Any
) -> tuple[TraceFn | None, TraceFn | None]:
    """Hand a "call" event to the chained tracer; keep ``own`` installed.

    Returns (the chained tracer's local function for this frame, the tracer to
    chain from now on): the chained tracer may have installed itself or
    another one (coverage's per-thread installer replaces itself with a
    ``CTracer``), or removed itself (a stopped ``CTracer``).

    What was installed before the call is put back, not ``own``: ``own`` may
    itself be chained by another racecheck tracer (the detector's step feed
    over the recorder's line collector), and re-installing ``own`` would make
    it chain the outer one, a cycle.
    """
    installed = sys.gettrace()
    prev_local = previous(frame, "call", arg)
    current: TraceFn | None = sys.gettrace()
    if current is not installed:
        sys.settrace(installed if installed is not None else own)
        return prev_local, current
    return prev_local, previous


class LineSink:
    """Where collected lines go: a list the recorder swaps per step."""

    __slots__ = ("accesses", "lines", "touched")

    def __init__(self) -> None:
        self.lines: list[tuple[str, int]] = []
        self.accesses: list[str] = []
        self.touched: Any = None  # the last asyncio primitive the step used


@functools.cache
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
    """A trace function collecting into ``sink``, chained to ``previous``.

    ``global_trace.chained()`` tells which tracer it chains by now (see
    :func:`chain_call`), to put back when collection ends.

    Objects, not closures: a closure that returns itself (or names itself
    through ``nonlocal``) is a reference cycle, and one is made per traced
    frame and step. With the collector off inside a run, a traced replay of
    a million steps would pile up gigabytes of them.
    """
    return _LineTracer(sink, previous)


class _LineTracer:
    __slots__ = ("previous", "primitives", "sink")

    def __init__(self, sink: LineSink, previous: TraceFn | None) -> None:
        self.sink = sink
        self.previous = previous
        self.primitives = _primitive_codes()

    def chained(self) -> TraceFn | None:
        return self.previous

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        prev_local = None
        if self.previous is not None:
            prev_local, self.previous = chain_call(self.previous, self, frame, arg)
        if frame.f_code in self.primitives:
            self.sink.touched = frame.f_locals.get("self")
        if not is_user_file(frame.f_code.co_filename):
            return prev_local
        from racecheck.operations import points

        frame.f_trace_opcodes = True
        return _FrameLines(self.sink, points(frame.f_code, "access"), prev_local)


class _FrameLines:
    """The local trace function of one user frame: its lines and accesses."""

    __slots__ = ("inner", "sink", "table")

    def __init__(self, sink: LineSink, table: dict[int, str], inner: TraceFn | None) -> None:
        self.sink = sink
        self.table = table
        self.inner = inner

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "opcode":
            operation = self.table.get(frame.f_lasti)
            if operation is not None:
                from racecheck.operations import access_of

                access = access_of(operation)
                if access is not None:
                    self.sink.accesses.append(access)
            inner = self.inner
            if inner is not None and getattr(inner, "wants_opcodes", False):
                self.inner = inner(frame, event, arg)  # the race detector, under the recorder
            return self
        if event == "line":
            self.sink.lines.append((frame.f_code.co_filename, frame.f_lineno))
        inner = self.inner
        if inner is not None:
            self.inner = inner(frame, event, arg)
        return self


class collecting_lines:
    """``with collecting_lines(sink): ...`` traces the current thread into ``sink``."""

    def __init__(self, sink: LineSink) -> None:
        self.sink = sink
        self.trace: Any = None

    def __enter__(self) -> LineSink:
        self.trace = chained_tracer(self.sink, sys.gettrace())
        sys.settrace(self.trace)
        return self.sink

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self.trace.chained())


class collecting_accesses:
    """Note the shared-state accesses of one asyncio task step (coverage runs only)."""

    def __init__(self, log: list[tuple[int, str]], actor: int) -> None:
        self.log = log
        self.actor = actor
        self.previous: TraceFn | None = None

    def __enter__(self) -> None:
        from racecheck.operations import access_of, points

        log, actor = self.log, self.actor
        self.previous = sys.gettrace()

        def global_trace(frame: FrameType, event: str, arg: Any) -> Any:
            prev_local = None
            if self.previous is not None:
                prev_local, self.previous = chain_call(self.previous, global_trace, frame, arg)
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
