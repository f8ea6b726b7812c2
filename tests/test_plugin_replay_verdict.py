"""The session summary of ``--racecheck-replay`` names what happened, not just pass/fail.

A token from buggy code, replayed on fixed code that needs more decisions than
the token holds, diverges. That run fails (the token could not be followed),
but it did not fail *again*: saying "fails again" tells the user the fix did
not work when it may well have.
"""

from __future__ import annotations

import re

import pytest

BUGGY = """
import asyncio
import pytest

@pytest.mark.racecheck
async def test_x():
    box = [0]
    async def bump():
        seen = box[0]
        await asyncio.sleep(0)
        box[0] = seen + 1
    await asyncio.gather(bump(), bump())
    assert box[0] == 2
"""

# the fix takes a lock and yields more often: more decisions than the token holds
FIXED = """
import asyncio
import pytest

@pytest.mark.racecheck
async def test_x():
    box = [0]
    lock = asyncio.Lock()
    async def bump():
        for _ in range(3):
            await asyncio.sleep(0)
        async with lock:
            seen = box[0]
            await asyncio.sleep(0)
            box[0] = seen + 1
    await asyncio.gather(bump(), bump())
    assert box[0] == 2
"""


def test_replay_that_diverges_is_not_summarised_as_failing_again(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_t=BUGGY)
    found = pytester.runpytest("-p", "no:cacheprovider")
    found.assert_outcomes(failed=1)
    match = re.search(r"--racecheck-replay=(\S+)", found.stdout.str())
    assert match, found.stdout.str()

    pytester.makepyfile(test_t=FIXED)
    replayed = pytester.runpytest("-p", "no:cacheprovider", f"--racecheck-replay={match[1]}")
    output = replayed.stdout.str()
    assert "DivergenceError" in output, output
    assert "fails again" not in output, output
    replayed.stdout.fnmatch_lines(["racecheck: replayed schedule on test_t.py::test_x: diverged*"])
