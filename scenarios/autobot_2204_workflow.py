"""AutoBot #2204: parallel workflow steps share one mutable execution context.

``collect`` and ``scan`` run in parallel; then ``summarise`` (reads collect's
findings) and ``approve`` (reads scan's findings, then asks for a human, which
its error_config turns into a PAUSE) run in parallel; ``publish`` must not run.

=============================================  =====  ============  =======
invariant                                      buggy  upstream_fix  correct
=============================================  =====  ============  =======
every result/agent/interaction recorded once   holds  (KeyError)    holds
interactions reported in step order            RACE   (KeyError)    holds
a PAUSE in a parallel group pauses workflow    holds  BROKEN        holds
no KeyError                                    holds  BROKEN        holds
each step's prior_agent_findings are its own   RACE   (KeyError)    holds
=============================================  =====  ============  =======

upstream_fix's KeyError aborts this workflow in the first group; a workflow
whose parallel group has no agents (``PAUSE_STEPS``) shows its lost pause.

Components: :mod:`racecheck.reference.workflow`.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from racecheck import Scenario, Variant
from racecheck.reference.workflow import EXECUTORS, ScriptedAgents

INVARIANTS: dict[str, str] = {
    "keyerror": "no KeyError",
    "pause": "a PAUSE inside a parallel group leaves the workflow paused at that step",
    "once": "every step's result, agent and interaction is recorded exactly once",
    "order": "interactions are reported in step order",
    "findings": "each step's prior_agent_findings are its own",
}


def _step(
    id: str, agent: str | None, deps: tuple[str, ...] = (), on_error: str = "abort"
) -> dict[str, Any]:
    return {
        "id": id,
        "action": id,
        "assigned_agent": agent,
        "dependencies": list(deps),
        "error_config": {"on_error": on_error},
    }


STEPS = [
    _step("collect", "researcher"),
    _step("scan", "scanner"),
    _step("summarise", "writer", ("collect",)),
    _step("approve", "reviewer", ("scan",), on_error="pause"),
    _step("publish", "publisher", ("summarise", "approve")),
]
#: a parallel group without agents (so no interaction, no KeyError), one step pausing
PAUSE_STEPS = [
    _step("lint", None),
    _step("approve", None, on_error="pause"),
    _step("publish", "publisher", ("lint", "approve")),
]


def check_invariants(
    steps: list[dict[str, Any]],
    result: dict[str, Any],
    agents: ScriptedAgents,
    only: Collection[str] = tuple(INVARIANTS),
) -> None:
    def holds(key: str, ok: bool, detail: str) -> None:
        if key in only and not ok:
            raise AssertionError(f"{INVARIANTS[key]}: {detail}")

    error = result.get("error", "")
    holds("keyerror", not error.startswith("KeyError"), f"the workflow failed with {error}")
    holds(
        "pause",
        (result["status"], result.get("paused_at_step")) == ("paused", "approve"),
        f"status={result['status']!r}, paused_at_step={result.get('paused_at_step')!r}",
    )
    ran = [s for s in steps if s["id"] != "publish"]  # everything before the pause
    holds(
        "once",
        sorted(result["step_results"]) == sorted(s["id"] for s in ran)
        and set(result["agents_involved"]) == {s["assigned_agent"] for s in ran} - {None},
        f"results {sorted(result['step_results'])}, agents {sorted(result['agents_involved'])}",
    )
    reported = [i.message["step_id"] for i in result["interactions"]]
    expected = [s["id"] for s in ran if s["assigned_agent"]]
    holds("order", reported == expected, f"reported {reported}, step order {expected}")
    for s in ran:
        own = {
            dep: f"{dep} by {next(d for d in steps if d['id'] == dep)['assigned_agent']}"
            for dep in s["dependencies"]
        }
        holds(
            "findings",
            agents.seen.get(s["id"]) == own,
            f"step {s['id']!r} read {agents.seen.get(s['id'])}, its own are {own}",
        )


def make_target(
    variant: str, steps: list[dict[str, Any]] = STEPS, only: Collection[str] = tuple(INVARIANTS)
) -> Callable[[], Awaitable[None]]:
    async def target() -> None:
        run_steps = copy.deepcopy(steps)  # the executor writes step["status"]
        agents = ScriptedAgents(failing=frozenset({"approve"}))
        executor = EXECUTORS[variant](agents)
        result = await executor.execute_coordinated_workflow("wf-1", run_steps, {"user": "ops"})
        check_invariants(run_steps, result, agents, only)

    target.__qualname__ = target.__name__ = f"autobot_2204_{variant}"
    return target


SCENARIO = Scenario(
    name="autobot-2204-workflow",
    issue="AutoBot#2204",
    description="_execute_step_group gathers steps that share execution_context and context",
    invariants=tuple(INVARIANTS.values()),
    variants={
        "buggy": Variant(
            make_target("buggy"), expect="race", summary="steps share both context dicts"
        ),
        "upstream_fix": Variant(
            make_target("upstream_fix"),
            expect="race",
            summary="isolated contexts merged after gather, lacking workflow_id and status",
        ),
        "correct": Variant(
            make_target("correct"),
            expect="safe",
            summary="complete child contexts merged in step order; a context copy per step",
        ),
    },
)
