"""Interruptions other than Ctrl-C, and threads left behind after ``check()``.

A SIGALRM or SIGTERM handler that raises, pytest-timeout's signal method or a
debugger interrupts the *supervising* thread. Whatever it raises, the
exploration must be stopped and waited for: no explorer keeps running (and
burning CPU) against an unpatched world after ``check()`` has raised.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest

import racecheck

TARGETS = {
    "threads": """
        def target():
            box = {"n": 0}
            def bump():
                for _ in range(3):
                    box["n"] += 1
            ts = [threading.Thread(target=bump) for _ in range(3)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        """,
    "asyncio": """
        async def target():
            async def bump():
                for _ in range(3):
                    await asyncio.sleep(0)
            await asyncio.gather(*(bump() for _ in range(3)))
        """,
    "trio": """
        import trio
        async def target():
            async def bump():
                for _ in range(3):
                    await trio.sleep(0)
            async with trio.open_nursery() as nursery:
                for _ in range(3):
                    nursery.start_soon(bump)
        """,
}

SCRIPT = """
import asyncio, queue, signal, sys, threading, time
_ORIGINAL_LOCK = threading.Lock
_ORIGINAL_SLEEP = time.sleep
_ORIGINAL_START = threading.Thread.start
_ORIGINAL_LOOP = asyncio.new_event_loop
_ORIGINAL_QUEUE = queue.SimpleQueue
import racecheck

class Alarm(Exception):
    pass

def on_alarm(signum, frame):
    raise Alarm("time is up")

{target}

signal.signal(signal.SIGALRM, on_alarm)
def progress(done, total):
    if done == 50:
        # Mid-exploration, for sure: 50 schedules done, millions to go.
        signal.setitimer(signal.ITIMER_REAL, 0.2)
if {strategy!r} == "hypothesis":  # runs schedules without reporting progress
    signal.setitimer(signal.ITIMER_REAL, 1.0)
try:
    racecheck.check(
        target, backend={backend!r}, strategy={strategy!r}, schedules=10**7, progress=progress
    )
    print("FINISHED")
except Alarm:
    print("ALARM")
# racecheck's threads get 3 s to end (the check is that they end, not how soon): poll
deadline = time.monotonic() + 3
while True:
    alive = [t.name for t in threading.enumerate() if t.name.startswith("racecheck")]
    if not alive or time.monotonic() > deadline:
        break
    time.sleep(0.05)
print("ALIVE", alive)
before = time.process_time()
time.sleep(0.5)
print("CPU", round((time.process_time() - before) / 0.5, 3))
dirty = []
if threading.Lock is not _ORIGINAL_LOCK: dirty.append("Lock")
if time.sleep is not _ORIGINAL_SLEEP: dirty.append("sleep")
if threading.Thread.start is not _ORIGINAL_START: dirty.append("start")
if asyncio.new_event_loop is not _ORIGINAL_LOOP: dirty.append("new_event_loop")
if queue.SimpleQueue is not _ORIGINAL_QUEUE: dirty.append("SimpleQueue")
if sys.gettrace() is not None: dirty.append("settrace")
if sys.version_info >= (3, 12) and any(sys.monitoring.get_tool(i) for i in range(6)):
    dirty.append("sys.monitoring")
if "trio" in sys.modules:
    import trio._core._run as run_module
    if type(run_module._r).__module__.startswith("racecheck"): dirty.append("trio._r")
print("DIRTY", dirty)
"""


@pytest.mark.parametrize("strategy", ["pct", "hypothesis"])
@pytest.mark.parametrize("backend", ["threads", "asyncio", "trio"])
def test_an_exception_from_a_signal_handler_stops_the_exploration(
    backend: str, strategy: str
) -> None:
    if backend == "trio":
        pytest.importorskip("trio")
    script = SCRIPT.format(
        target=textwrap.dedent(TARGETS[backend]), backend=backend, strategy=strategy
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert "ALARM" in result.stdout, result.stdout + result.stderr[-3000:]
    assert "ALIVE []" in result.stdout, result.stdout
    cpu = float(result.stdout.split("CPU ", 1)[1].split()[0])
    assert cpu < 0.2, f"the process still burns {cpu} CPU-s/s after check() raised"
    assert "DIRTY []" in result.stdout, result.stdout
    assert result.returncode == 0, result.stderr[-3000:]


def _racecheck_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("racecheck")}


def test_no_pool_worker_is_alive_right_after_check_returns() -> None:
    def target() -> None:
        def work() -> None:
            pass

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    before = _racecheck_threads()  # an earlier test's stalled explorer is not this check's
    for _ in range(5):
        racecheck.check(target, schedules=20)
        assert _racecheck_threads() - before == set()


def test_no_explorer_is_alive_right_after_check_raises() -> None:
    async def target() -> None:
        raise ValueError("boom")

    before = _racecheck_threads()
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(target, schedules=3)
    assert _racecheck_threads() - before == set()


TIMEOUT_LIKE = """
import signal, sys, threading, time
import pytest
import racecheck

ORIGINAL_LOCK = threading.Lock
ORIGINAL_START = threading.Thread.start

def on_timeout(signum, frame):
    # What pytest-timeout's signal method does when a test runs too long.
    pytest.fail("Timeout (>1.0s) from pytest-timeout.")

def target():
    box = {"n": 0}
    def bump():
        box["n"] += 1
    ts = [threading.Thread(target=bump) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()

def test_times_out():
    signal.signal(signal.SIGALRM, on_timeout)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    racecheck.check(target, strategy="random", schedules=10**7, saturation=0)

def test_next_test_sees_a_quiet_clean_process():
    signal.setitimer(signal.ITIMER_REAL, 0)
    assert [t.name for t in threading.enumerate() if t.name.startswith("racecheck")] == []
    before = time.process_time()
    time.sleep(1)
    assert time.process_time() - before < 0.2
    assert threading.Lock is ORIGINAL_LOCK
    assert threading.Thread.start is ORIGINAL_START
    assert sys.gettrace() is None
"""


def test_a_test_timeout_stops_the_exploration_before_the_next_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_timeout_like=TIMEOUT_LIKE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*Timeout (>1.0s) from pytest-timeout*"])
