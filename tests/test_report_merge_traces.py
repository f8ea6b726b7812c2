"""A merged CI-matrix report draws the winning failure's trace, as a single run's does.

Each slice's ``racecheck.json`` carries the trace of its failure; ``racecheck
report merge`` reads it back, so the merged JSON keeps it and the merged HTML
shows the same swimlane a single run would. A trace that cannot be read back
costs only the drawing, never the merge.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCENARIO = textwrap.dedent(
    """
    import asyncio
    import racecheck


    async def lost_update():
        box = {"n": 0}

        async def bump():
            seen = box["n"]
            await asyncio.sleep(0)
            box["n"] = seen + 1

        await asyncio.gather(bump(), bump())
        assert box["n"] == 2, box


    SCENARIO = racecheck.Scenario(
        name="merge-trace",
        variants={"buggy": racecheck.Variant(lost_update, expect="race",
                                             options={"strategy": "random"})},
    )
    """
)


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RACECHECK_DB="none", PYTHONHASHSEED="0")
    return subprocess.run(
        [sys.executable, "-m", "racecheck", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def only_record(directory: Path) -> dict[str, object]:
    (record,) = json.loads((directory / "racecheck.json").read_text())["records"]
    assert isinstance(record, dict)
    return record


def slices(tmp_path: Path) -> None:
    (tmp_path / "scen_merge.py").write_text(SCENARIO)
    for i in (1, 2):
        part = cli(
            "run", "scen_merge.py", "--schedules", "50", "--shard", f"{i}/2",
            "--report-dir", f"s{i}", cwd=tmp_path,
        )  # fmt: skip
        assert part.returncode in (0, 1), part.stdout + part.stderr


def test_the_merged_report_keeps_the_winning_trace_and_draws_it(tmp_path: Path) -> None:
    slices(tmp_path)
    merged = cli("report", "merge", "s1", "s2", "-o", "merged", cwd=tmp_path)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    record = only_record(tmp_path / "merged")
    assert record["verdict"] == "race"
    winner = next(
        only_record(tmp_path / f"s{i}")
        for i in (1, 2)
        if only_record(tmp_path / f"s{i}")["schedule"] == record["schedule"]
    )
    assert winner["trace"], "a slice's failure carries its trace"
    assert record["trace"] == winner["trace"]
    html = (tmp_path / "merged" / "index.html").read_text()
    assert "<svg" in html, "the merged HTML draws the failure's swimlane"
    assert "trace as text" in html


def test_a_trace_that_cannot_be_read_back_costs_only_the_drawing(tmp_path: Path) -> None:
    slices(tmp_path)
    for i in (1, 2):
        path = tmp_path / f"s{i}" / "racecheck.json"
        data = json.loads(path.read_text())
        for rec in data["records"]:
            if rec.get("trace"):
                rec["trace"] = {"actors": "not a list", "steps": 7}
        path.write_text(json.dumps(data))
    merged = cli("report", "merge", "s1", "s2", "-o", "merged", cwd=tmp_path)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "Traceback" not in merged.stderr
    record = only_record(tmp_path / "merged")
    assert record["verdict"] == "race" and record["trace"] is None
