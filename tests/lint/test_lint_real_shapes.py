"""Shapes from real code the lint must see (issue 14): attribute access through
``getattr``/``setattr``, the numeric check-then-act, and the re-check loop that is the fix."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from racecheck.lint import lint_paths, lint_source

sys.path.insert(0, str(Path(__file__).parents[1] / "detect"))
import marsys_getattr


def codes(source: str) -> list[str]:
    return [f.code for f in lint_source(textwrap.dedent(source), "t.py")]


def test_marsys_getattr_shape_is_rc101_on_the_write_naming_the_read() -> None:
    findings = lint_paths([marsys_getattr.__file__])
    rc101 = [f for f in findings if f.code == "RC101"]
    assert len(rc101) == 1, findings
    assert rc101[0].line == marsys_getattr.marked("write")
    # the read is in the awaited callee: the message names its line
    assert f"read back (line {marsys_getattr.marked('read')} in _translate())" in rc101[0].message
    assert "self._current_instance" in rc101[0].message


def test_getattr_read_after_plain_write() -> None:
    assert codes(
        """
        class Runtime:
            async def step(self, branch):
                self._current = branch.agent
                await self.model(branch)
                return getattr(self, "_current", None)
        """
    ) == ["RC101"]


def test_getattr_check_then_setattr_across_await() -> None:
    assert codes(
        """
        class Pool:
            async def conn(self, url):
                if getattr(self, "_conn", None) is None:
                    conn = await connect(url)
                    setattr(self, "_conn", conn)
                return self._conn
        """
    ) == ["RC102"]


def test_getattr_with_a_computed_name_is_not_an_attribute() -> None:
    assert (
        codes(
            """
            class Runtime:
                async def step(self, name, branch):
                    self._current = branch.agent
                    await self.model(branch)
                    return getattr(self, name, None)
            """
        )
        == []
    )
