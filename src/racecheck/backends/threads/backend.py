"""The threads backend: a plain ``def`` target as the root actor.

``install`` swaps the primitives in for the exploration and ``uninstall``
always puts the originals back (it is idempotent, and the supervisor calls it
too if the worker thread is lost), so nothing racecheck patched outlives the
call — not even after a failure, a stuck thread or Ctrl-C.
"""

from __future__ import annotations

import asyncio
import asyncio.events
import inspect
import logging
import os
import queue
import re
import selectors
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from racecheck.backends import loop_binding
from racecheck.backends.threads import primitives
from racecheck.backends.threads.adopt import Adoption, adopt
from racecheck.backends.threads.executors import executor_patches
from racecheck.backends.threads.pool import ThreadPool
from racecheck.backends.threads.pool import mark_stopped as pool_mark_stopped
from racecheck.backends.threads.primitives import STATE
from racecheck.backends.threads.runtime import (
    PLAIN_TRACES,
    Actor,
    ThreadRuntime,
    gettrace,
    settrace,
)
from racecheck.backends.threads.tracer import make_tracer
from racecheck.engine import Controller, RunAborted
from racecheck.errors import UsageError
from racecheck.gctrack import make_thread_state

_ORIGINAL_START = threading.Thread.start
_ORIGINAL_JOIN = threading.Thread.join
_ORIGINAL_IS_ALIVE = threading.Thread.is_alive
_ORIGINAL_INIT = threading.Thread.__init__
_GRANULARITIES = ("access", "line", "opcode")
_DEFAULT_THREAD_NAME = re.compile(r"^Thread-\d+")
_JOIN_GRACE = 2.0


class _QuietAborts(logging.Filter):
    """Drops ``concurrent.futures``' "Exception in worker" for racecheck's abort signal.

    An aborted run (step limit, a failure found while pool work still ran)
    unwinds every actor by raising :class:`RunAborted`; a pool worker catches
    it and logs a CRITICAL traceback about racecheck's own plumbing, which
    reads like a crash in the user's output. Installed for the run only.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        info = record.exc_info
        return not (info and info[0] is not None and issubclass(info[0], RunAborted))


_QUIET_ABORTS = _QuietAborts()


class ThreadsBackend:
    name = "threads"

    def __init__(self, target: Callable[[], Any], granularity: str = "access") -> None:
        if granularity not in _GRANULARITIES:
            raise UsageError(
                f"unknown granularity {granularity!r}; choose one of {', '.join(_GRANULARITIES)}"
            )
        self.target = target
        self.granularity = granularity
        self.tracer = make_tracer(granularity)
        self._saved: list[tuple[Any, str, Any]] = []
        self._installed = False
        self.pool: ThreadPool | None = None
        self.adoption: Adoption | None = None
        #: runs that started a thread, and those where two or more actors had
        #: scheduling points (see blind_spots)
        self.runs_with_threads = 0
        self.runs_seen_interleaving = 0

    def enable_detection(self) -> None:
        self.tracer.detecting = True

    # -- patching ---------------------------------------------------------------
    def install(self) -> None:
        if self._installed:
            return
        # The tracer first: if it cannot be installed, nothing is patched yet.
        self.tracer.install()
        patches: list[tuple[Any, str, Any]] = [
            (threading, "Lock", primitives.Lock),
            (threading, "RLock", primitives.RLock),
            (threading, "Condition", primitives.Condition),
            (threading, "Semaphore", primitives.Semaphore),
            (threading, "BoundedSemaphore", primitives.BoundedSemaphore),
            (threading, "Event", primitives.Event),
            (threading, "Barrier", primitives.Barrier),
            (threading.Thread, "start", _start),
            (threading.Thread, "join", _join),
            (threading.Thread, "is_alive", _is_alive),
            (threading.Thread, "__init__", _init),
            (threading.Thread, "__hash__", _hash),
            (queue, "SimpleQueue", primitives.SimpleQueue),
            (queue, "time", primitives.virtual_monotonic),
            (time, "sleep", primitives.sleep),
            (asyncio, "new_event_loop", _new_event_loop),
            (asyncio.events, "new_event_loop", _new_event_loop),
        ]
        # Imported now, not lazily by the first ThreadPoolExecutor (asyncio's
        # default executor): made inside a run, its module-level lock would be
        # that run's object, and the first exploration would differ from the
        # next ones (a token found in one would not replay in the other).
        import concurrent.futures.thread as futures_thread

        # Created at import, before patching: would be a real lock held
        # across scheduling points inside ThreadPoolExecutor.submit.
        patches.append((futures_thread, "_global_shutdown_lock", primitives.Lock()))
        # a done future's result() is a hand-back too, not only a woken wait
        patches.extend(primitives.future_patches())
        # pools made before the exploration: each schedule submits to its own twin
        patches.extend(executor_patches())
        for owner, name, value in patches:
            self._saved.append((owner, name, owner.__dict__.get(name, _ABSENT)))
            setattr(owner, name, value)
        logging.getLogger("concurrent.futures").addFilter(_QUIET_ABORTS)
        loop_binding.install()
        self.pool = ThreadPool(_ORIGINAL_START)
        self._installed = True
        # After the patches: what they replaced is not rewritten a second time.
        self.adoption = adopt(self.target)
        # After the adoption walk, which has never seen the pool's workers.
        self.pool.prepare()
        # The explorer thread runs each run's root (see racecheck.gctrack).
        make_thread_state()

    def uninstall(self) -> None:
        if not self._installed:
            return
        self._installed = False
        STATE.runtime = None
        if self.adoption is not None:
            self.adoption.undo()
            self.adoption = None
        while self._saved:
            owner, name, value = self._saved.pop()
            if value is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
        logging.getLogger("concurrent.futures").removeFilter(_QUIET_ABORTS)
        loop_binding.uninstall()
        self.tracer.uninstall()
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def abort(self) -> None:
        runtime = STATE.runtime
        if runtime is not None:
            runtime.abort_all()

    def give_up_on_stuck(self) -> None:
        """The watchdog fired: drop the worker of the actor blocked in C before the abort.

        That actor made no progress for the whole watchdog period, so the
        run's reaping and the pool's close would only wait out another grace
        period each for it (seconds added to every StuckError). The other
        actors, parked at their gates, still get theirs to unwind. An actor
        polling a lock held outside the run (``stuck_reason``) is not blocked
        in C: the abort unwinds it, and it is waited for as usual.
        """
        runtime = STATE.runtime
        if runtime is None or runtime.stuck_reason or self.pool is None:
            return
        actor = runtime.current
        if actor is None or actor.ident is None:
            return
        for worker in runtime.used_workers:  # type: ignore[attr-defined]
            if worker.ident == actor.ident:
                self.pool.forget(worker)

    def explain_stuck(self) -> str | None:
        """The watchdog's message: who holds the baton, where, and on what it blocks."""
        runtime = STATE.runtime
        if runtime is None:
            return None
        if runtime.stuck_reason:
            return runtime.stuck_reason
        actor = runtime.current
        if actor is None or actor.ident is None:
            return None
        frame = sys._current_frames().get(actor.ident)
        if frame is None:
            return None
        return describe_blocked(actor.name, frame)

    # -- one run ----------------------------------------------------------------
    def run_once(self, controller: Controller) -> None:
        loop_binding.begin_schedule()
        runtime = ThreadRuntime(controller, controller.recorder)
        self.tracer.set_recording(controller.recorder is not None)
        runtime.tracer = self.tracer  # type: ignore[attr-defined]
        runtime.pool = self.pool  # type: ignore[attr-defined]
        runtime.used_workers = set()  # type: ignore[attr-defined]
        runtime.loops = []  # type: ignore[attr-defined]
        STATE.runtime = runtime
        pool = self.pool
        assert pool is not None, "run_once before install"
        root = runtime.adopt_root("main", pool.root())
        if controller.detector is not None:
            controller.detector.names[root.id] = root.name
        self.tracer.enable_thread(runtime)
        try:
            result = self.target()
            if result is not None and inspect.isawaitable(result):
                close = getattr(result, "close", None)
                if close is not None:
                    close()
                raise UsageError(
                    "the target returned an awaitable: pass the async def function itself"
                    " (it then runs on asyncio) or wrap it with asyncio.run"
                )
        except RunAborted:
            pass
        except UsageError:
            controller.interrupt()
            raise
        except BaseException as exc:
            if not controller.aborting:
                runtime.fail_exception(root, exc)
        finally:
            self.tracer.disable_thread(controller.aborting)
            runtime.root_finished = True
            hand_on = runtime.exit(root)
            if hand_on is not None:
                hand_on.open()
            runtime.wait_done()
            _reap(runtime)
            if controller.aborting and self.adoption is not None:
                # cut off mid-run, a thread may have skipped a ``with`` block's exit
                self.adoption.free_locks_of_cut_off_threads()
            _discard_abandoned_loops(runtime)
            STATE.runtime = None
            self._tally_visibility(runtime)
            _untangle(runtime)

    def _tally_visibility(self, runtime: ThreadRuntime) -> None:
        if len(runtime.actors) < 2 or runtime.controller.failure is not None:
            return
        self.runs_with_threads += 1
        seen = 0
        for actor in runtime.actors:  # a loop, not sum() of a generator: every run pays it
            if actor.points:
                seen += 1
                if seen == 2:
                    self.runs_seen_interleaving += 1
                    return

    def blind_spots(self) -> list[str]:
        """Why a green exploration may have seen nothing of the threads' own code."""
        if self.runs_with_threads and not self.runs_seen_interleaving:
            return [
                "threads ran, but every scheduling point was in one thread: racecheck could"
                " not see the code the other threads ran (the stdlib and installed packages"
                " are traced only when they are the code under test or named in"
                " trace_packages), so this run proves nothing about their interleavings"
            ]
        return []


#: objects whose blocking calls wait for I/O, not for another thread's step
_IO_TYPES = (socket.socket, selectors.BaseSelector, subprocess.Popen)


def _io_kind(candidate: object) -> str:
    if isinstance(candidate, socket.socket):
        return "socket"
    return "selector" if isinstance(candidate, selectors.BaseSelector) else "subprocess"


def describe_blocked(name: str, frame: Any) -> str:
    """The thread that holds the baton is blocked in C: say where, and on what if we can."""
    from racecheck.backends.threads.adopt import RAW_LOCK, RAW_RLOCK
    from racecheck.backends.threads.runtime import _user_frame
    from racecheck.sources import source_line

    where = _user_frame(frame) or frame
    place = f"{where.f_code.co_name}() at {os.path.basename(where.f_code.co_filename)}"
    place += f":{where.f_lineno}"
    line = source_line(where.f_code.co_filename, where.f_lineno)
    if line:
        place += f" `{line}`"
    held = []
    io = []
    for scope in (frame, where):
        for key, value in list(scope.f_locals.items()):
            candidates = [(key, value)]
            if key == "self":
                namespace = getattr(value, "__dict__", None)
                if isinstance(namespace, dict):
                    candidates = [(f"self.{k}", v) for k, v in namespace.items()]
            for label, candidate in candidates:
                if type(candidate) in (RAW_LOCK, RAW_RLOCK) and (
                    candidate.locked() if type(candidate) is RAW_LOCK else True
                ):
                    held.append(f"`{label}` ({type(candidate).__name__}, held)")
                elif isinstance(candidate, _IO_TYPES):
                    io.append(f"`{label}` (a {_io_kind(candidate)})")
    if io and not held:
        # No lock in sight, but a socket or a process: the wait is for I/O,
        # which no schedule decides; advice about locks would mislead.
        return (
            f"{name}, the thread racecheck is running, is blocked in C in {place}, waiting"
            f" for I/O on {', '.join(dict.fromkeys(io))}. racecheck cannot schedule what a"
            " socket, pipe or subprocess delivers; `racecheck stress` (or"
            ' @pytest.mark.racecheck(mode="stress")) runs such code uncontrolled, many times'
        )
    what = f" on {', '.join(dict.fromkeys(held))}" if held else ""
    return (
        f"{name}, the thread racecheck is running, is blocked in C in {place}{what}."
        " racecheck schedules every lock it can reach from the target and from module"
        " globals; this one it could not (a lock kept only in a local variable or a set,"
        " a C extension's lock, a socket or a subprocess). Make the object inside the"
        " target, or keep it where the target or a module global can reach it"
    )


def _untangle(runtime: ThreadRuntime) -> None:
    """Let the run's threads and actors go by reference counting, not the collector.

    A started Thread names its actor and its run's runtime, which name it
    back: every schedule left a few dozen objects in cycles (the Threads,
    their Events and Conditions, the actors, the runtime), and the collection
    between schedules then had them to find and free, a large part of a small
    schedule's cost. The run is over and nothing reads these names again
    (``_actor_of`` asks for *this* run's runtime): dropped, the cycles are gone.
    A Thread keeps its hash (``_racecheck_hash``), which sets of threads kept
    past the run still need.
    """
    # First every worker's tail: its job names the run's objects, and the
    # last reference must go here, between schedules, not on a worker thread
    # while the next schedule runs.
    pool: ThreadPool = runtime.pool  # type: ignore[attr-defined]
    pool.settle(runtime.used_workers, _JOIN_GRACE)  # type: ignore[attr-defined]
    for actor in runtime.actors:
        thread = actor.thread
        if thread is not None:
            names = thread.__dict__
            if names.get("_racecheck_runtime") is runtime:
                del names["_racecheck_runtime"]
                names.pop("_racecheck_actor", None)


def _reap(runtime: ThreadRuntime) -> None:
    """Make sure no actor's code runs on into the next run.

    An actor that finished ran its last user code before it handed the baton
    on; its worker is only finishing racecheck's bookkeeping, which the next
    ``lend`` waits for if it needs that worker. Actors still alive (a run
    that was aborted) are unwound here; a worker that does not come back in
    time is blocked in C and is never lent again.
    """
    pool: ThreadPool = runtime.pool  # type: ignore[attr-defined]
    if not runtime.live:
        return
    runtime.abort_all()
    for worker in runtime.used_workers:  # type: ignore[attr-defined]
        if pool.keeps(worker) and not pool.wait_idle(worker, _JOIN_GRACE):
            pool.forget(worker)


# -- Thread methods ---------------------------------------------------------------
_ABSENT = object()


def _init(self: threading.Thread, *args: Any, **kwargs: Any) -> None:
    trace = gettrace()  # 3.11: racecheck's own work runs untraced (see runtime.PLAIN_TRACES)
    if trace in PLAIN_TRACES:
        settrace(None)
    try:
        _ORIGINAL_INIT(self, *args, **kwargs)
        runtime = STATE.runtime
        if runtime is not None:
            if kwargs.get("daemon") is None:
                me = runtime.me()
                if me is not None and me.thread is None:
                    # Made by the target, which stands for the program's main
                    # thread: not a daemon unless told, whatever racecheck's own
                    # explorer thread is (else it is unwound, unrun, when the
                    # target returns without joining it). Left blocked when the
                    # run ends, it is unwound as before (runtime._idle): at a real
                    # exit, hooks such as concurrent.futures' wake such threads.
                    self.daemon = False
                    self._racecheck_main_made = True  # type: ignore[attr-defined]
            # A counter of its own: locks are numbered only when something asks
            # for their name (the detector, DPOR's record), which must not move
            # a thread's hash and with it the order a set of threads is joined in.
            runtime.threads_made += 1
            self._racecheck_hash = (1 << 40) + runtime.threads_made  # type: ignore[attr-defined]
    finally:
        if trace in PLAIN_TRACES:
            settrace(trace)


def _hash(self: threading.Thread) -> int:
    """Threads made during a run hash by creation order, not by address.

    ``ThreadPoolExecutor.shutdown`` joins the threads of a *set*; with address
    hashes the join order, and so the schedule, would change from run to run.
    Threads made before the run keep their usual hash.
    """
    serial: int | None = self.__dict__.get("_racecheck_hash")
    return serial if serial is not None else object.__hash__(self)


def _controlled() -> tuple[ThreadRuntime | None, Actor | None]:
    runtime = STATE.runtime
    if runtime is None:
        return None, None
    return runtime, runtime.me()


def _start(self: threading.Thread) -> None:
    trace = gettrace()  # 3.11: racecheck's own work runs untraced (see runtime.PLAIN_TRACES)
    if trace in PLAIN_TRACES:
        settrace(None)
    try:
        runtime, me = _controlled()
        if runtime is None or me is None:
            _ORIGINAL_START(self)
            return
        if runtime.controller.aborting:
            raise RunAborted()
        name = self.name
        if name.startswith("Thread-"):  # the regex only for names it may rewrite
            name = _DEFAULT_THREAD_NAME.sub(f"Thread-{runtime.next_id}", name, count=1)
        run = self.run

        def actor_main() -> None:
            # The worker woke on its wake gate, which is this actor's gate: it
            # holds the baton already.
            if runtime.controller.aborting:
                pool_mark_stopped(self, worker)
                worker.hand_on = runtime.exit(actor)
                return
            tracer = runtime.tracer  # type: ignore[attr-defined]
            tracer.enable_thread(runtime)
            steplog = runtime.controller.steplog
            try:
                if steplog is None:
                    run()  # no context manager: on 3.11 each of its calls is a traced event
                else:
                    with steplog.watching():  # DPOR: this thread's C calls and primitives
                        run()
            except RunAborted:
                pass
            except BaseException as exc:
                if not runtime.controller.aborting:
                    runtime.fail_exception(actor, exc)
            finally:
                tracer.disable_thread(runtime.controller.aborting)
                # Stopped before the baton moves on: whoever joins it next finds
                # the Thread finished, with no wait for the worker's tail. The
                # worker opens the next actor's gate once its tail is done.
                pool_mark_stopped(self, worker)
                worker.hand_on = runtime.exit(actor)

        pool: ThreadPool = runtime.pool  # type: ignore[attr-defined]
        me.passthrough += 1  # a new worker's own Thread handshake must be the real one
        try:
            worker = pool.lend(self, actor_main, runtime.used_workers)  # type: ignore[attr-defined]
        finally:
            me.passthrough -= 1
        self._racecheck_worker = worker  # type: ignore[attr-defined]
        # the worker's wake is the actor's gate: it runs the first time the actor is chosen
        actor = runtime.new_actor(name, self, self.daemon, worker.wake)
        detector = runtime.controller.detector
        if detector is not None:
            detector.fork(me.id, actor.id)
            detector.names[actor.id] = name
        self._racecheck_actor = actor  # type: ignore[attr-defined]
        self._racecheck_runtime = runtime  # type: ignore[attr-defined]
        actor.ident = worker.ident
        runtime.by_ident[worker.ident] = actor
        runtime.point(me, f"start {name}")
    finally:
        if trace in PLAIN_TRACES:
            settrace(trace)


def _actor_of(thread: threading.Thread, runtime: ThreadRuntime) -> Actor | None:
    actor: Actor | None = thread.__dict__.get("_racecheck_actor")
    if actor is not None and thread.__dict__.get("_racecheck_runtime") is runtime:
        return actor
    return None


def _join(self: threading.Thread, timeout: float | None = None) -> None:
    trace = gettrace()  # 3.11: racecheck's own work runs untraced (see runtime.PLAIN_TRACES)
    if trace in PLAIN_TRACES:
        settrace(None)
    try:
        runtime, me = _controlled()
        target = _actor_of(self, runtime) if runtime is not None else None
        if runtime is None or me is None or target is None:
            _ORIGINAL_JOIN(self, timeout)
            return
        if self is threading.current_thread():
            raise RuntimeError("cannot join current thread")
        runtime.point(me, f"join {target.name}")
        if not target.finished:
            deadline = None if timeout is None else runtime.controller.now + timeout
            runtime.block(me, lambda: target.finished, deadline, f"join {target.name}")
        detector = runtime.controller.detector
        if target.finished and detector is not None:
            detector.joined(me.id, target.id)
    finally:
        if trace in PLAIN_TRACES:
            settrace(trace)


def _is_alive(self: threading.Thread) -> bool:
    runtime = STATE.runtime
    target = _actor_of(self, runtime) if runtime is not None else None
    if target is None:
        return _ORIGINAL_IS_ALIVE(self)
    return not target.finished


# -- event loops created inside the run ---------------------------------------------
def _new_event_loop() -> asyncio.AbstractEventLoop:
    from racecheck.backends.asyncio_loop import new_loop

    runtime = STATE.runtime
    if runtime is None or runtime.me() is None:
        return asyncio.SelectorEventLoop()
    loop = new_loop(ThreadHost(runtime))
    runtime.loops.append(loop)  # type: ignore[attr-defined]
    if runtime.controller.steplog is not None:
        # DPOR: the loop's time (call_later, timeouts, user code) is a read of
        # the clock, which a timer firing early may move under it. Only this
        # loop's instance: the asyncio backend's hot path stays as it is.
        loop.time = _clock_of(loop, runtime)  # type: ignore[method-assign]
    return loop


def _clock_of(loop: Any, runtime: ThreadRuntime) -> Callable[[], float]:
    def time() -> float:
        if runtime.me() is None:  # another thread's plumbing: nothing to order
            return float(runtime.controller.now)
        return runtime.read_clock()

    return time


def _discard_abandoned_loops(runtime: ThreadRuntime) -> None:
    """Close the event loops a failed run made and left open.

    racecheck aborted the run, so whatever those loops still hold can never
    run: a task that never started would warn "coroutine ... was never
    awaited", and the loop "unclosed event loop", whenever the failure that
    holds them is dropped, in some later test's output, about racecheck's
    abort rather than the user's code. A run that passed keeps its loops as
    the target left them.
    """
    loops = getattr(runtime, "loops", ())
    if runtime.controller.failure is None:
        return
    for loop in loops:
        if loop.is_closed() or loop.is_running():
            continue
        try:
            for task in asyncio.all_tasks(loop):
                task._log_destroy_pending = False  # type: ignore[attr-defined]
                coro = task.get_coro()
                if inspect.iscoroutine(coro) and (
                    inspect.getcoroutinestate(coro) == inspect.CORO_CREATED
                ):
                    coro.close()
            loop.close()
        except Exception:  # a loop in a state racecheck cannot tidy: leave it
            continue


_UNSCHEDULED_LOOP = (
    "an event loop ran on a thread racecheck does not schedule (or in racecheck's own"
    " plumbing): its tasks ran in asyncio's order, unseen by the decisions"
)


class ThreadHost:
    """Host of an event loop running in a controlled thread (the mixed model).

    Each task step is a decision like any other, and an idle loop is an actor
    blocked until someone (a worker thread's call_soon_threadsafe, a timer at
    the virtual deadline) gives it work.
    """

    records_steps = False  # the loop thread's tracer sees the lines and accesses
    #: executor work runs on real threads, controlled like the others
    schedules_threads = True

    def __init__(self, runtime: ThreadRuntime) -> None:
        self.runtime = runtime
        self.controller = runtime.controller

    def next_actor_id(self) -> int:
        return self.runtime.allocate_id()

    def choose_task(self, loop: Any, candidates: list[int]) -> int:
        runtime = self.runtime
        me = runtime.me()
        controller = self.controller
        if me is None:
            if controller.steplog is not None:
                controller.steplog.blind_spot(_UNSCHEDULED_LOOP)
            return 0
        if controller.detector is not None:
            self.detect_callback(loop, None)
        if controller.steplog is not None and loop._scheduled:
            runtime.read_clock()  # this step found its due timers by the clock
        pending = runtime.pending_task(me, candidates)
        if pending is not None:
            return pending  # chosen while this thread waited: already a decision
        # One decision over this loop's ready tasks and every other enabled
        # actor (see ThreadRuntime._offer): DPOR sees who could have run.
        return runtime.loop_choice(me, loop, candidates)

    # The loop's tasks share its thread's clock; what crosses threads is
    # call_soon_threadsafe, acquired by the loop's next step or callback.
    def detect_scheduled(self, handle: Any) -> None:
        log = self.controller.steplog
        if log is not None:
            loop = handle._loop
            thread = threading.get_ident()
            if thread != loop._thread_id:
                # Queued from another thread (call_soon, ensure_future, a
                # cancel): what the loop's next steps run depends on when.
                log.handed_off(loop, handle, thread)  # a write of the loop, at least
            elif not getattr(handle, "_scheduled", False):
                # the loop's own append (not a timer into its heap: that one is
                # appended when due, see StepLog.timers_queued)
                log.loop_queued(loop)

    def detect_callback(self, loop: Any, handle: Any) -> None:
        me = self.runtime.me()
        if me is None:
            return
        detector = self.controller.detector
        if detector.record_only:
            # DPOR alone: the loop's thread looks at its ready queue here, an
            # append log (see StepLog.loop_queued): reads, so steps of the
            # loop's own tasks stay independent of each other.
            log = self.controller.steplog
            if log is not None:
                log.timers_queued(loop)
                if handle is None:
                    log.task_look(loop)
                else:
                    log.callback_look(loop, handle)
            return
        detector.acquire(me.id, loop)

    def detect_threadsafe_call(self, loop: Any) -> None:
        me = self.runtime.me()
        if me is None:
            return
        detector = self.controller.detector
        if detector.record_only:
            log = self.controller.steplog
            if log is not None:
                # its handle is a hand-off, recorded when queued (StepLog.handed_off)
                log.threadsafe_call(loop, threading.get_ident())
            return
        detector.release(me.id, loop)

    def idle(self, loop: Any) -> None:
        me = self.runtime.me()
        if me is None:
            if self.controller.steplog is not None:
                self.controller.steplog.blind_spot(_UNSCHEDULED_LOOP)
            loop._rc_poll_external(0.01)
            return
        if loop._stopping:
            return
        # Idle, the thread is the loop's machinery again: woken, it runs
        # callbacks, not the task that stepped last.
        me.running_task = me.hosting_loop = None
        deadline = loop._rc_next_timer()
        # A real loop sleeps in select() here: only a self-pipe write
        # (call_soon_threadsafe) or a timer wakes it. A plain call_soon from
        # another thread fills the ready queue but wakes nobody — a lost
        # wakeup racecheck must reproduce, not paper over.
        seen = loop._rc_wakeups
        runtime = self.runtime
        log = self.controller.steplog
        if log is not None and deadline is None and loop._rc_wakeups == seen:
            log.idle_look(loop)  # a wait only a hand-off ends: a stutter
        if deadline is not None:
            # Its timer may fire while other actors could still run (see
            # ThreadRuntime._early_timers): a thread may be descheduled that long.
            runtime.timer_loops.append(me)
        try:
            runtime.block(
                me, lambda: loop._rc_wakeups != seen, deadline, "loop idle (waiting for work)"
            )
        finally:
            if deadline is not None:
                runtime.timer_loops.remove(me)
        loop._rc_poll_external(0)  # drain the self-pipe
        loop._rc_move_due_timers()
        if self.controller.steplog is not None:
            self.controller.steplog.timers_queued(loop)
            self.controller.steplog.loop_woken(loop, deadline is not None)
            if deadline is not None:
                runtime.read_clock()  # which of its timers are due
