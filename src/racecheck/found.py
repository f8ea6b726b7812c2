"""A failing schedule, from found to reported: shrunk, checked, traced.

The pipeline is: found → shrunk (:mod:`racecheck.shrink`) → replayed once more
with a :class:`~racecheck.recorder.Recorder` to produce the readable trace.
Only that last replay pays for tracing; exploration records decisions only.

What a target keeps between schedules on purpose (a fixture, a module global)
is checked when a failure is found: the first schedule is run again, and a
failing schedule's traced replay must fail again; otherwise the failure is a
:class:`~racecheck.errors.StateLeakError`, not a race.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from racecheck.engine import (
    Failure,
)
from racecheck.errors import (
    DivergenceError,
    StateLeakError,
    one_line,
)
from racecheck.outcome import RaceFound
from racecheck.schedule import Decision
from racecheck.session import Session, describe
from racecheck.strategies.replay import ReplayChooser
from racecheck.trace import Trace


@dataclass
class Found:
    failure: Failure
    decisions: tuple[Decision, ...]
    original: tuple[Decision, ...]
    schedules_run: int
    trace: Trace | None
    #: shown in place of the trace when there is none, saying why
    note: str = ""


#: a step-limit run longer than this is not shrunk: every attempt would run to
#: the bound again (a million steps each), for a livelock any order shows
SHRINK_STEP_LIMIT_UP_TO = 20_000


def _worth_shrinking(failure: Failure, max_steps: int) -> bool:
    return failure.kind != "step-limit" or max_steps <= SHRINK_STEP_LIMIT_UP_TO


def shrink_and_trace(
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
        f"the failure at schedule {schedules_run} ({describe(failure)})"
        if failure is not None
        else "the failure found later"
    )
    raise StateLeakError(
        "state leaks between schedules: the first schedule passed at the start of the"
        f" exploration and fails when run again after {schedules_run} schedules"
        f" ({describe(again)}), so {found} comes from what earlier schedules left behind,"
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
        f" found at schedule {schedules_run} ({describe(failure)}) does not reproduce on its"
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


def trace_failing(
    session: Session, decisions: Sequence[Decision]
) -> tuple[Trace | None, Failure | None]:
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


def race_found(session: Session, found: Found, strategy: str, seed: int) -> RaceFound:
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
