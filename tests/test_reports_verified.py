"""A proof shows in every report: JSON, JUnit and HTML, from the CLI and from pytest.

"verified" is the strongest claim racecheck makes. Until now only the CLI's
terminal table and pytest's ``-rP`` section said it; a reader of the report
files saw the same "no failure in N schedules" as for a sampled run. Real
runs: the CLI in a subprocess, pytest through pytester, DPOR on a small
locked program it can cover completely.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

PROGRAM = """
import asyncio


async def locked_deposits():
    lock = asyncio.Lock()
    balance = [0]

    async def deposit(amount):
        async with lock:
            current = balance[0]
            await asyncio.sleep(0)
            balance[0] = current + amount

    await asyncio.gather(deposit(10), deposit(5))
    assert balance[0] == 15
"""

SCENARIO = PROGRAM + textwrap.dedent(
    """
    import racecheck

    SCEN = racecheck.Scenario(
        name="bank",
        variants={"locked": racecheck.Variant(locked_deposits, expect="safe")},
        options={"strategy": "dpor", "schedules": 200},
    )
    """
)

MARKED_TEST = PROGRAM + textwrap.dedent(
    """
    import pytest


    @pytest.mark.racecheck(strategy="dpor", schedules=200)
    async def test_locked_deposits():
        await locked_deposits()
    """
)


def _check_reports(out: Path) -> None:
    data = json.loads((out / "racecheck.json").read_text("utf-8"))
    (record,) = data["records"]
    assert record["verdict"] == "safe", record
    assert record["verified"] is True, record
    assert record["verified_note"].startswith("verified: all "), record
    assert "verified" in record["outcome"], record["outcome"]

    case = ET.parse(out / "racecheck.xml").getroot().find(".//testcase")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props.get("verified") == "true", props

    page = (out / "index.html").read_text("utf-8")
    assert '<span class="tag">verified</span>' in page


def test_the_cli_reports_carry_the_proof(tmp_path: Path) -> None:
    (tmp_path / "scen.py").write_text(SCENARIO)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RACECHECK_")}
    done = subprocess.run(
        [sys.executable, "-m", "racecheck", "run", "scen.py", "--report-dir", "out"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(env, PYTHONHASHSEED="0"),
        timeout=300,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "verified" in done.stdout, done.stdout
    _check_reports(tmp_path / "out")


def test_the_pytest_reports_carry_the_proof(pytester: pytest.Pytester, real_engine: Any) -> None:
    pytester.makepyfile(test_bank=MARKED_TEST)
    result = pytester.runpytest("--racecheck-report-dir=out", "--racecheck-db=none")
    result.assert_outcomes(passed=1)
    _check_reports(pytester.path / "out")


def test_a_sampled_safe_run_claims_no_proof(pytester: pytest.Pytester, real_engine: Any) -> None:
    """The check can fail: the same program sampled is safe, not verified."""
    pytester.makepyfile(test_bank=MARKED_TEST.replace('strategy="dpor"', 'strategy="random"'))
    result = pytester.runpytest("--racecheck-report-dir=out", "--racecheck-db=none")
    result.assert_outcomes(passed=1)
    data = json.loads((pytester.path / "out" / "racecheck.json").read_text("utf-8"))
    (record,) = data["records"]
    assert record["verified"] is False and record["verified_note"] == "", record
    page = (pytester.path / "out" / "index.html").read_text("utf-8")
    assert '<span class="tag">verified</span>' not in page


def test_a_merge_of_slices_says_verified_where_the_merge_proves_it(tmp_path: Path) -> None:
    """Split DPOR: no slice proves anything alone; `racecheck report merge` must say it did."""
    (tmp_path / "scen.py").write_text(SCENARIO)
    env = dict(
        {k: v for k, v in os.environ.items() if not k.startswith("RACECHECK_")},
        PYTHONHASHSEED="0",
    )

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "racecheck", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=300,
        )

    for index in (1, 2):
        part = cli("run", "scen.py", "--shard", f"{index}/2", "--report-dir", f"s{index}")
        assert part.returncode == 0, (part.stdout, part.stderr)
    merged = cli("report", "merge", "s1", "s2", "-o", "merged")
    assert merged.returncode == 0, (merged.stdout, merged.stderr)
    assert "verified" in merged.stdout, merged.stdout
    _check_reports(tmp_path / "merged")
