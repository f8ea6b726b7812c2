"""A controlled asyncio event loop.

The loop is a stock ``SelectorEventLoop`` with one method replaced:
``_run_once``, the place where asyncio picks what runs next. Instead of running
every ready callback in FIFO order, it runs plain callbacks as they come (they
are not actors) and, whenever a task step is due, asks the engine which of the
ready tasks steps next. Everything else — futures, Lock, Event, Condition,
Semaphore, Queue, gather, TaskGroup, wait_for, timeout — is asyncio's own code,
unchanged, which is why it all keeps working.

Time is virtual: the clock jumps to the next timer as soon as nothing is ready,
so ``sleep(30)`` costs nothing and timeouts fire in a deterministic order. A
standalone loop's timer never fires ahead of a ready task (a task step is not
preempted); a loop hosted in a controlled thread may see its timer fire while
other threads could still run, a choice its host offers (see
``racecheck.backends.threads.runtime`` and docs/architecture.md, "Virtual time").

Who the loop asks is its *host*: on its own (an ``async def`` target) it asks
the engine directly and detects deadlocks itself; inside the threads backend
(a loop running in a controlled thread) it asks the thread scheduler, so the
loop's tasks and the other threads share one deterministic schedule.
"""

from __future__ import annotations

import _thread
import asyncio
import collections
import contextvars
import functools
import heapq
import selectors
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from racecheck.backends.asyncio_waits import (
    record_task_step,
    task_step_begins,
    task_step_ended,
    users_callback,
    wake_scheduled,
)
from racecheck.backends.inline_waits import waits_refused
from racecheck.backends.loop_binding import stamp
from racecheck.detect.stepmon import AVAILABLE as MONITORED_STEPS
from racecheck.detect.stepmon import run_step, step_feed
from racecheck.engine import Controller, Failure, NeedsBackend, RunAborted
from racecheck.linetrace import collecting_accesses
from racecheck.recorder import task_label

_Task = asyncio.Task
_new_task = _Task.__new__
_init_task = _Task.__init__
_Handle: Any = asyncio.Handle
_new_handle = _Handle.__new__
_copy_context = contextvars.copy_context
#: actor ids 1, 2, ... of a run, and the tasks' hash serials: each run takes a
#: fresh iterator over one range made here (a ``range`` call costs as much as
#: the iterator, and a run made both twice)
_ACTOR_IDS = range(1, 1 << 30)
_SERIALS = range(1 << 40, 1 << 41)


class RacecheckTask(asyncio.Task):
    """A Task that hashes by creation order instead of by memory address.

    Sets of tasks (``_active_tasks`` and friends) iterate in hash order. With
    address hashes that order changes from run to run, and a schedule that
    cancels "every task in the set" would not replay. Creation order is part
    of the schedule, so it replays.
    """

    __slots__ = ("_rc_hash",)

    def __hash__(self) -> int:
        try:
            return self._rc_hash
        except AttributeError:
            loop = self.get_loop()
            serial = loop._rc_task_serial() if isinstance(loop, ControlledLoop) else id(self)
            self._rc_hash: int = serial
            return serial


class LoopHost(Protocol):
    controller: Controller
    records_steps: bool
    #: executor work may run on real threads: the host controls them
    schedules_threads: bool

    # The index of the task to step; negative: none of these (the host chose a
    # task queued while it waited), so the loop scans its ready queue again.
    def choose_task(self, loop: ControlledLoop, candidates: list[int]) -> int: ...

    def idle(self, loop: ControlledLoop) -> None: ...

    # The race detector's happens-before edges, called only while it is on:
    def detect_scheduled(self, handle: asyncio.Handle) -> None: ...

    def detect_callback(self, loop: ControlledLoop, handle: asyncio.Handle) -> None: ...

    def detect_threadsafe_call(self, loop: ControlledLoop) -> None: ...


class ControlledLoop(asyncio.SelectorEventLoop):
    if TYPE_CHECKING:  # BaseEventLoop internals this class drives
        _ready: collections.deque[Any]  # of asyncio.Handle
        _scheduled: list[Any]  # heap of asyncio.TimerHandle
        _timer_cancelled_count: int
        _stopping: bool
        _selector: selectors.BaseSelector

        def _process_events(self, event_list: list[Any]) -> None: ...

        def _check_closed(self) -> None: ...

    def __init__(self, host: LoopHost | None) -> None:
        """``host`` None: a loop made ahead of its first run, which rebinds it."""
        super().__init__()
        #: the stdlib selectors' own fd table, which ``get_map()`` wraps: read
        #: twice a schedule, so its length is taken without two Python calls
        self._rc_fd_to_key: dict[Any, Any] | None = getattr(self._selector, "_fd_to_key", None)
        self._rc_ids: dict[asyncio.Task[Any], int] = {}
        #: the same actors keyed by id(task), for the ready scan
        self._rc_actor_of: dict[int, int] = {}
        if host is not None:
            self._rc_rebind(host)
        else:  # what the backend reads of a loop between runs (_rc_rebind sets them per run)
            self._rc_wakeups = 0
            self._rc_outside_wakeups = 0
            self._rc_home = 0
            self._rc_ran_executor_work = False
            self._rc_in_executor_work = False
        #: a task of the last run would not finish (see asyncio_backend._wind_down)
        self._rc_tasks_left = False
        self.set_exception_handler(_record_callback_error)
        self._rc_debug = self.get_debug()

    def _rc_rebind(self, host: LoopHost) -> None:
        """Start a run on this loop: everything per run starts over."""
        stamp(self)  # the schedule's own loop, to the asyncio primitives (loop_binding)
        self._rc_host = host
        self._rc_controller = host.controller
        #: the engine's decide, when the host adds nothing to it (one Python call less a step)
        self._rc_decide = host.controller.decide if type(host) is StandaloneHost else None
        controller = host.controller
        #: the detector's stamp on each scheduled handle (DetectingLoop): straight
        #: to this run's detector when the host adds nothing to it; read only
        #: while a detector is on, so a run without one makes no bound method
        self._rc_stamp: Any = (
            None
            if controller.detector is None
            else controller.detector.stamp
            if type(host) is StandaloneHost
            else host.detect_scheduled
        )
        #: this run's detector when the host adds nothing to its hooks: call_soon
        #: then stamps in place (see DetectingLoop.call_soon), and a plain
        #: callback's hook goes straight to it
        self._rc_own_detector: Any = controller.detector if type(host) is StandaloneHost else None
        #: task steps run with nothing watching them: set per run, read per step
        self._rc_unobserved = not host.records_steps or (
            controller.detector is None
            and controller.recorder is None
            and controller.accesses is None
        )
        self._rc_ids.clear()
        self._rc_actor_of.clear()
        # the host's own allocator (the threads backend numbers its threads and
        # the loop's tasks from one count), else a count from 1 for this run
        allocate = getattr(host, "next_actor_id", None)
        self._rc_next_id = allocate if allocate is not None else iter(_ACTOR_IDS).__next__
        self._rc_threads_at_start = threading.active_count()
        #: counts self-pipe writes (call_soon_threadsafe): the only thing that
        #: wakes a loop idle in select(), besides its own timers
        self._rc_wakeups = 0
        #: those made from another thread than the one running this loop's run:
        #: work from outside (the loop's own, such as asyncio's hook that closes
        #: a dropped async generator, lands in a step racecheck chose)
        self._rc_outside_wakeups = 0
        self._rc_home = _thread.get_ident()
        self._rc_serials = iter(_SERIALS)
        #: executor work ran inline, atomically (a standalone loop has no threads)
        self._rc_ran_executor_work = False
        #: inline executor work is running right now (a stall there is the work's)
        self._rc_in_executor_work = False

    def _rc_forget(self) -> None:
        """End a run: drop what it left queued, as ``close`` would, and its tasks."""
        self._ready.clear()
        for handle in self._scheduled:
            handle._scheduled = False
        self._scheduled.clear()
        self._timer_cancelled_count = 0
        self._rc_ids.clear()
        self._rc_actor_of.clear()

    def _rc_reusable(self) -> bool:
        """May the next run use this loop? Only if the last one left nothing on it
        that :meth:`_rc_rebind` and :meth:`_rc_forget` do not reset.

        Asked twice a schedule, so it reads the loop's fields rather than
        calling its accessors (``is_closed``, ``get_debug``...): the same
        answers, for a quarter of the cost. The async generators are a
        ``WeakSet``, whose truth is a Python ``__len__``: its ``data`` set is
        looked at first (empty there means empty), the ``WeakSet`` only when
        that holds something.
        """
        asyncgens = self._asyncgens  # type: ignore[attr-defined]
        fds = self._rc_fd_to_key
        return (
            not self._closed  # type: ignore[attr-defined]
            and self._thread_id is None  # type: ignore[attr-defined]  # not running
            and not self._stopping
            and self._rc_wakeups == 0
            and self._exception_handler is _record_callback_error  # type: ignore[attr-defined]
            and self._task_factory is None  # type: ignore[attr-defined]
            and self._debug == self._rc_debug  # type: ignore[attr-defined]
            and (not asyncgens.data or not asyncgens)
            and not self._asyncgens_shutdown_called  # type: ignore[attr-defined]
            and self._default_executor is None  # type: ignore[attr-defined]
            and not self._executor_shutdown_called  # type: ignore[attr-defined]
            and not getattr(self, "_signal_handlers", None)
            # _rc_registered(), written out
            and (len(fds) if fds is not None else len(self._selector.get_map())) <= 1
            and not self._rc_tasks_left
        )

    def _rc_registered(self) -> int:
        """How many file descriptors the selector watches (the self-pipe is one)."""
        fds = self._rc_fd_to_key
        return len(fds) if fds is not None else len(self._selector.get_map())

    def close(self) -> None:
        super().close()
        # Let this run's tasks go now: asyncio.all_tasks() scans every live
        # task in the process, and thousands of schedules add up.
        self._rc_ids.clear()
        self._rc_actor_of.clear()

    def _rc_task_serial(self) -> int:
        return next(self._rc_serials)

    def create_task(self, coro: Any, *, name: Any = None, context: Any = None) -> Any:
        if self._task_factory is not None:  # type: ignore[attr-defined]  # the user's (eager tasks...)
            return super().create_task(coro, name=name, context=context)
        if self._closed:  # type: ignore[attr-defined]
            self._check_closed()  # its error
        # The serial is the task's hash, taken by asyncio's task registry
        # inside Task.__init__ anyway: given up front, the first hash does not
        # go through __hash__'s AttributeError.
        task = _new_task(RacecheckTask)
        task._rc_hash = next(self._rc_serials)
        _init_task(task, coro, loop=self, name=name, context=context)
        if task._source_traceback:  # type: ignore[attr-defined]
            del task._source_traceback[-1]  # type: ignore[attr-defined]
        return task

    def call_soon(  # type: ignore[override]
        self, callback: Any, *args: Any, context: Any = None
    ) -> Any:
        """``BaseEventLoop.call_soon`` with its three Python calls written out.

        Every future's callback, every task wake-up goes through here:
        ``call_soon``, ``_call_soon``, ``Handle.__init__`` and its
        ``get_debug`` are four Python frames for a handle of six fields (and,
        on 3.11, four traced call events inside a detected step). The same
        fields are set in the same way; debug mode and a closed loop take
        asyncio's own road (its checks, its source tracebacks, its error).
        """
        if self._debug or self._closed:  # type: ignore[attr-defined]
            return super().call_soon(callback, *args, context=context)
        handle = _new_handle(_Handle)
        handle._context = _copy_context() if context is None else context
        handle._loop = self
        handle._callback = callback
        handle._args = args
        handle._cancelled = False
        handle._repr = None
        handle._source_traceback = None
        self._ready.append(handle)
        return handle

    def _write_to_self(self) -> None:
        self._rc_wakeups += 1
        if _thread.get_ident() != self._rc_home:
            self._rc_outside_wakeups += 1
        super()._write_to_self()  # type: ignore[misc]

    # -- virtual time -----------------------------------------------------
    def time(self) -> float:
        return self._rc_controller.now

    # -- the one decision point -------------------------------------------
    def _run_once(self) -> None:
        """Run what is due, one handle at a time, until the loop idles or stops.

        ``run_forever`` calls this in a loop and checks ``_stopping`` after
        each call. Running one handle per call and returning would do the
        same work with one more Python call per handle, so the loop is here
        instead: after every handle ``_stopping`` is checked as
        ``run_forever`` would, and timers due at the virtual now join the
        ready queue before the next handle, as they did at the next call.
        """
        ready = self._ready
        popleft = ready.popleft
        scheduled = self._scheduled
        controller = self._rc_controller
        actor_of = self._rc_actor_of
        decide = self._rc_decide
        # Fixed for the whole run (set before it starts), so read once per call:
        # the detector, DPOR's step log, whether a step is watched at all.
        detecting = controller.detector is not None
        log = controller.steplog
        unobserved = self._rc_unobserved
        # a lone ready task is chosen inline, without decide(), when nothing
        # else wants to see the decision
        inline_one = decide is not None and log is None
        # DPOR's record-only feed, on a loop that is the whole world: a plain
        # callback is traced inside the step it runs in, as a task step is
        own_feed = log is not None and self._rc_host.records_steps
        trace_callbacks = own_feed and controller.detector.record_only
        while True:
            if scheduled and scheduled[0]._when <= controller.now:
                self._rc_move_due_timers()
            if not ready:
                self._rc_host.idle(self)
                return
            head = ready[0]
            if head._cancelled:
                # dropped; the next pass looks at the new head (dropping it ran
                # nothing, so no timer has fallen due since this pass's check)
                popleft()
                continue
            owner = getattr(head._callback, "__self__", None)
            if not isinstance(owner, _Task):
                # A plain callback (a future's done-callback, call_soon, a timer):
                # not an actor, runs in FIFO order.
                popleft()
                if controller.aborting or controller.steps >= controller.max_steps:
                    controller.tick()  # what ends the run, when one does
                else:
                    controller.steps += 1  # tick(), inline: one per plain callback
                if detecting:
                    if self._rc_own_detector is not None:
                        self._rc_own_detector.begin_callback(head)  # the host's, without it
                    else:
                        self._rc_host.detect_callback(self, head)
                    if log is not None:
                        # what the callback queues carries the wake it carries (DPOR)
                        log.callback_runs(head)
                        if own_feed and log.actor is not None:
                            # its accesses are the step's (a thread's tracer sees them
                            # on a hosted loop; here only task steps are fed otherwise)
                            if trace_callbacks:
                                run_step(controller.detector, log.actor, log.actor, head._run)
                            else:
                                if users_callback(head):
                                    log.blind_spot(_UNTRACED_CALLBACK)
                                head._run()
                        else:
                            head._run()
                        log.callback_ended()
                        if self._stopping:
                            return
                        continue
                head._run()
                if self._stopping:
                    return
                continue
            # The head's actor first: in the scan below it was always the first
            # task seen, so it gets its number (and its serial) at the same point.
            actor = actor_of.get(id(owner))
            if actor is None:
                actor = actor_of[id(owner)] = self._rc_ids[owner] = self._rc_next_id()
            if len(ready) == 1:
                # The head alone is ready (the most common case): one candidate, no scan.
                if (
                    inline_one
                    and not controller.aborting
                    and controller.steps < controller.max_steps
                ):
                    # decide() of one candidate, inline: count the step, choose it
                    controller.steps += 1
                    controller.scheduling_steps += 1
                    choice = 0
                else:
                    ids = [actor]
                    choice = (
                        decide(ids) if decide is not None else self._rc_host.choose_task(self, ids)
                    )
                    if choice < 0:
                        return  # the host chose a task queued since: it runs on the next pass
                handle = head
                task = owner
                # after the choice: a chooser that raises leaves the queue as it was
                popleft()
            else:
                # One pass over the rest of the ready queue: the candidates are the
                # distinct ready tasks in queue order, each at its first handle
                # (``found``: actor -> position; a dict keeps that order). Tasks
                # are told apart by id() (every task is alive in _rc_ids while the
                # loop runs, so ids are not reused), which keeps their __hash__ (a
                # creation serial user code may observe through set order) out of
                # the scan; a task's second handle is caught by its actor number
                # (a dict lookup: a list search made a decision quadratic in the
                # ready tasks).
                found = {actor: 0}
                rest = iter(ready)
                next(rest)  # the head, seen above
                for position, handle in enumerate(rest, 1):
                    if handle._cancelled:
                        continue
                    other = getattr(handle._callback, "__self__", None)
                    if not isinstance(other, _Task):
                        continue
                    actor = actor_of.get(id(other))
                    if actor is None:
                        # First sight: hashing it here assigns its serial at the same
                        # point of the run as it always did.
                        actor = actor_of[id(other)] = self._rc_ids[other] = self._rc_next_id()
                    elif actor in found:  # a second handle of the same task
                        continue
                    found[actor] = position
                ids = list(found)
                if (
                    len(ids) == 1
                    and inline_one
                    and not controller.aborting
                    and controller.steps < controller.max_steps
                ):
                    # the head's task alone (the rest are callbacks, or its own
                    # second handle): decide() of one candidate, inline, as above
                    controller.steps += 1
                    controller.scheduling_steps += 1
                    choice = 0
                else:
                    choice = (
                        decide(ids) if decide is not None else self._rc_host.choose_task(self, ids)
                    )
                    if choice < 0:
                        return  # the host chose a task queued since the scan: it runs next pass
                # Nothing is removed before the choice: a chooser that raises leaves
                # the ready queue exactly as it was.
                actor = ids[choice]
                position = found[actor]
                handle = ready[position]
                del ready[position]
                task = handle._callback.__self__
            if log is not None:  # DPOR: who woke it, and whether it suspended
                began = task_step_begins(log, task)
            if unobserved:
                # Exploring (nothing to watch: the hot path), or a thread's loop
                # (the thread's tracer watches the step).
                handle._run()
            else:
                self._rc_watched_step(actor, task, handle, choice != 0)
            if log is not None:
                task_step_ended(log, task, began)
            if self._stopping:
                return

    def _rc_watched_step(
        self, actor: int, task: asyncio.Task[Any], handle: asyncio.Handle, preempted: bool
    ) -> None:
        """Run one task step that the detector, a trace or coverage watches."""
        controller = self._rc_controller
        detector = controller.detector
        if detector is None or controller.aborting:
            self._rc_observe_step(actor, task, handle, preempted)
            return
        if actor not in detector.names:
            detector.names[actor] = task_label(task, actor)
        detector.begin_task_step(actor, handle)
        if controller.recorder is None and controller.accesses is None:
            # what _rc_observe_step would do, without one more call inside the
            # step (on 3.11 each is a traced call event)
            if MONITORED_STEPS:  # 3.12+: no call event for a frame, nothing to cut
                run_step(detector, actor, actor, handle._run)
                return
            # handle._run's own call, without its Python frame (on 3.11 one more
            # traced call event a step); an error escaping the step (never the
            # task's own: the task keeps those) still goes through Handle._run
            raw: Any = handle  # asyncio.Handle's fields, which the stubs do not declare
            step = functools.partial(raw._context.run, raw._callback, *raw._args)
            try:
                run_step(detector, actor, actor, step, _coroutine_frame(task))
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                raw._context = _Raising(exc)
                handle._run()  # the same message and context to the exception handler
            return
        with step_feed(detector, actor, actor, recorded=controller.recorder is not None):
            self._rc_observe_step(actor, task, handle, preempted)

    def _rc_observe_step(
        self, actor: int, task: asyncio.Task[Any], handle: asyncio.Handle, preempted: bool
    ) -> None:
        """Run one task step, recording it for a trace or for coverage when asked to."""
        controller = self._rc_controller
        if controller.recorder is not None and not controller.aborting:
            record_task_step(controller.recorder, actor, task, handle, preempted)
        elif controller.accesses is not None:
            with collecting_accesses(controller.accesses, actor):
                handle._run()
        else:
            handle._run()

    def _rc_ready_ids(self) -> list[int]:
        """The ready tasks' actor ids, in the order ``_run_once``'s scan offers them.

        For a host that decides from another thread while this loop's thread
        waits at its task decision (the threads backend): what this loop
        could run is part of every decision.
        """
        ids: list[int] = []
        seen: set[int] = set()
        actor_of = self._rc_actor_of
        for handle in self._ready:
            if handle._cancelled:
                continue
            task = getattr(handle._callback, "__self__", None)
            if not isinstance(task, _Task):
                continue
            key = id(task)
            if key in seen:
                continue
            seen.add(key)
            actor = actor_of.get(key)
            if actor is None:
                actor = actor_of[key] = self._rc_ids[task] = self._rc_next_id()
            ids.append(actor)
        return ids

    def _rc_move_due_timers(self) -> bool:
        """Move timers due at the virtual now to the ready queue."""
        scheduled = self._scheduled
        now = self._rc_controller.now
        moved = False
        while scheduled and scheduled[0]._when <= now:
            handle = heapq.heappop(scheduled)
            handle._scheduled = False
            if handle._cancelled:
                self._timer_cancelled_count -= 1
                continue
            self._ready.append(handle)
            moved = True
        return moved

    def _rc_advance_clock(self) -> bool:
        """Jump the virtual clock to the next live timer. False if there is none."""
        scheduled = self._scheduled
        while scheduled and scheduled[0]._cancelled:
            handle = heapq.heappop(scheduled)
            handle._scheduled = False
            self._timer_cancelled_count -= 1
        if not scheduled:
            return False
        controller = self._rc_controller
        controller.now = max(controller.now, scheduled[0]._when)
        return self._rc_move_due_timers() or True

    def _rc_next_timer(self) -> float | None:
        # One linear pass: sorting the heap at every idle pass cost n·log n.
        return min((h._when for h in self._scheduled if not h._cancelled), default=None)

    def _rc_external_pending(self) -> bool:
        """Could something outside the loop still wake it (a thread, real I/O)?"""
        return threading.active_count() > self._rc_threads_at_start or self._rc_registered() > 1

    def _rc_poll_external(self, timeout: float) -> None:
        event_list = self._selector.select(timeout)
        self._process_events(event_list)

    # -- executors run as actors of the loop ------------------------------
    def run_in_executor(  # type: ignore[override]
        self, executor: Any, func: Callable[..., Any], *args: Any
    ) -> asyncio.Future[Any]:
        """Executor work: a real thread when the host schedules threads, else a task.

        Hosted by the threads backend, the work runs on the executor's real
        threads, which that backend controls line by line like any other
        thread: races inside the work, and work that waits for the loop (a
        ``threading.Condition`` the loop notifies), behave as they do for real.
        A standalone loop has no threads to schedule; there the work is a task
        of its own, inline on the loop's thread and atomic, so the exploration
        hands such a target to the threads backend (see ``racecheck.explore``).
        """
        if self._rc_host.schedules_threads:
            return super().run_in_executor(executor, func, *args)
        self._rc_ran_executor_work = True
        name = getattr(func, "__qualname__", None) or type(func).__name__
        return self.create_task(_inline(self, func, args), name=f"executor · {name}")


class DetectingLoop(ControlledLoop):
    """A ControlledLoop that tells the race detector who scheduled each callback.

    A separate class, so that a run without the detector pays nothing for
    it: ``call_soon`` is on asyncio's hottest path.
    """

    def __init__(self, host: LoopHost | None) -> None:
        super().__init__(host)
        if not MONITORED_STEPS:
            # asyncio's C futures and tasks ask the loop's get_debug() when they
            # are made, inside a detected step: on 3.11 a Python method is a traced
            # call event there, a C callable is none. The same answer, read when asked.
            self.get_debug = functools.partial(getattr, self, "_debug")  # type: ignore[method-assign]

    def _call_soon(self, callback: Any, args: Any, context: Any) -> Any:
        handle = super()._call_soon(callback, args, context)  # type: ignore[misc]
        controller = self._rc_controller
        if controller.detector is not None:
            self._rc_stamp(handle)
            if controller.steplog is not None:
                wake_scheduled(controller.steplog, self, handle)
        return handle

    def call_soon(  # type: ignore[override]
        self, callback: Any, *args: Any, context: Any = None
    ) -> Any:
        # ControlledLoop.call_soon's fast road, stamped: no frame in between
        # (on 3.11 every Python call inside a detected step is a traced event)
        if self._debug or self._closed:  # type: ignore[attr-defined]
            return asyncio.SelectorEventLoop.call_soon(self, callback, *args, context=context)
        handle = _new_handle(_Handle)
        handle._context = _copy_context() if context is None else context
        handle._loop = self
        handle._callback = callback
        handle._args = args
        handle._cancelled = False
        handle._repr = None
        handle._source_traceback = None
        self._ready.append(handle)
        controller = self._rc_controller
        detector = self._rc_own_detector
        if detector is not None:
            # Detector.stamp written out, the same operations in the same order
            # (tests/detect/test_detector_speed_stamps.py holds them to it): on
            # 3.11 every call made here, inside a detected step, is a traced call
            # event, and call_soon runs at every wake-up
            current = detector.current
            if current is not None:
                own = detector.clocks.get(current)
                if own is None:
                    own = detector._clock(current)
                signals = detector.signals[current]
                clock = signals.copy()
                own[current] = signals[current] = own[current] + 1
                detector.stamps[id(handle)] = (
                    handle,
                    clock,
                    (current, detector.steps.get(current, 0)),
                )
            else:
                detector.stamps[id(handle)] = (handle, detector.callback_clock.copy(), None)
        elif controller.detector is not None:
            self._rc_stamp(handle)
        if controller.steplog is not None and controller.detector is not None:
            wake_scheduled(controller.steplog, self, handle)
        return handle

    def call_at(  # type: ignore[override]
        self, when: float, callback: Any, *args: Any, context: Any = None
    ) -> Any:
        handle = super().call_at(when, callback, *args, context=context)
        controller = self._rc_controller
        if controller.detector is not None:
            self._rc_host.detect_scheduled(handle)
            if controller.steplog is not None:
                wake_scheduled(controller.steplog, self, handle)
        return handle

    def call_soon_threadsafe(  # type: ignore[override]
        self, callback: Any, *args: Any, context: Any = None
    ) -> Any:
        if self._rc_controller.detector is not None:
            self._rc_host.detect_threadsafe_call(self)
        return super().call_soon_threadsafe(callback, *args, context=context)


#: why a DPOR run with the race detector on is no proof when a user's callback ran
_UNTRACED_CALLBACK = (
    "a plain callback of the user's (call_soon, a done callback, a timer) ran while the race"
    " detector was on (detect=True), which does not trace callbacks: what it touched is unseen"
)


class _Raising:
    """A context whose ``run`` raises: replays a step's error through ``Handle._run``."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def run(self, callback: Any, *args: Any) -> None:
        raise self.exc


def _coroutine_frame(task: asyncio.Task[Any]) -> Any:
    """The frame of ``task``'s own coroutine (None for another kind of awaitable)."""
    return getattr(task.get_coro(), "cr_frame", None)


def new_loop(host: LoopHost) -> ControlledLoop:
    """The loop for a run: with the detector's hooks only when the run detects."""
    if host.controller.detector is not None:
        return DetectingLoop(host)
    return ControlledLoop(host)


def loop_ahead(detecting: bool) -> ControlledLoop:
    """A loop for runs still to come: its first run rebinds it (``_rc_rebind``)."""
    return DetectingLoop(None) if detecting else ControlledLoop(None)


async def _inline(loop: ControlledLoop, func: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    # Work that would wait for a lock (only the loop it blocks could release
    # it) is stopped before it blocks, and the exploration starts over on
    # threads (racecheck.backends.inline_waits, racecheck.explore).
    loop._rc_in_executor_work = True
    try:
        with waits_refused(lambda where: _needs_threads(loop, where)):
            return func(*args)
    finally:
        loop._rc_in_executor_work = False


def _needs_threads(loop: ControlledLoop, where: str) -> None:
    controller = loop._rc_controller
    if controller.internal_error is None:
        controller.internal_error = NeedsBackend(
            "threads",
            f"executor work run inline on the event loop's thread ({where}) could only be"
            " released by that loop; on threads it runs beside the loop",
        )
    controller.interrupt()


def _record_callback_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """An exception escaping a callback is a failure of the run, not a log line."""
    assert isinstance(loop, ControlledLoop)
    controller = loop._rc_controller
    if controller.aborting:
        return
    exc = context.get("exception")
    if exc is None:
        return
    controller.fail(Failure("exception", exc, context.get("message", "")))


class StandaloneHost:
    """The host of an ``async def`` target: the loop is the whole world."""

    #: task steps are the actors' turns (hosted loops leave that to the thread tracer)
    records_steps = True
    #: no threads to schedule: executor work runs inline, as a task
    schedules_threads = False

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        #: actor ids 1, 2, ...: the iterator's own __next__, so taking one is a C call
        self.next_actor_id: Callable[[], int] = iter(_ACTOR_IDS).__next__
        #: the loop waited for work from outside the run (a real thread's
        #: call_soon_threadsafe, a socket): its timing was not racecheck's choice
        self.waited_outside = False

    def choose_task(self, loop: ControlledLoop, candidates: list[int]) -> int:
        return self.controller.decide(candidates)

    # Everything runs on one thread: who woke whom is carried by each handle.
    def detect_scheduled(self, handle: asyncio.Handle) -> None:
        self.controller.detector.stamp(handle)

    def detect_callback(self, loop: ControlledLoop, handle: asyncio.Handle) -> None:
        self.controller.detector.begin_callback(handle)

    def detect_threadsafe_call(self, loop: ControlledLoop) -> None:
        pass  # no controlled threads: nobody else to order

    def idle(self, loop: ControlledLoop) -> None:
        if loop._rc_advance_clock() or loop._stopping:
            return
        if loop._rc_external_pending():
            # A thread may call_soon_threadsafe, a socket may become readable.
            # The engine's watchdog catches a wait that never ends.
            self.waited_outside = True
            loop._rc_poll_external(0.01)
            return
        if self.controller.aborting:
            raise RunAborted()
        from racecheck.backends.asyncio_waits import describe_deadlock

        recorder = self.controller.recorder
        names = recorder.resources() if recorder is not None else None
        detail = describe_deadlock(loop, names, loop._rc_ids)
        self.controller.fail(Failure("deadlock", None, detail))
        raise RunAborted()
