"""OS threads reused across schedules, presented as the user's Thread objects.

Creating an OS thread costs more than running a small schedule, so a run of
thousands of schedules would mostly measure ``pthread_create``. Instead each
controlled ``Thread.start`` borrows a parked worker: while it runs the user's
``run``, ``threading.current_thread()`` *is* the user's Thread object (its
``ident``/``native_id`` are the worker's), and when it ends the Thread is
marked stopped exactly as CPython would (``_is_stopped`` on 3.11/3.12, the
thread handle on 3.13+), so it keeps behaving after racecheck unpatches.

A worker is never lent twice within one run, so two threads of one schedule
never share thread-local state, and a job's end drops the thread-locals it
left (:mod:`racecheck.thread_locals`), so no later schedule's thread finds
them. Each job runs in a fresh ``contextvars`` context, as a new thread would.

Speed: a lent worker's wake lock *is* its actor's gate (see
:meth:`ThreadPool.lend`). The worker does not wake when the Thread starts,
only when the scheduler first hands it the baton, so starting a thread costs
no wake-up of its own and no second thread fighting for the GIL. The Thread is
marked stopped by the actor itself before it hands the baton on
(:func:`mark_stopped`), so ``join`` need not wait for the worker's tail, and
the next run waits for a worker only if it picks one still in that tail.
"""

from __future__ import annotations

import _thread
import contextvars
import threading
import time
from collections.abc import Callable
from typing import Any

from racecheck import thread_locals
from racecheck.backends.threads.gate import Gate
from racecheck.engine import join_exploration

_allocate_lock = _thread.allocate_lock
get_ident = _thread.get_ident
#: the real join, whatever threading.Thread.join is while an exploration runs
_JOIN = threading.Thread.join
_IS_ALIVE = threading.Thread.is_alive


class Worker:
    __slots__ = ("busy", "hand_on", "ident", "job", "native_id", "stopped", "thread", "wake")

    def __init__(self) -> None:
        #: closed while parked; lent, it is the actor's gate (open = may run)
        self.wake = Gate()
        self.job: Callable[[], None] | None = None
        self.busy = _allocate_lock()  # held from lend until the job's tail is done
        self.thread: threading.Thread | None = None
        self.ident = 0
        self.native_id = 0
        #: the lent Thread was marked stopped (by mark_stopped or the job's tail)
        self.stopped = True
        #: set by a finishing job: the gate of the actor that runs next, opened
        #: once this worker's tail is done (see ThreadRuntime.exit)
        self.hand_on: Gate | None = None


#: the most workers a pool of this process has had: the next exploration's
#: pool starts with that many (see ThreadPool.prepare)
_workers_wanted = 2
#: made ahead only up to this many: a run that started dozens of threads once
#: should not make every later exploration pay for them
_AHEAD_AT_MOST = 8


class ThreadPool:
    def __init__(self, start_thread: Callable[[threading.Thread], None]) -> None:
        self._start_thread = start_thread
        self._all: list[Worker] = []
        self._closed = False
        #: the gate of each run's root actor (see :meth:`root`), made once
        self.root_gate = Gate()
        self._root_thread: int | None = None

    def prepare(self) -> None:
        """Make the workers this exploration will likely lend, before its first run.

        Made inside the first run, a worker's objects (its Thread, gates,
        locks, the closures CPython's thread start keeps) are younger than the
        heap the exploration freezes before that run, so they sit in
        generation 2 for the whole exploration and every collection between
        runs is a full one that walks them (about 8 us a schedule on 3.11).
        Made here, at install, they join the frozen heap. How many: as many as
        the largest pool of this process has had (two at first); a run that
        needs more makes them as before.
        """
        while len(self._all) < min(_workers_wanted, _AHEAD_AT_MOST):
            self._spawn()

    def root(self) -> Gate:
        """The gate of the calling thread, which runs a run's root actor."""
        self._root_thread = get_ident()
        return self.root_gate

    def lend(self, thread: threading.Thread, run: Callable[[], None], used: set[Worker]) -> Worker:
        """Prepare ``run`` as ``thread`` on a worker not yet used in this run.

        The worker does not start yet: it runs ``run`` once its wake lock,
        returned as ``worker.wake`` and used as the actor's gate, is released
        by the scheduler. Workers are taken in creation order, so a schedule
        uses the same OS threads whatever the timing of the previous run.
        """
        worker = None
        for candidate in self._all:
            if candidate not in used:
                worker = candidate
                break
        if worker is None:
            worker = self._spawn()
        used.add(worker)
        # Held only by a job's tail (pure racecheck bookkeeping, microseconds)
        # or by a worker lost in C, which _reap has already dropped from _all.
        worker.busy.acquire()
        # A gate opened twice while an aborted run unwound may have been left
        # open: close it, or the job would start without the baton.
        worker.wake.drain()
        _present_as(thread, worker)
        worker.stopped = False

        def job() -> None:
            try:
                contextvars.Context().run(run)
            finally:
                mark_stopped(thread, worker)

        worker.job = job
        return worker

    def forget(self, worker: Worker) -> None:
        """Drop a worker that did not come back (blocked in C): never lend it again."""
        if worker in self._all:
            self._all.remove(worker)

    def keeps(self, worker: Worker) -> bool:
        """``worker`` was not forgotten: it may be waited for, and lent again."""
        return worker in self._all

    def _spawn(self) -> Worker:
        worker = Worker()
        ready = _allocate_lock()
        ready.acquire()

        def loop() -> None:
            join_exploration()  # a check() from an actor thread would nest
            # racecheck's own thread-locals: the only ones a job's end keeps
            own_locals = thread_locals.mark()
            worker.ident = threading.get_ident()
            worker.native_id = threading.get_native_id()
            ready.release()
            while True:
                worker.wake.wait()
                job, worker.job = worker.job, None
                if job is None:
                    if self._closed:
                        return
                    continue  # a stray release of an aborted run's gate
                try:
                    job()
                finally:
                    # The job names the run's Thread, actor and runtime: held
                    # here until the next wake-up, they would be freed inside
                    # the next schedule (see backend._untangle), not with their run.
                    job = None
                    # Its thread ended: its thread-locals go, as CPython drops a
                    # thread's, or the next schedule's thread on this worker would
                    # find them (a per-thread setup done already, never raced again).
                    thread_locals.forget_since(own_locals)
                    # An abort's open its actor never took (one from outside the
                    # run can meet a hand-over's, see ThreadRuntime.abort_all):
                    # taken here, while the next lend still waits for busy, not
                    # by the wait below, which would start the next job with it.
                    worker.wake.drain()
                    worker.busy.release()
                    # Only now the baton moves on: this thread has nothing left
                    # to run but the wait below, so the woken one finds the GIL
                    # free (and the run's end finds the tail done).
                    hand_on, worker.hand_on = worker.hand_on, None
                    if hand_on is not None:
                        hand_on.open()
                if self._closed:
                    # Closed while this job ran (an aborted run still
                    # unwinding): nobody would ever wake this worker again.
                    return

        thread = threading.Thread(
            target=loop, name=f"racecheck-worker-{len(self._all) + 1}", daemon=True
        )
        worker.thread = thread
        self._start_thread(thread)
        ready.acquire()
        self._all.append(worker)
        return worker

    def wait_idle(self, worker: Worker, timeout: float) -> bool:
        if worker.busy.acquire(True, timeout):
            worker.busy.release()
            return True
        return False

    def settle(self, workers: set[Worker], timeout: float) -> None:
        """Wait until each of ``workers`` has finished its job's tail.

        Not for a worker already forgotten (lost in C): it may never come back.
        """
        for worker in workers:
            if self.keeps(worker):
                self.wait_idle(worker, timeout)

    def close(self, grace: float = 2.0) -> None:
        """Let every worker's OS thread end, and wait (bounded) until it has.

        Waiting matters: a worker still alive after ``check()`` returns shows
        in ``threading.enumerate()`` and counts in ``active_count()``. A worker
        blocked in C for good is left behind after ``grace`` seconds.
        """
        global _workers_wanted
        _workers_wanted = max(_workers_wanted, len(self._all))
        self._closed = True
        workers, self._all = self._all, []
        for worker in workers:
            if worker.busy.acquire(False):
                worker.busy.release()
                worker.job = None
                try:
                    worker.wake.force_open()
                except RuntimeError:  # a lock gate that was open already
                    pass
        deadline = time.monotonic() + grace
        for worker in workers:
            thread = worker.thread
            if thread is not None and thread is not threading.current_thread():
                _JOIN(thread, max(deadline - time.monotonic(), 0.0))
                if not _IS_ALIVE(thread):
                    worker.wake.close()  # a worker still alive may yet wait on it: kept
        if get_ident() == self._root_thread:
            self.root_gate.close()  # else the root may still wait on it: kept


def _present_as(thread: threading.Thread, worker: Worker) -> None:
    if hasattr(thread, "_handle"):
        # 3.13+: a running handle for the worker's ident, marked done at the end.
        thread._handle = _thread._make_thread_handle(worker.ident)  # type: ignore[attr-defined]
    thread._ident = worker.ident  # type: ignore[attr-defined]
    thread._native_id = worker.native_id  # type: ignore[attr-defined]
    started: Any = thread._started  # type: ignore[attr-defined]
    # A plain flag write, not set(): set() on racecheck's Event is a
    # scheduling point, and this is bookkeeping, not user behaviour.
    if hasattr(started, "_flag"):
        started._flag = True
    else:
        started.set()
    threading._active[worker.ident] = thread  # type: ignore[attr-defined]


def mark_stopped(thread: threading.Thread, worker: Worker) -> None:
    """Mark ``thread`` finished as CPython would; once per lend."""
    if worker.stopped:
        return
    worker.stopped = True
    handle = getattr(thread, "_handle", None)
    if handle is not None and hasattr(handle, "_set_done"):
        handle._set_done()  # 3.13+
    else:
        thread._is_stopped = True  # type: ignore[attr-defined]
        thread._tstate_lock = None  # type: ignore[attr-defined]
    if worker.thread is not None:
        threading._active[worker.ident] = worker.thread  # type: ignore[attr-defined]
