"""Executor work run inline must never wait for a lock: nobody could release it.

A standalone event loop runs ``to_thread``/``run_in_executor`` work inline on
its own thread (see ``asyncio_loop.ControlledLoop.run_in_executor``). While
the work runs, nothing else runs: not the loop's tasks, not other work. So a
lock the work would wait for, and that another party holds, stays held for
good: the work waits in C, where neither the loop nor the watchdog can reach
it, and the explorer thread it blocks is lost for the rest of the process.

Such work (a janus-style ``sync_q.get()`` that the loop feeds, a
``threading.Condition`` the loop notifies) is therefore refused before it
blocks. A profile hook on the loop's thread sees every C call while the work
runs; an ``acquire`` (or ``with``) of a lock that would block raises
:class:`WouldBlock` in the work instead. The caller then moves the
exploration to the threads backend, which runs the work on a thread it
schedules beside the loop.

The hook sees which lock is called, not the arguments: a non-blocking
``acquire(False)`` of a held lock is refused too. Moving such work to
threads costs only the inline half of the exploration, never a verdict.
"""

from __future__ import annotations

import _thread
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType, FunctionType, MethodType
from typing import Any

from racecheck.sources import is_user_file

_LOCK = type(_thread.allocate_lock())
_RLOCK: Any = _thread.RLock
_ACQUIRES = frozenset({"acquire", "acquire_lock", "__enter__"})


class WouldBlock(BaseException):
    """Inline executor work was about to wait for a lock (a BaseException: user
    ``except Exception`` clauses must not swallow it)."""


def would_block(lock: Any) -> bool:
    """Whether acquiring ``lock`` now, on this thread, would wait."""
    if type(lock) is _LOCK:
        return bool(lock.locked())
    if lock._is_owned():
        return False  # re-entry: an RLock this thread holds never waits
    if lock.acquire(False):
        lock.release()
        return False
    return True


def _user_frame(frame: FrameType) -> str:
    """The innermost frame of the user's code (a Condition's wait is the stdlib's)."""
    walk: FrameType | None = frame
    while walk is not None and not is_user_file(walk.f_code.co_filename):
        walk = walk.f_back
    shown = walk or frame
    code = shown.f_code
    name = getattr(code, "co_qualname", code.co_name)
    return f"{name} at {os.path.basename(code.co_filename)}:{shown.f_lineno}"


@contextmanager
def waits_refused(on_refusal: Callable[[str], None]) -> Iterator[None]:
    """Run inline work with blocking lock waits refused; ``on_refusal`` is told where.

    ``on_refusal`` runs before :class:`WouldBlock` is raised, so the run is
    known to be over even if the work catches it. A profile function already
    installed in Python (racecheck's own access record, a debugger's) is
    called first, as it would have been; a profiler in C (cProfile) cannot be
    chained from Python, so under one nothing is refused and a stall is left
    to the watchdog, as before.
    """
    previous = sys.getprofile()

    def refuse(frame: FrameType, event: str, arg: Any) -> None:
        if previous is not None:
            previous(frame, event, arg)  # type: ignore[arg-type]
        if event != "c_call" or getattr(arg, "__name__", None) not in _ACQUIRES:
            return
        lock = getattr(arg, "__self__", None)
        if (type(lock) is _LOCK or type(lock) is _RLOCK) and would_block(lock):
            where = f"{_user_frame(frame)} waits for a lock"
            on_refusal(where)
            raise WouldBlock(where)

    if previous is not None and not isinstance(previous, (FunctionType, MethodType)):
        yield
        return
    sys.setprofile(refuse)
    try:
        yield
    finally:
        sys.setprofile(previous)
