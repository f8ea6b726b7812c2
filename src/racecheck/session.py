"""One exploration's state and settings, below every loop that explores.

:func:`racecheck.explore.explore` runs the usual loop, and two other loops
reuse what it needs: a shard's (:mod:`racecheck.sharding`) and hypothesis's
(:mod:`racecheck.explore_hypothesis`). They all stand on this module (and on
:mod:`racecheck.found`, the failure pipeline), never on each other, so the
explore loop can dispatch to them and imports still point downward.

Schedules must not leak into each other. While an exploration runs, the cyclic
garbage collector is off and every run is followed by a collection
(:func:`quiet_gc`): objects of one schedule are finalised between schedules,
while nothing runs, never inside a later one (a library ``__del__`` that
schedules work on the running loop would add actors to it). Objects older than
the exploration are frozen (``gc.freeze``), so that collection only walks what
the exploration made, and it is a young one wherever that examines the same
objects (``Session._collect_between_runs``).
"""

from __future__ import annotations

import _thread
import gc
import inspect
import sys
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from racecheck.engine import (
    Backend,
    Controller,
    Failure,
    in_exploration,
    run_supervised,
)
from racecheck.errors import (
    Interrupted,
    UsageError,
    one_line,
)
from racecheck.schedule import Decision, Schedule, fingerprint, python_tag
from racecheck.strategies.base import Chooser

if TYPE_CHECKING:
    from racecheck.outcome import Report

DEFAULT_MAX_STEPS = 100_000


DEFAULT_WATCHDOG = 10.0


@dataclass
class Settings:
    backend: Backend
    label: str
    max_steps: int
    watchdog: float
    minimize: bool
    minimize_runs: int
    minimize_time: float
    progress: Callable[[int, int], None] | None
    display: str
    coverage: bool
    detect: bool = False
    #: installed code traced as user code for this exploration (racecheck.sources)
    trace_paths: tuple[str, ...] = ()
    #: check that a failure does not come from state kept between schedules
    leak_check: bool = True
    #: the target itself, to name what it keeps between schedules (statewatch)
    target: Callable[[], Any] | None = field(default=None, repr=False)
    #: the options that change the schedule, as given, for the printed replay hint
    replay_options: dict[str, Any] = field(default_factory=dict)
    #: an async target on the default backend: executor work is explored on threads too
    free_backend: bool = False


def default_label(target: Callable[[], Any]) -> str:
    func = getattr(target, "func", target)  # functools.partial
    module = getattr(func, "__module__", None) or "?"
    qualname = getattr(func, "__qualname__", None) or type(func).__name__
    return f"{module}:{qualname}"


def is_async_target(target: Callable[[], Any]) -> bool:
    if inspect.iscoroutinefunction(target):
        return True
    call = getattr(target, "__call__", None)  # noqa: B004 - callable objects
    return call is not None and inspect.iscoroutinefunction(call)


def make_settings(target: Callable[[], Any], options: dict[str, Any]) -> Settings:
    if not callable(target):
        raise UsageError(
            f"target must be a function or a coroutine function, not {type(target).__name__}"
        )
    if inspect.iscoroutine(target):
        raise UsageError("target is a coroutine object; pass the async function itself")
    if inspect.isasyncgenfunction(target) or inspect.isgeneratorfunction(target):
        raise UsageError(
            "target is a generator function: calling it runs nothing; pass a plain"
            " function or an async def coroutine function"
        )
    _check_signature(target)
    backend_name = options.pop("backend", None)
    granularity = options.pop("granularity", None)
    trace_packages = options.pop("trace_packages", None)
    if isinstance(trace_packages, (str, bytes)):
        trace_packages = [trace_packages]
    trace_paths = _trace_paths(target, trace_packages)
    replay_options: dict[str, Any] = {}
    free_backend = backend_name is None and is_async_target(target)
    if backend_name is None:
        backend_name = "asyncio" if is_async_target(target) else "threads"
    backend: Backend
    if backend_name == "asyncio":
        if not is_async_target(target):
            raise UsageError(
                "backend='asyncio' needs an async def target; a plain function runs on threads"
            )
        if granularity not in (None, "task"):
            raise UsageError("the asyncio backend schedules task steps; granularity must be 'task'")
        from racecheck.backends.asyncio_backend import AsyncioBackend

        backend = AsyncioBackend(target, movable=free_backend)
    elif backend_name == "threads":
        from racecheck.backends.threads.backend import ThreadsBackend

        runs = _on_its_own_loop(target) if is_async_target(target) else target
        backend = ThreadsBackend(runs, granularity=granularity or "access")
    elif backend_name == "trio":
        if not is_async_target(target):
            raise UsageError("backend='trio' needs an async def target")
        from racecheck.backends.trio_backend import TrioBackend

        backend = TrioBackend(target)
    else:
        raise UsageError(f"unknown backend {backend_name!r}; choose asyncio, threads or trio")
    label = options.pop("label", None) or default_label(target)
    try:
        max_steps = int(options.pop("max_steps", DEFAULT_MAX_STEPS))
        watchdog = float(options.pop("watchdog", DEFAULT_WATCHDOG))
        minimize_time = float(options.pop("minimize_time", 60.0))
        minimize_runs = int(options.pop("minimize_runs", 200))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"bad option value: {exc}") from None
    if max_steps < 1 or watchdog <= 0:
        raise UsageError("max_steps and watchdog must be positive")
    progress = options.pop("progress", None)
    if progress is not None and not callable(progress):
        raise UsageError(f"progress must be a callable(done, total) or None, not {progress!r}")
    # Everything but the defaults that decides which schedule a token means:
    # the hint must replay as it is printed.
    if backend_name != ("asyncio" if is_async_target(target) else "threads"):
        replay_options["backend"] = backend_name
    if backend.granularity != ("access" if backend_name == "threads" else "task"):
        replay_options["granularity"] = backend.granularity
    if max_steps != DEFAULT_MAX_STEPS:
        replay_options["max_steps"] = max_steps
    if label != default_label(target):
        replay_options["label"] = label
    if trace_packages:
        replay_options["trace_packages"] = tuple(trace_packages)
    return Settings(
        backend=backend,
        label=label,
        max_steps=max_steps,
        watchdog=watchdog,
        minimize=bool(options.pop("minimize", True)),
        minimize_runs=minimize_runs,
        minimize_time=minimize_time,
        progress=progress,
        display=options.pop("display_name", None) or getattr(target, "__name__", "target"),
        coverage=bool(options.pop("coverage", False)),
        detect=_detect_option(options, backend),
        trace_paths=trace_paths,
        leak_check=_flag(options, "leak_check", True),
        target=target,
        replay_options=replay_options,
        free_backend=free_backend,
    )


def _on_its_own_loop(target: Callable[[], Any]) -> Callable[[], Any]:
    """An ``async def`` target for the threads backend: ``asyncio.run`` it, as a script would.

    The loop is then one of the run's threads' loops (the mixed model), and
    executor work runs on real threads the backend schedules line by line.
    """
    import asyncio

    def run_on_its_own_loop() -> Any:
        return asyncio.run(target())

    for attr in ("__name__", "__qualname__", "__module__", "__doc__"):
        try:
            setattr(run_on_its_own_loop, attr, getattr(target, attr))
        except (AttributeError, TypeError):
            pass
    return run_on_its_own_loop


def _trace_paths(target: Callable[[], Any], trace_packages: Any) -> tuple[str, ...]:
    """The code under test, wherever installed, plus what ``trace_packages`` names."""
    from racecheck.sources import code_under_test, resolve_trace_packages

    try:
        extra = resolve_trace_packages(trace_packages or ())
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return (*code_under_test(target), *extra)


def _flag(options: dict[str, Any], name: str, default: bool) -> bool:
    value = options.pop(name, default)
    if not isinstance(value, bool):
        raise UsageError(f"{name} must be True or False, not {value!r}")
    return value


def _check_signature(target: Callable[..., Any]) -> None:
    """Refuse a target that cannot be called with no arguments, before exploring.

    Otherwise every schedule fails with the same ``TypeError`` and a scenario
    that expects a race "passes". ``follow_wrapped=False``: a decorator that
    supplies the arguments wraps a function that needs them.
    """
    try:
        signature = inspect.signature(target, follow_wrapped=False)
    except Exception:  # no signature to read (some builtins, odd objects): the call will tell
        return
    try:
        signature.bind()
    except TypeError as exc:
        name = getattr(target, "__qualname__", None) or type(target).__name__
        raise UsageError(
            f"target {name}{signature} needs arguments ({exc}); a target is called with"
            " none: bind them with functools.partial or a wrapper"
        ) from None


def _detect_option(options: dict[str, Any], backend: Backend) -> bool:
    detect = options.pop("detect", False)
    if not isinstance(detect, bool):
        raise UsageError(f"detect must be True or False, not {detect!r}")
    if detect:
        backend.enable_detection()
    return detect


_gc_guard = _thread.allocate_lock()


_gc_depth = 0


#: what the interpreter reports frozen before anyone froze anything: CPython
#: 3.12 starts with a few hundred objects counted as frozen. Read as "someone
#: froze the heap, leave it alone", that turned freezing off on 3.12, and every
#: schedule's collection walked the whole heap (2 ms a schedule, not 20 us).
_FROZEN_AT_START = gc.get_freeze_count()


_gc_restore = (True, False)  # (collector was enabled, this exploration froze the heap)


#: a young collection (generations 0 and 1) is the whole collection when
#: generation 2 is empty: true of the generational collector up to 3.13; 3.14's
#: incremental collector gives ``gc.collect(1)`` another meaning, so there the
#: full collection is kept until that road is checked (Session._collect_between_runs)
_YOUNG_IS_WHOLE = sys.version_info < (3, 14)


@contextmanager
def quiet_gc() -> Iterator[None]:
    """Keep the cyclic collector from firing inside a run; restore the caller's setting.

    Entered on the calling thread around a whole exploration, so that the
    caller's setting comes back even when the worker is abandoned (StuckError)
    or interrupted. Nested and concurrent explorations share one outermost
    entry.
    """
    global _gc_depth, _gc_restore
    with _gc_guard:
        if _gc_depth == 0:
            was_enabled = gc.isenabled()
            freeze = gc.get_freeze_count() <= _FROZEN_AT_START
            gc.disable()
            # Garbage the caller has not collected yet (the cycles of an earlier
            # check's failure: exception, traceback, frames) would otherwise be
            # seen by the first schedule, and frozen, kept alive for the whole
            # exploration: a weak cache would hand the earlier check's object
            # to this one (a "race" reported on the fixed code).
            gc.collect()
            if freeze:
                gc.freeze()
            _gc_restore = (was_enabled, freeze)
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_guard:
            _gc_depth -= 1
            if _gc_depth == 0:
                was_enabled, froze = _gc_restore
                if froze:
                    gc.unfreeze()
                if was_enabled:
                    gc.enable()


class Session:
    """The state the supervisor can see: the running controller, for progress and aborts."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.current: Controller | None = None
        self.runs = 0
        self.interrupted = False
        #: for an interruption's report: schedules explored, of how many, and the
        #: failure (with its decisions and schedule number) being minimised
        self.explored = 0
        self.budget = 0
        self.found_so_far: tuple[Failure, tuple[Decision, ...], int] | None = None
        from racecheck.coverage import CoverageTally

        self.coverage = CoverageTally()
        from racecheck.distinct import HashSet

        #: hashes of the decision sequences run: 8 bytes each (racecheck.distinct)
        self.schedules_seen = HashSet()
        #: the race detector's per-code cache, shared by the runs of this exploration
        self.hot_lines: dict[Any, frozenset[int] | None] = {}
        #: decisions of the exploration's first schedule, run from the freshest start
        self.first: tuple[Decision, ...] | None = None
        #: what the target shares with every schedule, and its digest before the first
        self.watched: Any = None
        self.baseline: dict[str, Hashable] = {}
        #: runs whose collection is full without looking (see _collect_between_runs)
        self._full_for = 0
        self._backoff = 1
        self.take_baseline()

    def take_baseline(self) -> None:
        from racecheck.statewatch import roots, snapshot

        target = self.settings.target
        if target is None:
            return
        try:
            self.watched = roots(target)
            self.baseline = snapshot(self.watched)
        except Exception:  # naming suspects is a courtesy; never fail a run for it
            self.watched, self.baseline = None, {}

    def suspects(self) -> list[str]:
        if not self.watched:
            return []
        from racecheck.statewatch import changed

        try:
            return changed(self.baseline, self.watched)
        except Exception:
            return []

    def progress(self) -> int:
        current = self.current
        return self.runs * 1_000_003 + (current.steps + current.teardown_steps if current else 0)

    def abort(self) -> None:
        self.interrupted = True
        current = self.current
        if current is not None:
            current.interrupt()
        abort = getattr(self.settings.backend, "abort", None)
        if abort is not None:
            abort()

    def abort_stuck(self) -> None:
        """The watchdog's abort: the backend first gives up on the actor blocked in C."""
        give_up = getattr(self.settings.backend, "give_up_on_stuck", None)
        if give_up is not None:
            give_up()
        self.abort()

    def run(self, chooser: Chooser, run: int, recorder: Any = None) -> Controller:
        if self.interrupted:
            # The supervisor stopped this exploration: no strategy may start
            # another run (hypothesis loops on its own, past _explore's check).
            raise KeyboardInterrupt
        controller = Controller(chooser, self.settings.max_steps, recorder)
        if recorder is None and (self.settings.coverage or _fingerprints_this_schedule(chooser)):
            controller.accesses = []
        if self.settings.detect:
            from racecheck.detect import new_detector

            controller.detector = new_detector(
                controller,
                happens_before=self.settings.backend.name == "threads",
                hot_lines=self.hot_lines,
            )
            controller.detector.log_free = not getattr(chooser, "observes_accesses", False)
        if _observes_this_schedule(chooser):
            _record_accesses(controller, self.hot_lines)
            if self.settings.backend.granularity == "line":
                assert controller.steplog is not None
                # No opcode events at this granularity: no access reaches the
                # record, and every step would look independent of every other.
                controller.steplog.blind_spot(
                    "granularity='line' records no accesses, so DPOR cannot tell which"
                    " steps conflict"
                )
        chooser.begin(run)
        self.current = controller
        if self.runs == 0 and _gc_depth and _gc_restore[1]:
            # What the backend's install made (racecheck's lazily imported
            # modules, the thread pool, adopted locks) joins the frozen heap:
            # no run made it, and collecting after every run need not walk it.
            gc.freeze()
        if controller.steplog is None:
            self.settings.backend.run_once(controller)
        else:
            with controller.steplog.watching():
                self.settings.backend.run_once(controller)
            _steps_done(controller, chooser)
        if controller.detector is not None:
            # before the collection below: the detector lets go of the run's objects
            if controller.failure is None:
                controller.detector.finish()
            else:
                controller.detector.let_go()
        if controller.failure is not None and recorder is None:
            # The failure's traceback holds the failing run's frames, and their
            # locals hold that run's objects: a library cache keyed weakly on
            # them (filelock's singletons) would then still be full when the
            # next run, the shrinker or the replay starts. The lines stay; the
            # locals go. The traced run (recorder) is last and keeps them.
            release_locals(controller.failure.cause)
        if _gc_depth:
            # Between schedules, while nothing runs: finalisers of this run's
            # objects run now, not inside the next schedule. A full pass, not
            # the young generation alone: a run's garbage can hang on an object
            # an earlier run left behind (tqdm's monitor thread), and a bar
            # still alive in tqdm's weak set changes the next run's path.
            self._collect_between_runs()
        self.runs += 1
        if run == 1 and recorder is None and self.first is None:
            self.first = tuple(controller.decisions)
        if controller.accesses is not None and self.settings.coverage:
            self.coverage.add_run(controller.accesses)
        if controller.internal_error is not None:
            raise controller.internal_error
        if controller.failure is not None and self.settings.backend.name == "asyncio":
            _refuse_trio_on_asyncio(controller.failure.cause)
        return controller

    def _collect_between_runs(self) -> None:
        """The full collection after a run, through its cheaper equal where there is one.

        A young collection (generations 0 and 1) examines exactly the objects
        a full one would when generation 2 is empty and everything older than
        the exploration is frozen: the two find the same garbage, run the same
        finalisers and weakref callbacks, and leave the survivors in
        generation 2. The young one skips what only a full collection does:
        emptying the interpreter's free lists, which the next schedule refills
        (about 1.4 us a schedule), and untracking dicts. Generation 2 is empty
        when everything the previous run left had been freed by reference
        counting before this collection (the explore loop lets go of its
        controller; long-lived tables filled every run are frozen tracked:
        racecheck.gctrack). Anything else, an object an earlier run left
        behind (tqdm's monitor thread, a strategy's own growing state), takes
        the full collection; ``gc.callbacks`` see generation 1 on the young
        road.

        Listing generation 2 costs about a quarter of collecting it, so after
        a full collection the next ones are full without looking, for twice
        as many runs each time in a row (at most 64): an exploration whose
        runs keep something alive pays about nothing for the look.
        """
        if self._full_for:
            self._full_for -= 1
            gc.collect()
        elif _YOUNG_IS_WHOLE and _gc_restore[1] and not gc.get_objects(2):
            # (only when this exploration froze the heap: otherwise generation
            # 2 holds whatever the caller left unfrozen)
            self._backoff = 1
            gc.collect(1)
        else:
            gc.collect()
            self._full_for = self._backoff
            self._backoff = min(2 * self._backoff, 64)

    def warnings(self) -> list[str]:
        """What the backend could not see during this exploration (see Report.warnings)."""
        backend = self.settings.backend
        blind_spots = getattr(backend, "blind_spots", None)
        found = list(blind_spots()) if blind_spots is not None else []
        return found + backend_warnings(backend)

    def report(
        self,
        chooser: Chooser,
        *,
        schedules_run: int,
        exhausted: bool,
        notes: list[str],
        warnings: list[str],
        verified: bool = False,
        saturated: bool = False,
    ) -> Report:
        """The report of a search that ended clean: what every explore loop fills in alike.

        The claims (``exhausted``, ``verified``) stay the caller's: only it knows
        what its part of the search covered.
        """
        from racecheck.outcome import Report

        return Report(
            schedules_run=schedules_run,
            exhausted=exhausted,
            verified=verified,
            strategy=chooser.name,
            seed=0,
            backend=self.settings.backend.name,
            distinct_schedules=len(self.schedules_seen),
            distinct_orderings=len(self.coverage),
            notes=notes,
            warnings=warnings,
            saturated=saturated,
        )

    def schedule(self, decisions: Sequence[Decision]) -> Schedule:
        backend = self.settings.backend
        return Schedule(
            backend.name,
            backend.granularity,
            python_tag(),
            fingerprint(self.settings.label),
            tuple(decisions),
        )


def _refuse_trio_on_asyncio(cause: BaseException | None) -> None:
    """Raise a UsageError when an asyncio run failed inside trio itself.

    trio code cannot run on an asyncio loop: its first nursery, checkpoint or
    ``trio.lowlevel`` call fails in trio (``'RunContext' object has no
    attribute 'runner'``, "must be called from async context", asyncio's "Task
    got bad yield"). Such a failure says nothing about the target's
    concurrency, so it must not come back as a race. The test is where the
    error was raised, not its words: user code raising the same message stays
    a failure of the user's code.
    """
    import sys

    trio = sys.modules.get("trio")
    if trio is None or cause is None:
        return
    import os

    home = os.path.dirname(getattr(trio, "__file__", "") or "") + os.sep
    for exc in _leaves(cause):
        if not isinstance(exc, (RuntimeError, AttributeError)):
            continue
        tb = exc.__traceback__
        if tb is None:
            continue
        while tb.tb_next is not None:
            tb = tb.tb_next
        filename = tb.tb_frame.f_code.co_filename
        if filename.startswith(home):
            where = os.path.relpath(filename, os.path.dirname(home.rstrip(os.sep)))
            raise UsageError(
                f"this target runs trio code on the asyncio backend ({type(exc).__name__}:"
                f" {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}, raised in"
                f" {where}): pass backend='trio' (in pytest: @pytest.mark.racecheck("
                "backend='trio'), or pytest-trio's marker)"
            )


def _leaves(exc: BaseException, depth: int = 0) -> list[BaseException]:
    """``exc`` and, for an exception group, the exceptions it holds."""
    if depth < 8 and isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out += _leaves(inner, depth + 1)
        return out
    return [exc]


#: One exploration at a time per process. An exploration patches process-wide
#: state (threading's classes, time.sleep, queue, the loop factory, trio's
#: scheduler hooks) and the threads backend keeps its runtime in a global, so
#: two at once would see each other's threads (false races) and restore each
#: other's patches (leaving them in place). Callers from other threads (a
#: threaded test runner, an application's workers) therefore wait their turn
#: rather than fail. The lock is a raw ``_thread`` lock taken at import, so a
#: patched ``threading.Lock`` can never stand in for it.
_EXPLORATION_LOCK = _thread.allocate_lock()


def supervise(session: Session, work: Callable[[], Any]) -> Any:
    if in_exploration():
        # The caller is code under exploration: waiting for the lock it runs
        # under would deadlock.
        raise UsageError(
            "racecheck.check/replay was called from inside code that racecheck is"
            " exploring; explorations cannot nest (call it outside the target)"
        )
    from racecheck.sources import tracing

    backend = session.settings.backend
    # The traced set is process-wide while it lasts: inside the lock, like the patches.
    with _EXPLORATION_LOCK, tracing(session.settings.trace_paths):
        try:
            return run_supervised(
                work,
                progress=session.progress,
                watchdog=session.settings.watchdog,
                on_stuck=session.abort_stuck,
                on_interrupt=session.abort,
                explain=getattr(backend, "explain_stuck", None),
            )
        finally:
            backend.uninstall()  # idempotent: the worker may be gone for good


def interrupted(session: Session, strategy: str, seed: int) -> Interrupted:
    """What Ctrl-C stopped: the schedules explored, and a failure being minimised."""
    found = session.found_so_far
    what = token = None
    at = 0
    if found is not None:
        failure, decisions, at = found
        what = describe(failure)
        try:
            token = session.schedule(decisions).encode()
        except Exception:  # the report of an interruption must not fail
            token = None
    return Interrupted(
        schedules_run=session.explored,
        schedules=session.budget,
        strategy=strategy,
        seed=seed,
        found=what,
        found_at=at,
        schedule=token,
    )


def _observes_this_schedule(chooser: Chooser) -> bool:
    """Does the schedule about to begin record its accesses?

    A chooser that uses them on some schedules only (the portfolio: on its
    DPOR member's) says so per schedule, so the others keep their speed.
    """
    per_schedule = getattr(chooser, "observes_next_schedule", None)
    if per_schedule is not None:
        return bool(per_schedule())
    return bool(getattr(chooser, "observes_accesses", False))


def _fingerprints_this_schedule(chooser: Chooser) -> bool:
    """Record this schedule's accesses for saturation's fingerprint alone (coverage off)?

    The portfolio asks for it on a few sampled schedules only, where the
    answer can move its budget (PortfolioChooser.fingerprints_next_schedule).
    """
    wants = getattr(chooser, "fingerprints_next_schedule", None)
    return bool(wants()) if wants is not None else False


def _record_accesses(controller: Controller, hot_lines: dict[Any, Any]) -> None:
    """Record what each step touches, for a chooser that observes it (DPOR).

    The race detector's feed reports the accesses; without ``detect=True`` a
    detector runs that only records (it never fails a run).
    """
    from racecheck.accesses import StepLog, code_answers

    controller.steplog = StepLog(code_answers(hot_lines))
    if controller.detector is None:
        from racecheck.detect import new_detector

        controller.detector = new_detector(controller, happens_before=False, hot_lines=hot_lines)
        controller.detector.record_only = True
    controller.detector.access_log = controller.steplog


def _steps_done(controller: Controller, chooser: Chooser) -> None:
    """Hand the run's last step over, and what the run could not see."""
    log = controller.steplog
    assert log is not None
    if controller.internal_error is None:
        controller.close_steps()
    log.release()
    blind = getattr(chooser, "blind", None)
    if blind is not None and log.blind:
        blind.update(log.blind)


def release_locals(exc: BaseException | None) -> None:
    """Clear the local variables of every finished frame in ``exc``'s tracebacks."""
    import traceback

    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if current.__traceback__ is not None:
            traceback.clear_frames(current.__traceback__)
            _drop_locals_snapshots(current.__traceback__)
        todo += [current.__cause__, current.__context__]
        todo += list(getattr(current, "exceptions", ()))  # exception groups


def _drop_locals_snapshots(tb: TracebackType | None) -> None:
    """Let go of the ``f_locals`` dicts that cleared frames still hold (CPython 3.11).

    ``frame.clear()`` empties a frame's fast locals, but on 3.11 a dict that
    someone materialised from them (a debugger, pytest, a ``locals()`` call)
    stays attached to the frame with every value in it. Reading ``f_locals``
    again syncs that dict with the now empty frame. On 3.13 it is a view.
    """
    while tb is not None:
        tb.tb_frame.f_locals  # noqa: B018 - the read is the sync
        tb = tb.tb_next


def backend_warnings(backend: Any) -> list[str]:
    """What the backend's tracer could not see (replaced mid-run), if it has one."""
    return list(getattr(getattr(backend, "tracer", None), "warnings", ()))


def describe(failure: Failure) -> str:
    if failure.cause is not None:
        return one_line(failure.cause)
    return (failure.detail or failure.kind).strip().splitlines()[0]
