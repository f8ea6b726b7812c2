"""The nineteenth held-out round's three errors, each in the shape that made it (lint20).

The rules were frozen with the evidence gate (an error needs a counted resource)
before 101 unseen packages were linted; the three errors it left are all that
evidence, and one is true. Nothing was fitted to them: each test pins what the
frozen rules report, and its docstring the verdict read at the source.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from racecheck.lint import lint_paths


def _errors(tmp_path: Path, source: str) -> list[tuple[int, str]]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(textwrap.dedent(source))
    return [(f.line, f.code) for f in lint_paths([pkg]) if f.severity == "error"]


def test_a_per_turn_call_budget_is_an_error_false_one_driver_spends_it(tmp_path: Path) -> None:
    """ag2's ``_ActionBudgetMiddleware.on_llm_call`` - FP: the middleware is made per
    turn inside the run's scope and the turn's one task calls the model in sequence
    (stream subscribers run inline), so no two calls share the budget at once."""
    source = """
        class BudgetMiddleware:
            def __init__(self, limit):
                self._limit = limit
                self._model_calls = 0

            async def on_llm_call(self, call_next, events):
                if self._model_calls >= self._limit:
                    return None
                response = await call_next(events)
                self._model_calls += 1
                return response
    """
    assert _errors(tmp_path, source) == [(8, "RC102")]


def test_a_failure_latch_is_an_error_false_tools_dispatch_in_sequence(tmp_path: Path) -> None:
    """skyvern's ``BlankWorkingPageGuard._restore_in_place`` - FP: the guard belongs to
    one block run, whose tool calls are dispatched one after another (and once more at
    the final cleanup), so the failure count is never checked by two repairs at once."""
    source = """
        MAX_FAILURES = 2

        class Guard:
            async def restore(self, page):
                if self._failures >= MAX_FAILURES:
                    return
                try:
                    await self._reload(page)
                    self._failures = 0
                except Exception:
                    self._failures += 1
    """
    assert _errors(tmp_path, source) == [(6, "RC102")]


def test_a_run_tool_budget_on_a_shared_agent_is_an_error_true_as_misuse(tmp_path: Path) -> None:
    """upsonic's ``Agent._execute_tool_calls`` - TP (misuse, by the rounds' rule): two
    runs on one ``Agent`` at once both pass ``_tool_call_count >= tool_call_limit`` and
    both run their tools, past the limit; the agent keeps all its per-run state on
    ``self`` and resets it at each run's start, so this is not a supported use."""
    source = """
        class Agent:
            async def execute_tool_calls(self, calls):
                if self.tool_call_limit and self._tool_call_count >= self.tool_call_limit:
                    return []
                results = []
                for call in calls:
                    results.append(await self._run_tool(call))
                    self._tool_call_count += 1
                return results
    """
    assert _errors(tmp_path, source) == [(4, "RC102")]
