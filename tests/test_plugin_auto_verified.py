"""A marked test of cleveragents-7120-changeset's fix is verified, as in racecheck run (issue 11).

The pytest plugin leaves interleaving coverage off (racecheck.check's default),
so strategy="auto" used to tell its sampled schedules apart by decision
sequence only: they hardly ever repeat, the budget rarely moved to DPOR, and
at 500 schedules the test's report said "no failure" where ``racecheck run
--schedules 500`` said "verified". Real pytest runs (pytester), the real
reference program.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.usefixtures("threads_engine")

TEST = """
import pytest

from racecheck.reference.changeset import plan_steps


@pytest.mark.racecheck{marker}
def test_changeset_fix():
    plan_steps("correct")
"""

INI = """
[pytest]
racecheck_db = none
"""


# 500 schedules verify the fix under most seeds, not all (17 of seeds 0-24, seed 0 not
# among them: tests/core/test_portfolio_plain.py's SATURATING_SEED says why); the
# default budget verifies under seed 0
@pytest.mark.parametrize(
    ("marker", "seed"),
    # 500 at the saturating seed: the same run as tests/core/test_portfolio_plain.py's
    # [500-1] through a marker (CI time: that one runs in CI)
    [("", 0), pytest.param("(schedules=500, seed=1)", 1, marks=pytest.mark.slow)],
    ids=["default", "500"],
)
def test_the_marked_test_of_the_fix_is_verified(
    pytester: pytest.Pytester, marker: str, seed: int
) -> None:
    pytester.makeini(INI)
    # a basename of its own: tests/reference/test_changeset.py may be imported in this worker
    pytester.makepyfile(test_marked_changeset_fix=TEST.format(marker=marker))
    # -rP: the passing test's racecheck section (the report the plugin writes for it)
    result = pytester.runpytest("-p", "no:asyncio", "-p", "no:trio", "-rP")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            f"racecheck: * schedules (auto, seed {seed}, threads): verified",
            "*verified: all 81 non-equivalent interleavings explored*",
        ]
    )
    result.stdout.no_fnmatch_line("*: no failure*")
