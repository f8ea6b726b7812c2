"""Sixteenth held-out round (issue 14, lintprec11): 66 large concurrency-heavy packages.

Read after the rules were frozen (docs/lint.md, "Sixteenth held-out round");
the fixes below were made after reading the round, so the round's held-out
number is the one before them.

* A local condition that names another local that names it back
  (``text = text or before`` after ``before = text or before`` in a loop,
  pydantic-ai's agent graph) sent ``checked_keys`` round the cycle until
  Python's recursion limit, and the whole package was refused as "nested too
  deeply". A name already being expanded is not expanded again.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from racecheck.lint import lint_paths, lint_source

_CONDITION_CYCLE = """
class Stream:
    async def parts(self, chunks):
        text = ''
        before = ''
        for chunk in chunks:
            before = text or before
            text = ''
            text = text or before
            if text:
                await chunk.flush()
        if self._client is None:
            client = await self.connect()
            self._client = client
        return self._client
"""


def findings(root: Path, source: str, code: str) -> list[tuple[int, str, str]]:
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(textwrap.dedent(source))
    return [(f.line, f.severity, f.message) for f in lint_paths([pkg]) if f.code == code]


def test_locals_whose_conditions_name_each_other_are_linted_not_refused() -> None:
    found = lint_source(textwrap.dedent(_CONDITION_CYCLE), "stream.py")
    # the lazy connect after the loop is still seen: the cycle stops one test, not the file
    assert [(f.code, f.line) for f in found] == [("RC102", 12)]
