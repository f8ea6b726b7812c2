"""agent-framework #6776: the executor reference component and its scenario, under racecheck."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from reference_seeds import SEEDS

import racecheck
from racecheck.loader import import_file
from racecheck.reference.executor import HandlerProbe, build_workflow

SCENARIO_MODULE = import_file(
    Path(__file__).parents[2] / "scenarios" / "agent_framework_6776_executor.py"
)
SCENARIO = SCENARIO_MODULE.SCENARIO
make_async_target = SCENARIO_MODULE.make_async_target
SERIAL = "at most one handler per executor at a time"
REUSE = "the workflow runs under successive asyncio.run calls"


def without_addresses(failure: BaseException | None) -> str:
    """The failure's message without object addresses ("<Queue at 0x7f...>")."""
    return re.sub(r"0x[0-9a-f]+", "0x…", str(failure))


# ── the components under plain asyncio ──────────────────────────────────────


def test_lock_binds_to_a_loop_only_when_it_has_to_wait() -> None:
    """Why the scenario makes the lock contended in the first run (Python >= 3.10)."""

    async def uncontended(lock: asyncio.Lock) -> None:
        async with lock:
            await asyncio.sleep(0)

    async def contended(lock: asyncio.Lock) -> None:
        await asyncio.gather(uncontended(lock), uncontended(lock))

    lock = asyncio.Lock()
    asyncio.run(uncontended(lock))
    asyncio.run(contended(lock))  # not bound yet: the first run never waited
    with pytest.raises(RuntimeError, match="bound to a different event loop"):
        asyncio.run(contended(lock))


def test_buggy_collector_runs_two_handlers_at_once() -> None:
    probe = HandlerProbe()
    asyncio.run(build_workflow("buggy", probe).run("task"))
    assert probe.max_concurrent["collector"] == 2


@pytest.mark.parametrize(("variant", "culprit"), [("eager_lock", "Lock"), ("eager_queue", "Queue")])
def test_eager_primitive_breaks_the_second_asyncio_run(variant: str, culprit: str) -> None:
    probe = HandlerProbe()
    workflow = build_workflow(variant, probe)
    asyncio.run(workflow.run("task"))
    assert probe.max_concurrent["collector"] == 1  # it does serialise
    with pytest.raises(RuntimeError, match="bound to a different event loop") as info:
        asyncio.run(workflow.run("task"))
    assert culprit in str(info.value)


def test_correct_workflow_is_reused_across_two_asyncio_runs() -> None:
    probe = HandlerProbe()
    workflow = build_workflow("correct", probe)
    for _run in (1, 2):
        probe.received.clear()
        events = asyncio.run(workflow.run("task"))
        assert [e.data for e in events if e.type == "output"] == [m for _s, m in probe.received]
        assert len(probe.received) == 4
    assert max(probe.max_concurrent.values()) == 1
    assert frozenset({"worker1", "worker2"}) in probe.overlaps


def test_scenario_targets_without_racecheck() -> None:
    SCENARIO.variants["correct"].target()
    for variant, invariant in (("buggy", SERIAL), ("eager_lock", REUSE), ("eager_queue", REUSE)):
        with pytest.raises(AssertionError, match=invariant):
            SCENARIO.variants[variant].target()


# ── one run on racecheck's asyncio backend: serialisation ───────────────────


@pytest.mark.parametrize("seed", SEEDS)
def test_buggy_one_run_found_by_pct(seed: int) -> None:
    target = make_async_target("buggy")
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, strategy="pct", schedules=100, seed=seed)
    found = info.value
    assert found.kind == "exception" and found.schedules_run <= 100
    assert str(found.cause).startswith(SERIAL)
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(target, found.schedule)
    assert str(again.value.cause) == str(found.cause)


@pytest.mark.parametrize("variant", ["eager_lock", "eager_queue", "correct"])
def test_locked_variants_serialise_and_keep_distinct_executors_concurrent(variant: str) -> None:
    SCENARIO_MODULE.OVERLAPS_SEEN.clear()
    report = racecheck.check(
        make_async_target(variant), strategy="exhaustive", schedules=100_000, preemption_bound=2
    )
    assert report.exhausted
    # The lock is per executor: some explored schedule still ran both workers at once.
    assert frozenset({"worker1", "worker2"}) in SCENARIO_MODULE.OVERLAPS_SEEN


# ── the scenario: two asyncio.run calls, on the threads backend ─────────────


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("variant", "invariant"), [("buggy", SERIAL), ("eager_lock", REUSE), ("eager_queue", REUSE)]
)
def test_broken_variants_found_by_pct(variant: str, invariant: str, seed: int) -> None:
    target = SCENARIO.variants[variant].target
    options = SCENARIO.check_options(variant)
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, strategy="pct", schedules=100, seed=seed, **options)
    found = info.value
    assert found.kind == "exception" and found.schedules_run <= 100
    assert str(found.cause).startswith(invariant), str(found.cause)
    if invariant == REUSE:
        assert "bound to a different event loop" in str(found.cause)
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(target, found.schedule, **options)
    assert without_addresses(again.value.cause) == without_addresses(found.cause)


def _correct_holds_exhaustively(preemption_bound: int) -> None:
    SCENARIO_MODULE.OVERLAPS_SEEN.clear()
    options = dict(SCENARIO.check_options("correct"), preemption_bound=preemption_bound)
    report = racecheck.check(
        SCENARIO.variants["correct"].target, strategy="exhaustive", schedules=100_000, **options
    )
    assert isinstance(report, racecheck.Report)
    assert report.exhausted
    assert frozenset({"worker1", "worker2"}) in SCENARIO_MODULE.OVERLAPS_SEEN


def _correct_holds_under_pct(schedules: int) -> None:
    options = SCENARIO.check_options("correct")
    report = racecheck.check(
        SCENARIO.variants["correct"].target, strategy="pct", schedules=schedules, seed=0, **options
    )
    assert report.schedules_run == schedules


# CI runs the bounded halves: one preemption (43 schedules, the worker overlap
# already among them) and 200 PCT schedules. Every broken variant (buggy,
# eager_lock, eager_queue) fails at the first schedule of both, so a "correct"
# that regressed to any of them still fails here; the slow twins keep two
# preemptions (912 schedules) and 1,000 PCT schedules for deeper false alarms.
def test_correct_holds_exhaustively() -> None:
    _correct_holds_exhaustively(preemption_bound=1)


def test_correct_holds_under_pct() -> None:
    _correct_holds_under_pct(200)


@pytest.mark.slow
def test_correct_holds_exhaustively_with_two_preemptions() -> None:
    _correct_holds_exhaustively(preemption_bound=2)


@pytest.mark.slow
def test_correct_holds_under_1000_pct_schedules() -> None:
    _correct_holds_under_pct(1_000)


@pytest.mark.slow
def test_correct_holds_under_10000_pct_schedules() -> None:
    options = SCENARIO.check_options("correct")
    report = racecheck.check(
        SCENARIO.variants["correct"].target, strategy="pct", schedules=10_000, seed=0, **options
    )
    assert report.schedules_run == 10_000 or report.saturated  # repeats stop it early
