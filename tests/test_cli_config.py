"""``racecheck run`` reads [tool.racecheck], the environment and profiles
(real subprocesses, real engine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCENARIO = textwrap.dedent(
    """
    import asyncio
    import racecheck

    async def three_tasks():
        async def step():
            for _ in range(3):
                await asyncio.sleep(0)

        await asyncio.gather(step(), step(), step())

    SCEN = racecheck.Scenario(
        name="s",
        variants={"v": racecheck.Variant(three_tasks, expect="safe")},
        options={"strategy": "random", "schedules": 6},
    )
    """
)


def _cli(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("RACECHECK_")}
    return subprocess.run(
        [sys.executable, "-m", "racecheck", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(base, PYTHONHASHSEED="0", **(env or {})),
        timeout=300,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "scen.py").write_text(SCENARIO)
    return tmp_path


def _pyproject(project: Path, text: str) -> None:
    (project / "pyproject.toml").write_text(textwrap.dedent(text))


def _schedules(proc: subprocess.CompletedProcess[str]) -> tuple[int, int]:
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    (record,) = json.loads(proc.stdout)
    return record["schedules_run"], record["seed"]


def test_pyproject_gives_paths_budget_and_report_dir(project: Path) -> None:
    _pyproject(
        project,
        """
        [tool.racecheck]
        paths = ["checks"]
        schedules = 4
        seed = 2
        report_dir = "out/rc"
        db = "none"
        """,
    )
    proc = _cli(project, "run")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert (project / "out" / "rc" / "racecheck.json").is_file()
    record = json.loads((project / "out" / "rc" / "racecheck.json").read_text())["records"][0]
    assert (record["schedules_run"], record["seed"]) == (4, 2)


def test_pyproject_is_found_above_the_working_directory(project: Path) -> None:
    _pyproject(project, '[tool.racecheck]\nschedules = 3\ndb = "none"\n')
    proc = _cli(project / "checks", "run", "scen.py", "--json", "--no-report")
    assert _schedules(proc) == (3, 0)


def test_precedence_cli_env_pyproject_scenario(project: Path) -> None:
    args = ("run", "checks", "--json", "--no-report", "--db", "none")
    assert _schedules(_cli(project, *args)) == (6, 0)  # the scenario's own options
    _pyproject(project, "[tool.racecheck]\nschedules = 5\nseed = 1\n")
    assert _schedules(_cli(project, *args)) == (5, 1)  # the file beats the scenario
    env = {"RACECHECK_SCHEDULES": "7"}
    assert _schedules(_cli(project, *args, env=env)) == (7, 1)  # env beats the file
    assert _schedules(_cli(project, *args, "--schedules", "2", env=env)) == (2, 1)


def test_profiles_scale_all_but_a_typed_budget(project: Path) -> None:
    _pyproject(project, "[tool.racecheck.profiles.half]\nschedules_multiplier = 0.5\n")
    args = ("run", "checks", "--json", "--no-report", "--db", "none")
    assert _schedules(_cli(project, *args, "--profile", "ci")) == (60, 0)
    assert _schedules(_cli(project, *args, env={"RACECHECK_PROFILE": "half"})) == (3, 0)
    assert _schedules(_cli(project, *args, "--profile", "dev")) == (1, 0)
    assert _schedules(_cli(project, *args, "--profile", "ci", "--schedules", "4")) == (4, 0)


@pytest.mark.parametrize(
    ("pyproject", "env", "args", "words"),
    [
        ('[tool.racecheck]\nschedules = "x"\n', {}, [], ["[tool.racecheck]", "integer"]),
        ("[tool.racecheck]\nstrategy = 3\n", {}, [], ["unknown strategy"]),
        ("[tool.racecheck\n", {}, [], ["cannot read", "pyproject.toml"]),
        ("", {"RACECHECK_SCHEDULES": "0"}, [], ["RACECHECK_SCHEDULES", "at least 1"]),
        ("", {}, ["--profile", "nope"], ["--profile", "unknown profile"]),
        ("", {}, ["--strategy", "nope"], ["unknown strategy"]),
    ],
)
def test_bad_configuration_is_exit_2(
    project: Path, pyproject: str, env: dict[str, str], args: list[str], words: list[str]
) -> None:
    if pyproject:
        _pyproject(project, pyproject)
    proc = _cli(project, "run", "checks", "--no-report", *args, env=env)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("racecheck: error:"), proc.stderr
    for word in words:
        assert word in lines[0], lines[0]
