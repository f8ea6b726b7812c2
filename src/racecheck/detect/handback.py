"""Positions handed back from a worker: whose act a ``bisect`` in a worker decides.

A position (``bisect``, ``lst.index``) located in a worker decides the act of
whoever handed the job out and took its result back. The detector sees that
hand-back three ways:

* **asyncio**: the worker's completion wakes the awaiting task in the step
  that located the position (the detector's ``woken``; no help needed here).
* **threads**: the thread that acts *waited for* the worker after the worker
  located the position (a future's result, done or waited for, a join, a
  queue item): its signal clock covers the worker's clock at the locating
  access. Or it found the worker's answer published: it checked, under a
  lock, a flag the worker set under that lock after locating (the
  detector's ``published``). A lock hand-off alone is not waiting, so a
  third thread that merely took the same lock after the worker is not taken
  for the one it worked for.
* **trio**: racecheck runs ``trio.to_thread.run_sync`` workers inline, in the
  step of the task that asked, so the worker's accesses are the task's own.
  The worker's frame has returned by the time the task acts; the frame that
  counts is the user frame that awaited ``to_thread.run_sync``, found above
  the worker on the stack when the position is located.

Kept apart from ``detector.py`` so the rule is one small piece: the detector
calls :func:`awaiting_frame` when a position is located and
:func:`waited_for` when a sequence is rewritten.
"""

from __future__ import annotations

from types import FrameType
from typing import Any

#: packages whose frames sit between a user's ``await to_thread.run_sync(...)``
#: and the worker function (anyio and asyncer wrap trio's)
_WORKER_PLUMBING = ("trio", "anyio", "asyncer", "outcome", "sniffio", "racecheck")


def _module(frame: FrameType) -> str:
    name = frame.f_globals.get("__name__", "")
    return name if isinstance(name, str) else ""


def _plumbing(frame: FrameType) -> bool:
    root = _module(frame).partition(".")[0]
    return root in _WORKER_PLUMBING


def awaiting_frame(frame: FrameType) -> FrameType | None:
    """The user frame awaiting the trio ``to_thread`` worker that runs ``frame``, if any.

    Found by walking up to ``trio.to_thread.run_sync``'s own frame (trio's
    ``_threads`` module) and on past trio's, anyio's and racecheck's frames.
    None when ``frame`` does not run inside an inline worker.
    """
    current: FrameType | None = frame.f_back
    depth = 0
    while current is not None and depth < 48:
        if current.f_code.co_name == "to_thread_run_sync" and _module(current).startswith("trio."):
            caller = current.f_back
            while caller is not None and _plumbing(caller):
                caller = caller.f_back
            return caller
        current = current.f_back
        depth += 1
    return None


def waited_for(signals: dict[int, dict[int, int]], hb: int, locator_hb: int, tick: int) -> bool:
    """Did ``hb`` wait for ``locator_hb`` after that one's clock reached ``tick``?

    A signal sent before the locating access carries a smaller tick (the
    sender's clock moves on after each release), so only a hand-over made
    after the position was found counts.
    """
    if hb == locator_hb:
        return False
    clock: Any = signals.get(hb)
    return clock is not None and clock.get(locator_hb, 0) >= tick
