"""``racecheck run/replay --trace-packages``: trace a library the scenario reaches indirectly.

Without the flag the run sees no point in the threads and says so (a warning,
never "exhausted"); with it the race is found, and the printed replay command
carries the flag, because a token only means something over the same traced set.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

LIBRARY = """
class Counter:
    def __init__(self):
        self.value = 0

    def bump(self):
        seen = self.value
        self.value = seen + 1
"""

SCENARIO = """
import threading
import racecheck
from middleman import make


def buggy():
    counter = make()
    threads = [threading.Thread(target=counter.bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.value == 2, counter.value


deep = racecheck.scenario(expect="race", strategy="random", schedules=200)(buggy)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    site = tmp_path / "venv" / "lib" / "python3" / "site-packages"
    (site / "deepcounter").mkdir(parents=True)
    (site / "deepcounter" / "__init__.py").write_text(textwrap.dedent(LIBRARY))
    (site / "middleman").mkdir()
    (site / "middleman" / "__init__.py").write_text(
        "import deepcounter\n\ndef make():\n    return deepcounter.Counter()\n"
    )
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "deep.py").write_text(textwrap.dedent(SCENARIO))
    return tmp_path


def racecheck_cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    site = project / "venv" / "lib" / "python3" / "site-packages"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "racecheck", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_without_the_flag_the_blind_run_says_so(project: Path) -> None:
    done = racecheck_cli(project, "run", "scenarios/", "--no-report")
    assert done.returncode == 1, done.stdout + done.stderr  # the expected race was not found
    assert "every scheduling point was in one thread" in done.stdout
    assert " exhausted" not in done.stdout.replace("not exhausted", "")


def test_with_the_flag_the_race_is_found_and_the_replay_command_carries_it(project: Path) -> None:
    done = racecheck_cli(
        project, "run", "scenarios/", "--no-report", "--trace-packages", "deepcounter"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    replay = next(line for line in done.stdout.splitlines() if "replay: racecheck replay" in line)
    command = shlex.split(replay.split("replay: ", 1)[1])
    assert command[-2:] == ["--trace-packages", "deepcounter"]
    again = racecheck_cli(project, *command[1:])
    assert again.returncode == 1, again.stdout + again.stderr  # the replay fails again
    assert "counter.value == 2" in again.stdout or "AssertionError" in again.stdout
