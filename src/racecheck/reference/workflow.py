"""Reference component for AutoBot #2204: parallel steps sharing one execution context.

The shape follows AutoBot's ``WorkflowExecutor``. Steps are grouped by their
dependencies; ``_execute_step_group`` runs a group with ``asyncio.gather``.
``_execute_step_with_agent`` reserves the step's agent, records an
``AgentInteraction`` (which reads ``workflow_id`` from the execution context),
runs the step through ``_execute_step_with_retry`` (whose error handler may
RETRY, SKIP, PAUSE or ABORT) and records the result and the agent.
``_execute_coordinated_step`` writes the step's ``prior_agent_findings`` into
the workflow's ``context`` dict and then awaits the agent, which reads them.

Three executors, side by side:

``WorkflowExecutor`` (buggy, as reported)
    Every step of a group mutates the one ``execution_context``. In
    single-threaded asyncio each ``dict`` store, ``set.add`` and ``list.append``
    is atomic, so nothing is lost, but interactions are appended in whatever
    order the steps happen to start. The real race is elsewhere: the shared
    ``context`` dict is written, then awaited across, then read, so a step can
    run with a sibling's ``prior_agent_findings``.
``IsolatedContextWorkflowExecutor`` (upstream_fix: what AutoBot merged)
    Overrides ``_execute_step_group`` only: each step gets a fresh context with
    ``step_results``, ``agents_involved``, ``interactions`` and a snapshot of
    ``step_outputs``, merged back after the gather. Those contexts lack
    ``workflow_id``, so creating an interaction raises ``KeyError``; and
    ``status``/``paused_at_step`` are never merged back, so a PAUSE inside a
    parallel group is lost and the workflow runs on. ``context`` is still shared.
``CorrectWorkflowExecutor`` (correct)
    Child contexts carry ``workflow_id`` and ``status``; they are merged back in
    step order, a pause included; each step gets its own copy of ``context``.

=============================================  =====  ============  =======
invariant                                      buggy  upstream_fix  correct
=============================================  =====  ============  =======
every result/agent/interaction recorded once   holds  (KeyError)    holds
interactions reported in step order            RACE   (KeyError)    holds
a PAUSE in a parallel group pauses workflow    holds  BROKEN        holds
no KeyError                                    holds  BROKEN        holds
each step's prior_agent_findings are its own   RACE   (KeyError)    holds
=============================================  =====  ============  =======

RACE: some interleavings break it. BROKEN: every run that reaches it breaks it.
(KeyError): the KeyError aborts the workflow first in the scenario's workflow.

Agents are scripted (:class:`ScriptedAgents`); nothing calls a model.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EXECUTORS",
    "AgentInteraction",
    "CorrectWorkflowExecutor",
    "IsolatedContextWorkflowExecutor",
    "ScriptedAgents",
    "StepErrorHandler",
    "StepFailed",
    "WorkflowExecutor",
]

Step = dict[str, Any]
Context = dict[str, Any]


@dataclass
class AgentInteraction:
    interaction_id: str
    source_agent: str
    target_agent: str
    interaction_type: str
    message: dict[str, Any]
    context: dict[str, Any]
    outcome: str | None = None


class StepFailed(Exception):
    """A scripted agent's failure (for example: needs a human's approval)."""


class StepErrorHandler:
    """Maps a step failure to its ``error_config``: retry, skip, pause or abort."""

    async def handle_error(
        self, step: Step, exc: Exception, attempt: int, execution_context: Context
    ) -> dict[str, Any]:
        config = step.get("error_config", {})
        action = config.get("on_error", "abort")
        if action == "retry" and attempt >= config.get("max_attempts", 3):
            action = "abort"
        return {"action": action, "reason": str(exc)}


@dataclass
class ScriptedAgents:
    """The agent dispatcher: one ``await`` per step, then a scripted answer."""

    failing: frozenset[str] = frozenset()
    #: step id -> the prior_agent_findings the agent read
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)

    async def run(self, step: Step, context: Context) -> dict[str, Any]:
        await asyncio.sleep(0)  # the agent call: sibling steps run meanwhile
        self.seen[step["id"]] = dict(context.get("prior_agent_findings", {}))
        if step["id"] in self.failing:
            raise StepFailed(f"step {step['id']!r} needs a human's approval")
        return {"output": f"{step['action']} by {step.get('assigned_agent')}"}


class WorkflowExecutor:
    """As reported: steps of a group share ``execution_context`` and ``context``."""

    def __init__(
        self,
        agents: ScriptedAgents,
        reserve_agent_callback: Callable[[str], None] = lambda _agent: None,
        release_agent_callback: Callable[[str], None] = lambda _agent: None,
    ) -> None:
        self.agents = agents
        self._reserve_agent = reserve_agent_callback
        self._release_agent = release_agent_callback
        self._error_handler = StepErrorHandler()
        self._ids = itertools.count(1)

    async def execute_coordinated_workflow(
        self, workflow_id: str, steps: list[Step], context: Context
    ) -> Context:
        execution_context: Context = {
            "workflow_id": workflow_id,
            "agents_involved": set(),
            "interactions": [],
            "step_results": {},
            "step_outputs": {},
            "status": "in_progress",
        }
        try:
            for group in self._group_steps_by_dependency(steps):
                await self._execute_step_group(group, execution_context, context)
                if execution_context.get("status") == "paused":
                    return execution_context
            self._determine_workflow_status(steps, execution_context)
        except Exception as exc:
            execution_context["status"] = "failed"
            execution_context["error"] = f"{type(exc).__name__}: {exc}"
        return execution_context

    async def _execute_step_group(
        self, group: list[Step], execution_context: Context, context: Context
    ) -> None:
        if len(group) == 1:
            await self._execute_step_with_agent(group[0], execution_context, context)
            return
        await asyncio.gather(
            *(self._execute_step_with_agent(step, execution_context, context) for step in group)
        )

    async def _execute_step_with_agent(
        self, step: Step, execution_context: Context, context: Context
    ) -> None:
        """Reserve the agent, record the interaction, run with retry, record the result.

        (Upstream creates the interaction inside ``_execute_coordinated_step``, once
        per attempt; here it is created once per step so that retries do not blur
        the "recorded exactly once" invariant. The ``workflow_id`` read is the same.)
        """
        agent_id = step.get("assigned_agent")
        step_id = step["id"]
        if agent_id:
            self._reserve_agent(agent_id)
        try:
            interaction = (
                self._create_agent_interaction(step, execution_context) if agent_id else None
            )
            step_result = await self._execute_step_with_retry(step, execution_context, context)
            step["status"] = "completed" if step_result.get("success") else "failed"
            execution_context["step_results"][step_id] = step_result
            if step_result.get("success") and "result" in step_result:  # not skipped
                execution_context["step_outputs"][step_id] = step_result["result"]["output"]
            if interaction is not None:
                interaction.outcome = "success" if step_result.get("success") else "failed"
            if agent_id:
                execution_context["agents_involved"].add(agent_id)
        finally:
            if agent_id:
                self._release_agent(agent_id)

    async def _execute_step_with_retry(
        self, step: Step, execution_context: Context, context: Context
    ) -> dict[str, Any]:
        attempt = 1
        while True:
            try:
                return await self._execute_coordinated_step(step, execution_context, context)
            except Exception as exc:
                outcome = await self._error_handler.handle_error(
                    step, exc, attempt, execution_context
                )
                if outcome["action"] == "retry":
                    attempt += 1
                    continue
                if outcome["action"] == "skip":
                    return {"success": True, "skipped": True, "step_id": step["id"]}
                if outcome["action"] == "pause":
                    execution_context["status"] = "paused"
                    execution_context["paused_at_step"] = step["id"]
                    return {"success": False, "paused": True, "step_id": step["id"]}
                raise

    async def _execute_coordinated_step(
        self, step: Step, execution_context: Context, context: Context
    ) -> dict[str, Any]:
        prior_findings = self._prior_findings(step, execution_context)
        if prior_findings:
            context["prior_agent_findings"] = prior_findings  # write to the shared dict...
        result = await self.agents.run(step, context)  # ...the agent reads it after an await
        return {"success": True, "result": result, "step_id": step["id"]}

    @staticmethod
    def _prior_findings(step: Step, execution_context: Context) -> dict[str, Any]:
        """What the step's dependencies found (the scripted stand-in for shared memory)."""
        outputs = execution_context["step_outputs"]
        return {dep: outputs[dep] for dep in step.get("dependencies", []) if dep in outputs}

    def _create_agent_interaction(self, step: Step, execution_context: Context) -> AgentInteraction:
        interaction = AgentInteraction(
            interaction_id=f"ix-{next(self._ids)}",
            source_agent="orchestrator",
            target_agent=step["assigned_agent"],
            interaction_type="request",
            message={"step_id": step["id"], "action": step["action"]},
            context={"workflow_id": execution_context["workflow_id"]},
        )
        execution_context["interactions"].append(interaction)
        return interaction

    @staticmethod
    def _group_steps_by_dependency(steps: list[Step]) -> list[list[Step]]:
        """Waves of steps whose dependencies are all in earlier waves."""
        remaining = list(steps)
        completed: set[str] = set()
        groups: list[list[Step]] = []
        while remaining:
            ready = [s for s in remaining if set(s.get("dependencies", [])) <= completed]
            if not ready:  # a cycle: fall back to one step at a time
                groups.extend([s] for s in remaining)
                break
            groups.append(ready)
            remaining = [s for s in remaining if s not in ready]
            completed.update(s["id"] for s in ready)
        return groups

    @staticmethod
    def _determine_workflow_status(steps: list[Step], execution_context: Context) -> None:
        done = sum(1 for step in steps if step.get("status") == "completed")
        if done == len(steps):
            execution_context["status"] = "completed"
        else:
            execution_context["status"] = "partially_completed" if done else "failed"


class IsolatedContextWorkflowExecutor(WorkflowExecutor):
    """Upstream's fix: per-step contexts merged after gather (missing two keys)."""

    async def _execute_step_group(
        self, group: list[Step], execution_context: Context, context: Context
    ) -> None:
        if len(group) == 1:
            await self._execute_step_with_agent(group[0], execution_context, context)
            return
        prior_outputs = dict(execution_context["step_outputs"])
        isolated_contexts: list[Context] = [
            {  # no "workflow_id", no "status": see the module docstring
                "step_results": {},
                "agents_involved": set(),
                "interactions": [],
                "step_outputs": dict(prior_outputs),
            }
            for _ in group
        ]
        await asyncio.gather(
            *(
                self._execute_step_with_agent(step, iso_ctx, context)
                for step, iso_ctx in zip(group, isolated_contexts, strict=True)
            )
        )
        for iso_ctx in isolated_contexts:
            execution_context["step_results"].update(iso_ctx["step_results"])
            execution_context["agents_involved"].update(iso_ctx["agents_involved"])
            execution_context["interactions"].extend(iso_ctx["interactions"])
            execution_context["step_outputs"].update(iso_ctx["step_outputs"])


class CorrectWorkflowExecutor(WorkflowExecutor):
    """Complete child contexts merged in step order; a private ``context`` per step."""

    async def _execute_step_group(
        self, group: list[Step], execution_context: Context, context: Context
    ) -> None:
        children: list[Context] = [
            {
                "workflow_id": execution_context["workflow_id"],
                "step_results": {},
                "agents_involved": set(),
                "interactions": [],
                "step_outputs": dict(execution_context["step_outputs"]),
                "status": execution_context["status"],
            }
            for _ in group
        ]
        await asyncio.gather(
            *(
                self._execute_step_with_agent(step, child, context)
                for step, child in zip(group, children, strict=True)
            )
        )
        for child in children:  # group order is step order
            execution_context["step_results"].update(child["step_results"])
            execution_context["agents_involved"].update(child["agents_involved"])
            execution_context["interactions"].extend(child["interactions"])
            execution_context["step_outputs"].update(child["step_outputs"])
            if child["status"] == "paused" and execution_context["status"] != "paused":
                execution_context["status"] = "paused"
                execution_context["paused_at_step"] = child["paused_at_step"]

    async def _execute_coordinated_step(
        self, step: Step, execution_context: Context, context: Context
    ) -> dict[str, Any]:
        prior_findings = self._prior_findings(step, execution_context)
        step_context = dict(context)  # this step's view; siblings cannot overwrite it
        if prior_findings:
            step_context["prior_agent_findings"] = prior_findings
        result = await self.agents.run(step, step_context)
        return {"success": True, "result": result, "step_id": step["id"]}


EXECUTORS: dict[str, type[WorkflowExecutor]] = {
    "buggy": WorkflowExecutor,
    "upstream_fix": IsolatedContextWorkflowExecutor,
    "correct": CorrectWorkflowExecutor,
}
