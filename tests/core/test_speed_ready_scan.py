"""What the controlled loop offers the chooser, pinned against its faster scan.

``ControlledLoop._run_once`` numbers the head task before scanning the rest of
the ready queue, keeps actor -> position in one dict, and chooses a lone
task among plain callbacks inline instead of through ``Controller.decide``.
None of that may change what a strategy sees: the candidates are the distinct
ready tasks in queue order, each at its first live handle, numbered at first
sight, and a chosen task runs from that handle; a decision with one candidate
is counted but never offered. These run the real backend on a real
loop with a chooser that records every offer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from racecheck.backends.asyncio_backend import AsyncioBackend
from racecheck.engine import Controller


class Recording:
    """A chooser that picks ``picks`` in turn (then the natural order) and records each offer."""

    def __init__(self, picks: Sequence[int] = ()) -> None:
        self.offers: list[list[int]] = []
        self.picks = list(picks)

    def begin(self, run: int) -> None:
        pass

    def choose(self, candidates: Sequence[int], step: int) -> int:
        self.offers.append(list(candidates))
        return self.picks.pop(0) if self.picks else 0


def _run(target: Any, chooser: Recording) -> Controller:
    backend = AsyncioBackend(target)
    backend.install()
    try:
        controller = Controller(chooser, 10_000)
        backend.run_once(controller)
    finally:
        backend.uninstall()
    assert controller.failure is None, controller.failure
    return controller


def test_candidates_are_the_distinct_tasks_in_queue_order_each_at_its_first_handle() -> None:
    names: list[str] = []

    async def worker(name: str) -> None:
        names.append(name)

    async def waiter(gate: asyncio.Future[None]) -> None:
        await gate
        names.append("third")

    async def target() -> None:
        loop = asyncio.get_running_loop()
        gate: asyncio.Future[None] = loop.create_future()
        third = loop.create_task(waiter(gate))
        await asyncio.sleep(0)  # the third task takes its first step and waits
        first = loop.create_task(worker("first"))  # its step: the head, below
        # A second handle of the first task: cancelling the task, so running it
        # in place of the task's step (its first handle) would kill the run.
        loop.call_soon(first.cancel)
        loop.call_soon(third.get_name).cancel()  # cancel() drops its callback: no task's
        second = loop.create_task(worker("second"))
        gate.set_result(None)  # the third task's wake-up: queued last
        await asyncio.gather(first, second, third)

    chooser = Recording()
    _run(target, chooser)
    # Root 1; the third task 2 (first seen beside the root). Then the queue is
    # first's step (3), first's second handle, a cancelled handle, second's
    # step (4), the third's wake-up: the third is offered where its wake-up
    # is, last, and the first once, and choosing it runs its step. Its second
    # handle is still a handle of a task (a done one now, so cancel() does
    # nothing), and it heads the next offer.
    assert chooser.offers == [[2, 1], [3, 4, 2], [3, 4, 2], [4, 2]]
    assert names == ["first", "second", "third"]


def test_a_chosen_task_runs_from_its_first_live_handle() -> None:
    order: list[str] = []

    async def worker(name: str) -> None:
        order.append(name)

    async def target() -> None:
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(worker(n)) for n in ("a", "b", "c")]
        await asyncio.gather(*tasks)

    chooser = Recording(picks=[2, 0, 0])
    _run(target, chooser)
    assert chooser.offers[0] == [2, 3, 4]
    assert order == ["c", "a", "b"]


def test_a_lone_task_among_callbacks_is_counted_but_never_offered() -> None:
    seen: list[str] = []

    async def target() -> None:
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        done.add_done_callback(lambda _: seen.append("callback"))
        loop.call_soon(done.set_result, None)
        await asyncio.sleep(0)
        # the queue now holds this task's wake-up, then the done-callback
        # set_result queued: one task among callbacks
        seen.append("task")

    chooser = Recording()
    controller = _run(target, chooser)
    assert seen == ["task", "callback"]  # the task ran first: the queue's order
    assert chooser.offers == []  # one candidate each time: nothing to choose
    assert controller.decisions == []
    # each of the root task's two steps counts as a scheduling step, and every
    # handle (two steps, set_result, the done-callback, run_until_complete's
    # own) as a step
    assert (controller.scheduling_steps, controller.steps) == (2, 5)
