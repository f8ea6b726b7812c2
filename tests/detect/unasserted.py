"""The reference workloads with every assertion taken out.

The detector must find the races in the buggy and as-proposed variants from
the accesses alone: these targets drive the same components as the scenarios
but check nothing, catch what the components raise on purpose, and return.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from racecheck.reference import bridge, changeset, executor, runtime, workflow

TASK = "Collect the letters and assemble the secret word."


def marsys(variant: str) -> Callable[[], Awaitable[None]]:
    async def target() -> None:
        orchestrator, _, _ = runtime.build_mars_workflow(variant)
        await orchestrator.run(TASK)

    return target


def _step(id: str, deps: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "id": id,
        "action": id,
        "assigned_agent": None,
        "dependencies": list(deps),
        "error_config": {"on_error": "abort"},
    }


#: two parallel waves; the second reads the first's findings through ``context``.
#: No agents, so upstream_fix's missing ``workflow_id`` does not end the run first.
WORKFLOW_STEPS = [
    _step("lint"),
    _step("scan"),
    _step("summarise", ("lint",)),
    _step("approve", ("scan",)),
]


def autobot(variant: str) -> Callable[[], Awaitable[None]]:
    async def target() -> None:
        agents = workflow.ScriptedAgents()
        run = workflow.EXECUTORS[variant](agents)
        steps = [dict(step) for step in WORKFLOW_STEPS]
        await run.execute_coordinated_workflow("wf-1", steps, {"user": "ops"})

    return target


def agent_framework(variant: str) -> Callable[[], None]:
    def target() -> None:
        probe = executor.HandlerProbe()
        flow = executor.build_workflow(variant, probe)
        for _ in (1, 2):
            asyncio.run(flow.run("task"))

    return target


def cleveragents_changeset(variant: str) -> Callable[[], None]:
    context_cls, step = changeset.VARIANTS[variant]

    def target() -> None:
        ctx = context_cls("plan-1", changeset.ChangesetStore())

        def run(name: str) -> None:
            with contextlib.suppress(IndexError, ValueError, changeset.PlanError):
                step(ctx, changeset.StepOutcome(step=name))

        threads = [threading.Thread(target=run, args=(f"step-{i}",)) for i in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    return target


def cleveragents_bridge(variant: str) -> Callable[[], None]:
    """Messages in flight while the sync cleanup runs on the main thread."""

    def target() -> None:
        with bridge._event_loop_thread() as loop:
            pipeline = bridge._start_pipeline(variant, loop, workers=2)
            for i in range(3):
                pipeline.source.on_next(bridge.StreamMessage(i, f"msg-{i}"))
            with contextlib.suppress(queue.Empty):
                pipeline.outcomes.get(timeout=1.0)
            with contextlib.suppress(RuntimeError):
                pipeline.bridge.cleanup_tasks()
            pipeline.pool.shutdown()
            bridge._on_loop(loop, bridge._settle())

    return target


#: (scenario, variant) -> (target, expected: "race" | "safe")
TARGETS: dict[tuple[str, str], tuple[Callable[[], Any], str]] = {
    ("marsys-40", "buggy"): (marsys("buggy"), "race"),
    ("marsys-40", "correct"): (marsys("correct"), "safe"),
    ("autobot-2204", "buggy"): (autobot("buggy"), "race"),
    ("autobot-2204", "upstream_fix"): (autobot("upstream_fix"), "race"),
    ("autobot-2204", "correct"): (autobot("correct"), "safe"),
    ("agent-framework-6776", "buggy"): (agent_framework("buggy"), "race"),
    ("agent-framework-6776", "eager_lock"): (agent_framework("eager_lock"), "race"),
    ("agent-framework-6776", "eager_queue"): (agent_framework("eager_queue"), "race"),
    ("agent-framework-6776", "correct"): (agent_framework("correct"), "safe"),
    ("cleveragents-7120", "buggy"): (cleveragents_changeset("buggy"), "race"),
    ("cleveragents-7120", "as_proposed"): (cleveragents_changeset("as_proposed"), "race"),
    ("cleveragents-7120", "correct"): (cleveragents_changeset("correct"), "safe"),
    ("cleveragents-7105", "buggy"): (cleveragents_bridge("buggy"), "race"),
    ("cleveragents-7105", "as_proposed"): (cleveragents_bridge("as_proposed"), "race"),
    ("cleveragents-7105", "correct"): (cleveragents_bridge("correct"), "safe"),
}
