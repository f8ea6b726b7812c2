"""The default strategy sliced (racecheck.sharding_auto): auto's DPOR work is shared by the slices.

Real explorations (asyncio and threads), sliced 1, 2 and 4 ways and merged
with the rule the pytest plugin, ``racecheck run -j`` and ``racecheck report
merge`` use. The claims: every slice carries its share of the DPOR member's
schedules, not slice 1 alone; the verdict (first failure's number and token,
or the end of the search and whether it is verified) is the same for every
slice count; the slices together run exactly the one-slice run's schedules;
each slice's token replays on its own; only the merge says "verified".
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

import racecheck
from racecheck.sharding import Shard, SliceState
from sharding_programs import ORDERS, counters, five_tasks, recorded, run_slices, three_workers


def four_threads() -> None:
    log: list[str] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        for _ in range(3):
            with lock:
                log.append(name)

    threads = [threading.Thread(target=worker, args=(n,)) for n in "abcd"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


async def late_writer() -> None:
    """Fails when c's write lands between a's read and write, late in a's run."""
    state = {"x": 0}

    async def a() -> None:
        for _ in range(3):
            await asyncio.sleep(0)
        value = state["x"]
        await asyncio.sleep(0)
        state["x"] = value + 1

    async def b() -> None:
        for _ in range(3):
            await asyncio.sleep(0)

    async def c() -> None:
        for _ in range(4):
            await asyncio.sleep(0)
        state["x"] += 10

    await asyncio.gather(a(), b(), c())
    assert state["x"] == 11, state


def threads_lost_update() -> None:
    box = [0]

    def add() -> None:
        value = box[0]
        box[0] = value + 1

    threads = [threading.Thread(target=add) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box[0] == 3, box


def verdict(target: Callable[[], Any], shards: int, **options: Any) -> tuple[Any, ...]:
    merged, _, outcomes = run_slices(target, shards, **options)
    token = None
    if merged.winner is not None:
        token = outcomes[merged.winner].schedule
    return merged.schedules_run, token, merged.ended, merged.verified


#: the stated factor: a slice's share of auto's DPOR schedules, and of all its
#: schedules, is within this of every other slice's
BALANCE = 1.3


@pytest.mark.parametrize("target", [five_tasks, four_threads])
# four slices split the same DPOR schedules finer than two; two run with -m slow
@pytest.mark.parametrize("shards", [pytest.param(2, marks=pytest.mark.slow), 4])
def test_every_slice_carries_its_share_of_the_dpor_schedules(
    target: Callable[[], Any], shards: int
) -> None:
    _, states, _ = run_slices(target, shards, schedules=360)
    dpor = [s.by_member.get("dpor", 0) for s in states]
    ran = [s.ran for s in states]
    # 2 turns in 9 are DPOR's: 80 of the 360 numbers, all run (the space is large)
    assert sum(dpor) >= 70, dpor
    assert min(dpor) * BALANCE >= max(dpor), dpor
    assert min(ran) * BALANCE >= max(ran), ran
    assert sum(ran) == 360


@pytest.mark.parametrize(
    "target",
    [
        three_workers,
        late_writer,
        threads_lost_update,
        counters,
        pytest.param(five_tasks, marks=pytest.mark.slow),  # its large space: 8 s
    ],
)
def test_the_verdict_is_the_same_for_one_two_and_four_slices(target: Callable[[], Any]) -> None:
    one = verdict(target, 1, schedules=700)
    assert verdict(target, 2, schedules=700) == one
    assert verdict(target, 4, schedules=700) == one


def test_a_failure_a_sampling_member_finds_first_is_the_unsliced_runs() -> None:
    # the other members run the same schedules at the same numbers as without slices
    with pytest.raises(racecheck.RaceFound) as single:
        racecheck.check(three_workers, schedules=700)
    assert "dpor" not in single.value.strategy
    expected = (single.value.schedules_run, single.value.schedule)
    for shards in (1, 2, 4):
        assert verdict(three_workers, shards, schedules=700)[:2] == expected


@pytest.mark.parametrize("target", [late_writer, threads_lost_update])
def test_each_slices_token_replays_on_its_own(target: Callable[[], Any]) -> None:
    _, _, outcomes = run_slices(target, 4, schedules=700)
    tokens = [o.schedule for o in outcomes if isinstance(o, racecheck.RaceFound)]
    assert tokens
    for token in tokens:
        with pytest.raises(racecheck.RaceFound) as again:
            racecheck.replay(target, token)
        assert again.value.schedule == token


def test_a_correct_program_is_verified_by_the_merge_alone() -> None:
    merged, states, outcomes = run_slices(counters, 2, schedules=700)
    assert merged.verified and merged.exhausted and merged.winner is None
    assert not any(o.verified for o in outcomes)  # no slice says it
    assert all(s.dpor is not None and s.dpor["done"] for s in states)
    alone = racecheck.check(counters, schedules=700, shard="1/1")
    assert not alone.verified  # one slice alone neither
    # a budget that ends before the last subtree is finished verifies nothing
    short, _, _ = run_slices(counters, 2, schedules=merged.schedules_run - 1)
    assert not short.verified and not short.ended


@pytest.mark.parametrize("shards", [2, 4])
def test_the_slices_together_run_exactly_the_one_slice_runs_schedules(shards: int) -> None:
    ORDERS.clear()
    one_slice = SliceState(Shard(1, 1))
    racecheck.check(recorded, schedules=270, shard=one_slice, coverage=False)
    one = Counter(ORDERS)
    assert sum(one.values()) == one_slice.ran
    ORDERS.clear()
    states = []
    for i in range(1, shards + 1):
        state = SliceState(Shard(i, shards))
        racecheck.check(recorded, schedules=270, shard=state, coverage=False)
        states.append(state)
    together = Counter(ORDERS)
    assert sum(s.ran for s in states) == one_slice.ran
    # every schedule of the one-slice run ran in some slice ...
    assert not one - together
    # ... and what ran more than once was calibration: schedule 1 and split
    # DPOR's probes, which every slice runs and one slice counts
    extra = together - one
    assert set(extra) <= set(one)
    assert sum(together.values()) - sum(s.ran for s in states) == sum(extra.values())


PLUGIN_TESTS = """
import asyncio
import threading
import pytest


@pytest.mark.racecheck(schedules=700)
async def test_late_writer():
    state = {"x": 0}

    async def a():
        for _ in range(3):
            await asyncio.sleep(0)
        value = state["x"]
        await asyncio.sleep(0)
        state["x"] = value + 1

    async def b():
        for _ in range(3):
            await asyncio.sleep(0)

    async def c():
        for _ in range(4):
            await asyncio.sleep(0)
        state["x"] += 10

    await asyncio.gather(a(), b(), c())
    assert state["x"] == 11, state


@pytest.mark.racecheck(schedules=700)
def test_threads_lost_update():
    box = [0]

    def add():
        value = box[0]
        box[0] = value + 1

    threads = [threading.Thread(target=add) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box[0] == 3, box
"""


# the whole case (both tests, 4 shard items too, every replay) takes some 40 s
# on a loaded machine: `-m slow`; CI runs the asyncio test with two workers
@pytest.mark.parametrize("whole", [pytest.param(True, marks=pytest.mark.slow), False])
def test_pytest_shards_with_the_default_strategy_give_the_one_slice_tokens(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, whole: bool
) -> None:
    import re

    pytest.importorskip("xdist")
    monkeypatch.setenv("RACECHECK_DB", "none")
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    pytester.makepyfile(test_auto_shards=PLUGIN_TESTS)
    base = ("-p", "no:cacheprovider", "-p", "no:randomly")
    replay = re.compile(r"pytest '([^']+)' --racecheck-replay=(rc1:\S+)")

    select = () if whole else ("-k", "late_writer")
    expected = 2 if whole else 1

    def tokens(*args: str) -> dict[str, str]:
        result = pytester.runpytest_subprocess(*base, *select, *args)
        result.assert_outcomes(failed=expected)
        found = dict(m.groups() for m in map(replay.search, result.stdout.lines) if m)
        assert len(found) == expected, result.stdout.str()
        return found

    one = tokens("--racecheck-shard=1/1")
    assert tokens("-n", "2", "--racecheck-shards=auto") == one
    if whole:
        assert tokens("-n", "2", "--racecheck-shards=4") == one
    for nodeid, token in one.items():  # each replays serially
        again = pytester.runpytest_subprocess(*base, nodeid, f"--racecheck-replay={token}")
        again.assert_outcomes(failed=1)
        again.stdout.fnmatch_lines(["*racecheck: replayed schedule fails again*"])
