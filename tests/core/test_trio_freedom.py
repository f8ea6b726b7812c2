"""trio's full scheduling freedom: a runnable task may be left in the run queue for later batches.

trio runs its run queue in batches, but nothing in its semantics promises that
a runnable task runs in the next batch: a task that is runnable may stay queued
while others take several steps. Two classic bugs need exactly that freedom:

* a lost update where the second task reaches the read three checkpoints after
  the first one read (the first must stay queued while the second catches up);
* an ABBA deadlock between two ``trio.Lock`` where one side starts late.

Both are held-out shapes: each has an asyncio twin of the same shape (compared
here under the same budgets) and a fixed version that must run clean. Only the
public API is used: ``racecheck.check(..., backend="trio")``, ``racecheck.replay``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import pytest

trio = pytest.importorskip("trio")

import racecheck  # noqa: E402

Target = Callable[[], Any]

SEEDS = (0, 1, 2)
BUDGET = 2000
#: how many checkpoints late the second side starts
LATE = 3


# ------------------------------------------------------------ trio targets


async def trio_late_lost_update() -> None:
    balance = {"value": 0}

    async def deposit(amount: int) -> None:
        current = balance["value"]
        await trio.sleep(0)
        balance["value"] = current + amount

    async def late_deposit(amount: int) -> None:
        for _ in range(LATE):
            await trio.sleep(0)
        await deposit(amount)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(deposit, 10)
        nursery.start_soon(late_deposit, 5)
    assert balance["value"] == 15, balance


async def trio_late_lost_update_fixed() -> None:
    balance = {"value": 0}
    lock = trio.Lock()

    async def deposit(amount: int) -> None:
        async with lock:
            current = balance["value"]
            await trio.sleep(0)
            balance["value"] = current + amount

    async def late_deposit(amount: int) -> None:
        for _ in range(LATE):
            await trio.sleep(0)
        await deposit(amount)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(deposit, 10)
        nursery.start_soon(late_deposit, 5)
    assert balance["value"] == 15, balance


def _trio_late_abba(fixed: bool) -> Target:
    async def late_abba() -> None:
        a, b = trio.Lock(), trio.Lock()

        async def early() -> None:
            async with a:
                await trio.sleep(0)
                async with b:
                    pass

        async def late() -> None:
            for _ in range(LATE):
                await trio.sleep(0)
            first, second = (a, b) if fixed else (b, a)  # fixed: one global lock order
            async with first:
                await trio.sleep(0)
                async with second:
                    pass

        async with trio.open_nursery() as nursery:
            nursery.start_soon(early)
            nursery.start_soon(late)

    late_abba.__qualname__ = late_abba.__name__ = (
        "trio_late_abba_fixed" if fixed else "trio_late_abba"
    )
    return late_abba


trio_late_abba = _trio_late_abba(fixed=False)
trio_late_abba_fixed = _trio_late_abba(fixed=True)


# -------------------------------------------------------- the asyncio twins


async def asyncio_late_lost_update() -> None:
    balance = {"value": 0}

    async def deposit(amount: int) -> None:
        current = balance["value"]
        await asyncio.sleep(0)
        balance["value"] = current + amount

    async def late_deposit(amount: int) -> None:
        for _ in range(LATE):
            await asyncio.sleep(0)
        await deposit(amount)

    await asyncio.gather(deposit(10), late_deposit(5))
    assert balance["value"] == 15, balance


def _asyncio_late_abba(fixed: bool) -> Target:
    async def late_abba() -> None:
        a, b = asyncio.Lock(), asyncio.Lock()

        async def early() -> None:
            async with a:
                await asyncio.sleep(0)
                async with b:
                    pass

        async def late() -> None:
            for _ in range(LATE):
                await asyncio.sleep(0)
            first, second = (a, b) if fixed else (b, a)
            async with first:
                await asyncio.sleep(0)
                async with second:
                    pass

        await asyncio.gather(early(), late())

    late_abba.__qualname__ = late_abba.__name__ = (
        "asyncio_late_abba_fixed" if fixed else "asyncio_late_abba"
    )
    return late_abba


asyncio_late_abba = _asyncio_late_abba(fixed=False)


TRIO_BUGS: dict[str, tuple[Target, str]] = {
    "late_lost_update": (trio_late_lost_update, "exception"),
    "late_abba": (trio_late_abba, "deadlock"),
}
ASYNCIO_TWINS: dict[str, tuple[Target, str]] = {
    "late_lost_update": (asyncio_late_lost_update, "exception"),
    "late_abba": (asyncio_late_abba, "deadlock"),
}
TRIO_FIXED: dict[str, Target] = {
    "late_lost_update": trio_late_lost_update_fixed,
    "late_abba": trio_late_abba_fixed,
}


def find(target: Target, backend: str, **options: Any) -> racecheck.RaceFound:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, backend=backend, schedules=BUDGET, **options)
    return info.value


# ------------------------------------------------------- found, and replayed


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("strategy", ["auto", "random", "pct"])
@pytest.mark.parametrize("bug", sorted(TRIO_BUGS))
def test_trio_bug_needing_a_postponed_task_is_found(bug: str, strategy: str, seed: int) -> None:
    target, kind = TRIO_BUGS[bug]
    found = find(target, "trio", strategy=strategy, seed=seed)
    assert found.kind == kind
    assert found.schedules_run <= BUDGET
    if kind == "exception":
        assert isinstance(found.cause, AssertionError)
        assert "'value': 10" in str(found.cause) or "'value': 5" in str(found.cause)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("strategy", ["auto", "random", "pct"])
@pytest.mark.parametrize("bug", sorted(ASYNCIO_TWINS))
def test_asyncio_twin_is_found_too(bug: str, strategy: str, seed: int) -> None:
    target, kind = ASYNCIO_TWINS[bug]
    found = find(target, "asyncio", strategy=strategy, seed=seed)
    assert found.kind == kind


@pytest.mark.parametrize("bug", sorted(TRIO_BUGS))
def test_exhaustive_never_claims_exhausted_without_finding_it(bug: str) -> None:
    target, kind = TRIO_BUGS[bug]
    try:
        report = racecheck.check(target, backend="trio", strategy="exhaustive", schedules=BUDGET)
    except racecheck.RaceFound as found:
        assert found.kind == kind
    else:
        assert not report.exhausted, str(report)
        pytest.fail(f"exhaustive missed the {bug} in {report.schedules_run} schedules")


@pytest.mark.parametrize("bug", sorted(TRIO_BUGS))
def test_found_token_replays_exactly(bug: str) -> None:
    target, kind = TRIO_BUGS[bug]
    found = find(target, "trio", strategy="random", seed=1)
    for _ in range(2):
        with pytest.raises(racecheck.RaceFound) as again:
            racecheck.replay(target, found.schedule, backend="trio")
        assert again.value.kind == kind
        assert again.value.schedule == found.schedule
        assert str(again.value.cause) == str(found.cause)


@pytest.mark.parametrize("strategy", ["auto", "random", "pct"])
def test_same_seed_same_schedule_same_token(strategy: str) -> None:
    first = find(trio_late_lost_update, "trio", strategy=strategy, seed=2)
    second = find(trio_late_lost_update, "trio", strategy=strategy, seed=2)
    assert first.schedule == second.schedule
    assert first.schedules_run == second.schedules_run


# ------------------------------------------------------------- fixed versions


@pytest.mark.parametrize("strategy", ["auto", "random", "pct"])
@pytest.mark.parametrize("bug", sorted(TRIO_FIXED))
def test_fixed_version_runs_clean(bug: str, strategy: str) -> None:
    report = racecheck.check(
        TRIO_FIXED[bug], backend="trio", strategy=strategy, schedules=500, seed=0
    )
    assert report.schedules_run >= 1
    assert not report.warnings


@pytest.mark.parametrize("bug", sorted(TRIO_FIXED))
def test_fixed_version_is_exhaustively_clean(bug: str) -> None:
    """Small enough to run every schedule of trio's run-queue freedom: none fails."""
    report = racecheck.check(TRIO_FIXED[bug], backend="trio", strategy="exhaustive", schedules=5000)
    assert report.exhausted, str(report)
    assert report.schedules_run < 5000


def test_polling_loop_is_no_false_step_limit() -> None:
    """Batches made trio fair by construction; postponing does not starve a setter for good.

    A strategy that favours the poller (PCT's priorities) must still let the
    setter finish: the engine's fairness bound and the step bound do that.
    """

    async def polling() -> None:
        state = {"ready": False}

        async def setter() -> None:
            for _ in range(5):
                await trio.sleep(0)
            state["ready"] = True

        async def poller() -> None:
            while not state["ready"]:
                await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(poller)
            nursery.start_soon(setter)

    for strategy in ("pct", "random"):
        report = racecheck.check(polling, backend="trio", strategy=strategy, schedules=100, seed=1)
        assert report.schedules_run == 100


# --------------------------------------------------- the freedom, precisely


def _merges(left: list[str], right: list[str]) -> set[tuple[str, ...]]:
    """Every interleaving of two sequences that keeps each one's own order."""
    total = len(left) + len(right)
    merged: set[tuple[str, ...]] = set()
    for places in itertools.combinations(range(total), len(left)):
        ls, rs = iter(left), iter(right)
        merged.add(tuple(next(ls) if i in places else next(rs) for i in range(total)))
    return merged


def test_exhaustive_reaches_every_interleaving_and_only_then_claims_exhausted() -> None:
    """Two tasks, three checkpoint-separated steps each: trio allows all 20 merges.

    Reordering within batches only reaches the merges where neither task gets
    more than one step ahead; postponing a runnable task reaches the rest.
    """
    seen: set[tuple[str, ...]] = set()

    async def two_walkers() -> None:
        log: list[str] = []

        async def walker(name: str) -> None:
            for step in range(3):
                log.append(f"{name}{step}")
                await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(walker, "a")
            nursery.start_soon(walker, "b")
        seen.add(tuple(log))

    report = racecheck.check(two_walkers, backend="trio", strategy="exhaustive", schedules=5000)
    assert seen == _merges(["a0", "a1", "a2"], ["b0", "b1", "b2"])
    assert report.exhausted, str(report)
    assert report.schedules_run < 5000


def test_natural_order_is_trios_batch_order() -> None:
    """The all-zero schedule (schedule 1 of exhaustive) is trio's own batch order."""
    logs: list[list[str]] = []

    async def two_walkers() -> None:
        log: list[str] = []

        async def walker(name: str) -> None:
            for step in range(2):
                log.append(f"{name}{step}")
                await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(walker, "a")
            nursery.start_soon(walker, "b")
        logs.append(log)

    racecheck.check(two_walkers, backend="trio", strategy="exhaustive", schedules=1)
    assert logs == [["a0", "b0", "a1", "b1"]]


def test_steps_stay_atomic_between_checkpoints() -> None:
    """Postponing moves whole steps: code between two checkpoints is never split."""

    async def counters() -> None:
        state = {"value": 0}

        async def bump() -> None:
            for _ in range(3):
                current = state["value"]  # no checkpoint before the write: atomic in trio
                state["value"] = current + 1
                await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(bump)
            nursery.start_soon(bump)
        assert state["value"] == 6, state

    report = racecheck.check(counters, backend="trio", strategy="exhaustive", schedules=5000)
    assert report.exhausted, str(report)


def test_postponing_keeps_deadlines_and_cancellation() -> None:
    """Deadlines fire at their virtual time and cancel scopes still land, whatever waits."""

    async def deadline_and_cancel() -> None:
        log: list[Any] = []
        scope = trio.CancelScope()

        async def sleeper() -> None:
            with trio.move_on_after(1) as timeout:
                await trio.sleep(0)
                await trio.sleep(5)
            log.append(("sleeper", trio.current_time(), timeout.cancelled_caught))

        async def victim() -> None:
            with scope:
                while True:  # spins until cancelled, at one of its checkpoints
                    await trio.sleep(0)
            log.append("victim")

        async def killer() -> None:
            await trio.sleep(0)
            await trio.sleep(0)
            scope.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(sleeper)
            nursery.start_soon(victim)
            nursery.start_soon(killer)
        assert sorted(map(str, log)) == ["('sleeper', 1.0, True)", "victim"], log

    for strategy in ("random", "pct"):
        report = racecheck.check(
            deadline_and_cancel, backend="trio", strategy=strategy, schedules=300, seed=0
        )
        assert report.schedules_run == 300
