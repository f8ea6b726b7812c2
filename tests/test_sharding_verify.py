"""Sliced ``auto`` verifies a correct program about where the unsliced run does.

The unsliced portfolio's DPOR member is plain DPOR, which verifies a small
program in a handful of runs and, once its search looks within reach, takes
most of the budget (racecheck.strategies.portfolio). A sliced run must stay
one search whatever the slice count (racecheck.sharding_auto), so it cannot
follow one slice's view; these tests hold it to the unsliced run's schedule
number, over 1, 2 and 4 slices, on real asyncio and threads programs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import racecheck
from sharding_programs import counters, five_tasks, run_slices


def two_threads_locked() -> None:
    lock = threading.Lock()
    box = {"n": 0}

    def bump() -> None:
        with lock:
            box["n"] += 1

    workers = [threading.Thread(target=bump) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert box["n"] == 2


def threads_counter() -> None:
    """Three threads, two locked increments each: a few hundred DPOR runs."""
    lock = threading.Lock()
    box = {"n": 0}

    def bump() -> None:
        for _ in range(2):
            with lock:
                box["n"] += 1

    workers = [threading.Thread(target=bump) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert box["n"] == 6


@pytest.mark.parametrize("target", [counters, two_threads_locked])
def test_a_small_program_is_verified_at_the_unsliced_runs_schedule(
    target: Callable[[], Any],
) -> None:
    alone = racecheck.check(target, schedules=3000)
    assert alone.verified
    for shards in (1, 2, 4):
        merged, _, _ = run_slices(target, shards, schedules=3000)
        assert merged.verified, shards
        assert merged.schedules_run == alone.schedules_run, shards


@pytest.mark.slow  # CI: the small programs above check the same rule
def test_a_few_hundred_dpor_runs_are_verified_about_as_early_as_unsliced() -> None:
    alone = racecheck.check(threads_counter, schedules=3000)
    assert alone.verified
    ends = set()
    for shards in (1, 2, 4):
        merged, _, _ = run_slices(threads_counter, shards, schedules=3000)
        assert merged.verified, shards
        ends.add(merged.schedules_run)
    # one search for every slice count, ending within a quarter of the unsliced run's
    assert len(ends) == 1, ends
    assert ends.pop() <= alone.schedules_run * 1.25


@pytest.mark.slow  # CI: the small programs above check the same rule
def test_without_saturation_the_slices_do_not_shift_either() -> None:
    # saturation=0 turns the unsliced portfolio's shift to DPOR off; so it does sliced
    alone = racecheck.check(threads_counter, schedules=3000, saturation=0)
    assert alone.verified
    merged, _, _ = run_slices(threads_counter, 2, schedules=3000, saturation=0)
    assert merged.verified
    assert merged.schedules_run == alone.schedules_run


def _whole_runs(outcome: Any) -> int:
    """How many runs of plain DPOR every slice made before the split (from its note)."""
    import re

    for note in outcome.notes:
        found = re.search(r"plain DPOR in every slice for (\d+) runs?; .* so it was split", note)
        if found:
            return int(found.group(1))
    raise AssertionError(f"no split in {outcome.notes}")


@pytest.mark.slow  # CI time: its siblings cover the feature in CI
def test_a_large_search_is_split_early_at_the_same_run_for_every_slice_count() -> None:
    # a search no budget verifies is split after a few runs, so the slices share it
    runs = set()
    for shards in (1, 2, 4):
        _, _, outcomes = run_slices(five_tasks, shards, schedules=400)
        runs.update(_whole_runs(o) for o in outcomes)
    assert len(runs) == 1, runs
    assert runs.pop() <= 64
