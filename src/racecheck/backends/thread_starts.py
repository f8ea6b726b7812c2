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


_POOL = concurrent.futures.ThreadPoolExecutor
#: the same class, for patching its submit (typed loosely: the stub's signature is generic)
_POOL_CLASS: Any = _POOL


class ThreadStarts:
    """Tells ``on_start`` about each thread the running target starts, before it runs.

    ``on_start`` gets a description (the thread's name and the user's line
    that started it) and may raise to refuse the start.
    """

    def __init__(self, on_start: Callable[[str], None]) -> None:
        self._on_start = on_start
        self._original: Any = None
        self._submit: Any = None
        #: the thread that runs the target, while it does (set by the backend
        #: around the target's run: an attribute, not a context manager, on a
        #: path every schedule takes)
        self.target_thread: int | None = None

    def install(self) -> None:
        original = self._original = getattr(threading, _START_NAME)
        submit = self._submit = _POOL.submit
        on_start = self._on_start

        def start(function: Any, *args: Any, **kwargs: Any) -> Any:
            if _thread.get_ident() == self.target_thread:
                on_start(describe(getattr(function, "__self__", None)))
            return original(function, *args, **kwargs)

        def pool_submit(pool: Any, *args: Any, **kwargs: Any) -> Any:
            # A pool that already has its workers starts none: its work still
            # runs on threads the backend does not schedule.
            if _thread.get_ident() == self.target_thread and pool._threads:
                on_start(describe(pool))
            return submit(pool, *args, **kwargs)

        setattr(threading, _START_NAME, start)
        _POOL_CLASS.submit = pool_submit

    def uninstall(self) -> None:
        if self._original is not None:
            setattr(threading, _START_NAME, self._original)
            _POOL_CLASS.submit = self._submit
            self._original = None
        self.target_thread = None


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
