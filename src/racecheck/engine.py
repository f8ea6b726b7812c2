"""The run loop shared by every backend.

Backends own *how* actors run (an event loop, threads under a baton, trio's
batches); the engine owns *which* runs: each run gets a :class:`Controller`
that asks the strategy at every real choice, enforces the step bound, keeps the
virtual clock and holds the outcome. A backend needs four things only::

    install()/uninstall()   patch the world for the exploration, and unpatch
    run_once(controller)    run the target once, reporting through controller
    enable_detection()      feed controller.detector (racecheck.detect) each access

The exploration itself runs on a worker thread while the calling thread
supervises it. That is what turns "blocked in C" and "blocked on a lock created
before racecheck patched threading" into a clear :class:`StuckError` instead
of a silent hang, and lets Ctrl-C stop an exploration cleanly.
"""

from __future__ import annotations

import _thread
import contextvars
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from racecheck import thread_locals
from racecheck.errors import StuckError
from racecheck.failure import Failure
from racecheck.linetrace import inheritable_trace
from racecheck.schedule import Decision

if TYPE_CHECKING:
    from racecheck.accesses import StepLog
    from racecheck.recorder import Recorder
    from racecheck.strategies.base import Chooser


class RunAborted(BaseException):
    """Unwinds every actor once a run is over (failure, deadlock, interrupt).

    A BaseException so that ``except Exception`` in user code cannot swallow it.
    """


class NeedsBackend(BaseException):
    """The target needs another backend than the one the exploration picked.

    Raised (through ``Controller.internal_error``) when a run does something
    its backend can only run in a reduced form: an ``async def`` target that
    hands work to an executor needs the threads backend, which schedules the
    executor's threads line by line. The exploration starts over on
    ``backend`` before any schedule counts, so no verdict rests on the
    reduced form.
    """

    def __init__(self, backend: str, why: str) -> None:
        super().__init__(backend, why)
        self.backend = backend
        self.why = why


#: decisions a run may still take while it unwinds after a failure
TEARDOWN_STEPS = 20_000

#: consecutive contested decisions an actor may win before it must yield once.
#: Real schedulers are fair: without this, a strategy that always favours a
#: polling task (``while not ready: await sleep(0)``) would starve the task it
#: waits for and report a correct program as a step-limit. Large enough that
#: "one task starved for many steps" bugs stay reachable.
FAIRNESS_BOUND = 1000


def step_limit_detail(max_steps: int) -> str:
    """The step-limit report: the bound, what usually passes it, and how to raise it."""
    more = max_steps * 10
    return (
        f"the run passed max_steps={max_steps} scheduling steps: a livelock, a spin loop,"
        f" or a run longer than the bound. If the run is meant to be that long, raise it:"
        f" racecheck.check(target, max_steps={more}), @pytest.mark.racecheck(max_steps={more}),"
        f" or max_steps in a scenario's options"
    )


class Controller:
    """One run: the decisions taken, the step bound, the clock and the outcome."""

    __slots__ = (
        "aborting",
        "accesses",
        "chooser",
        "decisions",
        "detector",
        "failure",
        "internal_error",
        "last_actor",
        "max_steps",
        "now",
        "recorder",
        "scheduling_steps",
        "steplog",
        "steps",
        "streak",
        "teardown_steps",
    )

    def __init__(self, chooser: Chooser, max_steps: int, recorder: Recorder | None = None) -> None:
        self.chooser = chooser
        self.max_steps = max_steps
        self.recorder = recorder
        self.decisions: list[Decision] = []
        self.steps = 0
        self.teardown_steps = 0
        self.now = 0.0
        self.failure: Failure | None = None
        self.internal_error: BaseException | None = None
        self.aborting = False
        #: (actor, "w:name"/"r:name"/"lock:Lock#1") in execution order, when
        #: interleaving coverage is collected; None otherwise (the fast path)
        self.accesses: list[tuple[int, str]] | None = None
        #: the race detector of this run (``detect=True``); None otherwise
        self.detector: Any = None
        self.last_actor = -1
        self.streak = 0
        #: steps where the runtime asked who runs (even with one candidate);
        #: unlike ``steps`` it leaves out an actor running alone and plain
        #: callbacks, which no strategy could reorder. PCT measures runs in it.
        self.scheduling_steps = 0
        #: what each step touched, for strategies that observe it (DPOR); None otherwise
        self.steplog: StepLog | None = None

    def decide(self, candidates: Sequence[int]) -> int:
        """Index of the actor to run next; ``candidates[0]`` is the natural order."""
        if self.aborting:
            self.teardown_steps += 1
            if self.teardown_steps > TEARDOWN_STEPS:
                raise RunAborted()
            return 0
        self.steps = steps = self.steps + 1
        self.scheduling_steps += 1
        if steps > self.max_steps:
            self.fail(Failure("step-limit", None, step_limit_detail(self.max_steps)))
            raise RunAborted()
        log = self.steplog
        if log is not None:
            try:
                log.begin(self.chooser, candidates)
            except BaseException as exc:  # the strategy saw the run leave its prefix
                self.internal_error = exc
                self.aborting = True
                raise RunAborted() from None
            log.actor = candidates[0]  # until the choice says otherwise
        count = len(candidates)
        if count == 1:
            return 0
        if self.streak >= FAIRNESS_BOUND and self.last_actor in candidates:
            choice = self._choose_fairly(candidates)
        else:
            try:
                choice = self.chooser.choose(candidates, self.scheduling_steps)
            except BaseException as exc:
                # The strategy itself failed (replay divergence, hypothesis
                # stopping a test...). Unwind the run; api re-raises it after.
                self.internal_error = exc
                self.aborting = True
                raise RunAborted() from None
            self.decisions.append((count, choice))
        chosen = candidates[choice]
        if log is not None:
            log.actor = chosen
        if chosen == self.last_actor:
            self.streak += 1
        else:
            self.last_actor = chosen
            self.streak = 1
        return choice

    def _choose_fairly(self, candidates: Sequence[int]) -> int:
        """The choice when the actor that kept winning must sit this decision out.

        The reduced list is what gets recorded, so replay sees it too. Apart
        from the hot path of :meth:`decide`: it happens once in a thousand
        consecutive wins at most.
        """
        skipped = candidates.index(self.last_actor)
        offered = [*candidates[:skipped], *candidates[skipped + 1 :]]
        try:
            choice = self.chooser.choose(offered, self.scheduling_steps)
        except BaseException as exc:
            self.internal_error = exc
            self.aborting = True
            raise RunAborted() from None
        self.decisions.append((len(offered), choice))
        return choice + 1 if choice >= skipped else choice

    def close_steps(self) -> None:
        """The run is over: hand its last step to the chooser (see racecheck.accesses)."""
        if self.steplog is not None:
            self.steplog.close(self.chooser)

    def tick(self) -> None:
        """Count a step that involves no choice (a plain callback), for the bound."""
        if self.aborting:
            return
        self.steps += 1
        if self.steps > self.max_steps:
            self.fail(Failure("step-limit", None, step_limit_detail(self.max_steps)))
            raise RunAborted()

    def fail(self, failure: Failure) -> None:
        """Record the run's failure (the first one wins) and start unwinding."""
        if self.failure is None and not (self.aborting and self.internal_error):
            self.failure = failure
        self.aborting = True

    def interrupt(self) -> None:
        self.aborting = True


class Backend(Protocol):
    name: str
    granularity: str

    def install(self) -> None: ...

    def uninstall(self) -> None: ...

    def run_once(self, controller: Controller) -> None: ...

    def enable_detection(self) -> None: ...


#: seconds an interrupted supervisor waits for the explorer to unwind before it
#: gives up on it (it is then blocked in C, where nothing can stop it)
STOP_GRACE = 10.0

#: marks the threads that work for the exploration in progress: the explorer
#: and the threads backend's pooled actor threads. A C-level thread-local, so
#: it survives the pool presenting its workers as the user's Thread objects.
_ROLE = _thread._local()


def join_exploration() -> None:
    """Mark the calling thread as one that runs code under exploration."""
    _ROLE.exploring = True


def in_exploration() -> bool:
    """Is the calling thread running code under exploration (a nested ``check``)?"""
    return bool(getattr(_ROLE, "exploring", False))


def run_supervised(
    work: Callable[[], Any],
    *,
    progress: Callable[[], int],
    watchdog: float,
    on_stuck: Callable[[], None],
    on_interrupt: Callable[[], None],
    explain: Callable[[], str | None] | None = None,
) -> Any:
    """Run ``work`` on a worker thread; watch that it keeps making progress.

    ``progress`` returns a number that grows while the exploration advances
    (steps taken). If it stays still for ``watchdog`` seconds, some actor is
    blocked where racecheck cannot see it; the worker is abandoned (after
    ``on_stuck`` had a chance to unwind it) and a StuckError names where it
    sits (``explain``, when the backend can say more: the object and its holder).

    Signals are delivered to the main thread, so a real Ctrl-C, a SIGALRM or
    SIGTERM handler that raises, or pytest-timeout's signal method arrives
    *here*, never in the explorer: anything the explorer raises (a
    KeyboardInterrupt or SystemExit included) came from the code under test
    or from racecheck, and the backends report the former as the schedule's
    failure. Whatever interrupts the supervisor, the explorer is stopped
    (``on_interrupt``) and waited for before the exception goes on, so no
    exploration keeps running, or keeps anything patched, after the caller
    has moved on.
    """
    result: list[Any] = []
    error: list[BaseException] = []
    done = _Done()
    context = contextvars.copy_context()
    # The exploration runs where the caller would have: under its tracer
    # (coverage, a debugger), which racecheck then chains, not replaces. A
    # per-thread tracer (coverage's) comes from threading's hook instead.
    caller_trace = inheritable_trace()
    # The root runs where the caller would have, with the caller's thread-locals
    # too (the same namespaces): a library's thread-local set at import in the
    # main thread is there, and what the root writes stays the caller's.
    caller_locals = thread_locals.entries_of_this_thread(excluding=(_ROLE,))

    def body() -> None:
        if caller_trace is not None:
            sys.settrace(caller_trace)
        shared = thread_locals.share(caller_locals)
        join_exploration()
        try:
            result.append(context.run(work))
        except BaseException as exc:
            error.append(exc)
        finally:
            thread_locals.unshare(shared)
            done.set()

    worker = threading.Thread(target=body, name="racecheck-explorer", daemon=True)
    started = False
    try:
        worker.start()
        started = True
        stuck = _watch(done, progress, watchdog, on_stuck, explain)
    except BaseException as exc:
        # Not started only when the OS refused a thread (nothing runs then);
        # an interruption inside start() leaves a thread that does run.
        if started or not isinstance(exc, RuntimeError):
            _stop(done, on_interrupt)
        raise
    finally:
        if done.finished:
            # The explorer said it is done; let its OS thread end too, so it
            # never shows in threading.enumerate() after check() returns.
            worker.join(STOP_GRACE)
    if stuck is not None:
        raise stuck
    if error:
        raise error[0]
    return result[0]


class _Done:
    """The explorer's "I am done", on a raw lock rather than threading.Event.

    While threads are explored, ``threading``'s classes are racecheck's; the
    supervisor must not depend on them. The flag makes the answer stable
    even if a signal lands between a successful acquire and its caller.
    """

    __slots__ = ("_lock", "finished")

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._lock.acquire()
        self.finished = False

    def set(self) -> None:
        self.finished = True
        self._lock.release()

    def wait(self, timeout: float) -> bool:
        if not self.finished and self._lock.acquire(True, max(timeout, 0.0)):
            self._lock.release()
        return self.finished


def _watch(
    done: _Done,
    progress: Callable[[], int],
    watchdog: float,
    on_stuck: Callable[[], None],
    explain: Callable[[], str | None] | None = None,
) -> StuckError | None:
    """Wait for the explorer; the error to raise if it stops making progress."""
    last = progress()
    last_change = time.monotonic()
    while not done.wait(0.05):
        now_progress = progress()
        now = time.monotonic()
        if now_progress != last:
            last, last_change = now_progress, now
        elif now - last_change > watchdog:
            reason = explain() if explain is not None else None
            where = describe_thread_stacks(exclude={threading.get_ident()})
            on_stuck()
            done.wait(1.0)
            if reason:
                return StuckError(f"no scheduling progress for {watchdog:g}s: {reason}")
            return StuckError(
                f"no scheduling progress for {watchdog:g}s: an actor is blocked outside"
                f" racecheck's control ({where}); locks created before racecheck patched"
                " threading, and calls that block in C, are invisible to it"
            )
    return None


def _stop(done: _Done, on_interrupt: Callable[[], None]) -> None:
    """Abort the exploration and wait (bounded) until the explorer has unwound.

    A second interruption while waiting (Ctrl-C pressed twice, a repeating
    alarm) does not cut the wait short: leaving early would leave the world
    patched under the caller. The first exception is the one that goes on.
    """
    deadline = time.monotonic() + STOP_GRACE
    aborted = False
    while True:
        try:
            if not aborted:
                aborted = True
                on_interrupt()
            if done.wait(min(deadline - time.monotonic(), 0.5)):
                return
            if time.monotonic() >= deadline:
                return
        except BaseException:  # keep waiting: the first exception is the one raised
            continue


def describe_thread_stacks(exclude: set[int]) -> str:
    """Where the non-idle racecheck-controlled threads sit, innermost user frame first."""
    from racecheck.sources import is_user_file

    places = []
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        if ident in exclude:
            continue
        stack = traceback.extract_stack(frame)
        if not stack:
            continue
        inner = stack[-1]
        if inner.filename == threading.__file__ and inner.name in ("wait", "_wait_for_tstate_lock"):
            continue
        if "racecheck" in inner.filename and inner.name in ("_park", "run_supervised", "body"):
            continue
        user = next((f for f in reversed(stack) if is_user_file(f.filename)), inner)
        text = (
            f"{names.get(ident, ident)} in {user.name}() at {_short(user.filename)}:{user.lineno}"
        )
        if user.line:
            text += f" `{user.line.strip()}`"
        if user is not inner:
            text += f", inside {inner.name} ({_short(inner.filename)}:{inner.lineno})"
        places.append(text)
    return "; ".join(places) or "no Python frame shows where"


def _short(filename: str) -> str:
    import os

    return os.path.basename(filename)
