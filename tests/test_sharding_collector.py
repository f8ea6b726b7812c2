"""What a slice's split DPOR searches cost the cyclic collector after every run.

An exploration collects after every schedule (the session's quiet_gc), and
that collection walks every container made since the exploration began. The
unsliced portfolio's DPOR member exists before schedule 1, so it is frozen with
the rest of the start-up heap and never walked. A slice's subtree searches
(racecheck.sharding_auto, racecheck.sharding_dpor) are made later, so what they
keep is walked after every run of the slice, whichever member ran it. What a
search keeps that grows with its runs (one key per trace it has run) must
therefore not be walked: otherwise every schedule of a slice gets slower the
longer the slice runs (measured on the held-out rare race: a collection cost
a slice 0.27 ms against the unsliced run's 0.17 ms).

Real explorations on asyncio; each search is looked at where it lives,
between two runs of the slice (the test notes every search made, as it is
made).
"""

from __future__ import annotations

import asyncio
import gc
import types
import weakref
from typing import Any

import pytest

import racecheck
from racecheck.sharding import SliceState, parse_shard
from racecheck.sharding_dpor import SubtreeDPOR


async def three_counters() -> None:
    """Three tasks of four conflicting steps each: tens of thousands of traces."""
    box = {"x": 0}

    async def add() -> None:
        for _ in range(4):
            box["x"] += 1
            await asyncio.sleep(0)

    await asyncio.gather(add(), add(), add())


def walked(root: object) -> int:
    """The references the collector follows when it walks what ``root`` holds.

    Only containers the collector tracks are walked, and each costs it one
    visit per reference it holds. Types, modules and functions are shared
    with everything else and not the search's own.
    """
    shared = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
    seen: set[int] = set()
    todo: list[object] = [root]
    visits = 0
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, shared) or not gc.is_tracked(obj):
            continue
        seen.add(id(obj))
        referents = gc.get_referents(obj)
        visits += len(referents)
        todo.extend(referents)
    return visits


def searches_made(monkeypatch: pytest.MonkeyPatch) -> list[weakref.ref[SubtreeDPOR]]:
    """Every subtree search made from here on, noted as it is made."""
    made: list[weakref.ref[SubtreeDPOR]] = []
    make = SubtreeDPOR.__init__

    def noted(self: SubtreeDPOR, *args: Any) -> None:
        make(self, *args)
        made.append(weakref.ref(self))

    monkeypatch.setattr(SubtreeDPOR, "__init__", noted)
    return made


def samples_of_one_search(
    monkeypatch: pytest.MonkeyPatch, shard: str, strategy: str, schedules: int
) -> list[tuple[int, int]]:
    """(traces, references walked) of the first subtree search, every 50 schedules."""
    samples: list[tuple[int, int]] = []
    made = searches_made(monkeypatch)

    def progress(done: int, total: int) -> None:
        search = made[0]() if made else None
        if done % 50 == 0 and search is not None:
            samples.append((search.traces, walked(search)))

    options: dict[str, Any] = {"shard": SliceState(parse_shard(shard)), "progress": progress}
    report = racecheck.check(
        three_counters, strategy=strategy, schedules=schedules, coverage=False, **options
    )
    assert report.schedules_run == schedules
    return samples


@pytest.mark.slow  # CI time: its siblings cover the feature in CI
def test_a_subtree_searchs_walked_references_do_not_grow_with_its_traces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # split DPOR alone: subtree 0's search runs every schedule of this budget
    samples = samples_of_one_search(monkeypatch, "1/1", "dpor", schedules=700)
    (early, at_early), (late, at_late) = samples[1], samples[-1]
    assert late - early >= 300, samples  # most of its runs were new traces
    # its path, which it walks back and forth, is ~12 states deep: what it holds
    # stays within a bound; a key per trace would grow by one per trace
    assert at_late - at_early < (late - early) // 2, samples


def test_a_search_between_its_turns_keeps_no_step_of_its_last_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # auto sliced: a slice keeps its groups' searches alive side by side, each
    # waiting for its next turn while the other members and groups run; what a
    # waiting search holds is walked by the collection after every one of them
    made = searches_made(monkeypatch)
    held: list[tuple[int, int, int]] = []  # (schedule, live searches, steps they still hold)

    def progress(done: int, total: int) -> None:
        live = [s for s in (ref() for ref in made) if s is not None and s.traces]
        held.append((done, len(live), sum(len(s.events) + len(s._enabled) for s in live)))

    racecheck.check(
        three_counters, schedules=40, shard=SliceState(parse_shard("1/2")), progress=progress
    )
    assert max(live for _, live, _ in held) >= 2, held  # searches did wait side by side
    # between runs every search has analysed its last one: its steps are no longer needed
    assert all(steps == 0 for _, _, steps in held), held
