"""Exploration: run the target under many schedules, report the first failure.

Everything here is backend- and strategy-agnostic. The pipeline for a failing
schedule is: found → shrunk (:mod:`racecheck.shrink`) → replayed once more with
a :class:`~racecheck.recorder.Recorder` to produce the readable trace. Only
that last replay pays for tracing; exploration records decisions only.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from racecheck.engine import Backend, Controller, Failure, run_supervised
from racecheck.errors import DivergenceError, UsageError
from racecheck.outcome import RaceFound, Report
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
    backend_name = options.pop("backend", None)
    granularity = options.pop("granularity", None)
    trace_paths = _trace_paths(target, options.pop("trace_packages", None))
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

        backend = ThreadsBackend(target, granularity=granularity or "access")
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
    return Settings(
        backend=backend,
        label=label,
        max_steps=max_steps,
        watchdog=watchdog,
        minimize=bool(options.pop("minimize", True)),
        minimize_runs=minimize_runs,
        minimize_time=minimize_time,
        progress=options.pop("progress", None),
        display=options.pop("display_name", None) or getattr(target, "__name__", "target"),
        coverage=bool(options.pop("coverage", False)),
        detect=_detect_option(options, backend),
        trace_paths=trace_paths,
    )


def _trace_paths(target: Callable[[], Any], trace_packages: Any) -> tuple[str, ...]:
    """The code under test, wherever installed, plus what ``trace_packages`` names."""
    from racecheck.sources import code_under_test, resolve_trace_packages

    if isinstance(trace_packages, str):
        trace_packages = [trace_packages]
    try:
        extra = resolve_trace_packages(trace_packages or ())
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return (*code_under_test(target), *extra)


def _detect_option(options: dict[str, Any], backend: Backend) -> bool:
    detect = options.pop("detect", False)
    if not isinstance(detect, bool):
        raise UsageError(f"detect must be True or False, not {detect!r}")
    if detect:
        backend.enable_detection()
    return detect


class Session:
    """The state the supervisor can see: the running controller, for progress and aborts."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.current: Controller | None = None
        self.runs = 0
        self.interrupted = False
        from racecheck.coverage import CoverageTally

        self.coverage = CoverageTally()
        self.schedules_seen: set[int] = set()
        #: the race detector's per-code cache, shared by the runs of this exploration
        self.hot_lines: dict[Any, frozenset[int] | None] = {}

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
        controller = Controller(chooser, self.settings.max_steps, recorder)
        if self.settings.coverage and recorder is None:
            controller.accesses = []
        if self.settings.detect:
            from racecheck.detect import new_detector

            controller.detector = new_detector(
                controller,
                happens_before=self.settings.backend.name == "threads",
                hot_lines=self.hot_lines,
            )
        chooser.begin(run)
        self.current = controller
        self.settings.backend.run_once(controller)
        if controller.detector is not None and controller.failure is None:
            controller.detector.finish()
        self.runs += 1
        if controller.accesses is not None:
            self.coverage.add_run(controller.accesses)
        if controller.internal_error is not None:
            raise controller.internal_error
        return controller

    def warnings(self) -> list[str]:
        """What the backend could not see during this exploration (see Report.warnings)."""
        blind_spots = getattr(self.settings.backend, "blind_spots", None)
        return list(blind_spots()) if blind_spots is not None else []

    def schedule(self, decisions: Sequence[Decision]) -> Schedule:
        backend = self.settings.backend
        return Schedule(
            backend.name,
            backend.granularity,
            python_tag(),
            fingerprint(self.settings.label),
            tuple(decisions),
        )


@dataclass
class Found:
    failure: Failure
    decisions: tuple[Decision, ...]
    original: tuple[Decision, ...]
    schedules_run: int
    trace: Trace | None


def explore(
    target: Callable[[], Any], *, strategy: str, schedules: int, seed: int, options: dict[str, Any]
) -> Report:
    options = dict(options)
    settings = _settings(target, options)
    if isinstance(schedules, bool) or not isinstance(schedules, int) or schedules < 1:
        raise UsageError(f"schedules must be a positive integer, not {schedules!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UsageError(f"seed must be an integer, not {seed!r}")
    if strategy == "hypothesis":
        from racecheck.strategies.hypothesis import explore_with_hypothesis

        return explore_with_hypothesis(target, settings, schedules, seed, options)
    chooser = make_chooser(strategy, seed=seed, options=options)
    if options:
        raise UsageError(f"unknown option(s): {', '.join(sorted(options))}")
    session = Session(settings)
    started = time.perf_counter()

    def work() -> Report | Found:
        settings.backend.install()
        try:
            return _explore(session, chooser, schedules)
        finally:
            settings.backend.uninstall()

    outcome = _supervise(session, work)
    if isinstance(outcome, Found):
        raise _race_found(session, outcome, strategy, seed)
    outcome.seconds = time.perf_counter() - started
    outcome.strategy, outcome.seed = strategy, seed
    return outcome


def _supervise(session: Session, work: Callable[[], Any]) -> Any:
    from racecheck.sources import tracing

    with tracing(session.settings.trace_paths):
        return _supervise_traced(session, work)


def _supervise_traced(session: Session, work: Callable[[], Any]) -> Any:
    backend = session.settings.backend

    def on_stuck() -> None:
        session.abort()

    try:
        return run_supervised(
            work,
            progress=session.progress,
            watchdog=session.settings.watchdog,
            on_stuck=on_stuck,
            on_interrupt=session.abort,
            explain=getattr(backend, "explain_stuck", None),
        )
    except BaseException:
        backend.uninstall()  # idempotent: the worker may be gone for good
        raise


def _explore(session: Session, chooser: Chooser, schedules: int) -> Report | Found:
    seen = session.schedules_seen
    settings = session.settings
    run = 0
    while run < schedules and not session.interrupted:
        run += 1
        controller = session.run(chooser, run)
        decisions = tuple(controller.decisions)
        seen.add(hash(decisions))
        failed = controller.failure is not None
        chooser.end(decisions, failed, controller.scheduling_steps)
        if settings.progress is not None:
            settings.progress(run, schedules)
        if failed and not session.interrupted:
            assert controller.failure is not None
            return _found(session, controller.failure, decisions, run)
        if not chooser.has_more():
            break
    if session.interrupted:
        raise KeyboardInterrupt
    warnings = session.warnings()
    return Report(
        schedules_run=run,
        # "exhausted" over code racecheck could not see would be a false proof
        exhausted=chooser.exhausted and not warnings,
        strategy=chooser.name,
        seed=0,
        backend=settings.backend.name,
        distinct_schedules=len(seen),
        distinct_orderings=len(session.coverage),
        notes=chooser.notes(run),
        warnings=warnings,
    )


def _found(
    session: Session, failure: Failure, decisions: tuple[Decision, ...], schedules_run: int
) -> Found:
    original = decisions
    settings = session.settings
    if settings.minimize and any(choice for _, choice in decisions):
        from racecheck.shrink import shrink

        failure, decisions = shrink(
            session, failure, decisions, runs=settings.minimize_runs, seconds=settings.minimize_time
        )
    trace, traced_failure = _record(session, decisions)
    if traced_failure is not None and traced_failure.kind == failure.kind:
        failure = traced_failure  # same failure, with the richer detail of the traced run
    return Found(failure, decisions, original, schedules_run, trace)


def _record(session: Session, decisions: Sequence[Decision]) -> tuple[Trace | None, Failure | None]:
    """Replay ``decisions`` once more with tracing on."""
    from racecheck.recorder import Recorder

    recorder = Recorder()
    try:
        controller = session.run(ReplayChooser(decisions), 0, recorder)
    except DivergenceError:
        return None, None
    return recorder.finish(controller.failure), controller.failure


def _race_found(session: Session, found: Found, strategy: str, seed: int) -> RaceFound:
    settings = session.settings
    token = session.schedule(found.decisions).encode()
    detect_argument = ", detect=True" if settings.detect else ""
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
        replay_hint=f'racecheck.replay({settings.display}, "{token}"{detect_argument})',
        distinct_schedules=len(session.schedules_seen),
        distinct_orderings=len(session.coverage),
    )


def replay_token(target: Callable[[], Any], token: str, *, options: dict[str, Any]) -> None:
    options = dict(options)
    settings = _settings(target, options)
    options.pop("strategy", None)
    options.pop("schedules", None)
    options.pop("seed", None)
    for ignored in ("depth", "preemption_bound"):
        options.pop(ignored, None)
    if options:
        raise UsageError(f"unknown option(s): {', '.join(sorted(options))}")
    schedule = Schedule.decode(token)
    schedule.check_compatible(backend=settings.backend.name, label=settings.label)
    session = Session(settings)

    def work() -> Found | None:
        from racecheck.recorder import Recorder

        settings.backend.install()
        try:
            chooser = ReplayChooser(schedule.decisions)
            recorder = Recorder()
            controller = session.run(chooser, 1, recorder)
            if controller.failure is None:
                # Finishing before the last recorded decision is no divergence: the
                # run followed the schedule and did not fail (a fix that removes a
                # switch point needs fewer decisions). Needing one more is.
                return None
            return Found(
                controller.failure,
                schedule.decisions,
                schedule.decisions,
                1,
                recorder.finish(controller.failure),
            )
        finally:
            settings.backend.uninstall()

    found = _supervise(session, work)
    if found is not None:
        raise _race_found(session, found, "replay", 0)
