"""Say what a suspended asyncio task is waiting for, in words.

Used for deadlock reports and traces. A task's coroutine chain (``cr_await``)
ends in the frame that suspended; the innermost *asyncio* frame names the
operation (``Lock.acquire`` → "acquire Lock#1"), the innermost *user* frame
says where in the user's code it happened.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from racecheck.failure import ResourceNames
from racecheck.sources import is_user_file, source_line
from racecheck.trace import SourceLine

if TYPE_CHECKING:
    from racecheck.recorder import Recorder

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


_ASYNCIO_DIR = os.path.dirname(str(asyncio.__file__))


def record_task_step(
    recorder: Recorder,
    actor: int,
    task: asyncio.Task[Any],
    handle: asyncio.Handle,
    preempted: bool,
) -> None:
    """Run one task step under line collection and hand it to ``recorder``.

    Lives with the asyncio backend (not in the recorder) so that the recorder
    stays backend-neutral and imports point downward.
    """
    from racecheck.linetrace import LineSink, collecting_lines
    from racecheck.recorder import task_display_name, task_label

    if actor not in recorder.actors and actor not in recorder._hidden:
        coro = task.get_coro()
        code = getattr(coro, "cr_code", None)
        if code is not None and code.co_filename.startswith(_ASYNCIO_DIR):
            # asyncio's own housekeeping (Runner shutdown): not part of the story.
            recorder._hidden.add(actor)
            handle._run()
            return
        recorder.actor(actor, task_display_name(task, actor), "task")
        if task.get_name() != task_label(task, actor):
            recorder.renamed[task.get_name()] = task_label(task, actor)
    elif actor not in recorder.actors:
        handle._run()
        return
    sink = LineSink()
    with collecting_lines(sink):
        handle._run()
    if task.done():
        if task.cancelled():
            operation = "cancelled"
        elif task._exception is not None:
            # Not task.exception(): that would mark it retrieved, and an
            # unretrieved exception is itself a failure racecheck reports.
            operation = f"raised {type(task._exception).__name__}"
        else:
            operation = "returned"
        resource = None
    else:
        operation, resource, _ = describe_wait(task, recorder.resources())
    if resource is None and sink.touched is not None:
        resource = recorder.resources().name(sink.touched)
    accesses = tuple(dict.fromkeys(sink.accesses))
    recorder.add_step(actor, sink.lines, operation, resource, preempted, accesses)
