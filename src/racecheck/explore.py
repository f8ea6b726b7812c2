"""Exploration: run the target under many schedules, report the first failure.

Everything here is backend- and strategy-agnostic. The pipeline for a failing
schedule is: found → shrunk (:mod:`racecheck.shrink`) → replayed once more with
a :class:`~racecheck.recorder.Recorder` to produce the readable trace. Only
that last replay pays for tracing; exploration records decisions only.

Schedules must not leak into each other. While an exploration runs, the cyclic
garbage collector is off and every run is followed by a collection
(:func:`quiet_gc`): objects of one schedule are finalised between schedules,
while nothing runs, never inside a later one (a library ``__del__`` that
schedules work on the running loop would add actors to it). Objects older than
the exploration are frozen (``gc.freeze``), so that collection only walks what
the exploration made. What a target keeps between schedules on purpose (a
fixture, a module global) is checked when a failure is found: the first
schedule is run again, and a failing schedule's traced replay must fail
again; otherwise the failure is a :class:`StateLeakError`, not a race.
"""

from __future__ import annotations

import _thread
import gc
import inspect
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from racecheck.engine import (
    Backend,
    Controller,
    Failure,
    NeedsBackend,
    in_exploration,
    run_supervised,
)
from racecheck.errors import (
    DivergenceError,
    Interrupted,
    StateLeakError,
    StuckError,
    UsageError,
    one_line,
)
from racecheck.outcome import RaceFound, Report
from racecheck.saturation import DEFAULT_WINDOW, SaturationWatch
from racecheck.schedule import Decision, Schedule, fingerprint, python_tag
from racecheck.strategies import make_chooser
from racecheck.strategies.base import Chooser
from racecheck.strategies.replay import ReplayChooser
from racecheck.trace import Trace

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


def _settings(target: Callable[[], Any], options: dict[str, Any]) -> Settings:
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

        backend = AsyncioBackend(target)
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
        if controller.detector is not None and controller.failure is None:
            # before the collection below: the detector lets go of the run's objects
            controller.detector.finish()
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
            gc.collect()
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

    def warnings(self) -> list[str]:
        """What the backend could not see during this exploration (see Report.warnings)."""
        backend = self.settings.backend
        blind_spots = getattr(backend, "blind_spots", None)
        found = list(blind_spots()) if blind_spots is not None else []
        return found + backend_warnings(backend)

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


@dataclass
class Found:
    failure: Failure
    decisions: tuple[Decision, ...]
    original: tuple[Decision, ...]
    schedules_run: int
    trace: Trace | None
    #: shown in place of the trace when there is none, saying why
    note: str = ""


def explore(
    target: Callable[[], Any], *, strategy: str, schedules: int, seed: int, options: dict[str, Any]
) -> Report:
    """Explore ``target``; an ``async def`` target with executor work also on threads.

    The asyncio backend runs executor work (``to_thread``, ``run_in_executor``)
    inline, as one task step: exact about the loop's task orders, blind to
    races *inside* the work. The threads backend runs it on threads it
    schedules line by line, but makes timers that fall due together enter
    the loop together, so some task orders the asyncio backend reaches stay
    out of its reach. Neither covers the other, so a target free to pick its
    backend that used an executor, and passed, is explored on threads too
    (the budget split in halves; the report names both). Work that waits for
    the loop it runs on (a janus-style hand-off) cannot run inline at all:
    that stall moves the exploration to threads at once.
    """
    from racecheck.backends.asyncio_backend import INLINE_EXECUTOR_WORK

    free = "backend" not in options and is_async_target(target)
    try:
        report = _explore_on_backend(
            target, strategy=strategy, schedules=schedules, seed=seed, options=dict(options)
        )
    except NeedsBackend as needs:
        report = _explore_on_backend(
            target,
            strategy=strategy,
            schedules=schedules,
            seed=seed,
            options={**options, "backend": needs.backend},
        )
        report.notes = [f"ran on the {needs.backend} backend: {needs.why}", *report.notes]
        return report
    if (
        free
        and INLINE_EXECUTOR_WORK in report.warnings
        and "shard" not in options
        and strategy != "hypothesis"
        and not report.interrupted
    ):
        on_threads = _explore_on_backend(
            target,
            strategy=strategy,
            schedules=max(1, schedules - report.schedules_run),
            seed=seed,
            options={**options, "backend": "threads"},
        )
        return _asyncio_then_threads(report, on_threads)
    return report


def _asyncio_then_threads(first: Report, then: Report) -> Report:
    """One report for the two explorations of a target with executor work (see explore)."""
    from racecheck.backends.asyncio_backend import INLINE_EXECUTOR_WORK

    return Report(
        schedules_run=first.schedules_run + then.schedules_run,
        # each side's claim covers what that backend can make, not the other's
        exhausted=False,
        strategy=then.strategy,
        seed=then.seed,
        backend="asyncio+threads",
        seconds=first.seconds + then.seconds,
        distinct_schedules=first.distinct_schedules + then.distinct_schedules,
        distinct_orderings=max(first.distinct_orderings, then.distinct_orderings),
        notes=[
            f"executor work ran inline on the asyncio backend ({first.schedules_run}"
            f" schedules), then on threads the threads backend schedules"
            f" ({then.schedules_run} schedules)",
            *(f"asyncio: {note}" for note in first.notes),
            *(f"threads: {note}" for note in then.notes),
        ],
        warnings=list(
            dict.fromkeys(w for w in (*first.warnings, *then.warnings) if w != INLINE_EXECUTOR_WORK)
        ),
        saturated=first.saturated and then.saturated,
    )


def _explore_on_backend(
    target: Callable[[], Any], *, strategy: str, schedules: int, seed: int, options: dict[str, Any]
) -> Report:
    settings = _settings(target, options)
    if isinstance(schedules, bool) or not isinstance(schedules, int) or schedules < 1:
        raise UsageError(f"schedules must be a positive integer, not {schedules!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UsageError(f"seed must be an integer, not {seed!r}")
    watch = _saturation_watch(options)
    shard = None
    if "shard" in options:  # one slice of the exploration (racecheck.sharding)
        from racecheck.sharding import idle_report, slice_state

        shard = slice_state(options.pop("shard"))
        shard.budget = schedules
        shard.shift = watch.window > 0  # saturation=0: no shift to DPOR, as unsliced
        if strategy == "hypothesis" and shard.shard.index != 1:
            return idle_report(shard, strategy, settings.backend.name)
    if strategy == "hypothesis":
        from racecheck.strategies.hypothesis import explore_with_hypothesis

        with quiet_gc():
            report = explore_with_hypothesis(target, settings, schedules, seed, options)
        if shard is not None:  # shard 1 ran the sequential search whole
            shard.ran = shard.covered = report.schedules_run
            shard.plan = "shard 1 only"
        return report
    chooser = make_chooser(strategy, seed=seed, options=options)
    tell = getattr(chooser, "for_backend", None)  # notes name what a bound counts
    if tell is not None:
        tell(settings.backend.name)
    if options:
        raise UsageError(f"unknown option(s): {', '.join(sorted(options))}")
    if getattr(chooser, "observes_accesses", False) and not settings.detect:
        settings.backend.enable_detection()  # the detector's feed records the accesses
    session = Session(settings)
    started = time.perf_counter()

    def work() -> Report | Found:
        settings.backend.install()
        try:
            if shard is not None:
                # no saturation stop: where a slice stops must not depend on
                # how many slices there are
                from racecheck.sharding import explore_slice

                return explore_slice(session, chooser, schedules, shard)
            return _explore(session, chooser, schedules, watch)
        finally:
            settings.backend.uninstall()

    with quiet_gc():
        try:
            outcome = _supervise(session, work)
        except KeyboardInterrupt:
            raise interrupted(session, strategy, seed) from None
        except StuckError:
            if settings.free_backend and getattr(
                settings.backend, "stalled_in_executor_work", False
            ):
                raise NeedsBackend(
                    "threads",
                    "executor work waited for the event loop it was run inline on, which"
                    " stalled that loop; on threads it runs beside the loop",
                ) from None
            raise
        except NeedsBackend as needs:
            if settings.free_backend:
                raise
            # The caller named this backend: say why it cannot run the target.
            raise StuckError(
                f"{needs.why.split(';')[0]}; backend={settings.backend.name!r} runs executor"
                " work inline, so nothing can; use backend='threads'"
            ) from None
    if isinstance(outcome, Found):
        member = getattr(chooser, "found_by", None)  # the portfolio names its member
        raise _race_found(session, outcome, f"{strategy}: {member}" if member else strategy, seed)
    outcome.seconds = time.perf_counter() - started
    outcome.strategy, outcome.seed = strategy, seed
    return outcome


def _saturation_watch(options: dict[str, Any]) -> SaturationWatch:
    """``saturation=N``: schedules in a row without anything new before stopping (0: never)."""
    window = options.pop("saturation", DEFAULT_WINDOW)
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise UsageError(f"saturation must be a non-negative integer, not {window!r}")
    return SaturationWatch(window)


#: One exploration at a time per process. An exploration patches process-wide
#: state (threading's classes, time.sleep, queue, the loop factory, trio's
#: scheduler hooks) and the threads backend keeps its runtime in a global, so
#: two at once would see each other's threads (false races) and restore each
#: other's patches (leaving them in place). Callers from other threads (a
#: threaded test runner, an application's workers) therefore wait their turn
#: rather than fail. The lock is a raw ``_thread`` lock taken at import, so a
#: patched ``threading.Lock`` can never stand in for it.
_EXPLORATION_LOCK = _thread.allocate_lock()


def _supervise(session: Session, work: Callable[[], Any]) -> Any:
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
                on_stuck=session.abort,
                on_interrupt=session.abort,
                explain=getattr(backend, "explain_stuck", None),
            )
        finally:
            backend.uninstall()  # idempotent: the worker may be gone for good


def _explore(
    session: Session, chooser: Chooser, schedules: int, watch: SaturationWatch | None = None
) -> Report | Found:
    seen = session.schedules_seen
    settings = session.settings
    run = 0
    session.budget = schedules
    plan = getattr(chooser, "plan_budget", None)  # the portfolio may move budget to DPOR
    if plan is not None:
        plan(schedules)
    # free_backend: an async target on the default backend, always the asyncio one
    halve = settings.free_backend
    while run < schedules and not session.interrupted:
        run += 1
        controller = session.run(chooser, run)
        if halve and settings.backend.runs_with_inline_executor_work:  # type: ignore[attr-defined]
            # The other half goes to the threads backend (see explore).
            halve = False
            schedules = max(run, (schedules + 1) // 2)
        session.explored = run
        decisions = tuple(controller.decisions)
        seen.add(hash(decisions))
        failed = controller.failure is not None
        chooser.end(decisions, failed, controller.scheduling_steps)
        if settings.progress is not None:
            settings.progress(run, schedules)
        if failed and not session.interrupted:
            assert controller.failure is not None
            session.found_so_far = (controller.failure, decisions, run)
            return _found(session, controller.failure, decisions, run)
        if not chooser.has_more():
            break
        if watch is not None and watch.after_run(chooser, decisions, controller.accesses):
            break
    if session.interrupted:
        raise KeyboardInterrupt
    warnings = session.warnings()
    notes = chooser.notes(run) + (watch.notes if watch is not None else [])
    if warnings and chooser.exhausted:
        # The strategy ran out of schedules it could tell apart; unseen code had more.
        notes = [
            note.replace(
                "every schedule racecheck can make of this program ran",
                "not exhausted (see the warnings)",
            )
            for note in notes
        ]
    exhausted = chooser.exhausted and not warnings
    limit = getattr(settings.backend, "scheduling_limit", None)
    if exhausted and limit:
        # The backend offers the strategies only part of the runtime's freedom:
        # every schedule *it* can make ran, which is not every schedule.
        exhausted = False
        notes = [*notes, f"not exhausted: {limit}"]
    verified = bool(getattr(chooser, "verified", False)) and not warnings and not limit
    if getattr(chooser, "verified", False) and not verified:
        notes = [_unverified(note) for note in notes]
    return Report(
        schedules_run=run,
        # "exhausted" over code racecheck could not see would be a false proof
        exhausted=exhausted,
        verified=verified,
        strategy=chooser.name,
        seed=0,
        backend=settings.backend.name,
        distinct_schedules=len(seen),
        distinct_orderings=len(session.coverage),
        notes=notes,
        warnings=warnings,
        saturated=watch is not None and watch.stopped,
    )


def interrupted(session: Session, strategy: str, seed: int) -> Interrupted:
    """What Ctrl-C stopped: the schedules explored, and a failure being minimised."""
    found = session.found_so_far
    what = token = None
    at = 0
    if found is not None:
        failure, decisions, at = found
        what = _describe(failure)
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


#: a step-limit run longer than this is not shrunk: every attempt would run to
#: the bound again (a million steps each), for a livelock any order shows
SHRINK_STEP_LIMIT_UP_TO = 20_000


def _worth_shrinking(failure: Failure, max_steps: int) -> bool:
    return failure.kind != "step-limit" or max_steps <= SHRINK_STEP_LIMIT_UP_TO


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
    from racecheck.accesses import StepLog

    controller.steplog = StepLog()
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


def _unverified(note: str) -> str:
    # the warnings, or a backend's scheduling limit, say what was not seen
    return note.replace("verified: all", "not verified (see below): all", 1)


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


def _found(
    session: Session, failure: Failure, decisions: tuple[Decision, ...], schedules_run: int
) -> Found:
    _check_fresh_start(session, failure, schedules_run)
    original = decisions
    settings = session.settings
    if (
        settings.minimize
        and any(choice for _, choice in decisions)
        and _worth_shrinking(failure, settings.max_steps)
    ):
        from racecheck.shrink import shrink

        failure, decisions = shrink(
            session, failure, decisions, runs=settings.minimize_runs, seconds=settings.minimize_time
        )
    traced = _traced_replay(session, decisions)
    if isinstance(traced, DivergenceError) or traced[1] is None:
        why = (
            _divergence_why(traced)
            if isinstance(traced, DivergenceError)
            else "the replay ran without failing"
        )
        if schedules_run == 1:
            # Seen on the very first schedule, from the freshest start there is:
            # a real failure whose path ran one-time initialisation (a first-use
            # cache, a lazy singleton) that later runs skip. Report it, and why
            # there is no trace.
            return Found(
                failure,
                decisions,
                original,
                schedules_run,
                None,
                note=(
                    "trace: not available: the failure happened on the first schedule and its"
                    f" traced replay in this process did not reproduce it ({why}); the first"
                    " schedule ran one-time initialisation that later runs skip, so replay"
                    " the token in a fresh process"
                ),
            )
        if session.settings.leak_check:
            raise _not_reproduced(session, failure, decisions, schedules_run, why)
        return Found(
            failure, decisions, original, schedules_run, None, note=f"trace: not available: {why}"
        )
    trace, traced_failure = traced
    if traced_failure is not None and traced_failure.kind == failure.kind:
        failure = traced_failure  # same failure, with the richer detail of the traced run
    return Found(failure, decisions, original, schedules_run, trace)


def _divergence_why(exc: DivergenceError) -> str:
    if exc.reason == "needs-more":
        return f"the replay needed decision {exc.step}, past the last one the schedule holds"
    if exc.reason == "not-enabled":
        return (
            f"the replay diverged at decision {exc.step}: another number of actors was enabled"
            " than the failing run had there"
        )
    return f"the replay diverged: {one_line(exc, named=False)}"


def _describe(failure: Failure) -> str:
    if failure.cause is not None:
        return one_line(failure.cause)
    return (failure.detail or failure.kind).strip().splitlines()[0]


def _suspects_text(session: Session) -> tuple[str, tuple[str, ...]]:
    suspects = tuple(session.suspects())
    if suspects:
        shown = ", ".join(suspects[:6]) + (", ..." if len(suspects) > 6 else "")
        return f"changed between schedules: {shown}", suspects
    return (
        "racecheck could not see what changed (state kept in a library, a class attribute,"
        " a file or a cache)",
        suspects,
    )


_LEAK_FIX = (
    "build what the actors share inside the target, or reset it at its start (in pytest a"
    " function-scoped fixture is made once per test and shared by all its schedules)"
)


def _check_fresh_start(session: Session, failure: Failure | None, schedules_run: int) -> None:
    """Raise StateLeakError when the first schedule now fails: history, not an interleaving.

    The first schedule passed when it ran from the exploration's fresh start
    (it would have been reported otherwise). Running its exact decisions again
    must pass again; if it fails now, earlier schedules changed the world the
    target runs in. A replay that takes another path is inconclusive (one-time
    initialisation does that), so only a failure on the same path counts: one
    that followed every recorded decision.
    """
    first = session.first
    if schedules_run <= 1 or first is None or session.interrupted:
        return
    if not session.settings.leak_check:
        return
    chooser = ReplayChooser(first)
    try:
        controller = session.run(chooser, 0)
    except DivergenceError:
        return
    again = controller.failure
    if again is None or chooser.finished_early():
        # Not failing is what a fresh start looks like. Failing short of the
        # recorded decisions may mean the path changed (one-time initialisation
        # ran in the first schedule only), which says nothing about a leak.
        return
    what, suspects = _suspects_text(session)
    found = (
        f"the failure at schedule {schedules_run} ({_describe(failure)})"
        if failure is not None
        else "the failure found later"
    )
    raise StateLeakError(
        "state leaks between schedules: the first schedule passed at the start of the"
        f" exploration and fails when run again after {schedules_run} schedules"
        f" ({_describe(again)}), so {found} comes from what earlier schedules left behind,"
        f" not from an interleaving; {what};"
        f" {_LEAK_FIX}. Not reported as a race.",
        suspects,
    )


def _not_reproduced(
    session: Session,
    failure: Failure,
    decisions: Sequence[Decision],
    schedules_run: int,
    why: str,
) -> StateLeakError:
    what, suspects = _suspects_text(session)
    token = session.schedule(decisions).encode()
    return StateLeakError(
        "state leaks between schedules, or the target is not deterministic: the failure"
        f" found at schedule {schedules_run} ({_describe(failure)}) does not reproduce on its"
        f" own replay ({why}); {what}; {_LEAK_FIX}, and keep time, randomness and I/O out of"
        f" the schedule. Not reported as a race (schedule: {token}).",
        suspects,
    )


def _traced_replay(
    session: Session, decisions: Sequence[Decision]
) -> tuple[Trace, Failure | None] | DivergenceError:
    """Replay ``decisions`` once more with tracing on; a divergence is returned, not raised."""
    from racecheck.recorder import Recorder

    recorder = Recorder()
    try:
        controller = session.run(ReplayChooser(decisions), 0, recorder)
    except DivergenceError as exc:
        return exc
    return recorder.finish(controller.failure), controller.failure


def _record(session: Session, decisions: Sequence[Decision]) -> tuple[Trace | None, Failure | None]:
    """Replay a failing schedule once more with tracing on (strategies that shrink on their own).

    A replay that leaves its schedule, or runs without failing, is reported
    as a failure that does not reproduce, never as a race with an empty trace.
    """
    _check_fresh_start(session, None, session.runs)
    traced = _traced_replay(session, decisions)
    if isinstance(traced, DivergenceError) or (traced[1] is None and session.settings.leak_check):
        why = (
            _divergence_why(traced)
            if isinstance(traced, DivergenceError)
            else "the replay ran without failing"
        )
        token = session.schedule(decisions).encode()
        what, suspects = _suspects_text(session)
        raise StateLeakError(
            "state leaks between schedules, or the target is not deterministic: a failing"
            f" schedule does not reproduce on its own replay ({why}); {what}; {_LEAK_FIX}."
            f" Not reported as a race (schedule: {token}).",
            suspects,
        )
    return traced


def _race_found(session: Session, found: Found, strategy: str, seed: int) -> RaceFound:
    settings = session.settings
    token = session.schedule(found.decisions).encode()
    hint_options = dict(settings.replay_options)
    if settings.detect:
        hint_options["detect"] = True
    hint_arguments = "".join(f", {key}={value!r}" for key, value in hint_options.items())
    original = session.schedule(found.original)
    return RaceFound(
        kind=found.failure.kind,
        schedule=token,
        schedules_run=found.schedules_run,
        cause=found.failure.cause,
        trace=found.trace,
        strategy=strategy,
        seed=seed,
        original_schedule=original.encode(),
        preemptions=session.schedule(found.decisions).preemptions,
        original_preemptions=original.preemptions,
        detail=found.failure.detail,
        replay_hint=f'racecheck.replay({settings.display}, "{token}"{hint_arguments})',
        distinct_schedules=len(session.schedules_seen),
        distinct_orderings=len(session.coverage),
        note=found.note,
    )


def replay_token(target: Callable[[], Any], token: str, *, options: dict[str, Any]) -> None:
    options = dict(options)
    if "backend" not in options and isinstance(token, str) and is_async_target(target):
        # The token knows the backend it was recorded on: an async target
        # replays a trio token on trio without being told.
        recorded = Schedule.decode(token).backend
        if recorded in ("asyncio", "trio", "threads"):
            options["backend"] = recorded
    settings = _settings(target, options)
    options.pop("strategy", None)
    options.pop("schedules", None)
    options.pop("seed", None)
    for ignored in ("depth", "preemption_bound", "bound", "saturation", "shard"):
        options.pop(ignored, None)
    if options:
        raise UsageError(f"unknown option(s): {', '.join(sorted(options))}")
    schedule = Schedule.decode(token)
    schedule.check_compatible(
        backend=settings.backend.name,
        label=settings.label,
        granularity=settings.backend.granularity,
    )
    session = Session(settings)

    def attempt() -> Found | DivergenceError | bool:
        """One replay: the failure, a divergence, or whether it followed every decision."""
        from racecheck.recorder import Recorder

        chooser = ReplayChooser(schedule.decisions)
        recorder = Recorder()
        try:
            controller = session.run(chooser, 1, recorder)
        except DivergenceError as exc:
            return exc
        if controller.failure is None:
            return not chooser.finished_early()
        return Found(
            controller.failure,
            schedule.decisions,
            schedule.decisions,
            1,
            recorder.finish(controller.failure),
        )

    def work() -> Found | None:
        settings.backend.install()
        try:
            outcome = attempt()
            if outcome is not True and not isinstance(outcome, Found):
                # The run left the schedule or stopped short of it. A token found
                # late in an exploration was recorded after the target's one-time
                # initialisation (first-use caches, lazy singletons) had run; in a
                # fresh process the first run does that work and takes another
                # path. A run that follows the token where it fits (natural order
                # elsewhere) and runs to its end does that work; then the token is
                # replayed again, and that replay decides.
                from racecheck.shrink import GuidedChooser

                session.run(GuidedChooser(schedule.decisions), 1)
                outcome = attempt()
            if isinstance(outcome, DivergenceError):
                raise outcome
            if isinstance(outcome, Found):
                return outcome
            # Ending before the last recorded decision is not a divergence:
            # the run followed the schedule as far as it went and did not
            # fail (a fix usually shortens the run).
            return None
        finally:
            settings.backend.uninstall()

    with quiet_gc():
        found = _supervise(session, work)
    if found is not None:
        raise _race_found(session, found, "replay", 0)
