"""Say what a suspended asyncio task is waiting for, in words.

Used for deadlock reports and traces. A task's coroutine chain (``cr_await``)
ends in the frame that suspended; the innermost *asyncio* frame names the
operation (``Lock.acquire`` → "acquire Lock#1"), the innermost *user* frame
says where in the user's code it happened.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from typing import TYPE_CHECKING, Any

from racecheck.accesses import STUTTER, Access
from racecheck.failure import ResourceNames
from racecheck.sources import is_user_file, source_line
from racecheck.trace import SourceLine

if TYPE_CHECKING:
    from racecheck.accesses import StepLog
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


# -- wakes, for DPOR: who really woke a task -----------------------------------------------


#: the names of a Task-bound callback that is the task's own next step: C's step
#: wrapper (no name) and wake-up, the Python Task's. Any other bound method of a
#: task (``loop.call_soon(task.cancel)``) is a plain callback acting on the task:
#: taken for the task's step, where it lands among the steps was never explored
#: (a gathered child cancelled through call_soon was never reached cancelled).
_TASK_TURNS = frozenset((None, "task_wakeup", "__step", "__wakeup"))


def wake_scheduled(log: StepLog, loop: Any, handle: asyncio.Handle) -> None:
    """A handle was queued on a loop whose run DPOR records (``loop.call_soon``, timers).

    A task's step or wake-up is that task's next step; anything else is a
    plain callback, which carries the wake on (see ``StepLog.scheduled``):
    ``asyncio.wait``, ``gather``, ``wait_for``, ``shield`` and a
    ``TaskGroup`` wake their waiter from a done-callback that the loop runs
    behind the steps already queued, so the step that ran it is not the
    step that caused the wake.
    """
    callback = handle._callback  # type: ignore[attr-defined]
    owner = getattr(callback, "__self__", None)
    own_thread = threading.get_ident() == loop._thread_id
    if isinstance(owner, asyncio.Task) and getattr(callback, "__name__", None) in _TASK_TURNS:
        log.task_born(owner)  # its first step is queued as it is made (all_tasks() sees it)
        log.scheduled(handle, id(owner))
        if own_thread:
            log.queued(loop, handle, id(owner))
        return
    ahead: tuple[Access, ...] = ()
    if _sees_some_done(callback):
        log.blind_spot(PARTIAL_JOIN)
    if own_thread:  # another thread's is recorded as it queues it (handed_off)
        if acting_callback(handle):
            log.user_callback_queued(loop)
        elif not isinstance(handle, asyncio.TimerHandle):
            # a wake's callback runs behind the task steps queued before it (a timer
            # lands when the clock moves, when no task can run)
            ahead = log.handles_ahead(loop, handle)
    log.scheduled(handle, None, ahead)


#: why a DPOR run that used such a join is no proof (see _sees_some_done)
PARTIAL_JOIN = (
    "a join returned with some of its tasks done and others not (asyncio.wait with"
    " FIRST_COMPLETED or FIRST_EXCEPTION, as_completed): which were done depends on where"
    " each completion's callback landed among the tasks' steps, and DPOR does not yet"
    " explore every such placement (tests/core/test_dpor_wake_placement.py), so no"
    " interleaving count is a proof here"
)
#: the completion callbacks of as_completed (3.11-3.12: a closure; 3.13+: a method)
_AS_COMPLETED = frozenset(
    ("as_completed.<locals>._on_completion", "_AsCompletedIterator._handle_completion")
)


def _sees_some_done(callback: Any) -> bool:
    """Is this a completion callback of a join that can return before all its tasks end?

    ``asyncio.wait``'s callback counts down to the end of every task unless
    asked to return at the first completion or exception; ``as_completed``
    hands each task out as it ends. DPOR misses orders of such joins (a
    FIRST_COMPLETED loop verified with a sequence of done sets missing,
    as_completed with four of six orders missing): until it explores them,
    a run that used one is not verified.
    """
    function = getattr(callback, "__func__", callback)
    qualname = getattr(function, "__qualname__", "")
    if qualname in _AS_COMPLETED:
        return True
    if qualname != "_wait.<locals>._on_completion":
        return False
    code = function.__code__
    cells = dict(zip(code.co_freevars, function.__closure__ or (), strict=False))
    cell = cells.get("return_when")
    return cell is not None and cell.cell_contents != asyncio.ALL_COMPLETED


#: modules whose callbacks are asyncio's own machinery (wakes, chained futures);
#: racecheck queues none on a controlled loop (its reference scenarios are user code)
_MACHINERY = ("asyncio.", "concurrent.futures.")


def users_callback(handle: asyncio.Handle) -> bool:
    """Is the handle's callback the user's (anything but asyncio's own machinery)?"""
    return not _callback_name(handle)[0].startswith(_MACHINERY)


#: asyncio's own callbacks that do more than wake a waiter: a deadline scope's
#: expiry cancels its task (``asyncio.timeout``; ``wait_for`` on 3.12+), so
#: where it lands among the tasks' steps decides what the task has done by then,
#: as with a user's callback. Taken for a wake, a task's read after another
#: task's ``timeout(0)`` was never tried after that task's write past the expiry
#: (tests/core/test_dpor_cancelled_waits.py).
_ACTING_MACHINERY = frozenset(("Timeout._on_timeout",))


def acting_callback(handle: asyncio.Handle) -> bool:
    """Does the handle's callback act on more than a waiter's wake (the user's, or a deadline)?

    A deadline only as a ``call_soon`` (due as it was set): a timer lands in the
    ready queue when the virtual clock reaches it, which it does only when no
    task can run, so no task's step is there to land before or after (and as an
    act, every ``wait_for`` of agent-framework #6776's fix raced every step on
    3.13: no verdict in 3,000 runs, 67 before).
    """
    module, qualname = _callback_name(handle)
    if not module.startswith(_MACHINERY):
        return True
    return qualname in _ACTING_MACHINERY and not isinstance(handle, asyncio.TimerHandle)


def _callback_name(handle: asyncio.Handle) -> tuple[str, str]:
    function: Any = handle._callback  # type: ignore[attr-defined]
    while isinstance(function, functools.partial):
        function = function.func
    function = getattr(function, "__func__", function)
    return getattr(function, "__module__", None) or "", getattr(function, "__qualname__", "")


def task_step_begins(log: StepLog, task: asyncio.Task[Any]) -> int:
    """A task step starts: it follows the step that woke it. The step's index.

    Woken from a join of every task of a set (``gather``, a ``TaskGroup``'s
    end) that completed, it also follows the end of each of those tasks:
    one callback per task counted them, and only the last one's chain woke
    it, so the others' ends would seem unordered before it.
    """
    log.woken(id(task))
    loop = task._loop
    if getattr(getattr(loop, "_rc_host", None), "schedules_threads", False):
        log.loop_turn(loop)  # the loop's thread is this task's until the step ends
    else:
        log.task_look(loop)  # what the user's callbacks queued lands around it
    notes = log.notes
    joined = notes.pop(("joins", id(task)), None)
    if joined is not None:
        future, tasks = joined
        if future.done() and not future.cancelled() and future._exception is None:
            ends = [notes.get(("end", id(t))) for t in tasks]
            log.follow(end[1] for end in ends if end is not None)
    return log.step


def task_step_ended(log: StepLog, task: asyncio.Task[Any], began: int) -> None:
    """A task step ended: where a task ended, and what a suspended one waits for.

    Suspended on a future, its wait is a stutter, like a thread blocked on
    a held lock (``accesses.STUTTER``): with the future resolved first the
    await would simply have gone on, which is the task's next step anyway,
    so the suspension is not ordered against the step that ends it.
    Without this, DPOR tried the resolution first, and that run only found
    the same execution again, blocked by its sleep set. Only for a step
    that began where the task step did (a loop inside a thread may cut a
    task step into several): its first step carries the wake (``WAKE``),
    which is what orders the task after its waker.
    """
    if task.done():
        if log.actor is not None:
            log.notes[("end", id(task))] = (task, log.step)
            log.finished(task)  # an await of it goes on from now (StepLog.awaited)
            log.task_ended()  # all_tasks() leaves it out from now
        return
    waiter = task._fut_waiter  # type: ignore[attr-defined]
    if waiter is None:
        return
    if began == log.step:
        log.current.append((STUTTER, 0, False, ""))
    joined = _joined_tasks(task, waiter)
    if joined is not None:
        log.notes[("joins", id(task))] = (waiter, joined)


def _joined_tasks(task: asyncio.Task[Any], waiter: Any) -> tuple[Any, ...] | None:
    """The tasks that all end before ``waiter`` gets a result, if it is such a join.

    ``gather``'s future gets its result only once every child is done (an
    exception, with ``return_exceptions`` off, comes at the first failure:
    then the result is not set, and nothing is claimed). A ``TaskGroup``'s
    exit waits on a future that its last task's end sets.
    """
    children = getattr(waiter, "_children", None)
    if isinstance(children, list) and type(waiter).__name__ == "_GatheringFuture":
        return tuple(children)
    for frame in reversed(coroutine_frames(task)):
        code = frame.f_code
        if code.co_name in ("__aexit__", "_aexit") and code.co_filename.endswith(_TASKGROUPS):
            group = frame.f_locals.get("self")
            if getattr(group, "_on_completed_fut", None) is waiter:
                return tuple(group._tasks)
            return None
    return None


_TASKGROUPS = os.path.join("asyncio", "taskgroups.py")
