"""``racecheck lint`` on code nested deeper than Python's recursion limit: one line, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    "source",
    [
        "x = " + "a." * 100_000 + "b\n",
        "x = " + "1+" * 100_000 + "1\n",
        "x = " + "-" * 100_000 + "1\n",
        "x = " + "(" * 100_000 + ")" * 100_000 + "\n",
    ],
    ids=["attributes", "binary-operators", "unary-operators", "parentheses"],
)
def test_deeply_nested_code_is_a_one_line_error(tmp_path: Path, source: str) -> None:
    (tmp_path / "deep.py").write_text(source)
    (tmp_path / "fine.py").write_text("x = 1\n")
    proc = subprocess.run(
        [sys.executable, "-m", "racecheck", "lint", "deep.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "deep.py" in proc.stderr, proc.stderr
    assert "nested" in proc.stderr
