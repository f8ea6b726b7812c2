"""Regressions found by the adversarial suite: each failed before its fix."""

from __future__ import annotations

import asyncio
import queue
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import racecheck


def daemon_heartbeat() -> None:
    beats: list[int] = []

    def heartbeat() -> None:
        while True:
            beats.append(1)
            time.sleep(1)

    threading.Thread(target=heartbeat, daemon=True).start()
    time.sleep(2.5)
    assert beats


def daemon_poller() -> None:
    jobs: queue.Queue[int] = queue.Queue()

    def poll() -> None:
        while True:
            try:
                jobs.get(timeout=0.5)
                jobs.task_done()
            except queue.Empty:
                pass

    threading.Thread(target=poll, daemon=True).start()
    jobs.put(1)
    jobs.join()


@pytest.mark.parametrize("target", [daemon_heartbeat, daemon_poller])
def test_daemon_threads_do_not_outlive_the_program(target: object) -> None:
    report = racecheck.check(target, schedules=50, max_steps=5000)  # type: ignore[arg-type]
    # every schedule passed, or auto's DPOR member proved them all first
    assert report.schedules_run == 50 or report.verified, report


@pytest.mark.parametrize("target", [daemon_heartbeat, daemon_poller])
def test_unwinding_daemon_threads_is_no_lost_trace_function(target: object) -> None:
    """The run's own unwinding is not "your trace function was replaced".

    A daemon thread unwound at the program's end can meet racecheck's abort
    inside racecheck's trace function, and CPython drops a trace function that
    raises. The thread's end then found no trace function and warned that the
    code under test had replaced it: a false warning, and one that made auto's
    DPOR member's proof read "not verified".
    """
    report = racecheck.check(target, schedules=50, max_steps=5000, strategy="random")  # type: ignore[arg-type]
    assert report.warnings == [], report.warnings


def starved(n: int) -> object:
    async def target() -> None:
        state = {"n": 0}

        async def counter() -> None:
            for _ in range(n):
                state["n"] += 1
                await asyncio.sleep(0)

        async def observer() -> None:
            assert state["n"] < n, "the observer was starved for the whole count"

        await asyncio.gather(counter(), observer())

    target.__qualname__ = f"starved_{n}"
    return target


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("length", [8, 24])
def test_pct_can_starve_a_task_for_many_steps(length: int, seed: int) -> None:
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(starved(length), schedules=2000, seed=seed)  # type: ignore[arg-type]


class Counter:
    def __init__(self) -> None:
        self.value = 0

    def increment(self) -> None:
        self.value += 1


def pool_lost_increment() -> None:
    counter = Counter()
    with ThreadPoolExecutor(max_workers=2) as pool:
        for future in [pool.submit(counter.increment) for _ in range(2)]:
            future.result()
    assert counter.value == 2, counter.value


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_thread_pool_executor_races_are_found_and_replay(seed: int) -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(pool_lost_increment, schedules=2000, seed=seed, watchdog=20)
    assert info.value.kind == "exception"
    for _ in range(3):
        with pytest.raises(racecheck.RaceFound) as again:
            racecheck.replay(pool_lost_increment, info.value.schedule, watchdog=20)
        assert again.value.kind == "exception"


def test_async_generator_targets_are_usage_errors() -> None:
    async def scenario():  # type: ignore[no-untyped-def]
        yield

    with pytest.raises(racecheck.UsageError, match="generator"):
        racecheck.check(scenario, schedules=1)


@pytest.mark.parametrize("token", [None, 123, b"rc1:x", ["rc1"]])
def test_tokens_that_are_not_strings_are_token_errors(token: object) -> None:
    async def target() -> None:
        pass

    with pytest.raises(racecheck.TokenError, match="string"):
        racecheck.replay(target, token)  # type: ignore[arg-type]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12+")
def test_monitoring_ids_taken_is_a_clear_error_and_patches_nothing() -> None:
    script = textwrap.dedent(
        """
        import sys, threading, time, _thread
        original_lock = threading.Lock
        import racecheck
        for tool in (2, 3, 4, 5):
            sys.monitoring.use_tool_id(tool, f"someone-else-{tool}")
        def target():
            t = threading.Thread(target=lambda: None); t.start(); t.join()
        try:
            racecheck.check(target, schedules=2)
        except racecheck.UsageError as exc:
            print("USAGE", exc)
        print("PATCHED" if threading.Lock is not original_lock else "CLEAN")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert "USAGE every sys.monitoring tool id" in result.stdout, result.stderr
    assert "CLEAN" in result.stdout


def test_str_of_race_found_follows_its_replay_hint() -> None:
    async def lost() -> None:
        box = [0]

        async def bump() -> None:
            value = box[0]
            await asyncio.sleep(0)
            box[0] = value + 1

        await asyncio.gather(bump(), bump())
        assert box[0] == 2

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(lost, schedules=20)
    info.value.replay_hint = "pytest t.py::test --racecheck-replay=X"
    assert "pytest t.py::test --racecheck-replay=X" in str(info.value)


async def polling_consumer() -> None:
    flag: list[bool] = []

    async def producer() -> None:
        await asyncio.sleep(0)
        flag.append(True)

    async def consumer() -> None:
        while not flag:
            await asyncio.sleep(0)

    await asyncio.gather(consumer(), producer())


def spinning_thread() -> None:
    state = {"ready": False}

    def producer() -> None:
        state["ready"] = True

    def waiter() -> None:
        while not state["ready"]:
            time.sleep(0)

    threads = [threading.Thread(target=f) for f in (waiter, producer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("target", [polling_consumer, spinning_thread])
def test_fair_polling_is_not_a_step_limit(target: object, seed: int) -> None:
    """No strategy may starve an enabled actor forever: real schedulers are fair."""
    for strategy in ("pct", "exhaustive"):
        report = racecheck.check(target, strategy=strategy, schedules=200, seed=seed)  # type: ignore[arg-type]
        assert report.schedules_run >= 1
