"""A trio target run without ``backend="trio"`` is a usage error, never a race.

trio code cannot run on an asyncio loop: the first nursery, checkpoint or
``trio.lowlevel`` call fails inside trio itself (``'RunContext' object has no
attribute 'runner'``, ``must be called from async context``, asyncio's "Task
got bad yield"). Those failures say nothing about the user's concurrency, so
they must not come back as a RaceFound. And a token recorded on trio carries
its backend, so replaying it needs no ``backend=`` either.
"""

from __future__ import annotations

from typing import Any

import pytest

trio = pytest.importorskip("trio")

import asyncio  # noqa: E402

import racecheck  # noqa: E402
from racecheck.errors import UsageError  # noqa: E402


async def trio_lost_update() -> None:
    box = {"n": 0}

    async def increment() -> None:
        current = box["n"]
        await trio.sleep(0)
        box["n"] = current + 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(increment)
        nursery.start_soon(increment)
    assert box["n"] == 2, f"n is {box['n']}, expected 2"


async def trio_checkpoint_only() -> None:
    await trio.sleep(0)


async def trio_lowlevel() -> None:
    trio.lowlevel.current_task()


@pytest.mark.parametrize(
    "target",
    [trio_lost_update, trio_checkpoint_only, trio_lowlevel],
    ids=["nursery", "checkpoint", "lowlevel"],
)
def test_trio_target_on_asyncio_is_a_usage_error(target: Any) -> None:
    with pytest.raises(UsageError) as info:
        racecheck.check(target, schedules=20)
    assert not isinstance(info.value, racecheck.RaceFound)
    message = str(info.value)
    assert "backend='trio'" in message
    assert "trio" in message.splitlines()[0]


def test_the_same_target_on_trio_finds_the_race() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(trio_lost_update, backend="trio", schedules=200)
    assert info.value.kind == "exception"
    assert "expected 2" in str(info.value.cause)


async def asyncio_race() -> None:
    box = {"n": 0}

    async def increment() -> None:
        current = box["n"]
        await asyncio.sleep(0)
        box["n"] = current + 1

    await asyncio.gather(increment(), increment())
    assert box["n"] == 2


async def asyncio_runtime_error() -> None:
    # the same words as trio's error, raised by user code: still a real failure
    await asyncio.sleep(0)
    raise RuntimeError("must be called from async context")


@pytest.mark.parametrize("target", [asyncio_race, asyncio_runtime_error])
def test_asyncio_failures_stay_races(target: Any) -> None:
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(target, schedules=50)


def test_replay_of_a_trio_token_uses_the_tokens_backend() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(trio_lost_update, backend="trio", schedules=200)
    token = info.value.schedule
    assert token.startswith("rc1:trio:")
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(trio_lost_update, token)
    assert again.value.kind == "exception"
    assert "expected 2" in str(again.value.cause)


def test_asyncio_token_on_a_sync_target_is_still_a_token_error() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(asyncio_race, schedules=50, label="shared")

    def sync_target() -> None:
        pass

    with pytest.raises(racecheck.TokenError, match="asyncio backend"):
        racecheck.replay(sync_target, info.value.schedule, label="shared")


TRIO_TEST = """
import pytest
import trio

@pytest.mark.racecheck(schedules=20)
async def test_counter():
    box = {"n": 0}

    async def increment():
        current = box["n"]
        await trio.sleep(0)
        box["n"] = current + 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(increment)
        nursery.start_soon(increment)
    assert box["n"] == 2
"""


def test_pytest_trio_test_without_backend_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_counter=TRIO_TEST)
    result = pytester.runpytest("-p", "no:trio")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "race found" not in out
    result.stdout.fnmatch_lines(["*racecheck: UsageError: *backend='trio'*"])
