"""CI-matrix sharding through the CLI: ``racecheck run --shard I/N`` and ``racecheck report merge``.

Real subprocesses, real explorations, real report files.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

SCENARIO = textwrap.dedent(
    """
    import asyncio
    import racecheck


    def make(n_c):
        async def target():
            log = []

            async def worker(name, n):
                for _ in range(n):
                    log.append(name)
                    await asyncio.sleep(0)

            await asyncio.gather(worker("a", 4), worker("b", 4), worker("c", n_c))
            assert "cccc" not in "".join(log)[:6], "".join(log)

        return target


    async def tiny():
        await asyncio.gather(asyncio.sleep(0), asyncio.sleep(0))


    SCENARIO = racecheck.Scenario(
        name="rare",
        variants={
            "buggy": racecheck.Variant(make(4), expect="race", options={"strategy": "random"}),
            "pct": racecheck.Variant(make(4), expect="race", options={"strategy": "pct"}),
            "auto": racecheck.Variant(make(4), expect="race"),
            "fixed": racecheck.Variant(make(3), expect="safe", options={"strategy": "random"}),
            "tiny": racecheck.Variant(tiny, expect="safe"),
        },
    )
    """
)


def racecheck_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RACECHECK_DB="none", PYTHONHASHSEED="0")
    return subprocess.run(
        [sys.executable, "-m", "racecheck", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def records(directory: Path) -> dict[str, dict[str, object]]:
    data = json.loads((directory / "racecheck.json").read_text())
    return {r["variant"]: r for r in data["records"]}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "scen_rare.py").write_text(SCENARIO)
    return tmp_path


def test_four_slices_then_merge_give_the_first_failure_of_one_run(project: Path) -> None:
    whole = racecheck_cli(
        "run", "scen_rare.py", "--schedules", "300", "--report-dir", "whole", cwd=project
    )
    assert whole.returncode == 0, whole.stdout + whole.stderr
    for i in range(1, 5):
        part = racecheck_cli(
            "run", "scen_rare.py", "--schedules", "300", "--shard", f"{i}/4",
            "--report-dir", f"s{i}", cwd=project,
        )  # fmt: skip
        assert part.returncode in (0, 1), part.stderr
        for record in records(project / f"s{i}").values():
            assert record["shard"]["index"] == i and record["shard"]["count"] == 4
    merged = racecheck_cli("report", "merge", "s1", "s2", "s3", "s4", "-o", "merged", cwd=project)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    one, together = records(project / "whole"), records(project / "merged")
    for variant in ("buggy", "pct", "auto"):
        assert together[variant]["verdict"] == "race"
        assert together[variant]["schedule"] == one[variant]["schedule"], variant
        assert together[variant]["schedules_run"] == one[variant]["schedules_run"], variant
        assert together[variant]["replay_command"] == one[variant]["replay_command"]
    for variant in ("fixed", "tiny"):
        assert together[variant]["verdict"] == "safe"
        assert together[variant]["schedules_run"] == one[variant]["schedules_run"], variant
        assert together[variant]["exhausted"] == one[variant]["exhausted"], variant
    assert "shard" not in together["buggy"]
    assert f"race at schedule {one['buggy']['schedules_run']}" in merged.stdout
    # every format, from the merged records
    junit = ET.parse(project / "merged" / "racecheck.xml").getroot()
    assert len(junit.findall(".//testcase")) == 5
    html = (project / "merged" / "index.html").read_text()
    assert str(one["buggy"]["schedule"]) in html
    # the merged token replays serially, as printed
    token = str(together["buggy"]["schedule"])
    replay = racecheck_cli("replay", "scen_rare.py::rare[buggy]", token, cwd=project)
    assert replay.returncode == 1, replay.stdout + replay.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["run", "scen_rare.py", "--shard", "5/4"],
        ["run", "scen_rare.py", "--shard", "x"],
        ["run", "scen_rare.py", "--shard", "0/2"],
        ["run", "scen_rare.py", "--shard", "1/0"],
        ["run", "scen_rare.py", "--shard", "1/2", "-j", "2"],
        ["run", "scen_rare.py", "-j", "0"],
        ["report", "merge", "nowhere"],
        ["report", "merge"],
        ["report"],
    ],
)
def test_bad_shard_input_is_one_line_and_exit_2(project: Path, args: list[str]) -> None:
    result = racecheck_cli(*args, cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("racecheck: error:")


def test_merge_refuses_incomplete_or_unsharded_reports(project: Path) -> None:
    for i in (1, 2):
        racecheck_cli(
            "run", "scen_rare.py", "-k", "tiny", "--schedules", "50", "--shard", f"{i}/3",
            "--report-dir", f"s{i}", cwd=project,
        )  # fmt: skip
    missing = racecheck_cli("report", "merge", "s1", "s2", "-o", "m", cwd=project)
    assert missing.returncode == 2
    assert "missing shard 3 of 3" in missing.stderr
    twice = racecheck_cli("report", "merge", "s1", "s1", "s2", "-o", "m", cwd=project)
    assert twice.returncode == 2 and "given twice" in twice.stderr
    racecheck_cli(
        "run", "scen_rare.py", "-k", "tiny", "--schedules", "50", "--report-dir", "w", cwd=project
    )
    whole = racecheck_cli("report", "merge", "w", "-o", "m", cwd=project)
    assert whole.returncode == 2 and "not one slice" in whole.stderr
    (project / "junk").mkdir()
    (project / "junk" / "racecheck.json").write_text("{not json")
    junk = racecheck_cli("report", "merge", "junk", "-o", "m", cwd=project)
    assert junk.returncode == 2 and "not JSON" in junk.stderr


TIMING = re.compile(r"\s+\d+\.\d\d$")


def masked(text: str) -> list[str]:
    """The output with the seconds column and progress lines taken out."""
    return [TIMING.sub("", line) for line in text.splitlines() if not line.startswith("progress:")]


REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # CI time: its siblings cover the feature in CI
def test_run_j_prints_what_j1_prints_timings_aside(project: Path) -> None:
    """-j changes how long a run takes, never what it says, for every strategy.

    Variants on `auto` run whole in one worker: the portfolio adapts to what
    its whole run sees (it moves the budget to DPOR once sampling saturates),
    and a slice cannot see that. The others are sliced across the workers.
    """
    changeset = str(REPO / "scenarios" / "cleveragents_7120_changeset.py")
    common = ["run", "scen_rare.py", changeset, "--schedules", "150", "--trace"]
    one = racecheck_cli(*common, "--report-dir", "one", cwd=project)
    whole = comparable(project, "one")
    assert len(whole) >= 6
    assert any(str(r["strategy"]).startswith("auto") for r in whole)
    assert any(not str(r["strategy"]).startswith("auto") for r in whole)
    for jobs in ("2", "3"):
        many = racecheck_cli(*common, "-j", jobs, "--report-dir", f"j{jobs}", cwd=project)
        assert one.returncode == many.returncode == 0, one.stdout + one.stderr + many.stderr
        assert masked(many.stdout.replace(f"j{jobs}/", "one/")) == masked(one.stdout)
        assert comparable(project, f"j{jobs}") == whole
    # the coverage column is merged exactly, and there is something to merge
    assert re.search(r"cleveragents-7120-changeset\s+correct .* \d+/[1-9]\d*", one.stdout)


def comparable(project: Path, directory: str) -> list[dict[str, object]]:
    data = json.loads((project / directory / "racecheck.json").read_text())
    return [{k: v for k, v in r.items() if k != "seconds"} for r in data["records"]]
