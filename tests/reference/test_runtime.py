"""marsys #40: the runtime reference component and its scenario, under racecheck."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from reference_seeds import SEEDS

import racecheck
from racecheck.loader import import_file
from racecheck.reference.runtime import FLOWS, TopologyGraph, build_mars_workflow

SCENARIO_MODULE = import_file(Path(__file__).parents[2] / "scenarios" / "marsys_40_runtime.py")
SCENARIO = SCENARIO_MODULE.SCENARIO
BUGGY = SCENARIO.variants["buggy"].target
CORRECT = SCENARIO.variants["correct"].target

#: the report's smoking gun: the agent named is not the agent of the failing branch
SIGNATURE = re.compile(
    r"branch (?P<branch>br_\d+) ran (?P<ran>\w+) but failed with "
    r"\"Agent (?P<named>\w+) cannot invoke: \[(?P<targets>[^\]]*)\]\""
)


def test_topology_is_the_reports() -> None:
    topology = TopologyGraph(FLOWS)
    assert topology.entry_agent() == "Orchestrator"
    assert topology.get_next_agents("Orchestrator") == ["AgentA", "AgentB", "AgentC", "End"]
    assert topology.get_next_agents("AgentC") == ["AgentD"]
    assert topology.get_next_agents("AgentD") == ["Orchestrator"]


def test_correct_runtime_spells_mars() -> None:
    orchestrator, _executor, validator = build_mars_workflow("correct")
    result = asyncio.run(orchestrator.run("Collect the letters."))
    assert result.success
    assert result.final_response == "The secret word is: MARS"
    assert [event.agent for event in result.events if event.success] == [
        "AgentA",
        "AgentB",
        "AgentD",
        "Orchestrator",
    ]
    # every payload was validated against the agent that produced it
    assert sorted(name for name, _data in validator.validated) == sorted(
        ["Orchestrator", "AgentA", "AgentB", "AgentC", "AgentD", "Orchestrator"]
    )


def test_buggy_runtime_fails_like_the_report_under_plain_asyncio() -> None:
    # FIFO order already interleaves the three model calls, as LLM latency does.
    orchestrator, _executor, _validator = build_mars_workflow("buggy")
    result = asyncio.run(orchestrator.run("Collect the letters."))
    assert not result.success and result.final_response is None
    failed = {event.agent: event.error for event in result.events if not event.success}
    assert failed["AgentA"] == "Agent AgentC cannot invoke: ['Orchestrator']"
    orchestrator_branch = next(
        b for b in result.branches.values() if b.current_agent == "Orchestrator"
    )
    assert orchestrator_branch.step_count == 1  # it never resumed after the fork


@pytest.mark.parametrize("seed", SEEDS)
def test_buggy_found_by_pct_with_the_reports_signature(seed: int) -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(BUGGY, strategy="pct", schedules=100, seed=seed)
    found = info.value
    assert found.kind == "exception"
    assert found.schedules_run <= 100
    assert isinstance(found.cause, AssertionError)
    match = SIGNATURE.search(str(found.cause))
    assert match, str(found.cause)
    assert match["named"] != match["ran"], "the error names the failing branch's own agent"
    # the listed targets come from the failing branch's own (valid) response
    targets = re.findall(r"'(\w+)'", match["targets"])
    own_edges = TopologyGraph(FLOWS).get_next_agents(match["ran"])
    assert targets and all(target in own_edges for target in targets)

    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(BUGGY, found.schedule)
    assert str(again.value.cause) == str(found.cause)


def test_correct_holds_exhaustively() -> None:
    report = racecheck.check(CORRECT, strategy="exhaustive", schedules=100_000, preemption_bound=2)
    assert isinstance(report, racecheck.Report)
    assert report.exhausted  # the bounded space is small (tens of schedules)


def test_correct_holds_under_pct() -> None:
    report = racecheck.check(CORRECT, strategy="pct", schedules=1_000, seed=0)
    assert isinstance(report, racecheck.Report) and report.schedules_run == 1_000


@pytest.mark.slow
def test_correct_holds_under_10000_pct_schedules() -> None:
    report = racecheck.check(CORRECT, strategy="pct", schedules=10_000, seed=0)
    assert report.schedules_run == 10_000 or report.saturated  # repeats stop it early
