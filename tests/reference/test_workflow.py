"""AutoBot #2204: the workflow reference component and its scenario, under racecheck."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
from reference_seeds import SEEDS

import racecheck
from racecheck.loader import import_file
from racecheck.reference.workflow import EXECUTORS, ScriptedAgents

SCENARIO_MODULE = import_file(Path(__file__).parents[2] / "scenarios" / "autobot_2204_workflow.py")
SCENARIO = SCENARIO_MODULE.SCENARIO
INVARIANTS: dict[str, str] = SCENARIO_MODULE.INVARIANTS
make_target = SCENARIO_MODULE.make_target
STEPS = SCENARIO_MODULE.STEPS
PAUSE_STEPS = SCENARIO_MODULE.PAUSE_STEPS
ALL = set(INVARIANTS)

#: (variant, workflow) -> the invariants some explored schedule breaks. This is the
#: table in the scenario's docstring; upstream_fix's KeyError aborts STEPS in its
#: first group (so everything after it "breaks"), and its lost pause lets
#: PAUSE_STEPS run ``publish`` (so results and interactions gain a step).
BREAKS: dict[tuple[str, str], set[str]] = {
    ("buggy", "STEPS"): {"order", "findings"},
    ("buggy", "PAUSE_STEPS"): set(),
    ("upstream_fix", "STEPS"): ALL,
    ("upstream_fix", "PAUSE_STEPS"): {"pause", "once", "order"},
    ("correct", "STEPS"): set(),
    ("correct", "PAUSE_STEPS"): set(),
}
WORKFLOWS = {"STEPS": STEPS, "PAUSE_STEPS": PAUSE_STEPS}


def run_plain(variant: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    executor = EXECUTORS[variant](ScriptedAgents(failing=frozenset({"approve"})))
    return asyncio.run(
        executor.execute_coordinated_workflow("wf-1", copy.deepcopy(steps), {"user": "ops"})
    )


def test_groups_follow_dependencies() -> None:
    groups = EXECUTORS["buggy"]._group_steps_by_dependency(STEPS)
    assert [[s["id"] for s in g] for g in groups] == [
        ["collect", "scan"],
        ["summarise", "approve"],
        ["publish"],
    ]


def test_upstream_fix_raises_keyerror_for_workflow_id() -> None:
    result = run_plain("upstream_fix", STEPS)
    assert result["status"] == "failed"
    assert result["error"] == "KeyError: 'workflow_id'"


def test_upstream_fix_loses_a_pause_inside_a_parallel_group() -> None:
    result = run_plain("upstream_fix", PAUSE_STEPS)
    assert result["status"] != "paused" and "paused_at_step" not in result
    assert "publish" in result["step_results"]  # it ran past the pause


@pytest.mark.parametrize("variant", ["buggy", "correct"])
def test_pause_inside_a_parallel_group_is_kept(variant: str) -> None:
    for steps in (STEPS, PAUSE_STEPS):
        result = run_plain(variant, steps)
        assert (result["status"], result["paused_at_step"]) == ("paused", "approve")
        assert "publish" not in result["step_results"]


def test_correct_records_everything_once_in_step_order() -> None:
    result = run_plain("correct", STEPS)
    assert [i.message["step_id"] for i in result["interactions"]] == [
        "collect",
        "scan",
        "summarise",
        "approve",
    ]
    assert result["agents_involved"] == {"researcher", "scanner", "writer", "reviewer"}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("variant", "message"),
    [
        ("buggy", (INVARIANTS["order"], INVARIANTS["findings"])),
        ("upstream_fix", (INVARIANTS["keyerror"],)),
    ],
)
def test_broken_variants_found_by_pct(variant: str, message: tuple[str, ...], seed: int) -> None:
    target = SCENARIO.variants[variant].target
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, strategy="pct", schedules=100, seed=seed)
    found = info.value
    assert found.kind == "exception" and found.schedules_run <= 100
    assert isinstance(found.cause, AssertionError)
    assert str(found.cause).startswith(message), str(found.cause)
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(target, found.schedule)
    assert str(again.value.cause) == str(found.cause)


@pytest.mark.parametrize(("variant", "workflow"), sorted(BREAKS))
def test_which_variant_breaks_which_invariant(variant: str, workflow: str) -> None:
    """Each invariant on its own, explored exhaustively (preemption bound 2)."""
    broken = set()
    for key in INVARIANTS:
        target = make_target(variant, WORKFLOWS[workflow], only=(key,))
        try:
            report = racecheck.check(
                target, strategy="exhaustive", schedules=10_000, preemption_bound=2
            )
        except racecheck.RaceFound as found:
            assert str(found.cause).startswith(INVARIANTS[key])
            broken.add(key)
        else:
            assert report.exhausted
    assert broken == BREAKS[variant, workflow]


def test_correct_holds_exhaustively() -> None:
    target = SCENARIO.variants["correct"].target
    report = racecheck.check(target, strategy="exhaustive", schedules=100_000, preemption_bound=2)
    assert isinstance(report, racecheck.Report) and report.exhausted


def test_correct_holds_under_pct() -> None:
    target = SCENARIO.variants["correct"].target
    report = racecheck.check(target, strategy="pct", schedules=1_000, seed=0)
    assert report.schedules_run == 1_000


@pytest.mark.slow
def test_correct_holds_under_10000_pct_schedules() -> None:
    target = SCENARIO.variants["correct"].target
    report = racecheck.check(target, strategy="pct", schedules=10_000, seed=0)
    assert report.schedules_run == 10_000 or report.saturated  # repeats stop it early


@pytest.mark.parametrize(
    ("on_error", "status"), [("skip", "completed"), ("retry", "failed"), ("abort", "failed")]
)
def test_error_config_of_a_failing_step(on_error: str, status: str) -> None:
    steps = [{"id": "approve", "action": "review", "error_config": {"on_error": on_error}}]
    result = run_plain("correct", steps)
    assert result["status"] == status
    if on_error != "skip":
        assert result["error"] == "StepFailed: step 'approve' needs a human's approval"
