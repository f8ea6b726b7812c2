"""Warnings from the code under test: once per test with a count, not once per schedule."""

from __future__ import annotations

import pytest

TEST = """
import asyncio, warnings
import pytest


def lib():
    warnings.warn("lib.old() is deprecated", DeprecationWarning, stacklevel=2)


async def work(box):
    lib()
    await asyncio.sleep(0)
    box.append(1)


@pytest.mark.racecheck(schedules=50, strategy="random")
async def test_w():
    box = []
    await asyncio.gather(work(box), work(box))
    assert len(box) == 2
"""


def test_a_warning_of_every_schedule_is_shown_once_with_its_count(
    pytester: pytest.Pytester, real_engine: None
) -> None:
    pytester.makepyfile(test_w=TEST)
    result = pytester.runpytest("-p", "no:asyncio", "-p", "no:trio", "--racecheck-db=none")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*DeprecationWarning: lib.old() is deprecated"
            " (racecheck: 100 times over the test's schedules)"
        ]
    )


def test_an_error_filter_still_fails_the_test(pytester: pytest.Pytester, real_engine: None) -> None:
    pytester.makepyfile(test_w=TEST)
    result = pytester.runpytest(
        "-p",
        "no:asyncio",
        "-p",
        "no:trio",
        "--racecheck-db=none",
        "-W",
        "error::DeprecationWarning",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*lib.old() is deprecated*"])
