"""The asyncio backend: an ``async def`` target on a :class:`ControlledLoop`.

The loop is never installed through the event loop policy, which is global
state other code (pytest plugins, the user's own setup) may be relying on.
Each schedule runs the target the way ``asyncio.Runner`` would (a copied
context, then every leftover task cancelled, async generators and the default
executor shut down), on a loop that is *reused* from one schedule to the next.
A new ``SelectorEventLoop`` (an epoll fd, a socket pair) costs more than a
small schedule, so a fresh loop per schedule would mostly measure loop
creation. Reuse is safe because nothing of a run survives on the loop: its
ready queue and timers are emptied, its task bookkeeping is reset, and a loop
the run changed in any way racecheck does not reset (a task factory or
exception handler set, debug mode, a reader, a signal handler, async
generators or an executor left, a task that would not die) is closed and
replaced (:meth:`ControlledLoop._rc_reusable`).

The loop is made when the backend installs, before the first run: the
exploration freezes the heap just before that run (``racecheck.explore``), so
the loop, its selector and its self-pipe are left out of the collection that
follows every schedule. Made inside the first run, they were walked by every
one of those collections, which cost more than their size suggests.
"""

from __future__ import annotations

import asyncio
import contextvars
import weakref
from collections.abc import Callable
from typing import Any

from racecheck.backends import loop_binding
from racecheck.backends.asyncio_loop import (
    ControlledLoop,
    DetectingLoop,
    StandaloneHost,
    loop_ahead,
    new_loop,
)
from racecheck.backends.thread_starts import ThreadStarts
from racecheck.detect.stepmon import release as release_step_monitor
from racecheck.engine import Controller, Failure, NeedsBackend, RunAborted
from racecheck.errors import UsageError
from racecheck.gctrack import keep_tracked

#: the warning of an exploration whose executor work ran inline only
INLINE_EXECUTOR_WORK = (
    "executor work (to_thread/run_in_executor) ran inline on the loop's thread, as one"
    " step: its races with the loop's tasks and with other executor work were not explored"
    " here (backend='threads' runs it on threads it schedules line by line)"
)


class AsyncioBackend:
    name = "asyncio"
    granularity = "task"

    def __init__(self, target: Callable[[], Any], *, movable: bool = False) -> None:
        self.target = target
        #: the caller left the backend to racecheck: a thread the target starts
        #: moves the exploration to the threads backend (see _thread_started)
        self.movable = movable
        self.runs_waiting_outside = 0
        self._controller: Controller | None = None
        self._thread_starts = ThreadStarts(self._move_to_threads)
        #: runs whose executor work ran inline, as one atomic step (see blind_spots)
        self.runs_with_inline_executor_work = 0
        self._stalled_in_work = False
        self._detecting = False

    @property
    def scheduling_limit(self) -> str | None:
        """Why "every schedule ran" would overclaim (see racecheck.explore), if it would."""
        limits = []
        started = self._thread_starts.limit("asyncio", " (backend='threads' schedules both)")
        if started:
            limits.append(started)
        if self.runs_waiting_outside:
            limits.append(
                "the loop waited for work from threads or I/O racecheck does not run"
                " (call_soon_threadsafe from a real thread, a socket); when that work arrives"
                " was not explored"
            )
        return "; ".join(limits) or None

    def _move_to_threads(self, description: str) -> None:
        """The target starts a thread: on the default backend, move to the threads backend."""
        controller = self._controller
        if self.movable and controller is not None:
            if controller.internal_error is None:
                controller.internal_error = NeedsBackend(
                    "threads",
                    f"the target started a thread or pool work ({description}), which would"
                    " run beside the event loop where the asyncio backend chooses nothing; the"
                    " threads backend schedules it and the loop's tasks line by line",
                )
            controller.interrupt()
            raise RunAborted

    def blind_spots(self) -> list[str]:
        """Why a green exploration may have missed races inside executor work."""
        if not self.runs_with_inline_executor_work:
            return []
        return [INLINE_EXECUTOR_WORK]

    @property
    def stalled_in_executor_work(self) -> bool:
        """The run is stuck inside inline executor work (it waits for the loop it blocks)."""
        loop = getattr(self, "_loop", None)
        return self._stalled_in_work or (loop is not None and loop._rc_in_executor_work)

    def install(self) -> None:
        self._thread_starts.install()
        loop_binding.install()
        # Made now, not in the first run: what install makes joins the heap
        # the exploration freezes before its first run, so the collection
        # after every run need not walk the loop (racecheck.between_runs).
        self._loop: ControlledLoop | None = loop_ahead(self._detecting)
        # Two dicts every run fills and leaves empty: the loop's task
        # numbering and asyncio's running-task table. Tracked now, they join
        # the heap frozen before the first run (racecheck.gctrack).
        keep_tracked(self._loop._rc_ids)
        keep_tracked(_CURRENT_TASKS)
        if asyncio._get_running_loop() is None:
            # The same for this thread's own state dict, where every run
            # stores asyncio's running-loop holder (on 3.12 a tracked object
            # while it holds a loop: the dict was young again after every full
            # collection). The loop is named running and at once not running
            # again, with nothing run in between, so that the dict is tracked
            # before the heap is frozen.
            asyncio.events._set_running_loop(self._loop)
            asyncio.events._set_running_loop(None)

    def uninstall(self) -> None:
        self._thread_starts.uninstall()
        loop_binding.uninstall()
        release_step_monitor()  # the detector's sys.monitoring tool (3.12+), if a step took it
        loop, self._loop = getattr(self, "_loop", None), None
        # The supervisor gives up on a stalled run before it uninstalls: remember where.
        self._stalled_in_work |= loop is not None and loop._rc_in_executor_work
        # Still running: the supervisor gave up on a stuck explorer, whose
        # run_once closes the loop if it ever unwinds (it is no longer ours).
        if loop is not None and not loop.is_closed() and not loop.is_running():
            loop.close()

    def enable_detection(self) -> None:
        # task steps are traced one at a time by the controlled loop; runs
        # will detect, so the loop made ahead has the detector's hooks
        self._detecting = True

    def _loop_for(self, host: StandaloneHost) -> ControlledLoop:
        loop = getattr(self, "_loop", None)
        detecting = host.controller.detector is not None
        if (
            loop is not None
            and isinstance(loop, DetectingLoop) == detecting
            and loop._rc_reusable()
        ):
            loop._rc_rebind(host)
            return loop
        if loop is not None and not loop.is_closed():
            loop.close()
        loop = self._loop = new_loop(host)
        return loop

    def run_once(self, controller: Controller) -> None:
        host = StandaloneHost(controller)
        loop_binding.begin_schedule()
        loop = self._loop_for(host)
        raiser: int | None = 1
        self._controller = controller
        starts = self._thread_starts
        try:
            try:
                try:
                    task = loop.create_task(self.target(), context=contextvars.copy_context())
                    starts.begin_run()
                    try:
                        loop.run_until_complete(task)
                    finally:
                        starts.end_run()
                except RunAborted:
                    raise
                except BaseException as exc:
                    # Before the tasks are cancelled and forgotten.
                    raiser = _raiser(loop, exc)
                    raise
                check_unretrieved(loop, controller)
            finally:
                _wind_down(loop)
        except RunAborted:
            pass
        except BaseException as exc:
            # KeyboardInterrupt and SystemExit included: the explorer thread
            # never receives a signal (a real Ctrl-C goes to the supervising
            # thread), so whatever arrives here was raised by the code under
            # test, and that is this schedule's failure, not the caller's.
            if controller.aborting:
                pass
            elif isinstance(exc, UsageError):
                # racecheck misused from inside the target (a nested check()):
                # the caller's mistake, raised as such, not a race.
                controller.internal_error = exc
                controller.interrupt()
            else:
                controller.fail(Failure("exception", exc, actor=raiser))
        finally:
            # self-pipe writes: call_soon_threadsafe, from a thread racecheck does not run
            if host.waited_outside or loop._rc_outside_wakeups:
                self.runs_waiting_outside += 1
            if loop._rc_ran_executor_work:
                self.runs_with_inline_executor_work += 1
            self._controller = None
            if self._loop is not loop or loop._closed or not loop._rc_reusable():  # type: ignore[attr-defined]
                if self._loop is loop:
                    self._loop = None
                if not loop.is_closed():
                    loop.close()
            loop._rc_forget()


#: the table of the task each running loop is stepping (the C accelerator's
#: dict on 3.11-3.13), when this Python has one
_CURRENT_TASKS: Any = getattr(asyncio.tasks, "_current_tasks", None)


def _wind_down(loop: ControlledLoop) -> None:
    """What ``asyncio.Runner.close`` does before it closes the loop, when there is work.

    Leftover tasks are cancelled and run to their end; async generators and
    the default executor are shut down (which makes the loop one that will
    not be reused: it remembers those shutdowns).
    """
    if loop._closed:  # type: ignore[attr-defined]
        return
    loop._rc_tasks_left = True  # until every task is seen finished
    pending = _live_tasks(loop)
    if pending:
        for task in pending:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        for task in pending:
            if task.cancelled():
                continue
            if task.exception() is not None:
                loop.call_exception_handler(
                    {
                        "message": "unhandled exception during asyncio.run() shutdown",
                        "exception": task.exception(),
                        "task": task,
                    }
                )
    asyncgens = loop._asyncgens  # type: ignore[attr-defined]
    # the WeakSet's own set first: its truth is a Python __len__ (see _rc_reusable)
    if asyncgens.data and asyncgens:
        loop.run_until_complete(loop.shutdown_asyncgens())
    if loop._default_executor is not None:  # type: ignore[attr-defined]
        loop.run_until_complete(loop.shutdown_default_executor())
    loop._rc_tasks_left = bool(pending) and any(not task.done() for task in pending)


#: asyncio's registry of every task alive in the process (3.12+ keeps eager
#: tasks apart, in a plain set, until they first suspend)
_REGISTRY: Any = getattr(asyncio.tasks, "_scheduled_tasks", None)
if _REGISTRY is None:
    _REGISTRY = getattr(asyncio.tasks, "_all_tasks", None)
_EAGER: Any = getattr(asyncio.tasks, "_eager_tasks", ())
#: the registry is a WeakSet (3.11-3.13): its length is read off its own set
_WEAK_REGISTRY = isinstance(_REGISTRY, weakref.WeakSet)


def _live_tasks(loop: ControlledLoop) -> set[asyncio.Task[Any]]:
    """``asyncio.all_tasks(loop)``, without its cost when the answer is plainly none.

    ``all_tasks`` copies the process-wide weak registry, in Python, every
    schedule: about a tenth of a small schedule's time. When the registry
    holds exactly as many tasks as this run stepped (every task registers
    itself when it is made, and stays until it is freed), and those are all
    done, there is no other task anywhere, so none pending on this loop.
    Anything else (a task of another loop, one made but never stepped, an
    eager task) takes the full scan.
    """
    ids = loop._rc_ids
    if _REGISTRY is not None and not _EAGER:
        # len(_REGISTRY) written out: WeakSet.__len__ is one more Python call
        registered = (
            len(_REGISTRY.data) - len(_REGISTRY._pending_removals)
            if _WEAK_REGISTRY
            else len(_REGISTRY)
        )
    else:
        registered = -1
    if registered == len(ids):
        # a loop, not all(<generator>): no generator frame a schedule
        for task in ids:
            if not task.done():
                return asyncio.all_tasks(loop)
        return set()
    return asyncio.all_tasks(loop)


def _raiser(loop: ControlledLoop, exc: BaseException) -> int | None:
    """The actor ``exc`` came from: the root task when it surfaced there.

    An Exception always surfaces in the root task. A KeyboardInterrupt or
    SystemExit leaves the loop straight from the step that raised it, so the
    task that raised it is the one holding it.
    """
    holders = [
        actor
        for task, actor in loop._rc_ids.items()
        if task.done() and not task.cancelled() and task.exception() is exc
    ]
    if not holders:
        return 1 if isinstance(exc, Exception) else None
    return 1 if 1 in holders else max(holders)


def check_unretrieved(loop: ControlledLoop, controller: Controller) -> None:
    """A task that died with an exception nobody awaited is a failure too.

    asyncio would only log "Task exception was never retrieved" when the task
    is garbage-collected — too late and too easy to miss.
    """
    if controller.failure is not None:
        return
    for task in loop._rc_ids:
        # _log_traceback first: an attribute, False for nearly every task
        # (it is set only with an exception nobody retrieved)
        if task._log_traceback and task.done() and not task.cancelled():
            exc = task.exception()
            if exc is not None:
                controller.fail(
                    Failure("exception", exc, f"in task {task.get_name()}", loop._rc_ids[task])
                )
                return
