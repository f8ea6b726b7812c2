"""Stack dumps of a hung run: every thread, and every task of its event loop.

Taken from the supervising thread while the run is stuck, so everything here
reads other threads' state without stopping them: ``sys._current_frames`` for
threads (the frames of a thread blocked in C stop at the call that blocked),
and ``asyncio.all_tasks(loop)`` with each coroutine's ``cr_await`` chain for
tasks (``Task.get_stack`` shows only the outermost coroutine; the chain shows
which inner await is pending, and on what future).
"""

from __future__ import annotations

import asyncio
import linecache
import sys
import threading
import traceback
from types import FrameType
from typing import Any

from racecheck.textsafe import safe_str

#: deepest coroutine chain followed (a defence against a cycle)
_MAX_CHAIN = 64


def _frame_line(filename: str, lineno: int, name: str) -> list[str]:
    out = [f'  File "{filename}", line {lineno}, in {name}']
    source = linecache.getline(filename, lineno).strip()
    if source:
        out.append(f"    {source}")
    return out


def thread_stacks(skip: set[int] | None = None) -> str:
    """Every live thread's stack except those in ``skip`` (idents)."""
    names = {t.ident: t for t in threading.enumerate()}
    blocks: list[str] = []
    for ident, frame in sorted(sys._current_frames().items()):
        if skip and ident in skip:
            continue
        thread = names.get(ident)
        title = f"thread {thread.name!r}" if thread is not None else f"thread {ident:#x}"
        if thread is not None and thread.daemon:
            title += " (daemon)"
        body = "".join(traceback.format_stack(frame)).rstrip()
        blocks.append(f"{title}, most recent call last:\n{body}")
    return "\n".join(blocks)


def _coroutine_chain(coro: Any) -> list[str]:
    lines: list[str] = []
    seen = 0
    while coro is not None and seen < _MAX_CHAIN:
        seen += 1
        frame: FrameType | None = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            code = frame.f_code
            lines += _frame_line(code.co_filename, frame.f_lineno, code.co_name)
        nxt = getattr(coro, "cr_await", None)
        if nxt is None:
            nxt = getattr(coro, "gi_yieldfrom", None)
        if nxt is not None and not hasattr(nxt, "cr_frame") and not hasattr(nxt, "gi_frame"):
            lines.append(f"  awaiting {safe_str(nxt)[:200]}")
            break
        coro = nxt
    return lines


def task_stacks(loop: asyncio.AbstractEventLoop | None) -> str:
    """Every unfinished task of ``loop``, with the chain of awaits it is suspended in."""
    if loop is None:
        return ""
    tasks: list[asyncio.Task[Any]] = []
    for _ in range(5):  # the set may change size while the loop thread runs
        try:
            tasks = list(asyncio.all_tasks(loop))
            break
        except RuntimeError:
            continue
    blocks: list[str] = []
    for task in sorted(tasks, key=lambda t: t.get_name()):
        coro = task.get_coro()
        name = getattr(coro, "__qualname__", type(coro).__name__)
        lines = [f"task {task.get_name()!r} ({name}), innermost await last:"]
        lines += _coroutine_chain(coro) or ["  (running, or no frame)"]
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def hang_dump(skip: set[int], loop: asyncio.AbstractEventLoop | None) -> str:
    parts = [thread_stacks(skip)]
    tasks = task_stacks(loop)
    if tasks:
        parts.append(tasks)
    return "\n".join(p for p in parts if p)
