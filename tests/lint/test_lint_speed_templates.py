"""An inlined callee's recorded events are replayed wherever a fresh walk would make them.

The await rules inline a coroutine's callees (``flow.Flow._inline``) and keep
each callee's events as a template to replay at the next identical call. A
template recorded at one depth of the inlining stack is replayed at another
when the depth cannot change the walk (``_Recording.fits``): the callee asked
for no inlining that the depth limit would answer differently. These tests
compare every flow with the flow of a walk that replays nothing, on a module
built for the depths and on racecheck's own code, and count the fresh walks.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Any

import pytest

from racecheck.lint import flow as flow_module
from racecheck.lint.flow import MAX_FLOW_EVENTS, Event, Flow
from racecheck.lint.module import Module
from racecheck.lint.run import iter_files, read_source

ROOT = Path(__file__).resolve().parents[2]

DEPTHS = textwrap.dedent(
    """
    class Cache:
        def __init__(self):
            self.items = {}
            self.hits = 0

        def leaf(self, key):
            self.hits += 1
            return self.items.get(key)

        def middle(self, key):
            if key in self.items:
                return self.leaf(key)
            return None

        def deep(self, key):
            return self.deeper(key)

        def deeper(self, key):
            return self.deepest(key)

        def deepest(self, key):
            self.items.pop(key, None)
            return self.leaf(key)

        async def get(self, key):
            value = self.leaf(key)          # leaf at depth 1
            await self.refresh(key)
            self.items[key] = self.middle(key) or value   # leaf at depth 2
            return value

        async def drop(self, key):
            self.deep(key)                  # deepest at depth 3: its leaf() is too deep
            await self.refresh(key)
            self.deepest(key)               # deepest at depth 1: its leaf() is inlined
            return self.hits

        async def refresh(self, key):
            await self.load(key)
    """
)


class _NoReuse(dict[Any, list[Any]]):
    """Templates that are never found: every inlined call is walked afresh."""

    def setdefault(self, key: Any, default: Any = None) -> list[Any]:
        return []


def _flows(module: Module, reuse: bool) -> dict[str, list[Event]]:
    module.inline_templates = {} if reuse else _NoReuse()
    return {
        f"{func.name}:{func.lineno}": Flow(module, func, closure=module.closure(func)).run()
        for func in module.function_nodes
    }


def _comparable(module: Module, flows: dict[str, list[Event]]) -> dict[str, list[Any]]:
    """Each event's fields, a node made by the walk (the read half of ``self.n += 1``) by
    its class and position: every walk makes its own, equal but not the same object."""
    tree = {id(node) for node in ast.walk(module.tree)}

    def node(value: Any) -> Any:
        if not isinstance(value, ast.AST) or id(value) in tree:
            return value
        return (type(value).__name__, ast.dump(value, include_attributes=True))

    return {
        name: [{k: node(v) for k, v in vars(event).items()} for event in events]
        for name, events in flows.items()
    }


def _recordings(module: Module, callee: str) -> int:
    """How many times the callee named ``callee`` was walked afresh (kept as a template)."""
    named = {id(func) for func in module.function_nodes if func.name == callee}
    return sum(
        len(templates) for key, templates in module.inline_templates.items() if key[0] in named
    )


def test_a_helper_reached_at_two_depths_is_walked_once_and_replayed_as_a_fresh_walk() -> None:
    module = Module.parse("depths.py", DEPTHS)
    fresh = _comparable(module, _flows(module, reuse=False))
    flows = _flows(module, reuse=True)
    assert _comparable(module, flows) == fresh
    # leaf() is walked once, at depth 1 in get(), and replayed at depth 2 under middle()
    assert _recordings(module, "leaf") == 1
    # deepest() at depth 3 cannot inline leaf(): a walk at depth 1 does, so it is walked twice
    assert _recordings(module, "deepest") == 2
    get = flows[next(name for name in flows if name.startswith("get:"))]
    leaf_reads = [e for e in get if e.key == "self.hits" and e.kind == "write"]
    assert len(leaf_reads) == 2 and [len(e.frames) for e in leaf_reads] == [1, 2]


def _racecheck_files() -> list[Path]:
    return [
        *iter_files([ROOT / "src" / "racecheck"]),
        *iter_files([ROOT / "tests" / "lint" / "data"]),
    ]


def test_replays_match_fresh_walks_on_a_third_of_racecheck_code() -> None:
    """The CI share of the slow twin below: every third file, in path order (about 70)."""
    _replays_match_fresh_walks(sorted(_racecheck_files())[::3], at_least=300)


@pytest.mark.slow
def test_replays_match_fresh_walks_on_racecheck_code() -> None:
    """Every flow of racecheck's own modules (below the event budget, where a replay and a
    walk that stops midway differ by design) is the flow a walk with no replays makes."""
    _replays_match_fresh_walks(_racecheck_files(), at_least=1000)


def _replays_match_fresh_walks(files: list[Path], at_least: int) -> None:
    compared = 0
    replays = 0
    original = flow_module.Flow._replay

    def counting(self: Flow, template: Any) -> None:
        nonlocal replays
        replays += 1
        original(self, template)

    for file in files:
        module = Module.parse(str(file), read_source(file))
        if not module.function_nodes:
            continue
        fresh = _comparable(module, _flows(module, reuse=False))
        flow_module.Flow._replay = counting  # type: ignore[method-assign]
        try:
            replayed = _comparable(module, _flows(module, reuse=True))
        finally:
            flow_module.Flow._replay = original  # type: ignore[method-assign]
        for name, events in fresh.items():
            if len(events) < MAX_FLOW_EVENTS:
                assert replayed[name] == events, (file, name)
                compared += 1
    assert compared > at_least
    assert replays > 100  # the comparison covers replays, not only fresh walks
