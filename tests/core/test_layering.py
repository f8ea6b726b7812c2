"""Imports point downward only, type-only imports included.

A cycle between two modules means neither can be read, tested or replaced on
its own: the engine would know about the recorder that knows about the engine.
This test reads every ``import`` in ``src/racecheck`` (module level, function
level and under ``TYPE_CHECKING``) and fails on any cycle, and on the few
upward edges the architecture forbids by name.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "racecheck"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(name: str) -> bool:
    return (SRC / Path(*name.split(".")) / "__init__.py").exists()


def _imports(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            yield module
            # ``from racecheck.x import y`` may name the submodule x.y
            for alias in node.names:
                candidate = f"{module}.{alias.name}"
                if (SRC / Path(*candidate.split("."))).with_suffix(".py").exists() or _is_package(
                    candidate
                ):
                    yield candidate


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Module -> the racecheck modules it imports (parsed once per process: read only).

    A package's ``__init__`` that re-exports its submodules is the package's
    front door, not a layer: an edge from a submodule to its *own* package is
    kept (it is a real upward dependency), an edge from a package to its own
    submodules is not.
    """
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        here = _module_name(path)
        edges = graph.setdefault(here, set())
        for target in _imports(path):
            if target != "racecheck" and not target.startswith("racecheck."):
                continue
            if target == here or (target.startswith(here + ".") and path.name == "__init__.py"):
                continue
            edges.add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


#: Knots still tied, each with why, so the test holds the line everywhere else:
#: a new cycle fails, and so does a listed knot that grows a member. Untie one
#: and its entry must go (an entry that no longer matches a cycle fails too).
KNOWN_KNOTS: dict[frozenset[str], str] = {}


def test_the_import_graph_has_no_new_cycles() -> None:
    knots = {frozenset(knot) for knot in cycles(import_graph())}
    new = [sorted(knot) for knot in knots if knot not in KNOWN_KNOTS]
    assert not new, "import cycles (imports must point downward only):\n" + "\n".join(
        " <-> ".join(knot) for knot in new
    )
    untied = [sorted(knot) for knot in KNOWN_KNOTS if knot not in knots]
    assert not untied, "untied (or changed): update KNOWN_KNOTS: " + repr(untied)


# (lower layer, what it must never import): the engine knows nothing about the
# ways in; backends know nothing about strategies; strategies see only actor ids.
FORBIDDEN = [
    (
        "racecheck.engine",
        ("racecheck.pytest_plugin", "racecheck.cli", "racecheck.api", "racecheck.explore"),
    ),
    ("racecheck.explore", ("racecheck.pytest_plugin", "racecheck.cli")),
    (
        "racecheck.backends",
        ("racecheck.strategies", "racecheck.explore", "racecheck.pytest_plugin", "racecheck.cli"),
    ),
    ("racecheck.strategies", ("racecheck.backends", "racecheck.pytest_plugin", "racecheck.cli")),
    ("racecheck.detect", ("racecheck.backends", "racecheck.strategies", "racecheck.explore")),
    # render draws any trace-shaped object: trace may use it, never the reverse
    ("racecheck.render", ("racecheck.trace", "racecheck.recorder", "racecheck.report")),
    ("racecheck.trace", ("racecheck.report", "racecheck.recorder")),
    # the command line registers its commands; what they share sits below it
    ("racecheck.cli_base", ("racecheck.cli", "racecheck.variant_run", "racecheck.parallel_run")),
    ("racecheck.variant_run", ("racecheck.cli", "racecheck.parallel_run", "racecheck.cli_stress")),
    ("racecheck.parallel_run", ("racecheck.cli", "racecheck.cli_stress")),
    ("racecheck.cli_stress", ("racecheck.cli", "racecheck.parallel_run")),
    # explore dispatches to the other exploration loops (a shard's, hypothesis's);
    # all of them stand on the session and the failure pipeline, never on explore
    ("racecheck.session", ("racecheck.explore", "racecheck.found", "racecheck.sharding")),
    (
        "racecheck.found",
        ("racecheck.explore", "racecheck.sharding", "racecheck.explore_hypothesis"),
    ),
    ("racecheck.explore_hypothesis", ("racecheck.explore", "racecheck.sharding")),
    *(
        (shard_module, ("racecheck.explore",))
        for shard_module in (
            "racecheck.sharding",
            "racecheck.sharding_auto",
            "racecheck.sharding_dpor",
            "racecheck.sharding_tree",
        )
    ),
    # a strategy chooses among actors; the loops that run it sit above it
    (
        "racecheck.strategies",
        ("racecheck.explore", "racecheck.session", "racecheck.found", "racecheck.sharding"),
    ),
]


@pytest.mark.parametrize(("lower", "upper"), FORBIDDEN, ids=[rule[0] for rule in FORBIDDEN])
def test_lower_layers_do_not_import_upper_ones(lower: str, upper: tuple[str, ...]) -> None:
    graph = import_graph()
    offending = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module == lower or module.startswith(lower + ".")
        for target in targets
        if any(target == banned or target.startswith(banned + ".") for banned in upper)
    )
    assert not offending, "\n".join(offending)


def test_the_checker_sees_a_cycle_and_a_type_only_import() -> None:
    """The check itself must be able to fail."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    edges = import_graph()
    # shrink.py imports under TYPE_CHECKING only: still edges
    assert "racecheck.engine" in edges["racecheck.shrink"]
