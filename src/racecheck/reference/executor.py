"""Reference component for agent-framework PR #6776: serial delivery to an executor.

The shape follows agent-framework's Pregel-style workflow runner. A
:class:`Workflow` owns executors, edges and one runner context. Each superstep
the :class:`Runner` drains the pending messages grouped by source executor and
``asyncio.gather``-s the per-source deliveries; every edge runner delivers its
source's messages in send order by awaiting ``target.execute(...)`` for each.
``Executor.execute`` first awaits the "executor_invoked" event and then runs the
handler, which awaits too (an agent call). Two sources that target the same
executor in one superstep therefore interleave *inside* that executor.

The executor classes differ in one method, ``_serialize``, which returns what
``execute`` holds around the handler:

``Executor`` (buggy, before the PR)
    Nothing. Two handler invocations of one executor overlap.
``EagerLockExecutor`` (the PR's first commit)
    An ``asyncio.Lock`` created in ``__init__``. It serialises, but since
    Python 3.10 a lock binds to the loop it first has to *wait* under. Reuse the
    workflow under a second ``asyncio.run`` and the next contended acquire
    raises ``RuntimeError: ... is bound to a different event loop``.
``LoopScopedLockExecutor`` (the PR's fix)
    The lock is created lazily and re-created when the running loop changes.

The runner context's event queue has the same bug and the same fix:
``InProcRunnerContext`` creates its ``asyncio.Queue`` in ``__init__``; the
runner waits on it for live events, which binds it to the first loop.
``LoopScopedRunnerContext`` re-creates the queue per running loop. (Upstream the
queue was eager before the PR too; here the two knobs are separate so that each
variant shows exactly one defect.)

The lock is per executor, not global: two *distinct* executors still run their
handlers concurrently (the fan-out below relies on it).

Scripted graph, as built by :func:`build_workflow`::

    dispatcher -> worker1 -> collector
               -> worker2 ->

``dispatcher`` sends one message; both workers receive it in the same superstep
(distinct executors: they may overlap) and send two messages each to
``collector`` (same executor, two sources: they must not overlap, and each
source's two messages must arrive in order).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EXECUTORS",
    "RUNNER_CONTEXTS",
    "VARIANTS",
    "EagerLockExecutor",
    "Edge",
    "Executor",
    "HandlerProbe",
    "InProcRunnerContext",
    "LoopScopedLockExecutor",
    "LoopScopedRunnerContext",
    "Runner",
    "SingleEdgeRunner",
    "Workflow",
    "WorkflowContext",
    "WorkflowEvent",
    "WorkflowMessage",
    "build_workflow",
]


@dataclass(frozen=True)
class WorkflowMessage:
    data: Any
    source_id: str
    target_id: str | None = None


@dataclass(frozen=True)
class WorkflowEvent:
    type: str  # "executor_invoked" | "executor_completed" | "output"
    executor_id: str
    data: Any = None


# ── runner contexts: where messages and events wait ─────────────────────────


class InProcRunnerContext:
    """Pending messages per source, and a queue of live events.

    The queue is created in ``__init__``: it binds to the first loop whose
    runner has to wait on it, and a later run on another loop fails.
    """

    def __init__(self) -> None:
        self._messages: dict[str, list[WorkflowMessage]] = {}
        self._event_queue: asyncio.Queue[WorkflowEvent] | None = asyncio.Queue()

    def _get_event_queue(self) -> asyncio.Queue[WorkflowEvent]:
        assert self._event_queue is not None
        return self._event_queue

    async def send_message(self, message: WorkflowMessage) -> None:
        self._messages.setdefault(message.source_id, []).append(message)

    async def drain_messages(self) -> dict[str, list[WorkflowMessage]]:
        messages = dict(self._messages)
        self._messages.clear()
        return messages

    async def has_messages(self) -> bool:
        return bool(self._messages)

    async def add_event(self, event: WorkflowEvent) -> None:
        await self._get_event_queue().put(event)

    async def next_event(self) -> WorkflowEvent:
        return await self._get_event_queue().get()

    async def drain_events(self) -> list[WorkflowEvent]:
        queue = self._get_event_queue()
        events = []
        while not queue.empty():
            events.append(queue.get_nowait())
        return events

    def reset_for_new_run(self) -> None:
        self._messages.clear()
        queue = self._event_queue
        while queue is not None and not queue.empty():
            queue.get_nowait()


class LoopScopedRunnerContext(InProcRunnerContext):
    """The fix: the event queue belongs to the loop that is running now."""

    def __init__(self) -> None:
        super().__init__()
        self._event_queue = None
        self._event_queue_loop: asyncio.AbstractEventLoop | None = None

    def _get_event_queue(self) -> asyncio.Queue[WorkflowEvent]:
        loop = asyncio.get_running_loop()
        if self._event_queue is None or self._event_queue_loop is not loop:
            self._event_queue = asyncio.Queue()
            self._event_queue_loop = loop
        return self._event_queue


# ── executors: the variants differ in ``_serialize`` only ───────────────────

Handler = Callable[[Any, "WorkflowContext"], Awaitable[None]]


@dataclass
class WorkflowContext:
    """What a handler sees: its own id, who sent the message, and how to send."""

    executor_id: str
    source_executor_ids: list[str]
    runner_context: InProcRunnerContext

    async def send_message(self, data: Any, target_id: str | None = None) -> None:
        await self.runner_context.send_message(WorkflowMessage(data, self.executor_id, target_id))

    async def yield_output(self, data: Any) -> None:
        await self.runner_context.add_event(WorkflowEvent("output", self.executor_id, data))


class Executor:
    """Before the PR: ``execute`` holds nothing around the handler."""

    def __init__(self, id: str, handler: Handler) -> None:
        self.id = id
        self._handler = handler

    async def execute(
        self, message: Any, source_executor_ids: list[str], runner_context: InProcRunnerContext
    ) -> None:
        await runner_context.add_event(WorkflowEvent("executor_invoked", self.id, message))
        ctx = WorkflowContext(self.id, source_executor_ids, runner_context)
        async with self._serialize():
            await self._handler(message, ctx)
        await runner_context.add_event(WorkflowEvent("executor_completed", self.id))

    def _serialize(self) -> AbstractAsyncContextManager[object]:
        return contextlib.nullcontext()


class EagerLockExecutor(Executor):
    """The PR's first commit: one lock per executor, created with the executor."""

    def __init__(self, id: str, handler: Handler) -> None:
        super().__init__(id, handler)
        self._execution_lock = asyncio.Lock()  # binds to the first loop it waits under

    def _serialize(self) -> AbstractAsyncContextManager[object]:
        return self._execution_lock


class LoopScopedLockExecutor(Executor):
    """The PR's fix: the lock is created lazily, once per running loop."""

    def __init__(self, id: str, handler: Handler) -> None:
        super().__init__(id, handler)
        self._execution_lock: asyncio.Lock | None = None
        self._execution_lock_loop: asyncio.AbstractEventLoop | None = None

    def _serialize(self) -> AbstractAsyncContextManager[object]:
        return self._get_execution_lock()

    def _get_execution_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._execution_lock is None or self._execution_lock_loop is not loop:
            self._execution_lock = asyncio.Lock()
            self._execution_lock_loop = loop
        return self._execution_lock


# ── edges and the superstep runner ──────────────────────────────────────────


@dataclass(frozen=True)
class Edge:
    source_id: str
    target_id: str


class SingleEdgeRunner:
    def __init__(self, edge: Edge, executors: dict[str, Executor]) -> None:
        self.edge = edge
        self._executors = executors

    async def send_message(self, message: WorkflowMessage, ctx: InProcRunnerContext) -> bool:
        if message.target_id is not None and message.target_id != self.edge.target_id:
            return False
        target = self._executors[self.edge.target_id]
        await target.execute(message.data, [message.source_id], ctx)
        return True


class Runner:
    """Runs supersteps until no messages are pending, streaming events live."""

    def __init__(
        self,
        edges: Iterable[Edge],
        executors: dict[str, Executor],
        ctx: InProcRunnerContext,
        max_iterations: int = 20,
    ) -> None:
        self._ctx = ctx
        self._edge_runner_map: dict[str, list[SingleEdgeRunner]] = defaultdict(list)
        for edge in edges:
            self._edge_runner_map[edge.source_id].append(SingleEdgeRunner(edge, executors))
        self._max_iterations = max_iterations

    async def run_until_convergence(self) -> AsyncIterator[WorkflowEvent]:
        for _iteration in range(self._max_iterations):
            iteration_task = asyncio.create_task(self._run_iteration())
            while not iteration_task.done():  # stream events while the superstep runs
                try:
                    yield await asyncio.wait_for(self._ctx.next_event(), timeout=0.05)
                except TimeoutError:
                    continue
            await iteration_task
            for event in await self._ctx.drain_events():
                yield event
            if not await self._ctx.has_messages():
                return
        raise RuntimeError(f"no convergence after {self._max_iterations} supersteps")

    async def _run_iteration(self) -> None:
        async def _deliver_messages(source_id: str, messages: list[WorkflowMessage]) -> None:
            async def _deliver_for_edge_runner(edge_runner: SingleEdgeRunner) -> None:
                for message in messages:  # one source, one edge: in send order
                    await edge_runner.send_message(message, self._ctx)

            edge_runners = self._edge_runner_map.get(source_id, [])
            await asyncio.gather(*(_deliver_for_edge_runner(r) for r in edge_runners))

        batches = await self._ctx.drain_messages()  # grouped by source executor
        await asyncio.gather(*(_deliver_messages(s, m) for s, m in batches.items()))


class Workflow:
    """Can be run more than once, including under successive ``asyncio.run`` calls."""

    def __init__(
        self,
        start_executor_id: str,
        executors: Iterable[Executor],
        edges: Iterable[Edge],
        runner_context: InProcRunnerContext,
    ) -> None:
        self.executors = {executor.id: executor for executor in executors}
        self._start = start_executor_id
        self._ctx = runner_context
        self._runner = Runner(edges, self.executors, runner_context)

    async def run(self, message: Any) -> list[WorkflowEvent]:
        self._ctx.reset_for_new_run()
        await self.executors[self._start].execute(message, ["__workflow__"], self._ctx)
        events = await self._ctx.drain_events()
        events += [event async for event in self._runner.run_until_convergence()]
        return events


# ── the scripted graph and what it records ──────────────────────────────────


@dataclass
class HandlerProbe:
    """Records what the handlers saw; the scenario asserts the invariants on it."""

    active: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    max_concurrent: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    #: pairs of distinct executors seen inside their handlers at the same time
    overlaps: set[frozenset[str]] = field(default_factory=set)
    #: (source, message) pairs in the order the collector received them
    received: list[tuple[str, Any]] = field(default_factory=list)

    def enter(self, executor_id: str) -> None:
        self.active[executor_id] += 1
        self.max_concurrent[executor_id] = max(
            self.max_concurrent[executor_id], self.active[executor_id]
        )
        for other, count in self.active.items():
            if other != executor_id and count:
                self.overlaps.add(frozenset((executor_id, other)))

    def leave(self, executor_id: str) -> None:
        self.active[executor_id] -= 1


EXECUTORS: dict[str, type[Executor]] = {
    "none": Executor,
    "eager": EagerLockExecutor,
    "loop": LoopScopedLockExecutor,
}
RUNNER_CONTEXTS: dict[str, type[InProcRunnerContext]] = {
    "eager": InProcRunnerContext,
    "loop": LoopScopedRunnerContext,
}
#: variant -> (executor lock, runner-context queue)
VARIANTS: dict[str, tuple[str, str]] = {
    "buggy": ("none", "loop"),
    "eager_lock": ("eager", "loop"),
    "eager_queue": ("loop", "eager"),
    "correct": ("loop", "loop"),
}


def build_workflow(
    variant: str, probe: HandlerProbe, messages_per_worker: int = 2, latency: float = 0.01
) -> Workflow:
    """dispatcher -> worker1, worker2 -> collector, with ``variant``'s lock and queue.

    Handlers model an agent call as ``asyncio.sleep(latency)``. A sleeping task
    is not runnable, so while one delivery sleeps inside the collector the other
    delivery always reaches the collector too: with a lock, it has to *wait* for
    it, which is what binds an eagerly created lock to the running loop (Python
    3.10+ binds a lock or queue only when it first waits). With ``latency=0``
    that contention depends on the schedule.
    """
    lock, queue = VARIANTS[variant]
    make = EXECUTORS[lock]

    async def dispatcher(message: Any, ctx: WorkflowContext) -> None:
        await ctx.send_message(message)

    def worker(name: str) -> Handler:
        async def handle(message: Any, ctx: WorkflowContext) -> None:
            probe.enter(name)
            await asyncio.sleep(latency)  # the agent call
            probe.leave(name)
            for n in range(messages_per_worker):
                await ctx.send_message(f"{name}:{n}")

        return handle

    # Executor-local state, as an agent executor keeps its pending request: safe
    # only while the executor handles one message at a time.
    collector_state: dict[str, Any] = {"request": None}

    async def collector(message: Any, ctx: WorkflowContext) -> None:
        probe.enter("collector")
        collector_state["request"] = message
        await asyncio.sleep(latency)  # the agent call
        probe.received.append((ctx.source_executor_ids[0], collector_state["request"]))
        probe.leave("collector")
        await ctx.yield_output(message)

    executors = [
        make("dispatcher", dispatcher),
        make("worker1", worker("worker1")),
        make("worker2", worker("worker2")),
        make("collector", collector),
    ]
    edges = [
        Edge("dispatcher", "worker1"),
        Edge("dispatcher", "worker2"),
        Edge("worker1", "collector"),
        Edge("worker2", "collector"),
    ]
    return Workflow("dispatcher", executors, edges, RUNNER_CONTEXTS[queue]())
