"""Reference component for marsys #40: validation cross-talk in ``RealRuntime``.

The shape follows marsys' unified-barrier orchestrator. An :class:`Orchestrator`
dispatches every RUNNING branch as its own asyncio task, and every task calls
``runtime.step(branch)`` on the *same* runtime object. ``step`` acquires the
branch's agent instance, awaits the step executor (the model call) and then
``_translate`` validates the agent's ``invoke_agent`` call against the outgoing
topology edges of an agent.

The two runtimes differ only in *which* agent ``_translate`` validates against:

``RealRuntime`` (buggy, as reported)
    ``step`` stores the instance on ``self._current_instance`` before the await
    and ``_translate`` reads it back after. While one branch is suspended in the
    model call, a sibling branch overwrites the attribute, so the first branch's
    response is checked against the sibling's edges. With this topology AgentA's
    valid ``invoke_agent(Orchestrator)`` is rejected as
    ``Agent AgentC cannot invoke: ['Orchestrator']``: the name is the wrong
    agent's, the target list is the right response's.

``RealRuntimeFixed`` (correct, the report's option A)
    The instance stays a local variable and is passed to ``_translate`` as a
    parameter. Nothing per-branch lives on the shared runtime.

The rest (topology, registry, step executor, validator, orchestrator, barrier)
is shared and correct, as the report says: the barrier makes consistent
decisions from corrupt inputs. Agents are scripted; nothing calls a model.

Topology (as in the report)::

    Start -> Orchestrator -> {AgentA, AgentB, AgentC}
    AgentA -> Orchestrator      AgentB -> Orchestrator
    AgentC -> AgentD -> Orchestrator
    Orchestrator -> End

The Orchestrator fans out to A, B and C with one parallel ``invoke_agent``; A
and B answer M and A, C forwards R to D, and D answers R and S. The fork's
barrier needs every branch (min ratio 1.0, fail when insufficient). When A, B
and D have arrived the Orchestrator resumes and answers "The secret word is:
MARS".
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "FLOWS",
    "RUNTIMES",
    "Agent",
    "AgentRegistry",
    "Barrier",
    "Branch",
    "BranchCompleted",
    "Orchestrator",
    "RealRuntime",
    "RealRuntimeFixed",
    "StepExecutor",
    "TopologyGraph",
    "ValidationProcessor",
    "WorkflowResult",
    "build_mars_workflow",
]

#: The report's topology, in its own "A -> B" notation.
FLOWS: tuple[str, ...] = (
    "Start -> Orchestrator",
    "Orchestrator -> AgentA",
    "Orchestrator -> AgentB",
    "Orchestrator -> AgentC",
    "AgentA -> Orchestrator",
    "AgentB -> Orchestrator",
    "AgentC -> AgentD",  # C's only outgoing edge: the one that surfaces the race
    "AgentD -> Orchestrator",
    "Orchestrator -> End",
)


# ── topology, agents, registry ───────────────────────────────────────────────


class TopologyGraph:
    """Directed edges between agents, plus the Start and End nodes."""

    def __init__(self, flows: Iterable[str]) -> None:
        self._next: dict[str, list[str]] = {}
        for flow in flows:
            source, target = (part.strip() for part in flow.split("->"))
            self._next.setdefault(source, []).append(target)

    def get_next_agents(self, agent: str) -> list[str]:
        return list(self._next.get(agent, []))

    def has_edge_to_endnode(self, agent: str) -> bool:
        return "End" in self._next.get(agent, [])

    def entry_agent(self) -> str:
        return self._next["Start"][0]


@dataclass(frozen=True)
class Invocation:
    agent_name: str
    request: Any


@dataclass(frozen=True)
class Response:
    """What a (scripted) model answers: one coordination tool call."""

    action: Literal["invoke_agent", "final_response"]
    invocations: tuple[Invocation, ...] = ()
    final_response: str | None = None


@dataclass
class Agent:
    """A scripted agent: ``respond`` maps the request to a coordination call."""

    name: str
    respond: Callable[[Any], Response]


class AgentRegistry:
    def __init__(self, agents: Iterable[Agent]) -> None:
        self._agents = {agent.name: agent for agent in agents}

    def get_or_acquire(self, name: str, branch_id: str) -> Agent | None:
        return self._agents.get(name)


# ── step execution and validation ────────────────────────────────────────────


@dataclass
class MarsysStepResult:
    """The step executor's result: the parsed coordination call of one turn."""

    success: bool
    coordination_action: str | None
    coordination_data: dict[str, Any]
    produced_by: str
    error: str | None = None


class StepExecutor:
    """Runs one agent turn. The ``await`` stands for the model round-trip."""

    def __init__(self) -> None:
        #: every coordination payload produced, with the agent that produced it
        self.produced: list[tuple[str, dict[str, Any]]] = []

    async def execute_step(
        self, agent: Agent, request: Any, memory: list[Any], context: dict[str, Any]
    ) -> MarsysStepResult:
        await asyncio.sleep(0)  # the LLM call: every sibling branch runs meanwhile
        response = agent.respond(request)
        data: dict[str, Any] = {
            "invocations": list(response.invocations),
            "final_response": response.final_response,
        }
        self.produced.append((agent.name, data))
        return MarsysStepResult(True, response.action, data, produced_by=agent.name)


@dataclass
class ValidationResult:
    is_valid: bool
    action_type: str | None = None  # "INVOKE_AGENT" | "PARALLEL_INVOKE" | "FINAL_RESPONSE"
    invocations: list[Invocation] = field(default_factory=list)
    final_response: str | None = None
    error_message: str | None = None


class ValidationProcessor:
    """Checks a coordination call against the *given* agent's outgoing edges."""

    def __init__(self, topology_graph: TopologyGraph) -> None:
        self.topology_graph = topology_graph
        #: (agent validated against, payload) for every validation, in order
        self.validated: list[tuple[str, dict[str, Any]]] = []

    async def validate_coordination_action(
        self,
        action: str,
        data: dict[str, Any],
        agent: Agent | None,
        branch: Branch | None,
        exec_state: dict[str, Any],
    ) -> ValidationResult:
        if agent is None:
            return ValidationResult(False, error_message="no agent to validate against")
        self.validated.append((agent.name, data))
        if action == "invoke_agent":
            return self._validate_invoke_agent(data["invocations"], agent)
        if action == "final_response":
            if not self.topology_graph.has_edge_to_endnode(agent.name):
                return ValidationResult(False, error_message=f"Agent {agent.name} cannot end")
            return ValidationResult(True, "FINAL_RESPONSE", final_response=data["final_response"])
        return ValidationResult(False, error_message=f"unknown action {action!r}")

    def _validate_invoke_agent(
        self, invocations: list[Invocation], agent: Agent
    ) -> ValidationResult:
        next_agents = self.topology_graph.get_next_agents(agent.name)
        invalid = [inv.agent_name for inv in invocations if inv.agent_name not in next_agents]
        if invalid:
            return ValidationResult(
                False, error_message=f"Agent {agent.name} cannot invoke: {invalid}"
            )
        kind = "PARALLEL_INVOKE" if len(invocations) > 1 else "INVOKE_AGENT"
        return ValidationResult(True, kind, invocations=list(invocations))


# ── the runtimes: the only code that differs between the variants ────────────


@dataclass
class OrchestratorStepResult:
    kind: Literal["SINGLE_INVOKE", "PARALLEL_INVOKE", "FINAL_RESPONSE", "FAIL"]
    invocations: list[Invocation] = field(default_factory=list)
    next_agent: str | None = None
    request: Any = None
    value: Any = None
    error: str | None = None


class _RuntimeBase:
    """What both runtimes share: construction and the validation-to-step mapping."""

    def __init__(
        self,
        registry: AgentRegistry,
        step_executor: StepExecutor,
        validator: ValidationProcessor,
        topology_graph: TopologyGraph,
        session_id: str = "session",
    ) -> None:
        self.registry = registry
        self.step_executor = step_executor
        self.validator = validator
        self.topology_graph = topology_graph
        self.session_id = session_id

    async def step(self, branch: Branch) -> OrchestratorStepResult:
        raise NotImplementedError

    def _context(self, branch: Branch) -> dict[str, Any]:
        return {"session_id": self.session_id, "branch_id": branch.id, "step": branch.step_count}

    @staticmethod
    def _to_step_result(validation: ValidationResult) -> OrchestratorStepResult:
        if not validation.is_valid:
            return OrchestratorStepResult("FAIL", error=validation.error_message)
        if validation.action_type == "PARALLEL_INVOKE":
            return OrchestratorStepResult("PARALLEL_INVOKE", invocations=validation.invocations)
        if validation.action_type == "INVOKE_AGENT":
            first = validation.invocations[0]
            return OrchestratorStepResult(
                "SINGLE_INVOKE", next_agent=first.agent_name, request=first.request
            )
        return OrchestratorStepResult("FINAL_RESPONSE", value=validation.final_response)


class RealRuntime(_RuntimeBase):
    """As reported: the agent instance travels through a shared attribute."""

    _current_instance: Agent | None = None

    async def step(self, branch: Branch) -> OrchestratorStepResult:
        instance = self.registry.get_or_acquire(branch.current_agent, branch_id=branch.id)
        if instance is None:
            return OrchestratorStepResult("FAIL", error=f"agent {branch.current_agent!r} unknown")
        self._current_instance = instance  # ← write, then suspend below
        marsys_result = await self.step_executor.execute_step(
            agent=instance,
            request=branch.input,
            memory=branch.memory,
            context=self._context(branch),
        )
        return await self._translate(marsys_result, branch)

    async def _translate(
        self, marsys_result: MarsysStepResult, branch: Branch
    ) -> OrchestratorStepResult:
        if not marsys_result.success or marsys_result.coordination_action is None:
            return OrchestratorStepResult("FAIL", error=marsys_result.error or "step failed")
        validation = await self.validator.validate_coordination_action(
            action=marsys_result.coordination_action,
            data=marsys_result.coordination_data,
            agent=self._current_instance,  # ← read: whoever wrote last, maybe a sibling
            branch=None,
            exec_state={"session_id": self.session_id, "current_step": branch.step_count},
        )
        return self._to_step_result(validation)


class RealRuntimeFixed(_RuntimeBase):
    """The fix (report's option A): the instance is a parameter, not shared state."""

    async def step(self, branch: Branch) -> OrchestratorStepResult:
        instance = self.registry.get_or_acquire(branch.current_agent, branch_id=branch.id)
        if instance is None:
            return OrchestratorStepResult("FAIL", error=f"agent {branch.current_agent!r} unknown")
        marsys_result = await self.step_executor.execute_step(
            agent=instance,
            request=branch.input,
            memory=branch.memory,
            context=self._context(branch),
        )
        return await self._translate(marsys_result, branch, instance)

    async def _translate(
        self, marsys_result: MarsysStepResult, branch: Branch, instance: Agent
    ) -> OrchestratorStepResult:
        if not marsys_result.success or marsys_result.coordination_action is None:
            return OrchestratorStepResult("FAIL", error=marsys_result.error or "step failed")
        validation = await self.validator.validate_coordination_action(
            action=marsys_result.coordination_action,
            data=marsys_result.coordination_data,
            agent=instance,  # this branch's own agent: a local, no race
            branch=None,
            exec_state={"session_id": self.session_id, "current_step": branch.step_count},
        )
        return self._to_step_result(validation)


RUNTIMES: dict[str, type[_RuntimeBase]] = {"buggy": RealRuntime, "correct": RealRuntimeFixed}


# ── orchestrator: branches, forks, barriers ─────────────────────────────────


@dataclass
class Branch:
    id: str
    current_agent: str
    delivery_target: str  # id of the barrier this branch's answer goes to
    input: Any
    status: Literal["RUNNING", "WAITING", "DONE", "FAILED"] = "RUNNING"
    memory: list[Any] = field(default_factory=list)
    step_count: int = 0


@dataclass
class Barrier:
    """Where branches converge. ``resolver_branch`` resumes when it fires."""

    id: str
    resolver_branch: str | None  # None for the workflow's root barrier
    rendezvous_agent: str | None  # the agent that receives the results
    candidates: list[str] = field(default_factory=list)
    arrived: dict[str, tuple[str, Any]] = field(default_factory=dict)  # branch -> (agent, value)
    failed: dict[str, tuple[str, str]] = field(default_factory=dict)  # branch -> (agent, error)
    status: Literal["OPEN", "FIRED", "FIRED_WITH_FAILURE"] = "OPEN"
    min_ratio: float = 1.0
    on_insufficient: Literal["fail"] = "fail"


@dataclass(frozen=True)
class BranchCompleted:
    """Like marsys' BranchCompletedEvent."""

    branch_id: str
    agent: str
    success: bool
    total_steps: int
    error: str | None = None


@dataclass
class WorkflowResult:
    success: bool
    final_response: str | None
    error: str | None
    branches: dict[str, Branch]
    barriers: dict[str, Barrier]
    events: list[BranchCompleted]


class Orchestrator:
    """Dispatches every RUNNING branch as an asyncio task on one shared runtime.

    The algorithm body (``_interpret`` and the barrier logic) is synchronous, so
    it runs atomically between awaits; only ``runtime.step`` suspends.
    """

    def __init__(self, topology: TopologyGraph, runtime: _RuntimeBase) -> None:
        self.topology = topology
        self.runtime = runtime
        self.branches: dict[str, Branch] = {}
        self.barriers: dict[str, Barrier] = {}
        self.runnable: deque[str] = deque()
        self.events: list[BranchCompleted] = []
        self._branch_ids = itertools.count(1)
        self._barrier_ids = itertools.count(1)
        self._final: str | None = None
        self._workflow_error: str | None = None

    async def run(self, task: str) -> WorkflowResult:
        root = self._new_barrier(resolver=None, rendezvous=None)
        entry = self._spawn(self.topology.entry_agent(), task, root)
        root.candidates.append(entry.id)
        in_flight: set[asyncio.Task[None]] = set()
        while True:
            while self.runnable:
                branch = self.branches[self.runnable.popleft()]
                if branch.status == "RUNNING":
                    name = f"{branch.id}:{branch.current_agent}"
                    in_flight.add(asyncio.create_task(self._tick(branch), name=name))
            if not in_flight:
                break
            done, in_flight = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
            for finished in done:
                finished.result()  # a crash in _tick is a bug in this component: surface it
        success = root.status == "FIRED" and self._workflow_error is None
        return WorkflowResult(
            success=success,
            final_response=self._final if success else None,
            error=self._workflow_error,
            branches=self.branches,
            barriers=self.barriers,
            events=self.events,
        )

    async def _tick(self, branch: Branch) -> None:
        branch.step_count += 1
        step = await self.runtime.step(branch)
        self._interpret(branch, step)

    def _interpret(self, branch: Branch, step: OrchestratorStepResult) -> None:
        if step.kind == "PARALLEL_INVOKE":
            fork = self._new_barrier(resolver=branch, rendezvous=branch.current_agent)
            branch.status = "WAITING"
            for invocation in step.invocations:
                child = self._spawn(invocation.agent_name, invocation.request, fork)
                fork.candidates.append(child.id)
        elif step.kind == "SINGLE_INVOKE":
            target = self.barriers[branch.delivery_target]
            if step.next_agent == target.rendezvous_agent:
                self._deliver(branch, target, step.request)
            else:  # hand the branch over to the next agent (C -> D)
                assert step.next_agent is not None
                branch.current_agent = step.next_agent
                branch.input = step.request
                self.runnable.append(branch.id)
        elif step.kind == "FINAL_RESPONSE":
            self._deliver(branch, self.barriers[branch.delivery_target], step.value)
        else:
            self._fail_to(branch, step.error or "step failed")

    def _deliver(self, branch: Branch, barrier: Barrier, value: Any) -> None:
        barrier.arrived[branch.id] = (branch.current_agent, value)
        self._complete(branch, success=True)
        self._maybe_fire(barrier)

    def _fail_to(self, branch: Branch, error: str) -> None:
        barrier = self.barriers[branch.delivery_target]
        barrier.failed[branch.id] = (branch.current_agent, error)
        self._complete(branch, success=False, error=error)
        self._maybe_fire(barrier)

    def _maybe_fire(self, barrier: Barrier) -> None:
        settled = barrier.arrived.keys() | barrier.failed.keys()
        if barrier.status != "OPEN" or any(c not in settled for c in barrier.candidates):
            return
        ratio = len(barrier.arrived) / max(1, len(settled))
        if ratio >= barrier.min_ratio:
            self._fire(barrier)
        else:
            self._fire_with_failure(barrier)

    def _fire(self, barrier: Barrier) -> None:
        barrier.status = "FIRED"
        if barrier.resolver_branch is None:  # the root: the workflow's answer
            (_agent, value), *_ = barrier.arrived.values()
            self._final = value
            return
        resolver = self.branches[barrier.resolver_branch]
        resolver.input = [barrier.arrived[c] for c in barrier.candidates]  # fork order
        resolver.status = "RUNNING"
        self.runnable.append(resolver.id)

    def _fire_with_failure(self, barrier: Barrier) -> None:
        barrier.status = "FIRED_WITH_FAILURE"
        reasons = "; ".join(error for _agent, error in barrier.failed.values())
        error = (
            f"{barrier.id}: {len(barrier.failed)} of {len(barrier.candidates)} failed: {reasons}"
        )
        if barrier.resolver_branch is None:
            self._workflow_error = error
        else:
            self._fail_to(self.branches[barrier.resolver_branch], error)

    def _complete(self, branch: Branch, *, success: bool, error: str | None = None) -> None:
        branch.status = "DONE" if success else "FAILED"
        self.events.append(
            BranchCompleted(branch.id, branch.current_agent, success, branch.step_count, error)
        )

    def _spawn(self, agent: str, request: Any, target: Barrier) -> Branch:
        branch = Branch(f"br_{next(self._branch_ids):04d}", agent, target.id, request)
        self.branches[branch.id] = branch
        self.runnable.append(branch.id)
        return branch

    def _new_barrier(self, *, resolver: Branch | None, rendezvous: str | None) -> Barrier:
        resolver_id = resolver.id if resolver is not None else None
        barrier = Barrier(f"bar_{next(self._barrier_ids):04d}", resolver_id, rendezvous)
        self.barriers[barrier.id] = barrier
        return barrier


# ── the report's scripted agents ─────────────────────────────────────────────


def _invoke(*targets: tuple[str, str]) -> Response:
    return Response("invoke_agent", tuple(Invocation(name, request) for name, request in targets))


def _orchestrator(request: Any) -> Response:
    if isinstance(request, str):  # turn 1: the task; fan out
        return _invoke(*((name, "Provide your letter.") for name in ("AgentA", "AgentB", "AgentC")))
    letters = "".join(str(value).rsplit(":", 1)[-1] for _agent, value in request)
    return Response(
        "final_response", final_response=f"The secret word is: {letters.replace(' ', '')}"
    )


AGENTS: tuple[Agent, ...] = (
    Agent("Orchestrator", _orchestrator),
    Agent("AgentA", lambda _request: _invoke(("Orchestrator", "Letter from AgentA: M"))),
    Agent("AgentB", lambda _request: _invoke(("Orchestrator", "Letter from AgentB: A"))),
    Agent("AgentC", lambda _request: _invoke(("AgentD", "Letter from AgentC: R"))),
    Agent("AgentD", lambda _request: _invoke(("Orchestrator", "Letters: R S"))),
)


def build_mars_workflow(
    variant: str, agents: Sequence[Agent] = AGENTS
) -> tuple[Orchestrator, StepExecutor, ValidationProcessor]:
    """Fresh topology, registry, runtime and orchestrator for one run."""
    topology = TopologyGraph(FLOWS)
    step_executor = StepExecutor()
    validator = ValidationProcessor(topology)
    runtime = RUNTIMES[variant](AgentRegistry(agents), step_executor, validator, topology)
    return Orchestrator(topology, runtime), step_executor, validator
