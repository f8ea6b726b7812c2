"""racecheck.stress: real targets, run uncontrolled, with real threads, sockets and loops.

The headline case: a lost update through a real socket pair. The controlled
scheduler cannot reach it (its server thread blocks in C on the socket:
StuckError), while stress mode makes it fail and reports how often.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import sys
import threading
import time
from typing import Any

import pytest

import racecheck
from racecheck.stress import copies
from racecheck.stress.aio import JitterLoop
from racecheck.stress.report import rate_line, wilson
from stress_programs import socket_counter

# --------------------------------------------------------------- targets


def socket_counter_buggy() -> None:
    socket_counter(locked=False)


def socket_counter_correct() -> None:
    socket_counter(locked=True)


class Account:
    def __init__(self) -> None:
        self.balance = 0


async def async_lost_update() -> None:
    account = Account()

    async def deposit(n: int) -> None:
        current = account.balance
        await asyncio.sleep(0)
        account.balance = current + n

    await asyncio.gather(deposit(1), deposit(2))
    assert account.balance == 3, account.balance


# ------------------------------------------------------- the headline case


def test_socket_race_is_out_of_reach_for_check_and_found_by_stress() -> None:
    # The controlled scheduler: its server thread blocks in C on the socket.
    with pytest.raises(racecheck.StuckError, match="blocked"):
        racecheck.check(socket_counter_buggy, schedules=20, watchdog=1.0)

    report = racecheck.stress(socket_counter_buggy, runs=60, seed=1, reproduce=10)
    assert report.runs == 60
    assert report.failed_runs > 0
    assert not report.ok and not report.replayable
    low, high = report.confidence_interval
    assert 0 < low <= report.failure_rate <= high <= 1
    [group] = report.groups
    assert group.exc_type == "AssertionError"
    assert group.count == report.failed_runs
    assert "stress_programs.py" in group.location and "socket_counter" in group.location
    assert "lost update" in group.message and "Traceback" in group.example
    # ... and the re-check says why the scheduler cannot help
    assert report.reproduction is not None
    assert report.reproduction.status == "out-of-reach"
    assert "StuckError" in report.reproduction.detail
    text = report.render()
    assert f"failed {report.failed_runs} of 60 runs" in text
    assert "95% CI" in text and "NON-REPLAYABLE" in text
    assert "controlled scheduler: out of reach" in text


def test_a_correct_target_gives_zero_failures_and_an_upper_bound() -> None:
    report = racecheck.stress(socket_counter_correct, runs=100, seed=2)
    assert report.ok, report.render()
    assert (report.runs, report.failed_runs, report.groups) == (100, 0, [])
    low, high = report.confidence_interval
    assert low == 0.0
    assert high == pytest.approx(wilson(0, 100)[1])
    assert 0.03 < high < 0.04  # the rule of three, roughly: 3.7% for 0 of 100
    assert "failed 0 of 100 runs (0.0%); 95% CI 0.0–3.7%" in report.render()
    assert report.reproduction is None


# ------------------------------------------------------------ hangs


def test_a_hanging_thread_target_times_out_with_a_stack_dump_and_returns() -> None:
    gate = threading.Semaphore(0)  # no permit while the runs last: every run hangs

    def blocked_forever() -> None:
        gate.acquire()  # blocks until the test ends

    def hanging() -> None:
        worker = threading.Thread(target=blocked_forever, name="blocked-worker", daemon=True)
        worker.start()
        worker.join()

    t0 = time.monotonic()
    try:
        report = racecheck.stress(hanging, runs=5, timeout=0.5, seed=3)
    finally:
        gate.release(10)  # let the abandoned threads finish
    assert time.monotonic() - t0 < 60  # generous: it returned
    assert report.hangs == 3  # stops after three hangs: each costs a timeout
    assert report.runs == 3 and report.failed_runs == 3
    [group] = report.groups
    assert group.kind == "hang" and group.count == 3
    assert "thread 'blocked-worker'" in group.example
    assert "gate.acquire()  # blocks until the test ends" in group.example
    assert "blocked-worker" in report.abandoned_threads
    assert report.reproduction is not None and report.reproduction.status == "skipped"
    assert "stack" in report.render() and "stopped after 3 hung runs" in report.render()


def test_a_hanging_async_target_dumps_every_task_and_is_cancelled() -> None:
    async def waits_forever() -> None:
        never = asyncio.Event()

        async def waiter() -> None:
            await never.wait()

        await asyncio.gather(waiter(), asyncio.sleep(0))

    before = set(threading.enumerate())
    report = racecheck.stress(waits_forever, runs=2, timeout=0.5, seed=4)
    assert report.hangs == 2 and report.backend == "asyncio"
    [group] = report.groups
    assert "task " in group.example and "waiter" in group.example
    assert "await never.wait()" in group.example  # the innermost pending await
    # cancelled: its loop thread ended, nothing was abandoned
    assert report.abandoned_threads == []
    assert set(threading.enumerate()) <= before


# ----------------------------------------------------------- hygiene


def test_switch_interval_and_trace_hooks_are_restored() -> None:
    interval = sys.getswitchinterval()
    thread_trace = threading.gettrace()
    trace = sys.gettrace()
    seen: list[float] = []
    hooked: list[bool] = []
    failures = itertools.count()

    def target() -> None:
        seen.append(sys.getswitchinterval())
        hooked.append(threading.gettrace() is not None)
        if next(failures) % 3 == 0:
            raise ValueError("a failing run restores as much as a clean one")

    report = racecheck.stress(target, runs=30, seed=5, reproduce=0)
    assert report.failed_runs == 10
    assert min(seen) < interval  # it was changed ...
    assert sys.getswitchinterval() == interval  # ... and put back
    assert threading.gettrace() is thread_trace
    assert sys.gettrace() is trace
    if trace is None and thread_trace is None:  # no coverage tracer: line jitter was on
        assert all(hooked)


def test_nothing_of_an_async_run_outlives_it() -> None:
    loops: list[asyncio.AbstractEventLoop] = []
    policy = asyncio.get_event_loop_policy()
    threads = set(threading.enumerate())

    async def target() -> None:
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)

    report = racecheck.stress(target, runs=20, seed=6)
    assert report.ok
    assert len(loops) == 20 and all(isinstance(loop, JitterLoop) for loop in loops)
    assert all(loop.is_closed() for loop in loops)
    assert asyncio.get_event_loop_policy() is policy
    assert asyncio._get_running_loop() is None
    assert set(threading.enumerate()) <= threads

    async def plain() -> type:
        return type(asyncio.get_running_loop())

    assert not issubclass(asyncio.run(plain()), JitterLoop)


# ------------------------------------------------------------ asyncio


def test_the_ready_queue_order_is_randomised_per_task() -> None:
    async def ordering(out: list[tuple[str, ...]]) -> None:
        order: list[str] = []

        async def step(name: str) -> None:
            for i in range(3):
                order.append(f"{name}{i}")
                await asyncio.sleep(0)

        await asyncio.gather(step("a"), step("b"), step("c"))
        out.append(tuple(order))
        # each task's own steps stay in order: only tasks are interleaved
        for name in "abc":
            mine = [s for s in order if s[0] == name]
            assert mine == sorted(mine), order

    plain: list[tuple[str, ...]] = []
    for _ in range(5):
        asyncio.run(ordering(plain))
    assert len(set(plain)) == 1  # a plain loop: always FIFO

    jittered: list[tuple[str, ...]] = []

    async def target() -> None:
        await ordering(jittered)

    report = racecheck.stress(target, runs=40, seed=7)
    assert report.ok, report.render()
    assert len(set(jittered)) > 1


def test_an_async_race_found_by_stress_replays_under_the_controlled_scheduler() -> None:
    report = racecheck.stress(async_lost_update, runs=50, seed=8, reproduce=50)
    assert report.failed_runs > 0
    repro = report.reproduction
    assert repro is not None and repro.status == "reproduced", report.render()
    assert repro.token is not None and repro.token.startswith("rc1:")
    assert repro.token in report.render()
    with pytest.raises(racecheck.RaceFound):
        racecheck.replay(async_lost_update, repro.token)


# ----------------------------------------------------------- parallel


def test_parallel_copies_run_at_the_same_time() -> None:
    active = [0]
    most = [0]
    guard = threading.Lock()

    def copy() -> None:
        with guard:
            active[0] += 1
            most[0] = max(most[0], active[0])
        time.sleep(0.01)
        with guard:
            active[0] -= 1

    report = racecheck.stress(copy, runs=10, parallel=3, seed=9)
    assert report.ok and report.parallel == 3
    assert most[0] == 3
    assert "3 copies per run" in report.render()


def test_async_copies_are_tasks_on_one_loop() -> None:
    active: list[int] = [0]
    most: list[int] = [0]
    loops: list[asyncio.AbstractEventLoop] = []  # kept alive: their ids stay distinct

    async def copy() -> None:
        loops.append(asyncio.get_running_loop())
        active[0] += 1
        most[0] = max(most[0], active[0])
        await asyncio.sleep(0.01)
        active[0] -= 1

    report = racecheck.stress(copy, runs=5, parallel=3, seed=13)
    assert report.ok and report.backend == "asyncio"
    assert most[0] == 3
    assert len(loops) == 15 and len({id(loop) for loop in loops}) == 5  # one loop per run


def test_a_race_between_copies_is_found_and_replayed_on_the_same_copies() -> None:
    shared = {"n": 0}

    def bump() -> None:
        shared["n"] = 0
        for _ in range(50):
            current = shared["n"]
            shared["n"] = current + 1
        # alone this always holds; two copies at once lose updates or reset
        assert shared["n"] == 50, shared["n"]

    report = racecheck.stress(bump, runs=200, parallel=2, seed=10, reproduce=200)
    assert report.failed_runs > 0, report.render()
    repro = report.reproduction
    assert repro is not None and repro.status == "reproduced", report.render()
    assert repro.token is not None
    with pytest.raises(racecheck.RaceFound):
        racecheck.replay(copies(bump, 2), repro.token)


# ------------------------------------------------------------ reporting


def test_failures_are_grouped_by_type_and_location() -> None:
    calls = itertools.count()

    def flaky() -> None:
        n = next(calls)
        if n % 4 == 1:
            raise KeyError("missing")
        if n % 4 == 3:
            raise ValueError("bad")

    report = racecheck.stress(flaky, runs=40, seed=11, reproduce=0)
    assert report.failed_runs == 20
    groups = {g.exc_type: g for g in report.groups}
    assert set(groups) == {"KeyError", "ValueError"}
    assert groups["KeyError"].count == groups["ValueError"].count == 10
    assert groups["KeyError"].location != groups["ValueError"].location
    for group in groups.values():
        assert "in flaky" in group.location
        assert group.example.startswith("Traceback") and "runner.py" not in group.example
    assert report.reproduction is not None and report.reproduction.status == "skipped"


def test_wilson_interval_and_rate_line() -> None:
    low, high = wilson(3, 10_000)
    assert low == pytest.approx(0.000102, rel=0.02)
    assert high == pytest.approx(0.000882, rel=0.02)
    assert rate_line(3, 10_000) == "failed 3 of 10,000 runs (0.03%); 95% CI 0.01–0.09%"
    # zero failures: an upper bound near 3.84/n, never a zero-width interval
    for n in (10, 1000, 100_000):
        zero_low, zero_high = wilson(0, n)
        assert zero_low == 0.0
        assert zero_high == pytest.approx(1.96**2 / (n + 1.96**2), rel=0.01)
    assert wilson(10, 10)[1] == 1.0
    assert not math.isnan(wilson(5, 10)[0])


def test_the_threading_mode_is_detected_and_reported() -> None:
    report = racecheck.stress(lambda: None, runs=3, seed=12)
    gil_enabled = getattr(sys, "_is_gil_enabled", None)
    free = gil_enabled is not None and not gil_enabled()
    assert report.free_threaded is free
    expected = "free-threaded build, GIL disabled" if free else "build"
    assert expected in report.threading_mode
    assert report.threading_mode in report.render()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"runs": 0}, "runs must be a positive integer"),
        ({"parallel": -1}, "parallel must be a positive integer"),
        ({"timeout": 0}, "timeout must be a positive number"),
        ({"timeout": float("inf")}, "timeout must be a positive number"),
        ({"backend": "trio"}, "backend must be 'threads' or 'asyncio'"),
        ({"backend": "asyncio"}, "does not fit a plain function"),
        ({"reproduce": -1}, "reproduce must be 0 or a positive integer"),
        ({"seed": "x"}, "seed must be an integer"),
    ],
)
def test_bad_options_are_usage_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(racecheck.UsageError, match=message):
        racecheck.stress(lambda: None, **options)


def test_a_non_callable_target_is_a_usage_error() -> None:
    with pytest.raises(racecheck.UsageError, match="must be callable"):
        racecheck.stress(42)  # type: ignore[arg-type]
