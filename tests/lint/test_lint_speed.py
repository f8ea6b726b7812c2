"""The lint's speed work must not change a finding; ``racecheck lint --timing`` reports.

The pre-scan (``run.TRIGGERS``) skips a check when the file's text lacks every
word that check matches on. These tests lint real files both ways (pre-scan on,
and every check on every file) and require the same findings, plus small files
whose only trigger is an unusual word (``scheduler``, ``pool``, ``Timer``). No
timing is asserted: only that the timing report is there and well formed.
"""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from racecheck.lint import lint_paths, lint_source
from racecheck.lint.run import (
    CHECKS,
    PHASES,
    iter_files,
    lint_paths_timed,
    needed_checks,
    paused_gc,
    read_source,
)

ROOT = Path(__file__).resolve().parents[2]

#: files whose one trigger for the check that reports on them is an unusual word
EDGE_CASES = {
    # a method handed to a thread by an argument named like a scheduler (Rx)
    "scheduler.py": """
        class Bridge:
            def __init__(self, loop, stream, scheduler):
                self.loop = loop
                stream.flat_map(self.on_item, scheduler)

            def on_item(self, item):
                self.loop.create_task(self.handle(item))
        """,
    # fan-out and thread evidence through `<...>.pool.map(...)` only
    "poolmap.py": """
        class Crawler:
            def __init__(self, workers):
                self.seen = {}
                self.workers = workers

            def crawl(self, urls):
                return list(self.workers.pool.map(self.fetch, urls))

            def fetch(self, url):
                if url not in self.seen:
                    self.seen[url] = len(self.seen)
                return self.seen[url]
        """,
    # a threading lock imported under another name
    "alias.py": """
        import threading as th


        class Beat:
            def __init__(self):
                self._guard = th.Lock()
                self.count = 0

            def tick(self):
                self.count += 1
        """,
    # a coroutine (the only 'async' is in the keyword)
    "coroutine.py": """
        class Runtime:
            async def step(self, branch):
                self._current = branch.agent
                await self.model(branch)
                return self._current
        """,
    # RC107: a Future made in __init__ of a class with async methods
    "eager.py": """
        import asyncio


        class Pool:
            def __init__(self):
                self._ready = asyncio.get_event_loop().create_future()

            async def get(self):
                return await self._ready
        """,
}


def _real_files() -> list[Path]:
    """racecheck's own code (the reference components have findings), scenarios, tests."""
    return [
        file
        for tree in (ROOT / "src" / "racecheck", ROOT / "scenarios", ROOT / "tests")
        for file in iter_files([tree])
    ]


@pytest.mark.slow  # CI time: its siblings cover the feature in CI
def test_prescan_gives_the_findings_of_every_check_on_real_files() -> None:
    files = _real_files()
    findings = 0
    skipped_checks = 0
    for file in files:
        source = read_source(file)
        fast = lint_source(source, str(file))
        full = lint_source(source, str(file), prescan=False)
        assert fast == full, file
        findings += len(full)
        skipped_checks += len(CHECKS) - len(needed_checks(source))
    # the comparison means something: findings to keep, and checks the pre-scan skipped
    assert len(files) > 100
    assert findings > 20
    assert skipped_checks > 50


@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_prescan_keeps_findings_whose_only_trigger_is_an_unusual_word(name: str) -> None:
    source = textwrap.dedent(EDGE_CASES[name])
    full = lint_source(source, name, prescan=False)
    assert full, "the edge case must have a finding to keep"
    assert lint_source(source, name) == full


def test_a_file_no_check_needs_is_still_parsed(tmp_path: Path) -> None:
    """Skipping the checks must not skip the syntax check: a broken file is exit 2."""
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n    return 1\n")
    assert needed_checks(broken.read_text()) == ()
    result = _cli(str(broken))
    assert result.returncode == 2
    assert result.stderr.startswith("racecheck: error: ") and result.stderr.count("\n") == 1
    assert "syntax error" in result.stderr


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "racecheck.lint", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=120,
    )


@pytest.fixture
def edge_project(tmp_path: Path) -> Path:
    for name, source in EDGE_CASES.items():
        (tmp_path / name).write_text(textwrap.dedent(source))
    (tmp_path / "plain.py").write_text("def add(a, b):\n    return a + b\n")
    return tmp_path


def test_timing_report_lists_the_slowest_files_and_the_count_over_budget(
    edge_project: Path,
) -> None:
    plain = _cli(str(edge_project), "--format", "json")
    timed = _cli(str(edge_project), "--format", "json", "--timing", "--timing-top", "3")
    assert timed.returncode == plain.returncode == 1
    assert json.loads(timed.stdout) == json.loads(plain.stdout)  # same findings
    lines = timed.stderr.splitlines()
    assert lines[0].startswith("Timing: CPU ms per file (one run; load average ")
    assert lines[1].split() == ["total", *PHASES, "lines", "path"]
    rows = lines[2:5]
    totals = [float(row.split()[0]) for row in rows]
    assert totals == sorted(totals, reverse=True)
    for row in rows:
        cells = row.split()
        assert len(cells) == len(PHASES) + 3
        assert Path(cells[-1]).parent == edge_project
    assert re.fullmatch(
        r"\d of 6 files over 50 ms; mean [\d.]+ ms, max [\d.]+ ms, total [\d.]+ s", lines[5]
    )
    assert len(lines) == 6


def test_timing_options_are_checked(edge_project: Path) -> None:
    for bad in (["--timing-runs", "0"], ["--timing-top", "-1"], ["--timing-runs", "x"]):
        result = _cli(str(edge_project), "--timing", *bad)
        assert result.returncode == 2, bad
        assert result.stderr.startswith("racecheck: error: ") and result.stderr.count("\n") == 1


def test_lint_paths_timed_has_the_findings_of_lint_paths(edge_project: Path) -> None:
    findings, timings = lint_paths_timed([edge_project], runs=2)
    assert findings == lint_paths([edge_project])
    assert sorted(t.path for t in timings) == sorted(str(f) for f in iter_files([edge_project]))
    by_path = {Path(t.path).name: t for t in timings}
    # a file no check needs is read and parsed, nothing more
    assert set(by_path["plain.py"].seconds) <= {"read", "parse", "free", "gc"}
    assert set(by_path["coroutine.py"].seconds) == set(PHASES)
    assert by_path["coroutine.py"].findings == 1
    assert all(t.total == sum(t.seconds.values()) >= 0 for t in timings)


def test_paused_gc_restores_the_collector_state() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused_gc():
        assert not gc.isenabled()
        raise RuntimeError("a check failed")
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the caller's choice stands
    finally:
        gc.enable()


def test_lint_paths_pausing_the_collector_per_file_finds_the_same(edge_project: Path) -> None:
    paused = lint_paths([edge_project], pause_gc=True)
    assert gc.isenabled()
    assert paused == lint_paths([edge_project]) != []
