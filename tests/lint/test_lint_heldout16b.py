"""Sixteenth held-out round, second pass (lint18): general shapes among its unfixed false errors.

The round (docs/lint.md, "Sixteenth held-out round") left twenty-two false
errors after its three fixes. The shapes below recur beyond the package they
were found in; each fix comes with the true partner that must keep its error.
All of these are fitted on that round, not held out.

* A size cap and the claim it admits, with no await on the way (litellm's MCP
  discovery cache, #42): ``if len(self._pending) >= LIMIT: return await
  fetch()``, then ``self._pending[key] = task`` before the first await on that
  path. The arm that leaves awaits, but it never reaches the claim: the check
  and the claim are atomic, so a second task counts the first one's slot. The
  same claim made after an await on its own path stays RC102."""

from __future__ import annotations

import textwrap
from pathlib import Path

from racecheck.lint import lint_paths


def findings(root: Path, modules: dict[str, str], code: str) -> list[tuple[int, str, str]]:
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for name, source in modules.items():
        (pkg / f"{name}.py").write_text(textwrap.dedent(source))
    return [(f.line, f.severity, f.message) for f in lint_paths([pkg]) if f.code == code]


_CAPPED = """
import asyncio

LIMIT = 64


class Catalog:
    def __init__(self):
        self._pending = {}

    async def get(self, key, fetch):
        pending = self._pending.get(key)
        if pending is not None:
            return await self._await_fetch(key, pending)
        if len(self._pending) >= LIMIT:
            return await fetch()
        task = asyncio.create_task(fetch())
        self._pending[key] = task
        return await self._await_fetch(key, task)

    async def _await_fetch(self, key, task):
        try:
            return await asyncio.shield(task)
        finally:
            if self._pending.get(key) is task:
                self._pending.pop(key)

    async def get_all(self, keys, fetch):
        return await asyncio.gather(*(self.get(key, fetch) for key in keys))
"""


def test_a_cap_and_the_claim_it_admits_with_no_await_between_is_no_rc102(tmp_path: Path) -> None:
    assert findings(tmp_path, {"catalog": _CAPPED}, "RC102") == []


def test_a_claim_after_an_await_on_its_own_path_keeps_the_error(tmp_path: Path) -> None:
    late = _CAPPED.replace(
        "        task = asyncio.create_task(fetch())\n",
        "        task = await self._start(fetch)\n",
    ).replace(
        "    async def _await_fetch(self, key, task):\n",
        "    async def _start(self, fetch):\n"
        "        await asyncio.sleep(0)\n"
        "        return asyncio.create_task(fetch())\n\n"
        "    async def _await_fetch(self, key, task):\n",
    )
    ((line, severity, message),) = findings(tmp_path, {"catalog": late}, "RC102")
    assert (line, severity) == (15, "error"), message
