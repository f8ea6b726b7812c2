"""cleveragents #7120: the changeset reference component and its variants.

The first tests pin the semantics with the interleaving written out by hand in
one thread; then real threads; then racecheck, which has to find the race in
``buggy`` and ``as_proposed`` and prove ``correct`` within its bounds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from reference_seeds import SEEDS

import racecheck
from racecheck.reference.changeset import (
    INVARIANT_NO_ERROR,
    INVARIANT_OWN_CHANGESET,
    VARIANTS,
    ChangeEntry,
    ChangesetStore,
    PlanError,
    PlanExecutionContext,
    PlanExecutionContextFixed,
    StepOutcome,
    implicit_step,
    plan_steps,
)

RACY = ("buggy", "as_proposed")


def make_target(variant: str, *, check_association: bool = True) -> Callable[[], None]:
    def target() -> None:
        plan_steps(variant, check_association=check_association)

    suffix = "" if check_association else "_no_crash"
    target.__qualname__ = target.__name__ = f"changeset_{variant}{suffix}"
    return target


def entry(author: str) -> ChangeEntry:
    return ChangeEntry(resource=f"{author}.txt", action="write", author=author)


# --- semantics, one thread, the interleaving spelled out ---------------------------------


@pytest.mark.parametrize("variant", RACY)
def test_implicit_contexts_record_into_whoever_started_last(variant: str) -> None:
    store = ChangesetStore()
    ctx = VARIANTS[variant][0]("plan-1", store)
    mine = ctx.start_changeset()  # step-1
    theirs = ctx.start_changeset()  # step-2, started in between
    ctx.record_change(entry("step-1"))
    assert store.get(mine).entries == []
    assert store.get(theirs).entries == [entry("step-1")]
    assert ctx.end_changeset() == theirs  # step-1 closes step-2's changeset


def test_fixed_context_records_into_the_named_changeset() -> None:
    store = ChangesetStore()
    ctx = PlanExecutionContextFixed("plan-1", store)
    mine = ctx.start_changeset()
    theirs = ctx.start_changeset()
    ctx.record_change(mine, entry("step-1"))
    ctx.record_change(theirs, entry("step-2"))
    assert ctx.end_changeset(mine) == mine
    assert ctx.active_changeset_ids == [theirs]
    assert store.get(mine).entries == [entry("step-1")] and store.get(mine).completed
    assert store.get(theirs).entries == [entry("step-2")] and not store.get(theirs).completed


def test_fixed_context_rejects_a_changeset_that_is_not_active() -> None:
    ctx = PlanExecutionContextFixed("plan-1", ChangesetStore())
    done = ctx.start_changeset()
    ctx.end_changeset(done)
    with pytest.raises(PlanError, match="not active"):
        ctx.record_change(done, entry("late"))
    with pytest.raises(PlanError, match="not active"):
        ctx.end_changeset(done)


@pytest.mark.parametrize("variant", RACY)
def test_implicit_contexts_raise_plan_error_without_a_changeset(variant: str) -> None:
    ctx = VARIANTS[variant][0]("plan-1", ChangesetStore())
    with pytest.raises(PlanError, match="No active changeset"):
        ctx.record_change(entry("step-1"))
    with pytest.raises(PlanError, match="No active changeset"):
        ctx.end_changeset()


@pytest.mark.parametrize("variant", VARIANTS)
def test_sequential_steps_hold_every_invariant(variant: str) -> None:
    plan_steps(variant, steps=1)


# --- real threads -------------------------------------------------------------------------


def test_correct_holds_under_real_threads() -> None:
    for _ in range(100):
        plan_steps("correct", steps=6)


# --- racecheck ----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("variant", RACY)
def test_pct_finds_the_race_within_100_schedules(
    variant: str, seed: int, real_engine: None
) -> None:
    target = make_target(variant)
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(target, strategy="pct", schedules=100, seed=seed)
    exc = found.value
    assert exc.kind == "exception"
    assert isinstance(exc.cause, AssertionError)
    message = str(exc.cause)
    if variant == "as_proposed":
        # The lock removed the crash; what is left is the misattribution.
        assert message.startswith(INVARIANT_OWN_CHANGESET), message
    else:
        assert message.startswith((INVARIANT_OWN_CHANGESET, INVARIANT_NO_ERROR)), message
    with pytest.raises(racecheck.RaceFound) as replayed:
        racecheck.replay(target, exc.schedule)
    assert replayed.value.kind == "exception"
    assert str(replayed.value.cause) == message


def test_buggy_crashes_in_the_torn_end(real_engine: None) -> None:
    """Two ends read the same ``[-1]``; the second ``list.remove`` raises ValueError."""
    target = make_target("buggy", check_association=False)
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(target, strategy="pct", schedules=100, seed=0)
    cause = found.value.cause
    assert isinstance(cause, AssertionError)
    assert str(cause).startswith(INVARIANT_NO_ERROR)
    assert isinstance(cause.__cause__, ValueError)


def test_as_proposed_lock_does_fix_the_crash(real_engine: None) -> None:
    target = make_target("as_proposed", check_association=False)
    report = racecheck.check(target, strategy="exhaustive", preemption_bound=2, schedules=20_000)
    assert isinstance(report, racecheck.Report)


def test_the_reported_index_error_is_unreachable(real_engine: None) -> None:
    """The issue's IndexError needs a removal between the guard and ``[-1]``.

    Each step's own id stays in the list while it records, so with balanced
    start/record/end the guard-then-read cannot tear into an IndexError. The
    buggy context still crashes elsewhere (ValueError in the torn end), which
    this target tolerates to look for the IndexError alone.
    """

    def index_error_hunt() -> None:
        ctx = PlanExecutionContext("plan-1", ChangesetStore())
        errors: list[BaseException] = []

        def step(name: str) -> None:
            try:
                implicit_step(ctx, StepOutcome(step=name))
            except ValueError:
                pass  # the torn end: a different crash
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=step, args=(f"step-{i}",)) for i in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, f"record_change raised {errors[0]!r}"

    report = racecheck.check(
        index_error_hunt, strategy="exhaustive", preemption_bound=2, schedules=20_000
    )
    assert isinstance(report, racecheck.Report)


def test_correct_holds_exhaustively(real_engine: None) -> None:
    report = racecheck.check(
        make_target("correct"), strategy="exhaustive", preemption_bound=2, schedules=20_000
    )
    assert isinstance(report, racecheck.Report)
    assert report.exhausted, report


def test_correct_holds_under_1000_pct_schedules(real_engine: None) -> None:
    report = racecheck.check(make_target("correct"), strategy="pct", schedules=1_000, seed=0)
    assert report.schedules_run == 1_000


@pytest.mark.slow
def test_correct_holds_under_10000_pct_schedules(real_engine: None) -> None:
    report = racecheck.check(make_target("correct"), strategy="pct", schedules=10_000, seed=0)
    assert report.schedules_run == 10_000
