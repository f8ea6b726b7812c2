"""POS, SURW and PCT with a depth drawn per schedule: found bugs, honest notes, replay."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import racecheck
from racecheck.errors import UsageError
from racecheck.strategies.pos import POSChooser
from racecheck.strategies.surw import SURWChooser

SAMPLERS = ["pos", "surw", "pct-random"]


def starved(steps: int) -> Callable[[], Any]:
    """An observer that fails only if it runs after all ``steps`` of a counter."""

    async def target() -> None:
        state = {"n": 0}

        async def counter() -> None:
            for _ in range(steps):
                state["n"] += 1
                await asyncio.sleep(0)

        async def observer() -> None:
            assert state["n"] < steps, f"observer starved for {steps} steps"

        await asyncio.gather(counter(), observer())

    target.__name__ = target.__qualname__ = f"starved_{steps}"
    return target


async def lost_update() -> None:
    balance = [0]

    async def deposit(amount: int) -> None:
        current = balance[0]
        await asyncio.sleep(0)
        balance[0] = current + amount

    await asyncio.gather(deposit(10), deposit(5))
    assert balance[0] == 15, balance[0]


async def fixed_deposits() -> None:
    lock = asyncio.Lock()
    balance = [0]

    async def deposit(amount: int) -> None:
        async with lock:
            current = balance[0]
            await asyncio.sleep(0)
            balance[0] = current + amount

    await asyncio.gather(deposit(10), deposit(5), deposit(1))
    assert balance[0] == 16


@pytest.mark.parametrize("strategy", ["pos", "surw"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_actor_far_ahead_is_found(strategy: str, seed: int) -> None:
    """A random walk needs about 2**40 runs for this; priority and remaining-work sampling ~40."""
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(starved(40), strategy=strategy, schedules=400, seed=seed, minimize=False)
    assert found.value.kind == "exception"
    assert found.value.schedules_run <= 400


@pytest.mark.parametrize("strategy", SAMPLERS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_lost_update_is_found_and_its_token_replays(strategy: str, seed: int) -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(lost_update, strategy=strategy, schedules=200, seed=seed)
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(lost_update, found.value.schedule)
    assert again.value.kind == found.value.kind == "exception"
    assert isinstance(again.value.cause, AssertionError)


@pytest.mark.parametrize("strategy", SAMPLERS)
def test_same_seed_same_schedules(strategy: str) -> None:
    def first_failure() -> tuple[int, str]:
        with pytest.raises(racecheck.RaceFound) as found:
            racecheck.check(starved(12), strategy=strategy, schedules=500, seed=4, minimize=False)
        return found.value.schedules_run, found.value.schedule

    assert first_failure() == first_failure()


@pytest.mark.parametrize("strategy", SAMPLERS)
def test_schedule_one_is_the_natural_order(strategy: str) -> None:
    async def fails_in_fifo_order() -> None:
        order: list[str] = []

        async def first() -> None:
            order.append("first")

        async def second() -> None:
            order.append("second")

        await asyncio.gather(first(), second())
        assert order == ["second", "first"]

    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(fails_in_fifo_order, strategy=strategy, schedules=50, seed=7)
    assert found.value.schedules_run == 1


@pytest.mark.parametrize("strategy", ["pos", "surw"])
def test_sampling_notes_claim_no_coverage(strategy: str) -> None:
    report = racecheck.check(fixed_deposits, strategy=strategy, schedules=60)
    text = str(report)
    assert not report.exhausted
    assert "no coverage guarantee" in text
    assert "missed with probability" not in text
    assert "exhaust" not in text.split("\n", 1)[1]


def test_pct_random_depth_counts_the_schedules_per_depth() -> None:
    report = racecheck.check(fixed_deposits, strategy="pct-random", schedules=101)
    text = str(report)
    assert "drew the bug depth per schedule from 1 to 5" in text
    # 100 sampled schedules, spread over the depths, each counted once
    counts = [
        int(part.split(": ")[1])
        for part in text.split("(schedules per depth: ")[1].split(";")[0].split(", ")
    ]
    assert sum(counts) == 100 and len(counts) == 5
    assert "bugs needing more than 5 ordering constraints are not covered" in text
    assert "missed" not in text


def test_pct_depth_random_option_is_the_same_strategy() -> None:
    def token(**options: Any) -> str:
        with pytest.raises(racecheck.RaceFound) as found:
            racecheck.check(starved(10), schedules=500, seed=2, minimize=False, **options)
        return found.value.schedule

    assert token(strategy="pct", depth="random") == token(strategy="pct-random")


@pytest.mark.parametrize("depth", ["deep", 0, -1, 2.5])
def test_a_bad_pct_depth_is_a_usage_error(depth: object) -> None:
    with pytest.raises(UsageError, match="depth"):
        racecheck.check(fixed_deposits, strategy="pct", depth=depth, schedules=5)


def test_pos_observe_redraws_the_actors_that_race() -> None:
    """With access information, a step redraws whoever last touched what it wrote."""
    pos = POSChooser(seed=3)
    pos.begin(2)
    pos.choose([1, 2, 3], 1)
    balance, other = (7, "balance", True, "attr"), (8, "other", False, "attr")
    pos.observe(0, 2, [balance], [1, 2, 3])
    pos.observe(1, 3, [other], [1, 2, 3])
    before = dict(pos._priority)
    pos.observe(2, 1, [(7, "balance", False, "attr")], [1, 2, 3])  # races with 2, not 3
    assert pos._priority[2] != before[2]
    assert pos._priority[3] == before[3]
    pos.end([(3, 0)], False, 3)
    assert "re-drawn" in pos.notes(2)[0]


def test_surw_learns_each_actors_remaining_work() -> None:
    """After the natural-order run, the counter is known to take ~40 steps, the observer 1."""
    surw = SURWChooser(seed=0)
    # One natural-order run of starved(40), decision by decision:
    surw.begin(1)
    surw.choose([1, 2], 1)  # counter's first step
    surw.choose([2, 1], 2)  # observer runs and finishes
    surw.end([(2, 0), (2, 0)], False, 42)  # counter ran alone up to step 42
    assert surw.estimate[1] >= 40
    assert surw.estimate[2] == 1
    # so the next run starves the observer for the counter's whole run about 1 time in 41,
    # not 1 in 2**40: its weight is 1 against the counter's remaining 39
    surw.begin(2)
    surw.choose([1, 2], 1)
    assert surw._weighted([1, 2]) in (0, 1)


def test_strategies_import_downward_only() -> None:
    """Strategies, shrink and saturation know nothing of explore, the CLI or pytest."""
    root = Path(racecheck.__file__).parent
    files = [
        *sorted((root / "strategies").glob("*.py")),
        root / "shrink.py",
        root / "saturation.py",
    ]
    upward = {"racecheck.explore", "racecheck.cli", "racecheck.pytest_plugin", "racecheck.api"}
    offenders = []
    for path in files:
        if path.name == "hypothesis.py":
            continue  # drives whole explorations itself (its own runner), a known exception
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in upward:
                offenders.append(f"{path.name}: {node.module}")
            elif isinstance(node, ast.Import):
                offenders += [f"{path.name}: {a.name}" for a in node.names if a.name in upward]
    assert not offenders, offenders


def test_surw_schedule_n_depends_only_on_the_seed_and_the_natural_order() -> None:
    """Shards skip schedule numbers: SURW's schedule N must not learn from the ones before it."""

    def natural(surw: SURWChooser) -> None:
        surw.begin(1)
        surw.choose([1, 2], 1)
        surw.choose([2, 1], 2)
        surw.end([(2, 0), (2, 0)], False, 42)

    def run(surw: SURWChooser, number: int, steps: int) -> list[int]:
        surw.begin(number)
        picks = [surw.choose([1, 2, 3], step) for step in range(1, steps)]
        surw.end([(3, p) for p in picks], False, steps)
        return picks

    every = SURWChooser(seed=4)
    natural(every)
    for number in range(2, 9):
        run(every, number, steps=60 + number)  # long runs: more steps than the profile saw
    skipping = SURWChooser(seed=4)
    natural(skipping)
    assert run(every, 9, steps=30) == run(skipping, 9, steps=30)
