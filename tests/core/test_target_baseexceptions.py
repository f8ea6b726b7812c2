"""SystemExit, KeyboardInterrupt and other BaseExceptions raised by the code under test.

They are the schedule's failure (kind "exception", cause = that exception) on
every backend: they must not escape ``check()``, end ``racecheck run`` with
the target's own exit status, or abort a pytest session. Only a real Ctrl-C,
delivered to the supervising thread, interrupts an exploration.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import racecheck


class Custom(BaseException):
    """A BaseException that is neither SystemExit nor KeyboardInterrupt."""


def _raisers() -> list[tuple[str, Callable[[], BaseException]]]:
    return [
        ("SystemExit", lambda: SystemExit(3)),
        ("KeyboardInterrupt", lambda: KeyboardInterrupt("from the target")),
        ("Custom", lambda: Custom("custom")),
    ]


RAISERS = _raisers()
BACKENDS = ["threads", "asyncio", "trio"]


def _targets(backend: str, make: Callable[[], BaseException], where: str) -> Callable[[], Any]:
    """A target raising ``make()`` in its root actor or in a child actor."""
    if backend == "threads":

        def child_thread() -> None:
            raise make()

        def threaded() -> None:
            if where == "root":
                raise make()
            t = threading.Thread(target=child_thread, name="raiser")
            t.start()
            t.join()

        return threaded
    if backend == "asyncio":

        async def child_task() -> None:
            await asyncio.sleep(0)
            raise make()

        async def on_asyncio() -> None:
            if where == "root":
                await asyncio.sleep(0)
                raise make()
            await asyncio.gather(child_task(), asyncio.sleep(0))

        return on_asyncio

    trio = pytest.importorskip("trio")

    async def child() -> None:
        await trio.sleep(0)
        raise make()

    async def on_trio() -> None:
        if where == "root":
            await trio.sleep(0)
            raise make()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(child)
            nursery.start_soon(trio.sleep, 0)

    return on_trio


@pytest.mark.parametrize("where", ["root", "child"])
@pytest.mark.parametrize(("kind", "make"), RAISERS, ids=[name for name, _ in RAISERS])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_base_exception_from_the_target_is_the_schedules_failure(
    backend: str, kind: str, make: Callable[[], BaseException], where: str
) -> None:
    target = _targets(backend, make, where)
    with pytest.raises(racecheck.RaceFound) as caught:
        racecheck.check(target, backend=backend, schedules=5)
    found = caught.value
    assert found.kind == "exception"
    assert type(found.cause).__name__ == kind, repr(found.cause)
    if kind == "SystemExit":
        assert isinstance(found.cause, SystemExit) and found.cause.code == 3
    assert found.schedules_run == 1  # every schedule raises: the first one fails
    # and the token replays the same failure
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(target, found.schedule, backend=backend)
    assert type(again.value.cause).__name__ == kind


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_race_that_ends_in_system_exit_is_found_and_replayed(backend: str) -> None:
    """Only some orders raise: exploring must go on past the passing ones."""
    if backend == "trio":
        trio = pytest.importorskip("trio")
        sleep: Any = trio.sleep
    else:
        sleep = asyncio.sleep

    async def racy() -> None:
        box = {"n": 0}

        async def bump() -> None:
            value = box["n"]
            await sleep(0)
            box["n"] = value + 1

        if backend == "trio":
            async with trio.open_nursery() as nursery:
                nursery.start_soon(bump)
                nursery.start_soon(bump)
        else:
            await asyncio.gather(bump(), bump())
        if box["n"] != 2:
            raise SystemExit(f"lost update: {box['n']}")

    with pytest.raises(racecheck.RaceFound) as caught:
        racecheck.check(racy, backend=backend, schedules=200, seed=1)
    assert isinstance(caught.value.cause, SystemExit)
    assert "lost update" in str(caught.value.cause)


SCENARIO = """
import asyncio
import threading
from racecheck.scenario import Scenario, Variant

class Custom(BaseException):
    pass

async def exits():
    await asyncio.sleep(0)
    raise SystemExit(3)

async def interrupts():
    await asyncio.sleep(0)
    raise KeyboardInterrupt

async def trio_exits():
    import trio
    await trio.sleep(0)
    raise SystemExit(3)

def thread_raises():
    def body():
        raise Custom("custom")
    t = threading.Thread(target=body)
    t.start()
    t.join()

async def fine():
    await asyncio.sleep(0)

SCENARIO = Scenario(
    name="base-exceptions",
    variants={
        "exits": Variant(exits, expect="safe"),
        "interrupts": Variant(interrupts, expect="safe"),
        "trio-exits": Variant(trio_exits, expect="safe", options={"backend": "trio"}),
        "thread-custom": Variant(thread_raises, expect="safe"),
        "fine": Variant(fine, expect="safe"),
    },
    options={"schedules": 5},
)
"""


def test_racecheck_run_reports_a_target_exit_as_a_violation(tmp_path: Path) -> None:
    pytest.importorskip("trio")
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "base_exceptions.py").write_text(SCENARIO)
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from racecheck.cli import main; raise SystemExit(main())",
            "run",
            "scenarios/base_exceptions.py",
            "--report-dir",
            str(tmp_path / "reports"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 1, out  # a violated expectation, not the target's 3
    for variant in ("exits", "interrupts", "trio-exits", "thread-custom"):
        # "(auto: <member>, its schedule 1)" may name the portfolio member in between
        assert re.search(
            rf"base-exceptions\[{re.escape(variant)}\]: race after 1 schedule( \(auto: [^)]*\))?"
            r" \(expected safe\)",
            out,
        ), out
    assert "SystemExit: 3" in out and "KeyboardInterrupt" in out and "Custom" in out, out
    assert "interrupted" not in out.lower(), out
    assert "Traceback" not in result.stderr, result.stderr
    # every variant got its verdict, reports included
    assert "fine" in out
    assert any((tmp_path / "reports").iterdir())


PYTEST_FILE = """
import asyncio
import pytest

@pytest.mark.racecheck(schedules=5)
async def test_interrupts():
    await asyncio.sleep(0)
    raise KeyboardInterrupt

@pytest.mark.racecheck(schedules=5)
async def test_exits():
    await asyncio.sleep(0)
    raise SystemExit(3)

@pytest.mark.racecheck(schedules=5, backend="trio")
async def test_trio_interrupts():
    import trio
    await trio.sleep(0)
    raise KeyboardInterrupt

@pytest.mark.racecheck(schedules=5)
def test_thread_interrupts():
    raise KeyboardInterrupt

def test_after():
    pass
"""


def test_a_marked_async_test_raising_keyboard_interrupt_fails_only_that_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_base_exceptions=PYTEST_FILE)
    pytest.importorskip("trio")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "KeyboardInterrupt" in out and "SystemExit" in out
    assert "!!! KeyboardInterrupt !!!" not in out
    assert "Interrupted" not in out, textwrap.shorten(out, 2000)
