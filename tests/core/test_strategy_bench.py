"""``racecheck bench``: the strategy table has a row per variant x strategy, a column per seed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCENARIO = textwrap.dedent(
    """
    import asyncio
    from racecheck.scenario import Scenario, Variant

    async def buggy():
        balance = [0]

        async def deposit(amount):
            current = balance[0]
            await asyncio.sleep(0)
            balance[0] = current + amount

        await asyncio.gather(deposit(10), deposit(5))
        assert balance[0] == 15, balance[0]

    async def correct():
        lock = asyncio.Lock()
        balance = [0]

        async def deposit(amount):
            async with lock:
                current = balance[0]
                await asyncio.sleep(0)
                balance[0] = current + amount

        await asyncio.gather(deposit(10), deposit(5))
        assert balance[0] == 15

    SCENARIO = Scenario(
        name="bank",
        variants={
            "buggy": Variant(buggy, expect="race"),
            "correct": Variant(correct, expect="safe"),
        },
    )
    """
)


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "bank.py").write_text(SCENARIO)
    return subprocess.run(
        [sys.executable, "-m", "racecheck", "bench", "bank.py", "--no-overhead", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_table_has_a_row_per_variant_and_strategy(tmp_path: Path) -> None:
    out = bench(
        tmp_path, "--strategies", "auto,exhaustive,pos", "--seeds", "0,1", "--budget", "300"
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    failure = lines.index("schedules to first failure (budget 300; '-' = not found)")
    verify = lines.index("schedules to verification (budget 300; '-' = not verified)")
    assert lines[failure + 1].split() == ["scenario[variant]", "strategy", "seed", "0", "seed", "1"]
    rows = [line.split() for line in lines[failure + 2 : verify] if line.strip()]
    assert [row[:2] for row in rows] == [
        ["bank[buggy]", "auto"],
        ["bank[buggy]", "exhaustive"],
        ["bank[buggy]", "pos"],
    ]
    for row in rows:  # a lost update: found, every seed
        assert len(row) == 4 and all(cell.isdigit() for cell in row[2:]), row
    # only the strategies that can verify are listed for the correct variant
    verified = [line.split() for line in lines[verify + 2 :] if line.strip()]
    assert [row[:2] for row in verified] == [
        ["bank[correct]", "auto"],
        ["bank[correct]", "exhaustive"],
    ]
    exhaustive = verified[1]
    assert exhaustive[2].isdigit() and exhaustive[2] == exhaustive[3]  # seedless: same count


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--strategies", "pct,bogus"), "unknown strategy 'bogus'"),
        (("--seeds", "0,x"), "seeds must be integers"),
        (("--budget", "0"), "must be a positive integer"),
    ],
)
def test_bad_arguments_are_one_line_usage_errors(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    out = bench(tmp_path, *args)
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr


def test_a_missing_scenario_path_is_a_usage_error(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "racecheck", "bench", "nowhere.py", "--no-overhead"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_no_table_prints_the_overhead_rows_only(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "racecheck", "bench", "--no-table", "--schedules", "5"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    header = next(line for line in lines if line.startswith("workload"))
    assert header.split()[-2:] == ["cpu", "cost"]
    rows = [line for line in lines if line.startswith(("asyncio", "threads"))]
    assert len(rows) == 4, out.stdout
    for row in rows:
        wall, cpu = row.split()[-2:]
        assert wall.endswith("x") and cpu.endswith("x")
        assert float(cpu[:-1]) > 0
    assert "schedules to first failure" not in out.stdout
    # which road the detector rows measured: they cost very differently on each
    feed = "sys.monitoring" if sys.version_info >= (3, 12) else "sys.settrace"
    assert f"the race detector's feed on this python: {feed}" in out.stdout


def test_only_measures_the_rows_it_names(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            *(sys.executable, "-m", "racecheck", "bench", "--no-table", "--schedules", "2"),
            *("--only", "threads, detect=True"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith(("asyncio", "threads"))]
    assert len(rows) == 1 and rows[0].startswith("threads, detect=True vs racecheck"), out.stdout


def test_only_that_matches_no_row_is_a_usage_error(tmp_path: Path) -> None:
    out = bench(tmp_path, "--only", "nonesuch")
    assert out.returncode == 2
    assert "--only 'nonesuch' matches no overhead row" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr
