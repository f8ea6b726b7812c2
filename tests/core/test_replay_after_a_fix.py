"""Replaying a buggy token on fixed code that needs fewer decisions: "did not fail".

A fix often removes scheduling points (the racy ``await`` between a read and
a write goes away), so the fixed run finishes before it has used every
decision the token recorded. It followed the schedule and did not fail: that
is the answer the user asked for, not a divergence. Needing a decision the
token does not hold is still one.
"""

from __future__ import annotations

import asyncio

import pytest

import racecheck
from racecheck.errors import DivergenceError

LABEL = "test_account.py::test_deposit"


async def racy_deposits() -> None:
    box = [0]

    async def deposit() -> None:
        seen = box[0]
        await asyncio.sleep(0)
        box[0] = seen + 1

    await asyncio.gather(deposit(), deposit())
    assert box[0] == 2, box[0]


async def fixed_deposits() -> None:
    box = [0]

    async def deposit() -> None:
        box[0] += 1  # no await between the read and the write any more

    await asyncio.gather(deposit(), deposit())
    assert box[0] == 2, box[0]


async def fixed_with_more_awaits() -> None:
    box = [0]
    lock = asyncio.Lock()

    async def deposit() -> None:
        for _ in range(3):
            await asyncio.sleep(0)
        async with lock:
            seen = box[0]
            await asyncio.sleep(0)
            box[0] = seen + 1

    await asyncio.gather(deposit(), deposit())
    assert box[0] == 2, box[0]


def buggy_token() -> str:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(racy_deposits, label=LABEL, schedules=200)
    return found.value.schedule


def test_fixed_code_that_finishes_early_did_not_fail() -> None:
    token = buggy_token()
    assert racecheck.replay(fixed_deposits, token, label=LABEL) is None


def test_fixed_code_that_needs_more_decisions_still_diverges() -> None:
    token = buggy_token()
    with pytest.raises(DivergenceError, match="needed another"):
        racecheck.replay(fixed_with_more_awaits, token, label=LABEL)
