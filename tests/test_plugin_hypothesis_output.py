"""What a failing ``racecheck.hypothesis.interleave`` test prints (a real pytest run).

The reader needs the inputs (as hypothesis prints them) and racecheck's
schedule token; not racecheck's frames, not the 256-byte draw the schedule
is made of, and not an "explanation" made of racecheck's own lines.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("hypothesis")

TEST = """
import asyncio
from hypothesis import given, settings, strategies as st
import racecheck.hypothesis as rh


class Account:
    def __init__(self):
        self.balance = 0

    async def deposit(self, amount):
        current = self.balance
        await asyncio.sleep(0)
        self.balance = current + amount


@settings(database=None, derandomize=True)
@given(amounts=st.lists(st.integers(1, 9), min_size=2, max_size=3), data=st.data())
def test_deposits(amounts, data):
    async def run():
        account = Account()
        await asyncio.gather(*(account.deposit(a) for a in amounts))
        assert account.balance == sum(amounts)

    rh.interleave(run, data)
"""


PLUGINS_OFF = ("-p", "no:cacheprovider", "-p", "no:asyncio", "-p", "no:trio")


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One real pytest run in a subprocess, shared: hypothesis's phases take seconds."""
    project = tmp_path_factory.mktemp("hypothesis-output")
    (project / "test_h.py").write_text(TEST)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *PLUGINS_OFF, "test_h.py"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "COLUMNS": "120"},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed" in done.stdout
    return done.stdout


def test_the_inputs_are_printed_as_hypothesis_does(output: str) -> None:
    assert "Failing test case: test_deposits(" in output
    assert "amounts=[" in output


def test_the_schedule_is_racechecks_token_not_a_byte_blob(output: str) -> None:
    assert "Draw 1: b'" not in output and "\\x00\\x00" not in output, output
    assert "racecheck schedule: rc1:" in output


def test_racechecks_frames_are_hidden(output: str) -> None:
    assert "def interleave(" not in output, output
    assert "_supervise(session, work)" not in output


def test_the_explanation_does_not_point_at_racecheck(output: str) -> None:
    import racecheck

    package = racecheck.__file__.rsplit("/", 1)[0]
    explanation = output.split("Explanation:", 1)[1] if "Explanation:" in output else ""
    assert package not in explanation, explanation


def test_the_explanation_filter_does_not_outlive_the_test(pytester: pytest.Pytester) -> None:
    """racecheck's quiet-explanation pattern is hypothesis state: it goes when the test ends."""
    from hypothesis.internal import scrutineer

    before = scrutineer.UNHELPFUL_LOCATIONS
    pytester.makepyfile(test_h=TEST)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:asyncio")
    result.assert_outcomes(failed=1)
    assert scrutineer.UNHELPFUL_LOCATIONS == before
