"""``python -m racecheck.bench.dpor_reversals``: where a DPOR search's budget goes.

Run as a user would (a subprocess), on the bridge scenario with a few
schedules: it prints DPOR's note and the reversals it added, counted by what
the two steps conflicted on; bad input is one line and exit code 2.
"""

from __future__ import annotations

import os
import subprocess
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
_BRIDGE = os.path.join(_ROOT, "scenarios", "cleveragents_7105_bridge.py")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "racecheck.bench.dpor_reversals", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=_ROOT,
        check=False,
    )


def test_counts_the_reversals_of_a_bridge_run_by_what_conflicted() -> None:
    done = _run(_BRIDGE, "correct", "--schedules", "6")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("dpor: the budget ran out after") for line in lines), lines
    header = next(i for i, line in enumerate(lines) if "reversals added" in line)
    counts = [line.split(None, 1) for line in lines[header + 1 :]]
    assert counts, "no reversal was counted"
    assert all(count.isdigit() and int(count) > 0 for count, _ in counts), counts
    # the pool's job queue is among what the bridge's first runs reverse
    assert any("Queue:" in what for _, what in counts), counts


def test_a_missing_variant_is_one_line_and_exit_code_2() -> None:
    done = _run(_BRIDGE, "no-such-variant")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "no variant 'no-such-variant'" in line and "correct" in line


def test_a_file_that_is_not_a_scenario_is_one_line_and_exit_code_2() -> None:
    done = _run(os.path.join(_ROOT, "no_such_scenario.py"), "correct")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "not a scenario file" in line
