"""asyncio primitives bound to a loop of an earlier schedule bind again, to this one's.

Since Python 3.10 an ``asyncio.Lock`` (and Event, Condition, Semaphore,
Queue, Barrier: ``asyncio.mixins._LoopBoundMixin``) binds to the loop it
first has to wait under, and waiting under any other loop raises
``RuntimeError: ... is bound to a different event loop``. A primitive made at
import time binds, in a real process, to the one loop that process runs.
Each schedule stands for such a process, but its loop is racecheck's: the
asyncio backend makes one per exploration and replaces it when a run leaves
it unfit for reuse, and a sync target's ``asyncio.run`` makes one per
schedule. A module-level lock that waited once was then "bound to a
different event loop" in every later exploration (a false race at schedule 1)
or after a replaced loop (a state leak that was racecheck's own).

So while a backend is installed, ``_get_loop`` treats a binding to no loop
of the running schedule as none: the primitive binds to the schedule's loop.
Loops are stamped with the schedule they serve (:func:`stamp`); two loops of
one schedule stay two loops, so reusing a lock under a second
``asyncio.run`` inside one target still fails, as it does for real. Every
binding made or replaced here is given back when the backend uninstalls, so
no primitive is left bound to a closed loop of racecheck's.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from racecheck.gctrack import keep_tracked

#: the base of every loop-bound primitive (3.10+)
_BOUND: Any = getattr(getattr(asyncio, "mixins", None), "_LoopBoundMixin", None)

#: the schedule running now (a new number per run, process-wide)
_schedule = [0]
#: primitive -> its binding before racecheck first moved it
_given_back: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_installed: list[Any] = []


def begin_schedule() -> None:
    """A run starts: loops stamped before belong to earlier schedules."""
    _schedule[0] += 1


def stamp(loop: asyncio.AbstractEventLoop) -> None:
    """``loop`` serves the schedule running now."""
    loop._rc_schedule = _schedule[0]  # type: ignore[attr-defined]


def install() -> None:
    if _BOUND is None or _installed:
        return
    original = _BOUND._get_loop
    running_loop = asyncio.events._get_running_loop

    def _get_loop(self: Any) -> Any:
        loop = running_loop()
        bound = self._loop
        if (
            bound is not loop
            and getattr(loop, "_rc_schedule", None) == _schedule[0]
            and getattr(bound, "_rc_schedule", None) != _schedule[0]
        ):
            if self not in _given_back:
                _given_back[self] = bound
            self._loop = loop
            return loop
        return original(self)

    _installed.append(original)
    _BOUND._get_loop = _get_loop
    # Tracked now, before the exploration freezes the heap: an empty dict is
    # not, and tracked by its first entry in a run it would be the one object
    # of generation 2, which turns every collection between runs into a full
    # one (racecheck.gctrack).
    keep_tracked(vars(_given_back)["data"])


def uninstall() -> None:
    if not _installed:
        return
    _BOUND._get_loop = _installed.pop()
    for primitive, binding in list(_given_back.items()):
        primitive._loop = binding
    _given_back.clear()
