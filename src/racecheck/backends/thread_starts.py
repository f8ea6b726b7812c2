"""Threads a task backend does not schedule, noticed where the target starts them.

The asyncio and trio backends schedule the tasks of one loop, on the
explorer's thread. A ``threading.Thread`` the target starts runs beside that
loop in real time: no strategy chooses when it runs, so a lost update between
a task and the thread was "exhausted" after one schedule, and DPOR, which
never saw the thread's accesses, called the program verified.

Every Python thread starts through one function of the ``threading`` module
(``_start_new_thread``; ``_start_joinable_thread`` on 3.13). While a task
backend is installed that name is replaced by a wrapper that tells the
backend before the thread exists, so the backend can move the exploration to
threads or say in its report what it did not cover. Only starts made on the
thread that runs the target count: racecheck's supervisor and watchdogs start
theirs elsewhere. A ``ThreadPoolExecutor`` whose workers already run (a
module-level pool used before) starts no thread for new work: its
``submit`` is watched the same way. Both are put back when the backend
uninstalls.
"""

from __future__ import annotations

import _thread
import concurrent.futures
import os
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from racecheck.sources import is_user_file

#: the module function every ``Thread.start`` calls to make the OS thread
_START_NAME = next(
    name for name in ("_start_joinable_thread", "_start_new_thread") if hasattr(threading, name)
)


#: typed loosely for patching its submit (the stub's signature is generic)
_POOL: Any = concurrent.futures.ThreadPoolExecutor


class ThreadStarts:
    """Notices each thread the running target starts, before it runs, and counts the runs.

    ``refuse`` (optional) hears of each start first and may raise to stop it
    (the asyncio backend moves the exploration to threads that way); a start
    it lets through is counted, so the backend's report can say what it did
    not schedule (:meth:`limit`).
    """

    def __init__(self, refuse: Callable[[str], None] | None = None) -> None:
        self._refuse = refuse
        self._original: Any = None
        self._submit: Any = None
        #: the thread that runs the target, while it does (an attribute, not a
        #: context manager: every schedule's path sets it)
        self.target_thread: int | None = None
        #: runs in which the target started a thread, and the first one's description
        self.runs = 0
        self.first = ""
        self._this_run = False

    def install(self) -> None:
        original = self._original = getattr(threading, _START_NAME)
        submit = self._submit = _POOL.submit

        def start(function: Any, *args: Any, **kwargs: Any) -> Any:
            if _thread.get_ident() == self.target_thread:
                self._noticed(describe(getattr(function, "__self__", None)))
            return original(function, *args, **kwargs)

        def pool_submit(pool: Any, *args: Any, **kwargs: Any) -> Any:
            # A pool that already has its workers starts none: its work still
            # runs on threads the backend does not schedule.
            if _thread.get_ident() == self.target_thread and pool._threads:
                self._noticed(describe(pool))
            return submit(pool, *args, **kwargs)

        setattr(threading, _START_NAME, start)
        _POOL.submit = pool_submit

    def uninstall(self) -> None:
        if self._original is not None:
            setattr(threading, _START_NAME, self._original)
            _POOL.submit = self._submit
            self._original = None
        self.target_thread = None

    def begin_run(self) -> None:
        """The target's run starts on this thread: watch it."""
        self.target_thread = _thread.get_ident()
        self._this_run = False

    def end_run(self) -> None:
        """The target's run is over: stop watching, count it if it started a thread."""
        self.target_thread = None
        self.runs += self._this_run

    def limit(self, backend: str, hint: str = "") -> str | None:
        """What a report must say if a run started threads the backend does not schedule."""
        if not self.runs:
            return None
        return (
            f"the target ran code on threads the {backend} backend does not schedule (first:"
            f" {self.first}); they ran beside the loop in real time, so their interleavings"
            f" with the tasks were not explored{hint}"
        )

    def _noticed(self, description: str) -> None:
        if self._refuse is not None:
            self._refuse(description)
        self._this_run = True
        self.first = self.first or description


def describe(thread: object) -> str:
    """``thread 'bumper', started in handler at app.py:12``: what, and whose line started it."""
    verb = "started"
    if isinstance(thread, _POOL):
        name, verb = f"work for the ThreadPoolExecutor {thread._thread_name_prefix!r}", "submitted"
    else:
        name = f"thread {thread.name!r}" if isinstance(thread, threading.Thread) else "a thread"
    walk: FrameType | None = sys._getframe(2)
    while walk is not None and not is_user_file(walk.f_code.co_filename):
        walk = walk.f_back
    if walk is None:
        return name
    code = walk.f_code
    where = f"{getattr(code, 'co_qualname', code.co_name)} at"
    return f"{name}, {verb} in {where} {os.path.basename(code.co_filename)}:{walk.f_lineno}"
