"""The trio backend: an ``async def`` target under ``trio.run``, scheduled by racecheck.

trio has no public hook that chooses the next task, but its run loop already
has a seam for deterministic testing: every pass takes the *batch* of runnable
tasks (the whole run queue) and, when
``trio._core._run._ALLOW_DETERMINISTIC_SCHEDULING`` is true, sorts it by task
creation order and calls ``_r.shuffle(batch)`` on the module-level
``random.Random`` ``_r``; then it runs the batch from its end. For the
duration of a run racecheck swaps ``_r`` for a :class:`_TrioRun` whose
``shuffle`` keeps trio's housekeeping and *one* actor in the batch and puts
every other runnable actor straight back into the run queue, where it stays
runnable for a later pass. So each task step is one engine decision.
Everything else -- checkpoints, nurseries, cancel scopes, deadlines, Lock,
Semaphore, Event, Condition, memory channels -- is trio's own code, unchanged.

**The decision model is asyncio's.** At every step the candidates are all
runnable actors, in the order trio itself would run them: what is left of
the current batch (creation order), then the tasks that became runnable since
(the next batch, creation order). Index 0 is therefore trio's own
deterministic order, an all-zero schedule is the "natural" run, and shrinking
moves toward it. Picking another candidate postpones the ones ahead of it;
trio promises no more than that a runnable task runs *eventually*, so a task
left queued for several batches is a schedule real trio may take (racecheck
used to reorder within a batch only, which made bugs needing one side to
start a few checkpoints late unreachable). How long a task waits is the
strategy's choice; the step bound keeps every run finite, and the engine's
fairness bound stops one task from winning every step of a spin loop.

**What a preemption counts here.** Tasks switch only at checkpoints, so a
"preemption" (what exhaustive search bounds, and what a trace marks with
``»``) is a *delay*: one step where the task run is not the one trio would
run next. How far it jumps the queue does not matter; it costs one.
"exhausted" on trio therefore means every schedule with at most that many
delays from trio's batch order ran -- over the whole run-queue freedom, not
a part of it. Two things stay outside the model, and a run that met them
never claims "exhausted" (:attr:`TrioBackend.scheduling_limit`): work that
arrives from outside the run (a real thread, a socket), and ``to_thread``
workers, which run inline at their call (see below).

While a failed run unwinds, the order no longer matters: the whole batch
runs at once, as trio would, so cancellation reaches everyone quickly.

Three more pieces make a run deterministic and finite:

* **Virtual time.** A racecheck clock (trio's public ``Clock`` protocol) is
  passed to ``trio.run``. trio asks ``deadline_to_sleep_time`` only when no task
  is runnable; the clock then jumps straight to the next deadline, so
  ``trio.sleep(3600)`` and ``move_on_after`` cost nothing, and mirrors the time
  in ``controller.now``. As on asyncio, time stands still while any task is
  runnable, however long it stays queued: a deadline fires only once
  everything runnable has run.
* **Deadlock detection.** When nothing is runnable, no deadline is pending, no
  ``run_sync_soon`` callback is queued and nothing external (a thread, a socket)
  could wake the run, trio would wait for I/O forever. The clock sees exactly
  that moment (an infinite deadline with an empty run queue), reports a
  ``deadlock`` naming every task's wait, and cancels the run so it unwinds.
  No wall-clock timeout is involved.
* **Threads inline.** ``trio.to_thread.run_sync`` hands its worker to
  ``trio._threads.start_thread_soon``; during a run that is replaced by a
  function that runs the worker inline, in the calling task's step. A real
  thread would put the work outside racecheck's control and make "nothing is
  runnable" ambiguous (false deadlocks, or real waiting). The price: a worker
  runs atomically, at its call (other tasks never run while it works, though
  the steps before and after the call are scheduled like any other), so a run
  that used one never claims "exhausted"; and ``trio.from_thread`` calls from
  a worker are reported as an :class:`UnsupportedError` rather than run.

The hooks are private, so the tested range is pinned (:data:`TESTED`), and
:meth:`TrioBackend.install` checks the version *and* probes that the hooks
behave (a tiny ``trio.run`` whose batch order must follow the probe's choices)
before exploring; the probe postpones a runnable task the way runs do. Every
patched global is restored after each run, failing or not, and again by
:meth:`TrioBackend.uninstall`.
"""

from __future__ import annotations

import _thread
import gc
import math
import operator
import os
import re
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from racecheck.backends.thread_starts import ThreadStarts
from racecheck.engine import Controller, Failure, RunAborted
from racecheck.errors import UnsupportedError, UsageError

#: trio versions whose run loop racecheck was tested against: [low, high)
TESTED = ((0, 22), (0, 36))
#: set this environment variable to try an untested trio (the behaviour probe still runs)
ALLOW_UNTESTED_ENV = "RACECHECK_TRIO_UNTESTED"

#: real seconds to wait for an external wake-up (a user thread, a socket) per loop pass;
#: a wait that never ends is the engine watchdog's business
_EXTERNAL_POLL = 0.05
#: "as long as you like": trio clamps it (to a wait_all_tasks_blocked cushion, or 24h)
_FOREVER = 86400.0
#: unwinding phases of a run that is over (see _TrioRun.cancel_all)
_RUNNING, _CANCELLING, _KILLING = 0, 1, 2
#: batches a cancelled run may take to unwind before RunAborted is thrown in
_CANCEL_ROUNDS = 1000
#: batches/idle passes of throwing RunAborted in before trio's loop is stopped
_KILL_ROUNDS = 200

_OPERATIONS = {
    "_LockImpl.acquire": "acquire",
    "Semaphore.acquire": "acquire",
    "CapacityLimiter.acquire": "acquire",
    "CapacityLimiter.acquire_on_behalf_of": "acquire",
    "Event.wait": "wait for",
    "Condition.wait": "wait on",
    "MemorySendChannel.send": "send to",
    "MemoryReceiveChannel.receive": "receive from",
    "ParkingLot.park": "park on",
    "sleep": "sleep",
    "sleep_until": "sleep",
    "sleep_forever": "sleep forever",
    "checkpoint": "checkpoint",
    "to_thread_run_sync": "wait for thread",
    "NurseryManager.__aexit__": "wait for nursery children",
    "Nursery._nested_child_finished": "wait for nursery children",
    "wait_readable": "wait readable",
    "wait_writable": "wait writable",
}
#: Task attributes the backend reads or sets (checked by the start-up probe)
_TASK_ATTRIBUTES = (
    "_counter",
    "coro",
    "name",
    "parent_nursery",
    "_next_send_fn",
    "_next_send",
    "_abort_func",
    "_attempt_abort",
)
_NO_RESOURCE = {"NurseryManager.__aexit__", "Nursery._nested_child_finished"}
#: the sort key of trio's deterministic batch order
_CREATION_ORDER = operator.attrgetter("_counter")


# --------------------------------------------------------------- trio access


def _trio() -> Any:
    try:
        import trio
    except ImportError:
        raise UnsupportedError(
            "backend='trio' needs trio installed (pip install 'racecheck[trio]')"
        ) from None
    return trio


def _run_module() -> Any:
    _trio()
    import trio._core._run as run_module

    return run_module


def _threads_module() -> Any:
    _trio()
    import trio._threads as threads_module

    return threads_module


def installed_version() -> str:
    """trio's version string (the input of :func:`check_version`; tests replace it)."""
    return str(_trio().__version__)


def check_version(version: str) -> None:
    """Raise :class:`UnsupportedError` unless ``version`` is in the tested range."""
    low, high = TESTED
    match = re.match(r"(\d+)\.(\d+)", version)
    if match is not None and low <= (int(match[1]), int(match[2])) < high:
        return
    if os.environ.get(ALLOW_UNTESTED_ENV):
        return
    raise UnsupportedError(
        f"trio {version} is not supported by racecheck's trio backend: it relies on trio's"
        f" private scheduling hooks (trio._core._run._r, _ALLOW_DETERMINISTIC_SCHEDULING),"
        f" tested with trio >={low[0]}.{low[1]},<{high[0]}.{high[1]}. Install a tested"
        f" trio, or set {ALLOW_UNTESTED_ENV}=1 to try this one (a start-up probe still"
        " checks that the hooks behave)"
    )


# ------------------------------------------------------- patching, restoring

#: a raw lock: trio may be imported while the threads backend has threading patched
_patch_lock = _thread.allocate_lock()
#: the originals while patched; None when trio is pristine
_saved: dict[str, Any] | None = None


def _patch(scheduler: Any, start_thread_soon: Callable[..., None] | None) -> None:
    """Swap trio's batch shuffler (and, optionally, its thread starter) for ours."""
    global _saved
    run_module, threads_module = _run_module(), _threads_module()
    with _patch_lock:
        if _saved is None:
            _saved = {
                "_r": run_module._r,
                "_ALLOW_DETERMINISTIC_SCHEDULING": run_module._ALLOW_DETERMINISTIC_SCHEDULING,
                "start_thread_soon": threads_module.start_thread_soon,
            }
        run_module._r = scheduler
        run_module._ALLOW_DETERMINISTIC_SCHEDULING = True
        if start_thread_soon is not None:
            threads_module.start_thread_soon = start_thread_soon


def _restore() -> None:
    """Put trio's globals back exactly as they were. Idempotent."""
    global _saved
    with _patch_lock:
        saved, _saved = _saved, None
        if saved is None:
            return
        run_module, threads_module = _run_module(), _threads_module()
        run_module._r = saved["_r"]
        run_module._ALLOW_DETERMINISTIC_SCHEDULING = saved["_ALLOW_DETERMINISTIC_SCHEDULING"]
        threads_module.start_thread_soon = saved["start_thread_soon"]


def _original(name: str) -> Any:
    """The unpatched value of a trio global (for calls from other threads' runs)."""
    saved = _saved
    if saved is not None:
        return saved[name]
    if name == "start_thread_soon":
        return _threads_module().start_thread_soon
    return getattr(_run_module(), name)


# ------------------------------------------------------------- self-check

#: the version whose hooks passed the probe; io waits of trio's own tasks when idle
_probed: tuple[str, int] | None = None


def _self_check(version: str) -> int:
    """Check that the private hooks exist and behave; return trio's own idle I/O waits.

    Existence alone is not enough: a trio that still has ``_r`` but stopped
    calling ``_r.shuffle`` would silently explore nothing. So a tiny run checks
    that the order chosen is the order the tasks run in (tasks left in the run
    queue by one pass included, so postponing works), that the clock is asked
    when the run is idle, and that the runner attributes the backend reads are
    there.
    """
    global _probed
    if _probed is not None and _probed[0] == version:
        return _probed[1]
    trio = _trio()
    run_module, threads_module = _run_module(), _threads_module()
    missing = [
        f"trio._core._run.{name}"
        for name in ("_r", "_ALLOW_DETERMINISTIC_SCHEDULING", "GLOBAL_RUN_CONTEXT")
        if not hasattr(run_module, name)
    ]
    if not callable(getattr(getattr(run_module, "_r", None), "shuffle", None)):
        missing.append("trio._core._run._r.shuffle")
    if not callable(getattr(threads_module, "start_thread_soon", None)):
        missing.append("trio._threads.start_thread_soon")
    if missing:
        raise UnsupportedError(_probe_failed(version, "missing " + ", ".join(missing)))
    probe = _Probe(trio, run_module)
    _patch(probe, None)
    try:
        trio.run(probe.main, clock=probe)
    except UnsupportedError:
        raise
    except BaseException as exc:
        raise UnsupportedError(_probe_failed(version, f"{type(exc).__name__}: {exc}")) from exc
    finally:
        _restore()
    problem = probe.problem()
    if problem:
        raise UnsupportedError(_probe_failed(version, problem))
    _probed = (version, probe.idle_io)
    return probe.idle_io


def _probe_failed(version: str, why: str) -> str:
    return (
        f"trio {version}: racecheck's trio backend cannot control this trio's scheduler"
        f" ({why}); the hooks it needs are private. Use a trio in the tested range"
        f" >={TESTED[0][0]}.{TESTED[0][1]},<{TESTED[1][0]}.{TESTED[1][1]}"
    )


class _Probe:
    """The start-up probe: both the batch shuffler and the clock of a tiny run."""

    #: run order the probe imposes on its three children (by child index)
    WANTED = (1, 0, 2)

    def __init__(self, trio: Any, run_module: Any) -> None:
        self.trio = trio
        self.run_module = run_module
        self.now = 0.0
        self.shuffles = 0
        self.order: list[tuple[int, int]] = []
        self.idle_asked = False
        self.idle_io = 1
        self.runner_ok = False
        self.task_ok = True
        self.idle_forever = 0
        self.runq_ok = True
        self.version = str(trio.__version__)

    # -- the shuffler
    def shuffle(self, batch: list[Any]) -> None:
        """Run one probe child per pass, the first in WANTED order; postpone the others.

        That is the backend's own move (a runnable task left in the run queue
        for a later pass), so the probe's order proves it works on this trio.
        """
        self.shuffles += 1
        rank = {f"racecheck-probe-{i}": position for position, i in enumerate(self.WANTED)}
        for task in batch:
            if not all(hasattr(task, a) for a in _TASK_ATTRIBUTES):
                self.task_ok = False
        children = sorted(
            (t for t in batch if getattr(t, "name", "") in rank), key=lambda t: rank[t.name]
        )
        if len(children) > 1:
            runq = getattr(self.run_module.GLOBAL_RUN_CONTEXT.runner, "runq", None)
            if runq is None or not callable(getattr(runq, "extend", None)):
                self.runq_ok = False
            else:
                postponed = children[1:]
                runq.extend(postponed)
                batch[:] = [t for t in batch if t not in postponed]

    def __getattr__(self, name: str) -> Any:
        return getattr(_original("_r"), name)

    # -- the clock
    def start_clock(self) -> None:
        pass

    def current_time(self) -> float:
        return self.now

    def deadline_to_sleep_time(self, deadline: float) -> float:
        if not math.isfinite(deadline):
            self.idle_forever += 1
            if self.idle_forever > 1000:  # never hang start-up on a misbehaving trio
                raise UnsupportedError(_probe_failed(self.version, "the probe run stalled"))
        elif deadline > self.now:
            self.idle_asked = True
            self.idle_io = _io_waiting(self.trio.lowlevel.current_statistics())
            self.now = deadline
        return 0.0

    # -- the program
    async def main(self) -> None:
        trio = self.trio

        async def child(index: int) -> None:
            self.order.append((index, 0))
            await trio.sleep(0)
            self.order.append((index, 1))

        async with trio.open_nursery() as nursery:
            for index in range(3):
                nursery.start_soon(child, index, name=f"racecheck-probe-{index}")
        runner = self.run_module.GLOBAL_RUN_CONTEXT.runner
        self.runner_ok = all(
            hasattr(runner, a) for a in ("main_task", "init_task", "waiting_for_idle", "tasks")
        )
        await trio.sleep(5)

    def problem(self) -> str:
        if not self.shuffles:
            return "the run loop never called _r.shuffle"
        if not self.task_ok:
            return "tasks lack " + "/".join(_TASK_ATTRIBUTES)
        if not self.runq_ok:
            return "the runner has no run queue to postpone tasks into"
        wanted = [(index, step) for index in self.WANTED for step in (0, 1)]
        if self.order != wanted:
            return f"the chosen order was not followed (ran {self.order}, chose {wanted})"
        if not self.idle_asked or self.now != 5:
            return "the clock was not asked for the idle sleep time"
        if not self.runner_ok:
            return "the runner lacks main_task/init_task/waiting_for_idle/tasks"
        return ""


def _io_waiting(stats: Any) -> int:
    io = stats.io_statistics
    count = 0
    for name in ("tasks_waiting_read", "tasks_waiting_write", "tasks_waiting"):
        value = getattr(io, name, 0)
        if isinstance(value, int):
            count += value
    return count


# -------------------------------------------------------------- one run


class _TrioRun:
    """One ``trio.run`` under racecheck: batch shuffler, clock and inline thread starter.

    The object is installed as ``trio._core._run._r`` (hence ``shuffle`` and
    the delegation of every other ``random.Random`` method to the original) and
    passed as the run's clock.
    """

    def __init__(
        self,
        trio: Any,
        run_module: Any,
        target: Callable[[], Coroutine[Any, Any, Any]],
        controller: Controller,
        idle_io: int,
    ) -> None:
        self.trio = trio
        self.run_module = run_module
        self.target = target
        self.controller = controller
        self.idle_io = idle_io
        self.thread = threading.get_ident()
        self.threads_at_start = threading.active_count()
        self.now = 0.0
        self.runner: Any = None
        self.token: Any = None
        self.scope: Any = None
        #: task -> actor id (0: one of trio's own housekeeping tasks, not an actor)
        self.actors: dict[Any, int] = {}
        self.names: dict[int, str] = {}
        self.next_actor = 1
        #: task -> the index chosen for it in its last step (trace: preempted or not)
        self.chosen: dict[Any, int] = {}
        #: what is left of trio's current batch, in the order trio would run it
        self.queue: list[Any] = []
        #: the run waited for a thread or I/O racecheck does not run (see scheduling_limit)
        self.waited_outside = False
        #: a to_thread worker ran inline (see scheduling_limit)
        self.ran_inline_worker = False
        #: how far the unwinding of a failed run went: _RUNNING, _CANCELLING, _KILLING
        self.phase = _RUNNING
        self.cancel_rounds = 0
        self.kill_rounds = 0
        self.hard_abort = False
        self.trio_dir = os.path.dirname(os.path.abspath(trio.__file__)) + os.sep

    # -- the target, wrapped in a cancel scope racecheck can cancel
    async def main(self) -> None:
        trio = self.trio
        self.token = trio.lowlevel.current_trio_token()
        with trio.CancelScope() as scope:
            self.scope = scope
            if self.controller.aborting:
                self.cancel_all()
            await self.target()

    # -- unwinding a run that is over
    #
    # A failed, limited or interrupted run must end *inside* trio, so that
    # trio's own bookkeeping (nurseries, the run queue, the thread-local run
    # context) is consistent when ``trio.run`` returns. Three escalating steps:
    #
    # 1. cancel the scope around the target: ``finally`` blocks run normally;
    # 2. if that is not enough (shielded scopes, a swallowed Cancelled) within
    #    _CANCEL_ROUNDS batches (or the engine's teardown budget), or the run
    #    goes idle again: throw RunAborted into each actor -- runnable ones at
    #    their next step, blocked ones through their abort function, shield or
    #    no shield;
    # 3. if even that does not end it, stop trio's loop by raising out of it
    #    (trio reports a TrioInternalError, run_once translates it) and close
    #    the abandoned coroutines.

    def cancel_all(self) -> None:
        """Step 1: cancel everything under the target (idempotent)."""
        if self.phase == _RUNNING:
            self.phase = _CANCELLING
        if self.scope is not None:
            self.scope.cancel()

    def check_abort(self) -> None:
        if self.controller.aborting and self.phase == _RUNNING:
            self.cancel_all()

    def escalate(self) -> None:
        """The current step did not end the run: take the next one."""
        if self.phase == _RUNNING:
            self.cancel_all()
        elif self.phase == _CANCELLING:
            self.phase = _KILLING

    def _kill_runnable(self, tasks: list[Any]) -> None:
        """Step 2, runnable actors: their next resumption raises RunAborted."""
        self.kill_rounds += 1
        if self.kill_rounds > _KILL_ROUNDS:
            self._stop_trio()
        for task in tasks:
            task._next_send_fn = task.coro.throw
            task._next_send = RunAborted()

    def _kill_blocked(self) -> bool:
        """Step 2, blocked actors: abort their wait with RunAborted. True if any woke."""
        self.kill_rounds += 1
        if self.kill_rounds > _KILL_ROUNDS:
            return False

        def raise_aborted() -> None:
            raise RunAborted()

        for task in sorted(self.runner.tasks, key=lambda t: t._counter):
            if self.actors.get(task) and task._abort_func is not None:
                task._attempt_abort(raise_aborted)
        return bool(self.trio.lowlevel.current_statistics().tasks_runnable)

    def _stop_trio(self) -> None:
        """Step 3."""
        self.hard_abort = True
        raise RunAborted()

    # -- the scheduler (trio calls _r.shuffle(batch) once per loop pass; it runs batch.pop() first)
    #
    # While the run is live, each pass runs trio's housekeeping and exactly
    # one actor: the one the strategy picked among *all* runnable actors. The
    # others go straight back into trio's run queue, still runnable, for a
    # later pass. That is the freedom trio's semantics give a scheduler (a
    # runnable task may wait any number of batches), and it makes every step
    # a decision over the same candidates asyncio offers: everyone runnable,
    # in the order trio itself would run them.

    def shuffle(self, batch: list[Any]) -> None:
        if threading.get_ident() != self.thread:
            # another thread's trio.run while ours is patched: leave it alone
            _original("_r").shuffle(batch)
            return
        if self.runner is None:
            self.runner = self.run_module.GLOBAL_RUN_CONTEXT.runner
        housekeeping: list[Any] = []
        tasks: list[Any] = []
        actors = self.actors
        # creation order: actor ids are handed out at first sight, deterministically
        # (trio sorts the batch so already: then this sort is one cheap pass)
        for task in sorted(batch, key=_CREATION_ORDER):
            actor = actors.get(task)
            if actor is None:
                actor = self._register(task)
            if actor:
                tasks.append(task)
            else:
                housekeeping.append(task)
        self.check_abort()
        if not self.controller.aborting:
            chosen = self._choose_one(tasks) if tasks else None
            if chosen is not None or not tasks:
                if chosen is not None:
                    postponed = [task for task in tasks if task is not chosen]
                    if postponed:
                        self.runner.runq.extend(postponed)
                    housekeeping.append(chosen)
                housekeeping.reverse()
                batch[:] = housekeeping
                return
        # Unwinding a run that is over: which order no longer matters, only
        # that everyone gets to unwind, so the whole batch runs (trio's way).
        order = housekeeping + self._choose_order(self._natural_order(tasks))
        self.queue = []
        if self.phase == _CANCELLING:
            self.cancel_rounds += 1
            if self.cancel_rounds > _CANCEL_ROUNDS:
                self.phase = _KILLING
        if self.phase == _KILLING:
            self._kill_runnable(tasks)
        order.reverse()
        batch[:] = order

    def __getattr__(self, name: str) -> Any:
        # random(), uniform(), ... for anything else in trio that uses _r
        return getattr(_original("_r"), name)

    def _natural_order(self, tasks: list[Any]) -> list[Any]:
        """The runnable actors in the order trio would run them (``tasks``: creation order).

        trio runs a batch (everything runnable when the pass started, here in
        creation order) to its end before it looks at the tasks that became
        runnable meanwhile; those form the next batch. :attr:`queue` is what
        is left of the current batch (a task the strategy passed over stays in
        it); the runnable tasks that are not in it, woken since it was formed,
        come after.
        """
        queue = self.queue
        if queue:
            runnable = set(tasks)
            queue = self.queue = [task for task in queue if task in runnable]
        if not queue:
            queue = self.queue = list(tasks)
            return list(tasks)
        queued = set(queue)
        return queue + [task for task in tasks if task not in queued]

    def _choose_one(self, tasks: list[Any]) -> Any:
        """The actor that runs this pass, or None once the run must unwind instead."""
        candidates = self._natural_order(tasks)
        actors = self.actors
        try:
            index = self.controller.decide([actors[t] for t in candidates])
        except RunAborted:
            # the step limit, a failing strategy: unwind, in trio's order
            self.escalate()
            return None
        task = candidates[index]
        if index < len(self.queue):
            del self.queue[index]
        self.chosen[task] = index
        return task

    def _choose_order(self, tasks: list[Any]) -> list[Any]:
        remaining = tasks
        order: list[Any] = []
        controller = self.controller
        actors = self.actors
        while remaining:
            try:
                index = controller.decide([actors[t] for t in remaining])
            except RunAborted:
                # the teardown budget spent: unwind one step further, keep
                # trio's order meanwhile
                self.escalate()
                order.extend(remaining)
                return order
            task = remaining.pop(index)
            self.chosen[task] = index
            order.append(task)
        return order

    def _register(self, task: Any) -> int:
        runner = self.runner
        # trio's own housekeeping: <init> and the tasks it starts itself (the
        # run_sync_soon task); system tasks the user spawns are actors
        parent = task.parent_nursery
        internal = task is not runner.main_task and (
            parent is None
            or (parent.parent_task is runner.init_task and self._trio_code(task.coro))
        )
        if internal:
            self.actors[task] = 0
            return 0
        actor = self.actors[task] = self.next_actor
        self.next_actor += 1
        recorder = self.controller.recorder
        if recorder is not None:
            # named at first appearance, before the task ran: its arguments as passed
            recorder.actor(actor, self.name_of(task), "task")
        return actor

    def name_of(self, task: Any) -> str:
        """The actor's readable name, made on first use (exploration runs rarely need it)."""
        actor = self.actors[task]
        name = self.names.get(actor)
        if name is None:
            name = self.names[actor] = self._display_name(task, actor)
        return name

    def _trio_code(self, coro: Any) -> bool:
        code = getattr(coro, "cr_code", None)
        return code is not None and os.path.abspath(code.co_filename).startswith(self.trio_dir)

    def _display_name(self, task: Any, actor: int) -> str:
        if task is self.runner.main_task:
            target = getattr(self.target, "func", self.target)
            qualname = getattr(target, "__qualname__", None) or type(target).__name__
            return f"Task-{actor} · {qualname.rsplit('.', 1)[-1]}()"
        coro = task.coro
        qualname = str(getattr(coro, "__qualname__", "?"))
        short = qualname.rsplit(".", 1)[-1]
        label = f"{short}({_arguments(getattr(coro, 'cr_frame', None))})"
        name = str(task.name)
        if name.endswith(qualname) or name.endswith(short):
            return f"Task-{actor} · {label}"  # trio's default name: module.qualname
        return f"{name} · {label}"

    # -- the clock (trio asks deadline_to_sleep_time only when no task is runnable)
    def start_clock(self) -> None:
        pass

    def current_time(self) -> float:
        return self.now

    def deadline_to_sleep_time(self, deadline: float) -> float:
        self.check_abort()
        if deadline <= self.now:
            return 0.0
        trio = self.trio
        stats = trio.lowlevel.current_statistics()
        if stats.tasks_runnable or stats.run_sync_soon_queue_size:
            return 0.0  # the I/O poll picks the callbacks up; nothing is idle yet
        if self.runner is None:
            self.runner = self.run_module.GLOBAL_RUN_CONTEXT.runner
        if self.runner.waiting_for_idle:
            return _FOREVER  # trio clamps it to the wait_all_tasks_blocked cushion
        if math.isfinite(deadline):
            self.now = deadline
            self.controller.now = max(self.controller.now, deadline)
            return 0.0
        if self._external_pending(stats):
            self.waited_outside = True
            return _EXTERNAL_POLL
        # Nothing runnable, no deadline, nothing that could wake the run.
        if not self.controller.aborting:
            self.controller.fail(Failure("deadlock", None, self.describe_deadlock()))
        if self.phase == _RUNNING:
            self.cancel_all()
            return 0.0
        # Stuck even after cancellation (shielded waits): kill, then stop trio.
        self.phase = _KILLING
        if self._kill_blocked():
            return 0.0
        self._stop_trio()
        return 0.0

    def _external_pending(self, stats: Any) -> bool:
        return threading.active_count() > self.threads_at_start or _io_waiting(stats) > self.idle_io

    # -- trio.to_thread.run_sync, inline
    def start_thread_soon(
        self, fn: Callable[[], Any], deliver: Callable[[Any], Any], *rest: Any
    ) -> None:
        """Run a ``to_thread`` worker inline, in the step of the task that asked for it.

        The worker's result is delivered through trio's own ``run_sync_soon``
        path, exactly as from a thread, so cancellation, limiters and result
        delivery are trio's code. Calls from another thread's trio run go to
        the real thread cache.
        """
        if threading.get_ident() != self.thread:
            _original("start_thread_soon")(fn, deliver, *rest)
            return
        import outcome

        self.ran_inline_worker = True
        result = outcome.capture(fn)
        error = getattr(result, "error", None)
        if isinstance(error, RuntimeError) and _raised_in_trio_threads(error, self.trio_dir):
            self.controller.internal_error = UnsupportedError(
                "trio.from_thread.* inside trio.to_thread.run_sync is not supported by"
                " racecheck's trio backend: to_thread workers run inline in the trio thread"
                f" ({error})"
            )
            self.controller.interrupt()
        deliver(result)

    # -- deadlock report
    def describe_deadlock(self) -> str:
        recorder = self.controller.recorder
        if recorder is not None:
            names = recorder.resources()
        else:
            from racecheck.failure import ResourceNames

            names = ResourceNames()
        lines = [
            "deadlock: no task can run, no deadline is pending, nothing external can wake the run"
        ]
        tasks = [t for t in self.runner.tasks if self.actors.get(t)]
        for task in sorted(tasks, key=lambda t: t._counter):
            try:
                operation, _, where, holder = describe_wait(task, names)
            except Exception as exc:  # never let a report bug hide the deadlock
                operation, where, holder = f"? ({type(exc).__name__})", None, None
            if holder is not None:
                holder_name = self.name_of(holder) if self.actors.get(holder) else holder.name
                operation += f" (held by {holder_name})"
            place = f"{os.path.basename(where[0])}:{where[1]}  {where[2]}" if where else "?"
            lines.append(f"  {self.name_of(task)} waits: {operation} at {place}")
        return "\n".join(lines)

    # -- after a hard abort
    def close_leftovers(self) -> None:
        """Close the coroutines trio abandoned when its loop was stopped (step 3).

        Only code that swallowed Cancelled *and* RunAborted again and again
        gets here. Left alone, its coroutines (and trio's nurseries, which
        assert they have no children left) would be finalized by the garbage
        collector at some random later moment, running user code outside trio
        and printing "Exception ignored" noise. So they are closed now, with
        the noise suppressed, and the nurseries emptied.
        """
        tasks = list(getattr(self.runner, "tasks", ()) or ())
        tasks += [task for task in self.actors if task not in tasks]
        nurseries: list[Any] = []
        for task in tasks:
            nurseries.append(task.parent_nursery)
            nurseries.extend(getattr(task, "child_nurseries", ()))
        hook = sys.unraisablehook
        sys.unraisablehook = _ignore_unraisable
        try:
            for task in tasks:
                try:
                    task.coro.close()
                except BaseException:  # user cleanup outside trio: nothing to report
                    pass
                if getattr(task.coro, "cr_frame", None) is not None:
                    _never_finalize(task.coro)
            for nursery in nurseries:
                children = getattr(nursery, "_children", None)
                if isinstance(children, set):
                    children.clear()
            del tasks, nurseries
            gc.collect()
        finally:
            sys.unraisablehook = hook
        self.actors.clear()
        self.chosen.clear()
        self.queue.clear()


def _ignore_unraisable(unraisable: Any) -> None:
    pass


#: coroutines that survived close() (they swallow GeneratorExit): kept, never finalized
_graveyard: list[Any] = []


def _never_finalize(coro: Any) -> None:
    """Keep a coroutine that ignores GeneratorExit from ever being finalized.

    Finalizing it means ``close()`` once more, which re-enters its
    exception-swallowing loop outside trio, where every trio call fails at
    once, so the loop spins forever. A module-level list is not enough: it is
    emptied at interpreter shutdown, and the process would hang at exit. On
    CPython, an extra reference that is never released keeps it from being
    finalized, even at exit.
    """
    _graveyard.append(coro)
    try:
        import ctypes

        ctypes.pythonapi.Py_IncRef(ctypes.py_object(coro))
    except (ImportError, AttributeError, OSError):  # not CPython: the list will do
        pass


def _raised_in_trio_threads(error: BaseException, trio_dir: str) -> bool:
    tb = error.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None:
        return False
    filename = os.path.abspath(last.tb_frame.f_code.co_filename)
    return filename.startswith(trio_dir) and "this is a blocking function" in str(error)


def _arguments(frame: Any) -> str:
    if frame is None:
        return ""
    code = frame.f_code
    shown = []
    for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
        if name in ("self", "cls"):
            continue
        text = repr(frame.f_locals.get(name))
        shown.append(text if len(text) <= 16 else text[:13] + "...")
    return ", ".join(shown)


def _coroutine_frames(coro: Any) -> list[Any]:
    frames = []
    seen = 0
    while coro is not None and seen < 64:
        seen += 1
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            frames.append(frame)
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return frames


def describe_wait(
    task: Any, names: Any
) -> tuple[str, str | None, tuple[str, int, str] | None, Any]:
    """(operation, resource, (file, line, text) of the user's await, lock holder task).

    The innermost *user* frame of the task's ``cr_await`` chain says where; the
    first trio frame below it whose function is a known primitive operation
    ("_LockImpl.acquire" → "acquire Lock#1") says what.
    """
    from racecheck.sources import is_user_file, source_line

    frames = _coroutine_frames(task.coro)
    user_index = -1
    for index, frame in enumerate(frames):
        if is_user_file(frame.f_code.co_filename):
            user_index = index
    where = None
    if user_index >= 0:
        frame = frames[user_index]
        filename, lineno = frame.f_code.co_filename, frame.f_lineno
        where = (filename, lineno, source_line(filename, lineno))
    operation, resource, holder = "await", None, None
    for frame in frames[user_index + 1 :]:
        qualname = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
        verb = _OPERATIONS.get(qualname)
        if verb is None or is_user_file(frame.f_code.co_filename):
            continue
        owner = frame.f_locals.get("self")
        if owner is not None and qualname not in _NO_RESOURCE:
            resource = names.name(owner)
            operation = f"{verb} {resource}"
            held_by = getattr(owner, "_owner", None)
            if held_by is not None and hasattr(held_by, "coro"):
                holder = held_by
        else:
            operation = verb
        break
    else:
        if where is not None and "await" in where[2]:
            operation = "await " + where[2].split("await", 1)[-1].strip()
    return operation, resource, where, holder


class _StepRecorder:
    """A trio Instrument that records each actor's step for the trace (replays only)."""

    def __init__(self, run: _TrioRun) -> None:
        self.run = run
        recorder = run.controller.recorder
        assert recorder is not None
        self.recorder = recorder
        self.sink: Any = None
        self.collecting: Any = None
        self.pending_before = 0

    def before_task_step(self, task: Any) -> None:
        from racecheck.linetrace import LineSink, collecting_lines

        self.collecting = None
        if not self.run.actors.get(task) or self.run.controller.aborting:
            return  # trio's housekeeping, or the unwinding after a failure: not the story
        self.pending_before = len(_pending_errors(task))
        self.sink = LineSink()
        self.collecting = collecting_lines(self.sink)
        self.collecting.__enter__()

    def after_task_step(self, task: Any) -> None:
        if self.collecting is None:
            return
        self.collecting.__exit__(None, None, None)
        self.collecting = None
        run = self.run
        actor = run.actors[task]
        if getattr(task.coro, "cr_frame", None) is None:
            operation, resource = _exit_operation(task, run.runner, self.pending_before), None
        else:
            operation, resource, _, _ = describe_wait(task, self.recorder.resources())
        self.recorder.add_step(
            actor, self.sink.lines, operation, resource, run.chosen.get(task, 0) != 0
        )


class _StepDetector:
    """A trio Instrument feeding each task step to the race detector.

    Wraps the trace recorder (replays), so that the two tracers are entered
    and left in nested order. Each task is its own clock: what the detector
    counts as having waited for another task ("overwritten before read") is
    learnt from trio's hooks, as asyncio learns it from stamped handles.
    """

    def __init__(self, run: _TrioRun, inner: _StepRecorder | None) -> None:
        from racecheck.detect.stepmon import step_feed

        self.run = run
        self.inner = inner
        #: imported once a run, not at every step
        self.step_feed = step_feed
        self.detecting: Any = None
        #: task -> the clock of the step that made it runnable (a spawn, a wake-up)
        self.stamps: dict[Any, dict[int, int]] = {}
        #: parent task -> nursery -> the clocks of its children that ended
        self.exits: dict[Any, dict[Any, dict[int, int]]] = {}

    def before_task_step(self, task: Any) -> None:
        run = self.run
        self.detecting = None
        actor = run.actors.get(task)
        if actor and not run.controller.aborting:
            detector = run.controller.detector
            if actor not in detector.names:
                detector.names[actor] = run.name_of(task)
            detector.begin_step(actor)
            stamp = self.stamps.pop(task, None)
            if stamp is not None:
                detector.handed(actor, stamp)
            if task in self.exits:
                self._joined(task, actor)
            # sys.monitoring on 3.12+ (a per-step settrace re-instruments the code
            # each time); the settrace road under the recorder, which chains it.
            # Each task is its own clock (hb), so the waits above count as waits.
            self.detecting = self.step_feed(detector, actor, actor, recorded=self.inner is not None)
            self.detecting.__enter__()
        if self.inner is not None:
            self.inner.before_task_step(task)

    def _joined(self, task: Any, actor: int) -> None:
        """A parent past its nursery's end waited for every child, not only the last.

        Only the last child's exit wakes the parent (and it may wake none: a
        parent reaching the end after its children finished just checkpoints),
        so the children's ends are gathered per nursery and joined once trio
        has closed it: the parent's next step is then past the ``async with``.
        """
        pending = self.exits[task]
        for nursery in [n for n in pending if getattr(n, "_closed", False)]:
            self.run.controller.detector.handed(actor, pending.pop(nursery))
        if not pending:
            del self.exits[task]

    def task_scheduled(self, task: Any) -> None:
        """Who made ``task`` runnable: the hand-off rule's waker (None: trio's run loop)."""
        detecting = self.detecting
        if detecting is not None and detecting.actor != self.run.actors.get(task):
            # a spawn or a wake-up inside a step: the task goes on from that step
            stamp = self.run.controller.detector.hand_off(detecting.actor)
            earlier = self.stamps.get(task)
            if earlier is not None:  # a stamp left over from an unwinding run's steps
                for who, tick in earlier.items():
                    if stamp.get(who, 0) < tick:
                        stamp[who] = tick
            self.stamps[task] = stamp
        actor = self.run.actors.get(task)
        if actor:
            waker = detecting.actor if detecting is not None else None
            detector = self.run.controller.detector
            detector.woke(waker, actor)
            if waker is not None and _parked_in_send(task):
                # a receiver took a parked sender's value: the send is what it
                # waited for (the sender has not stepped since it parked)
                detector.handed(waker, detector.hand_off(actor))

    def task_exited(self, task: Any) -> None:
        """A child's end, for its nursery's parent to join (see :meth:`_joined`)."""
        detecting = self.detecting
        nursery = getattr(task, "parent_nursery", None)
        if detecting is None or nursery is None or self.run.actors.get(task) != detecting.actor:
            return
        clock = self.run.controller.detector.hand_off(detecting.actor)
        into = self.exits.setdefault(nursery.parent_task, {}).setdefault(nursery, {})
        for who, tick in clock.items():
            if into.get(who, 0) < tick:
                into[who] = tick

    def after_task_step(self, task: Any) -> None:
        if self.inner is not None:
            self.inner.after_task_step(task)
        if self.detecting is not None:
            self.detecting.__exit__(None, None, None)
            self.detecting = None


def _parked_in_send(task: Any) -> bool:
    """Is ``task`` parked in a memory channel's ``send`` (its value handed over on wake-up)?"""
    # Also true for a sender woken by the receiving side's close (it gets an
    # error, and the closer its clock): rare, and it only hides an overwrite.
    coro = task.coro
    for _ in range(64):  # the await chain's length; the bound only guards a cycle
        code = getattr(coro, "cr_code", None)
        if code is None:
            return False
        if code.co_qualname == "MemorySendChannel.send":
            return True
        coro = coro.cr_await
    return False


def _pending_errors(task: Any) -> list[Any]:
    pending = getattr(task.parent_nursery, "_pending_excs", None)
    return pending if isinstance(pending, list) else []


def _exit_operation(task: Any, runner: Any, pending_before: int) -> str:
    """How a just-finished task ended ("returned", "cancelled", "raised X"), for traces.

    trio keeps no public record of a finished task's outcome: its nursery
    collects the errors and the runner keeps the main task's. Read them
    defensively; a trace that says "returned" is better than a crash.
    """
    if task is getattr(runner, "main_task", None):
        errors = [getattr(getattr(runner, "main_task_outcome", None), "error", None)]
    else:
        errors = _pending_errors(task)[pending_before:]
    cancelled = _trio().Cancelled
    real = [e for e in errors if isinstance(e, BaseException) and not isinstance(e, cancelled)]
    if real:
        return f"raised {type(real[0]).__name__}"
    if any(isinstance(e, cancelled) for e in errors):
        return "cancelled"
    return "returned"


# -------------------------------------------------------------- the backend


class TrioBackend:
    """Runs an ``async def`` target under ``trio.run``; racecheck picks every task step."""

    name = "trio"
    granularity = "task"

    def __init__(self, target: Callable[[], Any]) -> None:
        self.target = target
        self.idle_io = 1
        self.current: _TrioRun | None = None
        self.runs_waiting_outside = 0
        self.runs_with_inline_workers = 0
        #: no backend schedules trio's tasks and threads together: the report says so
        self._thread_starts = ThreadStarts()

    @property
    def scheduling_limit(self) -> str | None:
        """Why "every schedule ran" would overclaim (see racecheck.explore), if it would.

        The run-queue model covers every order trio may run runnable tasks
        in. What it does not cover: when work from outside the run arrives,
        and a ``to_thread`` worker running concurrently with other tasks (it
        runs inline, at its call).
        """
        limits = []
        started = self._thread_starts.limit("trio")
        if started:
            limits.append(started)
        if self.runs_waiting_outside:
            limits.append(
                "the run waited for work from threads or I/O racecheck does not run"
                " (trio.from_thread from a real thread, a socket); when that work arrives"
                " was not explored"
            )
        if self.runs_with_inline_workers:
            limits.append(
                "trio.to_thread workers ran inline at their call, so orders where other"
                " tasks run while a worker runs were not explored"
            )
        return "; ".join(limits) or None

    def install(self) -> None:
        """Fail early, with a clear message, on a trio whose hooks are not known to work."""
        version = installed_version()
        check_version(version)
        self.idle_io = _self_check(version)
        self._thread_starts.install()

    def uninstall(self) -> None:
        self._thread_starts.uninstall()
        _restore()
        from racecheck.detect.stepmon import release

        release()  # the detector's sys.monitoring tool (3.12+), if a step took it

    def abort(self) -> None:
        """Called from the supervising thread: wake the run so it notices and unwinds."""
        run = self.current
        token = run.token if run is not None else None
        if token is not None:
            try:
                token.run_sync_soon(lambda: None)
            except Exception:  # the run already finished
                pass

    def enable_detection(self) -> None:
        pass  # task steps are traced one at a time by _StepDetector

    def run_once(self, controller: Controller) -> None:
        trio = _trio()
        run = _TrioRun(trio, _run_module(), self.target, controller, self.idle_io)
        instruments: list[Any] = [_StepRecorder(run)] if controller.recorder is not None else []
        if controller.detector is not None:
            instruments = [_StepDetector(run, instruments[0] if instruments else None)]
        self.current = run
        try:
            _patch(run, run.start_thread_soon)
            try:
                self._thread_starts.begin_run()
                try:
                    trio.run(run.main, clock=run, instruments=instruments)
                finally:
                    self._thread_starts.end_run()
            finally:
                _restore()
                if run.hard_abort:
                    run.close_leftovers()
                self.runs_waiting_outside += run.waited_outside
                self.runs_with_inline_workers += run.ran_inline_worker
        except RunAborted:
            pass
        except BaseException as exc:
            # KeyboardInterrupt and SystemExit included: a real Ctrl-C goes to
            # the supervising thread, never to the explorer, so this came from
            # the code under test and is the schedule's failure.
            cause = unwrap(exc)
            if run.hard_abort and _caused_by_abort(exc):
                pass
            elif controller.aborting:
                pass
            elif isinstance(cause, UsageError):
                # racecheck misused from inside the target (a nested check()).
                controller.internal_error = cause
                controller.interrupt()
            else:
                controller.fail(Failure("exception", cause))
        finally:
            self.current = None


def _caused_by_abort(exc: BaseException) -> bool:
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 16:
        if isinstance(current, RunAborted):
            return True
        current = current.__cause__ or current.__context__
        seen += 1
    return False


def unwrap(exc: BaseException) -> BaseException:
    """The user's exception inside trio's ExceptionGroup/MultiError wrappers, if single.

    ``Cancelled`` leaves (siblings cancelled because of the real error) do not count.
    """
    trio = _trio()
    while isinstance(exc, BaseExceptionGroup):
        leaves = [e for e in exc.exceptions if not isinstance(e, trio.Cancelled)]
        if len(leaves) != 1:
            break
        exc = leaves[0]
    return exc
