"""The collection between runs takes the young road only where it is the full one.

``Session._collect_between_runs`` collects generations 0 and 1 instead of the
whole (unfrozen) heap when generation 2 is empty, which makes the two
collections examine the same objects. These tests keep both halves of that
bargain: a plain asyncio exploration really takes the cheap road (the explore
loop lets go of its controller, the backend keeps its per-run tables out of
the young generations), every run's garbage is still finalised before the
next run starts, and garbage that hangs on an object an earlier run left in
generation 2 is still found (by the full collection).

The road is read through ``gc.callbacks``, the interpreter's own report of
each collection's generation.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

import racecheck
from racecheck.bench.workloads import (  # the bench's own workloads
    asyncio_deposits,
    two_threads,
)


@pytest.fixture
def generations() -> Iterator[Counter[int]]:
    """How many collections of each generation started while the test ran."""
    seen: Counter[int] = Counter()

    def callback(phase: str, info: dict[str, Any]) -> None:
        # only racecheck's own: an exploration runs with the collector off,
        # while the test process's automatic collections happen with it on
        if phase == "start" and not gc.isenabled():
            seen[info["generation"]] += 1

    gc.callbacks.append(callback)
    try:
        yield seen
    finally:
        gc.callbacks.remove(callback)


def test_a_plain_asyncio_exploration_collects_young_between_runs(
    generations: Counter[int],
) -> None:
    report = racecheck.check(
        asyncio_deposits, strategy="random", schedules=60, seed=0, saturation=0
    )

    assert report.schedules_run == 60
    # one full collection before the heap is frozen (quiet_gc), then one young
    # collection after each run: none of them full
    assert generations[1] >= 60, dict(generations)
    assert generations[2] == 1, dict(generations)


def test_a_plain_threads_exploration_collects_young_between_runs(
    generations: Counter[int],
) -> None:
    # What a threads run keeps for the whole exploration is older than the
    # frozen heap or not tracked: the pool's workers are made at install, the
    # tracer's code tables hold no tuples or frozensets, the tables filled and
    # emptied every run are kept tracked, and the explorer thread's state dict
    # (with repr's guard list) is made at install. Any of them made young in a
    # first run would sit in generation 2 and make every collection full.
    report = racecheck.check(two_threads, strategy="pct", schedules=60, seed=0, saturation=0)

    assert report.schedules_run == 60
    assert generations[1] >= 60, dict(generations)
    assert generations[2] == 1, dict(generations)


def test_with_the_saturation_watch_on_every_run_still_collects_young(
    generations: Counter[int],
) -> None:
    # the default saturation window: its fingerprint counts grow every run
    report = racecheck.check(asyncio_deposits, strategy="random", schedules=60, seed=0)

    assert report.schedules_run > 10
    assert generations[1] >= report.schedules_run, dict(generations)
    assert generations[2] == 1, dict(generations)


class Node:
    """A cycle member whose end is recorded when the collector frees it."""

    made: ClassVar[list[int]] = []
    finalised: ClassVar[list[int]] = []

    def __init__(self, run: int) -> None:
        self.run = run
        self.other: Node | None = None
        Node.made.append(run)

    def __del__(self) -> None:
        Node.finalised.append(self.run)


@pytest.fixture
def nodes() -> Iterator[None]:
    Node.made, Node.finalised = [], []
    yield
    Node.made, Node.finalised = [], []


def test_every_runs_cyclic_garbage_is_finalised_before_the_next_run(
    nodes: None, generations: Counter[int]
) -> None:
    runs = 0

    async def target() -> None:
        nonlocal runs
        # every earlier run's cycle was freed between the runs, not in this one
        assert sorted(Node.finalised) == sorted(Node.made), (Node.made, Node.finalised)
        runs += 1
        first, second = Node(runs), Node(runs)
        first.other, second.other = second, first
        await asyncio_deposits()

    racecheck.check(target, strategy="random", schedules=40, seed=0, saturation=0)

    assert runs == 40
    assert len(Node.finalised) == 80
    assert generations[1] >= 40, dict(generations)  # and it was the young road


def test_garbage_hanging_on_an_earlier_runs_object_is_still_collected(
    nodes: None, generations: Counter[int]
) -> None:
    kept: list[Node] = []
    runs = 0

    async def target() -> None:
        nonlocal runs
        alive = [node.run for node in kept]
        garbage = [run for run in Node.made if run not in alive]
        assert sorted(Node.finalised) == sorted(garbage), (Node.made, alive, Node.finalised)
        runs += 1
        if runs % 2:
            # survives this run's collection: generation 2 at the next run
            kept.append(Node(runs))
        else:
            # a cycle through the object the previous run left behind, which
            # only a collection of generation 2 can free
            old = kept.pop()
            new = Node(runs)
            old.other, new.other = new, old
        await asyncio_deposits()

    racecheck.check(target, strategy="random", schedules=30, seed=0, saturation=0)

    assert runs == 30
    assert len(Node.finalised) == 30
    assert generations[2] >= 15, dict(generations)  # those runs took the full road
