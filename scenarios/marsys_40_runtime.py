"""marsys #40: parallel branches validated against each other's agent.

The Orchestrator fans out to AgentA, AgentB and AgentC on one ``RealRuntime``.
``buggy`` keeps the branch's agent in ``self._current_instance`` across the
model call, so a branch can be validated against a sibling's topology edges and
fail with ``Agent AgentC cannot invoke: ['Orchestrator']`` on AgentA's branch.
``correct`` passes the instance down as a parameter.

Components: :mod:`racecheck.reference.runtime`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from racecheck import Scenario, Variant
from racecheck.reference.runtime import (
    StepExecutor,
    ValidationProcessor,
    WorkflowResult,
    build_mars_workflow,
)

TASK = "Collect the letters and assemble the secret word."


def check_invariants(
    result: WorkflowResult, step_executor: StepExecutor, validator: ValidationProcessor
) -> None:
    for event in result.events:  # first, so a failure carries the report's signature
        if not event.success and event.agent != "Orchestrator":
            raise AssertionError(
                "every branch is validated against its own agent: "
                f"branch {event.branch_id} ran {event.agent} but failed with {event.error!r}"
            )
    for producer, payload in step_executor.produced:
        against = next(name for name, seen in validator.validated if seen is payload)
        assert against == producer, (
            f"every branch is validated against its own agent: {producer}'s response "
            f"was validated against {against}"
        )
    (fork,) = (b for b in result.barriers.values() if b.rendezvous_agent == "Orchestrator")
    arrived = sorted(agent for agent, _value in fork.arrived.values())
    assert arrived == ["AgentA", "AgentB", "AgentD"] and not fork.failed, (
        f"the barrier sees A, B, D arrive and none fail: arrived={arrived}, failed={fork.failed}"
    )
    (orchestrator,) = (b for b in result.branches.values() if b.current_agent == "Orchestrator")
    assert orchestrator.step_count == 2, (
        f"the Orchestrator resumes once: it took {orchestrator.step_count} step(s)"
    )
    assert result.success and "MARS" in (result.final_response or ""), (
        f"success and 'MARS': success={result.success}, final={result.final_response!r}"
    )


def make_target(variant: str) -> Callable[[], Awaitable[None]]:
    async def target() -> None:
        orchestrator, step_executor, validator = build_mars_workflow(variant)
        result = await orchestrator.run(TASK)
        check_invariants(result, step_executor, validator)

    target.__qualname__ = target.__name__ = f"marsys_40_{variant}"
    return target


SCENARIO = Scenario(
    name="marsys-40-runtime",
    issue="marsys#40",
    description="RealRuntime._current_instance cross-talk between parallel branches",
    invariants=(
        "every branch is validated against its own agent",
        "the barrier sees A, B, D arrive and none fail",
        "the Orchestrator resumes once",
        "success is True and the final response contains 'MARS'",
    ),
    variants={
        "buggy": Variant(
            make_target("buggy"),
            expect="race",
            summary="step() stores the instance on self._current_instance across an await",
        ),
        "correct": Variant(
            make_target("correct"),
            expect="safe",
            summary="the instance is passed to _translate as a parameter",
            # The runtime waits with asyncio.wait(FIRST_COMPLETED), which DPOR does
            # not yet cover (docs/architecture.md): exhaustive search with no bound
            # runs every schedule instead (about 1,000 runs), a proof of its own.
            options={"strategy": "exhaustive", "schedules": 3000},
        ),
    },
)
