"""Say what a suspended asyncio task is waiting for, in words.

Used for deadlock reports and traces. A task's coroutine chain (``cr_await``)
ends in the frame that suspended; the innermost *asyncio* frame names the
operation (``Lock.acquire`` → "acquire Lock#1"), the innermost *user* frame
says where in the user's code it happened.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from racecheck.sources import is_user_file, source_line
from racecheck.trace import SourceLine

_OPERATIONS = {
    "Lock.acquire": "acquire",
    "Event.wait": "wait",
    "Condition.wait": "wait",
    "Condition.wait_for": "wait",
    "Semaphore.acquire": "acquire",
    "BoundedSemaphore.acquire": "acquire",
    "Queue.get": "get from",
    "Queue.put": "put into",
    "Queue.join": "join",
    "Barrier.wait": "wait at",
    "sleep": "sleep",
}


class ResourceNames:
    """Stable, readable names for objects ("Lock#1") in order of first mention."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._counts: dict[str, int] = {}
        self._keep: list[Any] = []

    def name(self, obj: Any) -> str:
        key = id(obj)
        found = self._names.get(key)
        if found is None:
            where = getattr(obj, "_rc_where", None)  # a lock made before the run
            if isinstance(where, str) and where:
                found = self._names[key] = where
                self._keep.append(obj)
                return found
            kind = type(obj).__name__
            self._counts[kind] = n = self._counts.get(kind, 0) + 1
            found = self._names[key] = f"{kind}#{n}"
            self._keep.append(obj)  # ids stay unique while named
        return found


def coroutine_frames(task: asyncio.Task[Any]) -> list[Any]:
    """Frames of the task's await chain, outermost first."""
    frames = []
    coro: Any = task.get_coro()
    seen = 0
    while coro is not None and seen < 64:
        seen += 1
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            frames.append(frame)
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return frames


def describe_wait(
    task: asyncio.Task[Any], names: ResourceNames
) -> tuple[str, str | None, SourceLine | None]:
    """(operation, resource name, user source line) for a suspended task."""
    frames = coroutine_frames(task)
    user = next((f for f in reversed(frames) if is_user_file(f.f_code.co_filename)), None)
    where = (
        SourceLine(
            user.f_code.co_filename,
            user.f_lineno,
            source_line(user.f_code.co_filename, user.f_lineno),
        )
        if user is not None
        else None
    )
    operation, resource = "await", None
    for frame in reversed(frames):
        qualname = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
        verb = _OPERATIONS.get(qualname)
        if verb is not None and not is_user_file(frame.f_code.co_filename):
            owner = frame.f_locals.get("self")
            if owner is not None:
                resource = names.name(owner)
                operation = f"{verb} {resource}"
            else:
                operation = verb
            break
    else:
        waiter = getattr(task, "_fut_waiter", None)
        if isinstance(waiter, asyncio.Task):
            operation = f"await {waiter.get_name()}"
        elif waiter is not None and where is not None:
            operation = (
                "await " + where.text.split("await", 1)[-1].strip()
                if "await" in where.text
                else "await future"
            )
        elif where is not None and "await" in where.text:
            operation = "await " + where.text.split("await", 1)[-1].strip()
    return operation, resource, where


def describe_deadlock(
    loop: asyncio.AbstractEventLoop,
    names: ResourceNames | None = None,
    actor_ids: dict[asyncio.Task[Any], int] | None = None,
) -> str:
    """Every pending task, what it waits for, and where.

    With the trace's ``names`` and ``actor_ids`` the report calls tasks and
    locks exactly what the trace printed above it calls them.
    """
    from racecheck.recorder import task_label

    names = names or ResourceNames()
    ids = actor_ids or {}
    lines = ["deadlock: no task can run, no timer is pending, nothing external can wake the loop"]
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in sorted(pending, key=lambda t: (ids.get(t, 1 << 30), t.get_name())):
        operation, _, where = describe_wait(task, names)
        place = f"{os.path.basename(where.filename)}:{where.lineno}  {where.text}" if where else "?"
        label = task_label(task, ids[task]) if task in ids else task.get_name()
        lines.append(f"  {label} ({_coro_name(task)}) waits: {operation} at {place}")
    return "\n".join(lines)


def _coro_name(task: asyncio.Task[Any]) -> str:
    coro = task.get_coro()
    return getattr(coro, "__qualname__", type(coro).__name__)
