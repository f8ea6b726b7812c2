"""``racecheck`` against hostile scenario files, paths and report directories.

Bad input gets one line on stderr and exit 2 -- never a traceback, never a
hang, and never a silent exit 0 for a run that did nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

OK_SCENARIO = textwrap.dedent(
    """
    import racecheck

    def target():
        pass

    SCEN = racecheck.Scenario(name="s", variants={"v": racecheck.Variant(target, expect="safe")})
    """
)


def _cli(
    cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "racecheck", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(os.environ, PYTHONHASHSEED="0", **(env or {})),
        timeout=timeout,
    )


def _assert_one_line_error(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("racecheck: error:")]
    assert len(errors) == 1 and proc.stderr.count("\n") == 1, proc.stderr
    for word in words:
        assert word in errors[0], errors[0]


# ------------------------------------------------------------ runs that did nothing


def test_a_folder_with_no_scenarios_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "helper.py").write_text("X = 1\n")
    _assert_one_line_error(_cli(tmp_path, "run", "scenarios"), "no scenario")


def test_list_of_a_folder_with_no_scenarios_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    _assert_one_line_error(_cli(tmp_path, "list", "empty"), "no scenario")


@pytest.mark.parametrize("code", [0, 3])
def test_os_exit_at_scenario_import_does_not_end_the_run_silently(
    tmp_path: Path, code: int
) -> None:
    (tmp_path / "scen.py").write_text(f"import os\nos._exit({code})\n")
    proc = _cli(tmp_path, "run", "scen.py")
    _assert_one_line_error(proc, "scen.py", "os._exit")
    import os as os_module

    assert os_module._exit.__module__ in ("posix", "nt")  # nothing patched in this process


def test_os_exit_in_one_file_of_a_folder_names_that_file(tmp_path: Path) -> None:
    (tmp_path / "sc").mkdir()
    (tmp_path / "sc" / "a_ok.py").write_text(OK_SCENARIO)
    (tmp_path / "sc" / "b_exit.py").write_text("import os\nos._exit(0)\n")
    _assert_one_line_error(_cli(tmp_path, "run", "sc"), "b_exit.py")


def test_a_scenario_import_that_never_returns_times_out(tmp_path: Path) -> None:
    (tmp_path / "spin.py").write_text("while True:\n    pass\n")
    (tmp_path / "sleep.py").write_text("import time\ntime.sleep(10**6)\n")
    for name in ("spin.py", "sleep.py"):
        started = time.monotonic()
        proc = _cli(tmp_path, "run", name, env={"RACECHECK_IMPORT_TIMEOUT": "2"}, timeout=60)
        assert time.monotonic() - started < 30
        _assert_one_line_error(proc, name, "did not finish", "RACECHECK_IMPORT_TIMEOUT")


# ------------------------------------------------------------ one-line errors


def test_a_symlink_loop_is_a_one_line_error(tmp_path: Path) -> None:
    os.symlink("loop_b", tmp_path / "loop_a")
    os.symlink("loop_a", tmp_path / "loop_b")
    _assert_one_line_error(_cli(tmp_path, "run", "loop_a"), "loop_a")
    _assert_one_line_error(_cli(tmp_path, "run", "loop_a/x.py"))
    (tmp_path / "sc").mkdir()
    os.symlink("../loop_a", tmp_path / "sc" / "x.py")
    _assert_one_line_error(_cli(tmp_path, "list", "sc"), "x.py")


def test_a_base_exception_raised_at_import_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "scen.py").write_text(
        "class Custom(BaseException):\n    pass\n\nraise Custom('boom at import')\n"
    )
    _assert_one_line_error(_cli(tmp_path, "run", "scen.py"), "scen.py", "Custom", "boom")


@pytest.mark.parametrize(
    "arguments",
    [
        "name=123, variants={'v': V}",
        "name='', variants={'v': V}",
        "name='s', variants={1: V}",
        "name='s', variants={'v': 'not a variant'}",
        "name='s', variants=[V]",
        "name='s', variants={'v': V}, description=5",
        "name='s', variants={'v': V}, invariants='one string'",
        "name='s', variants={'v': V}, options=3",
    ],
)
def test_a_malformed_scenario_is_a_one_line_error(tmp_path: Path, arguments: str) -> None:
    (tmp_path / "scen.py").write_text(
        "import racecheck\n\n"
        "def target():\n    pass\n\n"
        "V = racecheck.Variant(target, expect='safe')\n"
        f"SCEN = racecheck.Scenario({arguments})\n"
    )
    _assert_one_line_error(_cli(tmp_path, "run", "scen.py"), "scen.py")
    _assert_one_line_error(_cli(tmp_path, "list", "scen.py"), "scen.py")


# ------------------------------------------------------------ report directories

SLOW_SCENARIO = textwrap.dedent(
    """
    import pathlib
    import racecheck

    def target():
        pathlib.Path("explored").write_text("yes")

    SCEN = racecheck.Scenario(name="s", variants={"v": racecheck.Variant(target, expect="safe")})
    """
)


@pytest.mark.parametrize("kind", ["file", "under-a-file", "empty"])
def test_report_dir_problems_are_found_before_exploring(tmp_path: Path, kind: str) -> None:
    (tmp_path / "scen.py").write_text(SLOW_SCENARIO)
    (tmp_path / "afile").write_text("x")
    where = {"file": "afile", "under-a-file": "afile/reports", "empty": ""}[kind]
    proc = _cli(tmp_path, "run", "scen.py", "--report-dir", where, "--schedules", "2")
    _assert_one_line_error(proc, "report")
    assert not (tmp_path / "explored").exists(), "explored before checking the report dir"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_report_dir_is_found_before_exploring(tmp_path: Path) -> None:
    (tmp_path / "scen.py").write_text(SLOW_SCENARIO)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        proc = _cli(tmp_path, "run", "scen.py", "--report-dir", "locked/out", "--schedules", "2")
    finally:
        locked.chmod(0o755)
    _assert_one_line_error(proc, "report")
    assert not (tmp_path / "explored").exists()


def test_a_good_report_dir_is_not_created_by_the_check_alone(tmp_path: Path) -> None:
    (tmp_path / "scen.py").write_text(OK_SCENARIO)
    proc = _cli(tmp_path, "run", "scen.py", "--report-dir", "out/deep", "--schedules", "2")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "deep" / "racecheck.json").is_file()
