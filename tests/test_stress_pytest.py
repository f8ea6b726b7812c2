"""``@pytest.mark.racecheck(mode="stress", ...)`` in a real pytest run (pytester)."""

from __future__ import annotations

import re

import pytest

from stress_programs import SOCKET_COUNTER_SOURCE

TESTS = (
    """
import asyncio
import socket
import threading

import pytest


"""
    + SOCKET_COUNTER_SOURCE
    + """

@pytest.mark.racecheck(mode="stress", runs=40, seed=1, reproduce=5)
def test_socket_counter_buggy():
    socket_counter(False)


@pytest.mark.racecheck(mode="stress", runs=30, parallel=2, seed=2)
def test_socket_counter_correct():
    socket_counter(True)


class Account:
    balance = 0


@pytest.mark.racecheck(mode="stress", runs=40, seed=3, reproduce=50)
async def test_async_lost_update():
    account = Account()

    async def deposit(n):
        current = account.balance
        await asyncio.sleep(0)
        account.balance = current + n

    await asyncio.gather(deposit(1), deposit(2))
    assert account.balance == 3


@pytest.mark.racecheck(mode="stress", runs=5, repeat=3)
def test_unknown_keyword():
    pass


@pytest.mark.racecheck(mode="stress", runs=6, processes=2, seed=4)
def test_in_processes():
    assert threading.active_count() >= 1


@pytest.mark.racecheck(mode="stress", runs=2, isolate="process")
def test_in_processes_with_a_fixture(tmp_path):
    pass


@pytest.mark.racecheck(mode="chaos")
def test_unknown_mode():
    pass
"""
)


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_stressed=TESTS)
    return pytester


def test_a_stress_marked_test_reports_its_rate(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-k", "socket_counter", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "racecheck stress: test_stressed.py::test_socket_counter_buggy [threads]" in out
    assert "NON-REPLAYABLE" in out
    assert re.search(r"failed \d+ of 40 runs \([\d.]+%\); 95% CI [\d.]+–[\d.]+%", out)
    assert "lost update" in out
    assert "controlled scheduler: out of reach" in out
    # the passing test shows its statistics in its report section
    assert "racecheck stress: test_stressed.py::test_socket_counter_correct" in out
    assert "failed 0 of 30 runs (0.0%); 95% CI 0.0–11.4%" in out
    assert "2 copies per run" in out


def test_an_async_failure_prints_a_replay_command_that_fails_again(
    suite: pytest.Pytester,
) -> None:
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-k", "async_lost_update")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "[asyncio] -- NON-REPLAYABLE" in out
    assert "controlled scheduler: reproduced" in out
    match = re.search(r"--racecheck-replay=(rc1:[^\s']+)", out)
    assert match, out
    replayed = suite.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "test_stressed.py::test_async_lost_update",
        f"--racecheck-replay={match.group(1)}",
    )
    replayed.assert_outcomes(failed=1)
    assert "replayed schedule fails again" in replayed.stdout.str()


def test_bad_stress_markers_fail_with_one_line(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-k", "unknown")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert (
        "mode='stress' takes runs, parallel, timeout, seed, reproduce, backend,"
        " isolate and processes, not repeat" in out
    )
    assert "unknown mode 'chaos'" in out


def test_process_isolation_from_a_marker(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-k", "in_processes", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "failed 0 of 6 runs" in out and "2 at a time" in out
    assert "isolate='process' runs only tests that take no fixtures" in out
