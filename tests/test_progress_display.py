"""``racecheck.check(progress=True)`` and the CLI's progress lines without a tty."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import racecheck


async def three_tasks() -> None:
    async def step() -> None:
        for _ in range(3):
            await asyncio.sleep(0)

    await asyncio.gather(step(), step(), step())


def test_check_accepts_progress_true(capsys: pytest.CaptureFixture[str]) -> None:
    report = racecheck.check(three_tasks, strategy="random", schedules=30, progress=True)
    assert report.schedules_run == 30
    captured = capsys.readouterr()
    assert captured.out == ""
    # not a terminal: a final line with the count and the rate
    assert re.search(r"three_tasks: 30/30 schedules, [\d.]+/s", captured.err), captured.err


def test_check_still_accepts_a_callable_and_refuses_other_values() -> None:
    seen: list[tuple[int, int]] = []
    racecheck.check(
        three_tasks, strategy="random", schedules=5, progress=lambda d, t: seen.append((d, t))
    )
    assert seen and seen[-1] == (5, 5)
    with pytest.raises(racecheck.UsageError, match="progress"):
        racecheck.check(three_tasks, schedules=5, progress="yes")


SCENARIO = textwrap.dedent(
    """
    import asyncio
    import racecheck

    async def three_tasks():
        async def step():
            for _ in range(3):
                await asyncio.sleep(0)

        await asyncio.gather(step(), step(), step())

    SCEN = racecheck.Scenario(
        name="s",
        variants={"v": racecheck.Variant(three_tasks, expect="safe")},
        options={"strategy": "random"},
    )
    """
)


def test_cli_prints_progress_lines_without_a_tty(tmp_path: Path) -> None:
    (tmp_path / "scen.py").write_text(SCENARIO)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RACECHECK_")}
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "racecheck", "run", "scen.py", "--no-report"),
            *("--db", "none", "--schedules", "3000", "--progress-every", "0.05"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(env, PYTHONHASHSEED="0"),
        timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("progress:")]
    assert lines, proc.stderr
    assert re.fullmatch(r"progress: s\[v\]: \d+/3000 schedules, [\d.]+/s, ETA \S+", lines[0]), (
        lines[0]
    )
    assert "\r" not in proc.stderr and "\x1b" not in proc.stderr + proc.stdout


def test_cli_progress_every_zero_is_quiet_and_bad_values_are_exit_2(tmp_path: Path) -> None:
    (tmp_path / "scen.py").write_text(SCENARIO)
    base = [sys.executable, "-m", "racecheck", "run", "scen.py", "--no-report", "--db", "none"]
    quiet = subprocess.run(
        [*base, "--schedules", "50", "--progress-every", "0"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert quiet.returncode == 0 and "progress:" not in quiet.stderr
    bad = subprocess.run(
        [*base, "--progress-every", "soon"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
