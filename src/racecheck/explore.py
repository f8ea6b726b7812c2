"""Exploration: run the target under many schedules, report the first failure.

Everything here is backend- and strategy-agnostic. :func:`explore` picks the
backend and the loop: the usual one (:func:`_explore`), a shard's slice
(:mod:`racecheck.sharding`) or hypothesis's (:mod:`racecheck.explore_hypothesis`).
What those loops share, the session and the pipeline of a failing schedule,
lives below them in :mod:`racecheck.session` and :mod:`racecheck.found`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from racecheck.engine import (
    NeedsBackend,
)
from racecheck.errors import (
    DivergenceError,
    StuckError,
    UsageError,
)
from racecheck.found import Found, race_found, shrink_and_trace
from racecheck.gctrack import keep_tracked
from racecheck.outcome import Report
from racecheck.saturation import DEFAULT_WINDOW, SaturationWatch
from racecheck.schedule import Schedule
from racecheck.session import (
    Session,
    interrupted,
    is_async_target,
    make_settings,
    quiet_gc,
    supervise,
)
from racecheck.strategies import make_chooser
from racecheck.strategies.base import Chooser
from racecheck.strategies.replay import ReplayChooser


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
            # the asyncio part's reason, INLINE_EXECUTOR_WORK, is dropped from the
            # warnings below: its note says it itself instead of pointing there
            *(
                f"asyncio: {note.replace(_SEE_BELOW, _INLINE_WORK_UNSEEN, 1)}"
                for note in first.notes
            ),
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
    settings = make_settings(target, options)
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
        from racecheck.explore_hypothesis import explore_with_hypothesis

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
            outcome = supervise(session, work)
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
        raise race_found(session, outcome, f"{strategy}: {member}" if member else strategy, seed)
    outcome.seconds = time.perf_counter() - started
    outcome.strategy, outcome.seed = strategy, seed
    return outcome


def _saturation_watch(options: dict[str, Any]) -> SaturationWatch:
    """``saturation=N``: schedules in a row without anything new before stopping (0: never)."""
    window = options.pop("saturation", DEFAULT_WINDOW)
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise UsageError(f"saturation must be a non-negative integer, not {window!r}")
    return SaturationWatch(window)


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
    if watch is not None:
        # filled after every run: kept out of the young generations (racecheck.gctrack)
        keep_tracked(watch.counts)
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
            return shrink_and_trace(session, controller.failure, decisions, run)
        if not chooser.has_more():
            break
        if watch is not None and watch.after_run(chooser, decisions, controller.accesses):
            break
        # Let go of the run before the next one: alive, it would survive the
        # next run's collection in generation 2 and force a full collection
        # there (Session._collect_between_runs).
        del controller
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
    return session.report(
        chooser,
        schedules_run=run,
        # "exhausted" over code racecheck could not see would be a false proof
        exhausted=exhausted,
        verified=verified,
        notes=notes,
        warnings=warnings,
        saturated=watch is not None and watch.stopped,
    )


_SEE_BELOW = "not verified (see below)"
_INLINE_WORK_UNSEEN = (
    "not verified (executor work ran inline, one step each: the threads part explores it)"
)


def _unverified(note: str) -> str:
    # the warnings, or a backend's scheduling limit, say what was not seen
    return note.replace("verified: all", f"{_SEE_BELOW}: all", 1)


def replay_token(target: Callable[[], Any], token: str, *, options: dict[str, Any]) -> None:
    options = dict(options)
    if "backend" not in options and isinstance(token, str) and is_async_target(target):
        # The token knows the backend it was recorded on: an async target
        # replays a trio token on trio without being told.
        recorded = Schedule.decode(token).backend
        if recorded in ("asyncio", "trio", "threads"):
            options["backend"] = recorded
    settings = make_settings(target, options)
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
        found = supervise(session, work)
    if found is not None:
        raise race_found(session, found, "replay", 0)
