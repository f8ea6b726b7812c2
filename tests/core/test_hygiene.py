"""Bad input, Ctrl-C and blocking in C: clear errors, no hangs, nothing left patched."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import racecheck

ORIGINALS_FIRST = textwrap.dedent(
    """
    import threading as _t0
    _ORIGINAL_LOCK = _t0.Lock
    """
)
PRISTINE_CHECK = textwrap.dedent(
    """
    import asyncio, queue, sys, threading, time, _thread
    problems = []
    if threading.Lock is not _ORIGINAL_LOCK: problems.append("threading.Lock")
    if time.sleep.__module__ != "time": problems.append("time.sleep")
    if "racecheck" in repr(threading.Thread.start): problems.append("Thread.start")
    if "racecheck" in repr(queue.SimpleQueue): problems.append("SimpleQueue")
    if "racecheck" in repr(asyncio.new_event_loop): problems.append("new_event_loop")
    if sys.gettrace() is not None: problems.append("settrace")
    if sys.version_info >= (3, 12) and any(sys.monitoring.get_tool(i) for i in (3, 4)):
        problems.append("sys.monitoring")
    print("PRISTINE" if not problems else "DIRTY " + ",".join(problems), flush=True)
    """
)


def run_script(
    body: str, *, interrupt_after: float | None = None
) -> subprocess.CompletedProcess[str]:
    script = ORIGINALS_FIRST + textwrap.dedent(body) + "\n" + PRISTINE_CHECK
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if interrupt_after is not None:
        deadline = time.monotonic() + 120
        # Interrupt once the exploration is really under way.
        while time.monotonic() < deadline:
            time.sleep(0.2)
            if process.poll() is not None:
                break
            if interrupt_after <= 0:
                process.send_signal(signal.SIGINT)
                break
            interrupt_after -= 0.2
    try:
        out, err = process.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        # a run that ignored the interrupt must not outlive the test (and eat a core)
        process.kill()
        process.communicate()
        raise
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


@pytest.mark.parametrize("backend", ["asyncio", "threads"])
def test_ctrl_c_stops_an_exploration_cleanly(backend: str) -> None:
    target = (
        "async def target():\n    await asyncio.gather(*(asyncio.sleep(0) for _ in range(3)))\n"
        if backend == "asyncio"
        else "def target():\n    ts = [threading.Thread(target=lambda: None) for _ in range(2)]\n"
        "    [t.start() for t in ts]; [t.join() for t in ts]\n"
    )
    result = run_script(
        f"""
        import asyncio, threading, racecheck
        {textwrap.indent(target, "        ").strip()}
        try:
            racecheck.check(target, strategy="random", schedules=10**7, saturation=0)
            print("FINISHED")
        except KeyboardInterrupt:
            print("INTERRUPTED")
        """,
        interrupt_after=1.5,
    )
    assert "INTERRUPTED" in result.stdout, result.stderr
    assert "PRISTINE" in result.stdout, result.stdout
    assert "Traceback" not in result.stderr


def test_an_async_target_blocking_in_c_is_reported_within_the_watchdog() -> None:
    result = run_script(
        """
        import time, racecheck
        async def blocks_in_c():
            time.sleep(3600)  # a blocking call inside a coroutine: invisible to asyncio
        try:
            racecheck.check(blocks_in_c, schedules=5, watchdog=1)
        except racecheck.StuckError as exc:
            print("STUCK", exc)
        """
    )
    assert "STUCK no scheduling progress for 1s" in result.stdout
    assert "time.sleep(3600)" in result.stdout or "blocks_in_c" in result.stdout
    assert "PRISTINE" in result.stdout


def test_a_thread_blocking_in_c_is_reported_within_the_watchdog() -> None:
    result = run_script(
        """
        import _thread, threading, racecheck
        def blocks_in_c():
            raw = _thread.allocate_lock()
            raw.acquire()
            t = threading.Thread(target=raw.acquire, name="stuck-worker")
            t.start()
            t.join()
        try:
            racecheck.check(blocks_in_c, schedules=5, watchdog=1)
        except racecheck.StuckError as exc:
            print("STUCK", exc)
        """
    )
    assert "STUCK no scheduling progress" in result.stdout, result.stderr
    assert "stuck-worker" in result.stdout
    assert "PRISTINE" in result.stdout


@pytest.mark.parametrize(
    "target",
    [42, "not callable", None],
)
def test_a_target_that_is_not_a_function_is_a_usage_error(target: object) -> None:
    with pytest.raises(racecheck.UsageError, match="function"):
        racecheck.check(target, schedules=1)  # type: ignore[arg-type]


def test_a_coroutine_object_is_a_usage_error() -> None:
    async def job() -> None:
        pass

    coroutine = job()
    with pytest.raises(racecheck.UsageError, match="coroutine"):
        racecheck.check(coroutine, schedules=1)  # type: ignore[arg-type]
    coroutine.close()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"strategy": "nope"},
        {"schedules": 0},
        {"schedules": "many"},
        {"seed": "x"},
        {"backend": "gevent"},
        {"granularity": "atoms"},
        {"no_such_option": 1},
        {"max_steps": -1},
    ],
)
def test_bad_options_are_one_line_usage_errors(kwargs: dict[str, object]) -> None:
    def target() -> None:
        pass

    with pytest.raises(racecheck.UsageError) as info:
        racecheck.check(target, **kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)
    assert threading.Thread.start.__module__ == "threading"


def test_tokens_for_another_target_backend_or_python_are_refused() -> None:
    async def first() -> None:
        value = [0]

        async def bump() -> None:
            v = value[0]
            await asyncio.sleep(0)
            value[0] = v + 1

        await asyncio.gather(bump(), bump())
        assert value[0] == 2

    async def second() -> None:
        pass

    def threaded() -> None:
        pass

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(first, schedules=50)
    token = info.value.schedule
    with pytest.raises(racecheck.TokenError, match="another target"):
        racecheck.replay(second, token)
    with pytest.raises(racecheck.TokenError, match="asyncio backend"):
        racecheck.replay(threaded, token)
    other_python = token.replace(":py3", ":py2", 1)
    with pytest.raises(racecheck.TokenError, match="Python minor"):
        racecheck.replay(first, other_python)
    with pytest.raises(racecheck.TokenError, match="malformed"):
        racecheck.replay(first, "rc1:garbage")


def test_environment_is_untouched_by_this_module() -> None:
    assert "racecheck" not in repr(threading.Thread.start)
    assert os.environ.get("RACECHECK_LEAK") is None


def test_test_module_basenames_are_unique() -> None:
    """pytest imports test files by basename (no packages): two test_cli.py break collection."""
    from collections import Counter
    from pathlib import Path

    tests = Path(__file__).parents[1]
    names = Counter(path.name for path in tests.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
