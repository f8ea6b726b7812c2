"""``racecheck lint`` as a user runs it: output formats, options, exit codes, errors."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from racecheck.lint.cli import add_parser, main

BUGGY = textwrap.dedent(
    """
    import asyncio
    import threading


    class Runtime:
        async def step(self, branch):
            self._current = branch.agent
            await self.model(branch)
            return self._current


    class Counter:
        def __init__(self):
            self._lock = threading.Lock()
            self.n = 0

        def hit(self):
            self.n += 1


    async def run_branches(runtime, branches):
        await asyncio.gather(*(runtime.step(branch) for branch in branches))
    """
)
CLEAN = "async def main():\n    value = await compute()\n    return value\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "buggy.py").write_text(BUGGY)
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN)
    for skipped in (".venv", "__pycache__", "build", "node_modules"):
        (tmp_path / "pkg" / skipped).mkdir()
        (tmp_path / "pkg" / skipped / "bad.py").write_text(BUGGY)
    return tmp_path


def test_text_output_and_exit_1(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(project)]) == 1
    out, err = capsys.readouterr()
    lines = out.splitlines()
    buggy = project / "pkg" / "buggy.py"
    assert lines == [
        f"{buggy}:8:9: RC101 " + lines[0].split(" RC101 ", 1)[1],
        f"{buggy}:19:9: RC105 " + lines[1].split(" RC105 ", 1)[1],
    ]
    assert err == "Found 2 findings (0 errors, 2 warnings) in 1 file.\n"


def test_clean_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ok.py").write_text(CLEAN)
    assert main([str(tmp_path / "ok.py")]) == 0
    out, err = capsys.readouterr()
    assert out == "" and err == "No findings in 1 file checked.\n"


def test_json_output(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(project), "--format", "json"]) == 1
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert err == ""
    assert [d["code"] for d in data] == ["RC101", "RC105"]
    assert set(data[0]) == {"path", "line", "col", "end_line", "code", "severity", "message"}
    assert (data[0]["line"], data[0]["end_line"], data[0]["severity"]) == (8, 10, "warning")
    assert data[1]["severity"] == "warning"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--select", "RC101"], ["RC101"]),
        (["--select", "RC1"], ["RC101", "RC105"]),
        (["--select", "rc10"], ["RC101", "RC105"]),
        (["--ignore", "RC101"], ["RC105"]),
        (["--select", "RC101,RC105", "--ignore", "RC105"], ["RC101"]),
        (["--select", "RC102"], []),
    ],
)
def test_select_and_ignore(
    project: Path, capsys: pytest.CaptureFixture[str], options: list[str], expected: list[str]
) -> None:
    code = main([str(project), "--format", "json", *options])
    data = json.loads(capsys.readouterr().out)
    assert [d["code"] for d in data] == expected
    assert code == (1 if expected else 0)


def test_suppression_comments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = BUGGY.replace(
        "self._current = branch.agent", "self._current = branch.agent  # racecheck: ignore[RC101]"
    ).replace("self.n += 1", "self.n += 1  # racecheck: ignore")
    (tmp_path / "s.py").write_text(source)
    assert main([str(tmp_path / "s.py")]) == 0
    wrong = BUGGY.replace(
        "self._current = branch.agent", "self._current = branch.agent  # racecheck: ignore[RC102]"
    )
    (tmp_path / "s.py").write_text(wrong)
    assert main([str(tmp_path / "s.py"), "--select", "RC101"]) == 1
    text = 'x = "# racecheck: ignore"\n' + BUGGY  # inside a string: not a comment
    (tmp_path / "s.py").write_text(text)
    assert main([str(tmp_path / "s.py"), "--select", "RC101"]) == 1
    capsys.readouterr()


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("racecheck: error: ")
    assert "Traceback" not in err
    return err


def test_missing_path_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nope")]) == 2
    assert "no such file or directory" in _one_error_line(capsys)


def test_no_path_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "PATH" in _one_error_line(capsys)


def test_unknown_code_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(project), "--select", "RC9"]) == 2
    assert "'RC9' in --select" in _one_error_line(capsys)
    assert main([str(project), "--ignore", "XYZ"]) == 2
    assert "--ignore" in _one_error_line(capsys)


def test_syntax_error_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    assert main([str(tmp_path)]) == 2
    err = _one_error_line(capsys)
    assert "broken.py:1: syntax error" in err


def test_bad_option_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--format", "xml", "x.py"]) == 2
    _one_error_line(capsys)


def test_explain(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--explain", "rc104"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("RC104 shared-collection-in-fan-out (warning)")
    assert "Fix:" in out
    assert main(["--explain", "RC999"]) == 2
    _one_error_line(capsys)


def test_statistics(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(project), "--statistics"]) == 1
    out = capsys.readouterr().out
    assert "    1  RC101  state-across-await" in out


def test_add_parser_registers_lint(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="racecheck")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["lint", str(project), "--select", "RC105"])
    assert args.func(args) == 1
    assert " RC105 " in capsys.readouterr().out


def test_module_entry_point(project: Path) -> None:
    src = Path(__file__).resolve().parents[2] / "src"
    result = subprocess.run(
        [sys.executable, "-m", "racecheck.lint", str(project), "--format", "json"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src)},
        timeout=60,
    )
    assert result.returncode == 1, result.stderr
    assert [d["code"] for d in json.loads(result.stdout)] == ["RC101", "RC105"]
    missing = subprocess.run(
        [sys.executable, "-m", "racecheck.lint", str(project / "nope")],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src)},
        timeout=60,
    )
    assert missing.returncode == 2
    assert missing.stderr.startswith("racecheck: error: ") and missing.stderr.count("\n") == 1
