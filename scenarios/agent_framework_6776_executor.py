"""agent-framework PR #6776: an executor must process its inbox serially.

``worker1`` and ``worker2`` each send two messages to ``collector`` in the same
superstep; the runner gathers the two sources' deliveries, so without a lock
the collector runs two handlers at once. The same workflow object then runs
again under a second ``asyncio.run``.

==========  ========================  ===========================================
variant     lock / event queue        breaks
==========  ========================  ===========================================
buggy       none / per loop           at most one handler per executor at a time
eager_lock  made in __init__ / loop   runs under successive asyncio.run calls
eager_queue per loop / made in init   runs under successive asyncio.run calls
correct     per loop / per loop       nothing
==========  ========================  ===========================================

Why the target is a plain ``def``: an ``async def`` target runs *inside*
racecheck's controlled loop, and a second loop cannot be started from inside a
running one. A ``def`` target runs on the threads backend, which controls every
loop ``asyncio.run`` creates, so both runs (and the loop change between them)
are explored. The serialisation invariants alone are also checked by the
one-run ``async def`` target from :func:`make_async_target`.

Not asserted per run, because it is a property of the explored schedules: two
distinct executors still overlap in some schedule (the lock is per executor,
not global). Every run appends the overlaps it saw to ``OVERLAPS_SEEN``; the
tests assert on it after an exploration.

Components: :mod:`racecheck.reference.executor`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from racecheck import Scenario, Variant
from racecheck.reference.executor import HandlerProbe, build_workflow

#: Pairs of distinct executors seen inside their handlers at the same time, across
#: every run of every target (tests assert the fix did not serialise everything).
OVERLAPS_SEEN: list[frozenset[str]] = []


def check_run(probe: HandlerProbe, run: int) -> None:
    for executor_id, most in probe.max_concurrent.items():
        assert most <= 1, (
            f"at most one handler per executor at a time: {executor_id} ran {most} "
            f"handlers at once (run {run})"
        )
    for source in ("worker1", "worker2"):
        got = [message for sender, message in probe.received if sender == source]
        assert got == [f"{source}:0", f"{source}:1"], (
            f"messages from one source arrive in send order: {source} delivered {got} (run {run})"
        )
    OVERLAPS_SEEN.extend(probe.overlaps)


def make_target(variant: str) -> Callable[[], None]:
    def target() -> None:
        probe = HandlerProbe()
        workflow = build_workflow(variant, probe)
        for run in (1, 2):
            probe.received.clear()
            try:
                asyncio.run(workflow.run("task"))
            except RuntimeError as exc:
                if "different event loop" not in str(exc):
                    raise
                raise AssertionError(
                    f"the workflow runs under successive asyncio.run calls: run {run}: {exc}"
                ) from exc
            check_run(probe, run)

    target.__qualname__ = target.__name__ = f"agent_framework_6776_{variant}"
    return target


def make_async_target(variant: str) -> Callable[[], Awaitable[None]]:
    """One run on racecheck's asyncio backend: the serialisation invariants only."""

    async def target() -> None:
        probe = HandlerProbe()
        await build_workflow(variant, probe).run("task")
        check_run(probe, 1)

    target.__qualname__ = target.__name__ = f"agent_framework_6776_{variant}_one_run"
    return target


SCENARIO = Scenario(
    name="agent-framework-6776-executor",
    issue="agent-framework#6776",
    description="deliveries from two sources to one executor interleave inside execute()",
    invariants=(
        "at most one handler per executor at a time",
        "messages from one source arrive in send order",
        "the workflow runs under successive asyncio.run calls",
    ),
    variants={
        "buggy": Variant(make_target("buggy"), expect="race", summary="no per-executor lock"),
        "eager_lock": Variant(
            make_target("eager_lock"),
            expect="race",
            summary="the PR's first attempt: asyncio.Lock created in Executor.__init__",
        ),
        "eager_queue": Variant(
            make_target("eager_queue"),
            expect="race",
            summary="loop-scoped lock, but the runner's event queue is created in __init__",
        ),
        "correct": Variant(
            make_target("correct"),
            expect="safe",
            summary="lazy per-loop lock and per-loop event queue",
        ),
    },
)
