"""Replaying a buggy schedule on fixed code: "did not fail", not a divergence.

A fix usually makes the run shorter (an await removed, a check that no longer
races), so the replayed run ends before the token's last decision. That run
followed the recorded schedule as far as it went and did not fail: it is a
pass (API returns, CLI exits 0, pytest passes). Divergence is kept for a run
that needs a decision the token does not hold, or meets a decision point with
another set of enabled actors than the one recorded, and it says which.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import racecheck
from racecheck.errors import DivergenceError

LABEL = "bank-after-fix"


class Account:
    def __init__(self) -> None:
        self.balance = 0
        self.lock = asyncio.Lock()

    async def racy_deposit(self, amount: int) -> None:
        current = self.balance
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        self.balance = current + amount

    async def fixed_deposit(self, amount: int) -> None:
        # the fix: no suspension between the read and the write
        self.balance += amount

    async def padded_deposit(self, amount: int) -> None:
        # a "fix" that suspends more than the buggy code ever did
        for _ in range(6):
            await asyncio.sleep(0)
        async with self.lock:
            self.balance += amount

    async def unrelated(self) -> None:
        await asyncio.sleep(0)


async def buggy() -> None:
    account = Account()
    await asyncio.gather(account.racy_deposit(10), account.racy_deposit(5))
    assert account.balance == 15, f"balance {account.balance} != 15"


async def fixed() -> None:
    account = Account()
    await asyncio.gather(account.fixed_deposit(10), account.fixed_deposit(5))
    assert account.balance == 15, f"balance {account.balance} != 15"


async def longer() -> None:
    account = Account()
    await asyncio.gather(account.padded_deposit(10), account.padded_deposit(5))
    assert account.balance == 15


async def wider() -> None:
    account = Account()
    await asyncio.gather(
        account.racy_deposit(10), account.unrelated(), account.unrelated(), account.unrelated()
    )


def _buggy_token() -> str:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(buggy, label=LABEL, schedules=200)
    return info.value.schedule


def test_api_replay_on_fixed_code_does_not_fail() -> None:
    token = _buggy_token()
    with pytest.raises(racecheck.RaceFound):
        racecheck.replay(buggy, token, label=LABEL)
    # the fixed run takes fewer decisions than recorded and does not fail: a pass
    assert racecheck.replay(fixed, token, label=LABEL) is None


def test_api_divergence_when_the_run_needs_more_decisions() -> None:
    token = _buggy_token()
    with pytest.raises(DivergenceError) as info:
        racecheck.replay(longer, token, label=LABEL)
    assert info.value.reason == "needs-more"
    message = str(info.value)
    assert "the token holds" in message
    assert "does not tell whether the fix holds" in message


def test_api_divergence_when_the_recorded_choice_does_not_apply() -> None:
    token = _buggy_token()
    with pytest.raises(DivergenceError) as info:
        racecheck.replay(wider, token, label=LABEL)
    assert info.value.reason == "not-enabled"
    message = str(info.value)
    assert "were enabled" in message
    assert "does not tell whether the fix holds" in message


# ------------------------------------------------------------------ CLI

SCENARIO = """
import asyncio
import racecheck

class Account:
    def __init__(self):
        self.balance = 0

    async def deposit(self, amount):
        current = self.balance
        await asyncio.sleep(0)
        self.balance = current + amount

    async def fixed_deposit(self, amount):
        self.balance += amount

    async def padded_deposit(self, amount):
        for _ in range(6):
            await asyncio.sleep(0)
        self.balance += amount


async def buggy():
    account = Account()
    await asyncio.gather(account.deposit(10), account.deposit(5))
    assert account.balance == 15, f"balance {account.balance} != 15"


async def correct():
    account = Account()
    await asyncio.gather(account.fixed_deposit(10), account.fixed_deposit(5))
    assert account.balance == 15


async def padded():
    account = Account()
    await asyncio.gather(account.padded_deposit(10), account.padded_deposit(5))
    assert account.balance == 15


BANK = racecheck.Scenario(
    name="bank",
    issue="demo#1",
    variants={
        "buggy": racecheck.Variant(buggy, expect="race", summary="read, await, write"),
        "correct": racecheck.Variant(correct, expect="safe", summary="no await"),
        "padded": racecheck.Variant(padded, expect="safe", summary="awaits more"),
    },
)
"""


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    return subprocess.run(
        [sys.executable, "-m", "racecheck", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_cli_replay_on_fixed_variant_exits_0(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "bank.py").write_text(SCENARIO)
    found = _cli(
        tmp_path, "run", "scenarios/bank.py::bank[buggy]", "--schedules", "100", "--no-report"
    )
    match = re.search(r"racecheck replay \S+ (rc1:\S+)", found.stdout)
    assert match, found.stdout + found.stderr
    token = match.group(1)

    again = _cli(tmp_path, "replay", "scenarios/bank.py::bank[buggy]", token)
    assert again.returncode == 1, again.stdout + again.stderr

    fixed_run = _cli(tmp_path, "replay", "scenarios/bank.py::bank[correct]", token)
    assert fixed_run.returncode == 0, fixed_run.stdout + fixed_run.stderr
    assert "without failing" in fixed_run.stdout
    assert fixed_run.stderr == ""

    diverged = _cli(tmp_path, "replay", "scenarios/bank.py::bank[padded]", token)
    assert diverged.returncode == 2, diverged.stdout + diverged.stderr
    assert "Traceback" not in diverged.stderr
    assert diverged.stderr.count("\n") == 1
    assert "the token holds" in diverged.stderr


# --------------------------------------------------------------- pytest

TEST_BUGGY = """
import asyncio
import pytest

class Account:
    def __init__(self):
        self.balance = 0

    async def deposit(self, amount):
        current = self.balance
        await asyncio.sleep(0)
        self.balance = current + amount

@pytest.mark.racecheck(schedules=200)
async def test_deposit():
    account = Account()
    await asyncio.gather(account.deposit(10), account.deposit(5))
    assert account.balance == 15
"""

TEST_FIXED = TEST_BUGGY.replace(
    """        current = self.balance
        await asyncio.sleep(0)
        self.balance = current + amount""",
    "        self.balance += amount",
)

TEST_PADDED = """
import asyncio
import pytest

class Account:
    def __init__(self):
        self.balance = 0

    async def deposit(self, amount):
        for _ in range(6):
            await asyncio.sleep(0)
        current = self.balance
        self.balance = current + amount

@pytest.mark.racecheck(schedules=200)
async def test_deposit():
    account = Account()
    await asyncio.gather(account.deposit(10), account.deposit(5))
    assert account.balance == 15
"""


def _token_of(output: str) -> str:
    match = re.search(r"--racecheck-replay=(rc1:\S+)", output)
    assert match, output
    return match.group(1)


def test_pytest_replay_on_fixed_code_passes(pytester: pytest.Pytester) -> None:
    assert TEST_FIXED != TEST_BUGGY
    pytester.makepyfile(test_bank=TEST_BUGGY)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    token = _token_of(result.stdout.str())

    pytester.makepyfile(test_bank=TEST_FIXED)
    again = pytester.runpytest("test_bank.py::test_deposit", f"--racecheck-replay={token}")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(
        ["*racecheck: replayed schedule on test_bank.py::test_deposit: did not fail*"]
    )
    assert "fails again" not in again.stdout.str()
    assert "DivergenceError" not in again.stdout.str()
    assert again.ret == 0


def test_pytest_replay_divergence_is_not_fails_again(pytester: pytest.Pytester) -> None:
    assert TEST_PADDED != TEST_BUGGY
    pytester.makepyfile(test_bank=TEST_BUGGY)
    result = pytester.runpytest()
    token = _token_of(result.stdout.str())

    pytester.makepyfile(test_bank=TEST_PADDED)
    again = pytester.runpytest("test_bank.py::test_deposit", f"--racecheck-replay={token}")
    again.assert_outcomes(failed=1)
    out = again.stdout.str()
    assert "fails again" not in out
    again.stdout.fnmatch_lines(
        [
            "*DivergenceError*the token holds*",
            "*racecheck: replayed schedule on test_bank.py::test_deposit: diverged*",
        ]
    )
