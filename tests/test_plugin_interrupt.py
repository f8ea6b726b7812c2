"""Ctrl-C during an exploration: pytest and ``racecheck run`` say what was explored.

Each test starts a real process (pytest, or the racecheck CLI) on a project
made in a temp directory, waits until the exploration is under way (the
target touches a file), and sends it a real SIGINT.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGINT to a subprocess")

#: a test that never fails: it runs until interrupted
ENDLESS = """
import asyncio, pathlib
import pytest

class Box:
    def __init__(self):
        self.n = 0

    async def bump(self):
        await asyncio.sleep(0)
        self.n += 1

@pytest.mark.racecheck(strategy="random", schedules=10_000_000, seed=3, saturation=0)
async def test_endless():
    pathlib.Path("started").touch()
    box = Box()
    await asyncio.gather(box.bump(), box.bump(), box.bump())
    assert box.n == 3
"""

#: fails on some schedule, then every run (the shrinker's) is slow: Ctrl-C lands
#: while the failure is being minimised
SLOW_SHRINK = """
import asyncio, pathlib, time
import pytest

async def worker(log, name):
    await asyncio.sleep(0)
    log.append(name)
    await asyncio.sleep(0)
    log.append(name)

@pytest.mark.racecheck(strategy="random", schedules=100_000, seed=1, saturation=0)
async def test_order():
    flag = pathlib.Path("failed-once")
    if flag.exists():
        end = time.perf_counter() + 2.0
        while time.perf_counter() < end:
            pass
    log = []
    await asyncio.gather(worker(log, "a"), worker(log, "b"), worker(log, "c"))
    if log != list("abcabc"):
        flag.touch()
    assert log == list("abcabc")
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTEST_ADDOPTS"] = "-o asyncio_default_fixture_loop_scope=function"
    env["PYTHONHASHSEED"] = "0"
    env["COLUMNS"] = "100"
    return env


def _wait_for(path: Path, proc: subprocess.Popen[str], limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"ended before starting to explore:\n{out}\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"{path.name} never appeared")
        time.sleep(0.05)


def _interrupt(proc: subprocess.Popen[str], marker: Path, settle: float = 1.0) -> tuple[str, str]:
    _wait_for(marker, proc)
    time.sleep(settle)  # some schedules run
    proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"no exit 60 s after SIGINT:\n{out}\n{err}")


def _pytest(tmp_path: Path, source: str, *args: str) -> subprocess.Popen[str]:
    (tmp_path / "test_target.py").write_text(source)
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--racecheck-db=none", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )


def test_pytest_ctrl_c_says_what_was_explored(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, ENDLESS, "test_target.py")
    out, err = _interrupt(proc, tmp_path / "started")
    text = out + err
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, text
    line = next((x for x in out.splitlines() if "racecheck: interrupted" in x), None)
    assert line is not None, text
    assert "test_target.py::test_endless" in line
    count = int(line.split(" after ")[1].split(" of ")[0])
    assert count >= 1, line
    assert "of 10000000 schedules" in line
    assert "random, seed 3" in line
    assert "no failure found so far" in line
    # the engine's internals are not what the user reads
    assert "engine.py" not in text and "explore.py" not in text, text
    assert "Traceback" not in text


def test_pytest_ctrl_c_while_minimising_names_the_failure(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, SLOW_SHRINK, "test_target.py")
    out, err = _interrupt(proc, tmp_path / "failed-once", settle=1.5)
    text = out + err
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, text
    assert "racecheck: interrupted" in out, text
    assert "a failure was found at schedule" in out, text
    assert "AssertionError" in out
    assert "rc1:" in out  # the failing schedule, not yet minimised, can be replayed
    assert "explore.py" not in text and "Traceback" not in text, text


SCENARIO = """
import asyncio, pathlib
import racecheck


class Account:
    def __init__(self):
        self.balance = 0

    async def deposit(self, amount):
        current = self.balance
        await asyncio.sleep(0)
        self.balance = current + amount


async def buggy():
    account = Account()
    await asyncio.gather(account.deposit(10), account.deposit(5))
    assert account.balance == 15, f"balance {account.balance} != 15"


async def endless():
    pathlib.Path("started").touch()
    account = Account()
    await account.deposit(10)
    await account.deposit(5)
    assert account.balance == 15


BANK = racecheck.Scenario(
    name="bank",
    variants={
        "buggy": racecheck.Variant(buggy, expect="race"),
        "slow": racecheck.Variant(endless, expect="safe"),
    },
    # one schedule only: keep the random walk from saturating and stopping
    options={"saturation": 0},
)
"""


def test_cli_ctrl_c_writes_the_partial_report(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "bank.py").write_text(SCENARIO)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "racecheck",
            "run",
            "--strategy",
            "random",
            "--seed",
            "4",
            "--schedules",
            "10000000",
            "--db",
            "none",
            "--progress-every",
            "0",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    out, err = _interrupt(proc, tmp_path / "started")
    text = out + err
    assert proc.returncode == 2, text
    assert "Traceback" not in text
    rows = [line.split() for line in out.splitlines() if line.startswith("bank")]
    assert rows[0][:5] == ["bank", "buggy", "race", "race", "✓"], text
    assert rows[1][:4] == ["bank", "slow", "safe", "interrupted"], text
    count = int(rows[1][5])
    assert count >= 1
    assert "interrupted" in err and "reports" in err, err

    data = json.loads((tmp_path / "reports" / "racecheck.json").read_text())
    records = {r["variant"]: r for r in data["records"]}
    assert records["buggy"]["verdict"] == "race"
    slow = records["slow"]
    assert slow["verdict"] == "interrupted"
    assert slow["ok"] is False
    assert slow["schedules_run"] == count
    assert slow["strategy"] == "random" and slow["seed"] == 4
    assert data["ok"] is False

    xml = (tmp_path / "reports" / "racecheck.xml").read_text()
    assert 'name="slow"' in xml and "interrupted" in xml
    html = (tmp_path / "reports" / "index.html").read_text()
    assert "v-interrupted" in html and "interrupted" in html
