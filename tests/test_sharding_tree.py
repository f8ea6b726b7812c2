"""The exhaustive search split across shards by schedule prefix (racecheck.sharding_tree).

Real explorations split 1, 2 and 4 ways and merged with the same rule the
pytest plugin, ``racecheck run -j`` and ``racecheck report merge`` use. The
claims: the shards together run the schedules of one process, the merged
failure is the one process's (its schedule number and token), a failure past
one process's budget is not reported, each token replays on its own, and only
the merge says "exhausted".
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import racecheck
from racecheck.sharding import Merged, Shard, ShardResult, SliceState, merge
from sharding_programs import (
    ORDERS,
    common_race,
    recorded_short,
    recorded_threads,
    run_slices,
    three_workers,
)


def split(
    target: Callable[[], Any], shards: int, **options: Any
) -> tuple[Merged, list[SliceState], list[Any]]:
    """Every slice of an exhaustive exploration, merged: (verdict, slice states, outcomes)."""
    return run_slices(target, shards, strategy="exhaustive", **options)


@pytest.mark.parametrize("shards", [1, 2, 4])
def test_the_merged_failure_is_the_single_runs_number_and_token(shards: int) -> None:
    with pytest.raises(racecheck.RaceFound) as single:
        racecheck.check(three_workers, strategy="exhaustive", schedules=3000)
    assert single.value.schedules_run > 100  # deep enough for several subtrees to matter
    merged, states, outcomes = split(three_workers, shards, schedules=3000)
    assert merged.winner is not None
    assert merged.schedules_run == single.value.schedules_run
    winner = outcomes[merged.winner]
    assert isinstance(winner, racecheck.RaceFound)
    assert winner.schedule == single.value.schedule
    if shards > 1:
        assert all(s.plan == "subtrees" for s in states)
        assert len({s.tree.depth for s in states}) == 1


def test_a_failure_past_the_single_runs_budget_is_not_reported() -> None:
    with pytest.raises(racecheck.RaceFound) as single:
        racecheck.check(three_workers, strategy="exhaustive", schedules=3000)
    budget = single.value.schedules_run - 1
    alone = racecheck.check(three_workers, strategy="exhaustive", schedules=budget)
    assert alone.schedules_run == budget
    merged, _, outcomes = split(three_workers, 4, schedules=budget)
    # some slice meets the failure within its own budget of runs ...
    assert any(isinstance(o, racecheck.RaceFound) for o in outcomes)
    # ... but one process would not have reached it: no failure, the budget run
    assert (merged.winner, merged.schedules_run, merged.ended) == (None, budget, False)


@pytest.mark.slow  # CI time: its siblings cover the feature in CI
def test_each_slices_token_replays_on_its_own() -> None:
    tokens: list[tuple[Callable[[], Any], str]] = []
    for target in (three_workers, common_race):
        for shards in (2, 4):
            _, _, outcomes = split(target, shards, schedules=3000)
            tokens += [(target, o.schedule) for o in outcomes if isinstance(o, racecheck.RaceFound)]
    assert len(tokens) >= 4
    for target, token in tokens:
        with pytest.raises(racecheck.RaceFound) as again:
            racecheck.replay(target, token)
        assert again.value.schedule == token


@pytest.mark.parametrize(
    ("target", "bound"),
    # threads make too many schedules to run them all; a bound keeps the search whole.
    # Bound 1 (slow) is a part of what the unbounded search and bound 2 cover.
    [
        (recorded_short, None),
        pytest.param(recorded_short, 1, marks=pytest.mark.slow),
        pytest.param(recorded_threads, 1, marks=pytest.mark.slow),
        (recorded_threads, 2),
    ],
)
# two slices of the unbounded search are the costliest case and check what four check
# with more slices to merge: they run with -m slow
@pytest.mark.parametrize("shards", [pytest.param(2, marks=pytest.mark.slow), 4])
def test_the_slices_together_run_the_whole_search_and_only_the_merge_says_exhausted(
    target: Callable[[], Any], shards: int, bound: int | None
) -> None:
    options: dict[str, Any] = {"schedules": 20000, "coverage": False}
    if bound is not None:
        options["preemption_bound"] = bound
    ORDERS.clear()
    single = racecheck.check(target, strategy="exhaustive", **options)
    assert single.exhausted and single.schedules_run < 20000
    one = Counter(ORDERS)
    ORDERS.clear()
    merged, states, outcomes = split(target, shards, **options)
    together = Counter(ORDERS)
    assert not any(o.exhausted for o in outcomes)  # a slice alone never claims it
    assert (merged.winner, merged.ended, merged.exhausted) == (None, True, True)
    assert merged.schedules_run == single.schedules_run
    # every slice's own runs add up to the single run's; the rest are the first
    # schedules of the other slices' subtrees, which the single run runs too
    assert sum(s.ran for s in states) == single.schedules_run
    assert set(together) == set(one)
    assert not one - together
    assert sum(s.ran for s in states if s.ran) > states[0].ran  # the work is shared


def test_a_slice_that_runs_out_of_budget_leaves_the_search_unfinished() -> None:
    single = racecheck.check(recorded_short, strategy="exhaustive", schedules=20000)
    short = single.schedules_run // 3
    alone = racecheck.check(recorded_short, strategy="exhaustive", schedules=short)
    merged, _, _ = split(recorded_short, 2, schedules=short)
    assert not alone.exhausted
    assert (merged.winner, merged.schedules_run, merged.ended, merged.exhausted) == (
        None,
        short,
        False,
        False,
    )


def test_merge_refuses_slices_of_different_plans() -> None:
    from racecheck.errors import UsageError

    _, states, _ = split(recorded_short, 2, schedules=200)
    plain = ShardResult(Shard(2, 2), ran=5, covered=5, budget=200)
    with pytest.raises(UsageError, match="did not split"):
        merge([ShardResult.from_dict(states[0].to_dict(), None), plain])


def test_a_bounded_dpor_says_it_runs_in_one_shard() -> None:
    report = racecheck.check(recorded_short, strategy="dpor", schedules=200, bound=2, shard="2/2")
    assert report.schedules_run == 0
    assert any("bounded DPOR is not split" in note for note in report.notes)


# ---------------------------------------------------------------- the CLI

SCENARIO = textwrap.dedent(
    """
    import asyncio
    import racecheck


    def make(n_c):
        async def target():
            log = []

            async def worker(name, n):
                for _ in range(n):
                    log.append(name)
                    await asyncio.sleep(0)

            await asyncio.gather(worker("a", 4), worker("b", 4), worker("c", n_c))
            assert "cccc" not in "".join(log)[:6], "".join(log)

        return target


    async def small():
        async def worker():
            for _ in range(2):
                await asyncio.sleep(0)

        await asyncio.gather(worker(), worker(), worker())


    EXHAUSTIVE = {"strategy": "exhaustive"}
    SCENARIO = racecheck.Scenario(
        name="tree",
        variants={
            "buggy": racecheck.Variant(make(4), expect="race", options=EXHAUSTIVE),
            "whole": racecheck.Variant(small, expect="safe", options=EXHAUSTIVE),
            "cut": racecheck.Variant(make(3), expect="safe", options=EXHAUSTIVE),
        },
    )
    """
)


def racecheck_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RACECHECK_DB="none", PYTHONHASHSEED="0")
    return subprocess.run(
        [sys.executable, "-m", "racecheck", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def records(directory: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((directory / "racecheck.json").read_text())
    return {r["variant"]: {k: v for k, v in r.items() if k != "seconds"} for r in data["records"]}


TIMING = re.compile(r"\s+\d+\.\d\d$")


# six CLI runs of 7,000 schedules; CI runs test_pytest_shard_items_give_the_serial_verdicts
@pytest.mark.slow
def test_ci_slices_and_run_j_give_the_single_runs_records(tmp_path: Path) -> None:
    (tmp_path / "scen_tree.py").write_text(SCENARIO)
    common = ["run", "scen_tree.py", "--schedules", "7000"]
    whole = racecheck_cli(*common, "--report-dir", "whole", cwd=tmp_path)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    one = records(tmp_path / "whole")
    assert one["buggy"]["verdict"] == "race" and one["buggy"]["schedules_run"] > 100
    assert one["whole"]["exhausted"] and not one["cut"]["exhausted"]
    for i in range(1, 5):
        part = racecheck_cli(*common, "--shard", f"{i}/4", "--report-dir", f"s{i}", cwd=tmp_path)
        assert part.returncode in (0, 1), part.stderr
        assert not any(r["exhausted"] for r in records(tmp_path / f"s{i}").values())
    merged = racecheck_cli("report", "merge", "s1", "s2", "s3", "s4", "-o", "m", cwd=tmp_path)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    together = records(tmp_path / "m")
    for variant in one:
        for key in ("verdict", "schedule", "schedules_run", "exhausted", "replay_command"):
            assert together[variant][key] == one[variant][key], (variant, key)
    # racecheck run -j: the same table and the same records, timings aside
    many = racecheck_cli(*common, "-j", "2", "--report-dir", "many", cwd=tmp_path)
    assert many.returncode == 0, many.stdout + many.stderr

    def masked(text: str) -> list[str]:
        return [TIMING.sub("", line) for line in text.splitlines() if "progress:" not in line]

    assert masked(many.stdout.replace("many/", "whole/")) == masked(whole.stdout)
    assert records(tmp_path / "many") == one


# ---------------------------------------------------------------- pytest

PYTEST_TESTS = """
import asyncio
import pytest


@pytest.mark.racecheck(strategy="exhaustive", schedules=7000)
async def test_buggy():
    log = []

    async def worker(name, n):
        for _ in range(n):
            log.append(name)
            await asyncio.sleep(0)

    await asyncio.gather(worker("a", 4), worker("b", 4), worker("c", 4))
    assert "cccc" not in "".join(log)[:6]


@pytest.mark.racecheck(strategy="exhaustive", schedules=7000)
async def test_whole():
    async def worker():
        for _ in range(2):
            await asyncio.sleep(0)

    await asyncio.gather(worker(), worker(), worker())
"""


@pytest.mark.slow  # CI time: its siblings cover the feature in CI
def test_pytest_shard_items_give_the_serial_verdicts(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    monkeypatch.setenv("RACECHECK_DB", "none")
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    pytester.makepyfile(test_tree=PYTEST_TESTS)
    serial = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--racecheck-report-dir=one")
    serial.assert_outcomes(passed=1, failed=1)
    sharded = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--racecheck-shards=auto", "--racecheck-report-dir=two"
    )
    sharded.assert_outcomes(passed=1, failed=1)
    at = re.search(r"race found after (\d+) schedules \(exhaustive", serial.stdout.str())
    line = re.search(
        r"test_buggy: 2 shards ran \d+ .*first failure at schedule (\d+)", sharded.stdout.str()
    )
    assert at and line and line.group(1) == at.group(1), sharded.stdout.str()

    def by_test(directory: str) -> dict[str, dict[str, Any]]:
        data = json.loads((pytester.path / directory / "racecheck.json").read_text())
        return {r["scenario"]: r for r in data["records"]}

    one, two = by_test("one"), by_test("two")
    for nodeid, record in one.items():
        for key in ("verdict", "schedule", "schedules_run", "exhausted", "coverage"):
            assert two[nodeid].get(key) == record.get(key), (nodeid, key)
    assert one["test_tree.py::test_whole"]["exhausted"]


def test_a_malformed_subtree_entry_is_a_usage_error() -> None:
    from racecheck.errors import UsageError

    _, states, _ = split(recorded_short, 2, schedules=200)
    data = [s.to_dict() for s in states]
    data[1]["tree"]["sizes"] = [["x", 1]]
    with pytest.raises(UsageError, match="malformed subtree entry"):
        merge([ShardResult.from_dict(d, None) for d in data])
