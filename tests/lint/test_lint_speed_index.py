"""The module index walks a syntax tree once and hands every rule the same answers.

Issue 14's 50 ms per file: on a large module the index walked every node
(``Module.nodes``), then every function body again (``iter_own``, first asked
by ``Module.closure``). One walk now fills both. These tests pin what that
walk must keep: the node order of :func:`racecheck.lint.module.walk`, and for
every scope (module, class, function, lambda) the body order of a fresh
``iter_own``, on racecheck's own code and on a file of nested scopes. Work is
counted in visits (calls of ``children``), not timed: the machine is shared.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from racecheck.lint import module as module_module
from racecheck.lint.module import Module, iter_own, walk
from racecheck.lint.run import iter_files

ROOT = Path(__file__).resolve().parents[2]

NESTED = textwrap.dedent(
    """
    import asyncio as aio
    from x import (a, b as c)

    def outer(p, *args, k=lambda q: q + 1, **kw):
        class Inner(Base):
            z = [i for i in range(3)]

            async def method(self, v=lambda: (yield)):
                def deep():
                    nonlocal v
                    return lambda w: [w for _ in v]
                async with self.lock as held:
                    await deep()()
                return held

            @staticmethod
            def other():
                class Deeper:
                    def m(self):
                        return 1
                return Deeper

        global G
        G = Inner
        return [lambda: p for _ in args]

    class Top:
        def __init__(self):
            self.x = {}

        async def run(self):
            async def task():
                self.x[1] = await aio.sleep(0)
            await aio.gather(task(), task())

    match G:
        case [1, *rest] if rest:
            pass
        case {"k": v, **more}:
            pass
    """
)

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)


def _sources() -> list[tuple[str, str]]:
    files = sorted((ROOT / "src" / "racecheck" / "lint").glob("*.py"))
    return [("nested.py", NESTED), *((f.name, f.read_text()) for f in files)]


def _positions(nodes: list[ast.AST], order: dict[int, int]) -> list[int]:
    return [order[id(node)] for node in nodes]


@pytest.mark.parametrize(("name", "source"), _sources(), ids=lambda v: v if len(v) < 40 else "")
def test_the_index_keeps_the_orders_of_the_separate_walks(name: str, source: str) -> None:
    indexed = Module.from_tree(name, ast.parse(source))
    # a second parse of the same text, never indexed: walked the old way
    plain = ast.parse(source)
    plain_nodes = list(walk(plain))
    indexed_nodes = indexed.nodes
    assert len(indexed_nodes) == len(plain_nodes)
    assert [type(n) for n in indexed_nodes] == [type(n) for n in plain_nodes]
    # each node of both trees named by its place in the walk of its own tree
    at_plain = {id(node): i for i, node in enumerate(plain_nodes)}
    at_indexed = {id(node): i for i, node in enumerate(indexed_nodes)}
    scopes = 0
    for a, b in zip(indexed_nodes, plain_nodes, strict=True):
        if isinstance(a, SCOPES):
            scopes += 1
            assert _positions(list(iter_own(a)), at_indexed) == _positions(
                list(iter_own(b)), at_plain
            ), (name, type(a).__name__, getattr(a, "lineno", 0))
    assert scopes > 1 or "def " not in source
    for func in indexed.function_nodes:
        parent = indexed.parent_of(func)
        expected = next(
            (f for f in indexed.function_nodes if any(node is func for node in iter_own(f))),
            None,
        )
        assert parent is expected


def test_the_index_walks_every_node_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    children = module_module.children

    def counted(node: ast.AST) -> list[ast.AST]:
        nonlocal calls
        calls += 1
        return children(node)

    source = (ROOT / "src" / "racecheck" / "lint" / "awaits.py").read_text()
    tree = ast.parse(source)
    monkeypatch.setattr(module_module, "children", counted)
    module = Module.from_tree("awaits.py", tree)
    # what every check asks first: the enclosing functions, each body's own nodes
    for func in module.function_nodes:
        module.closure(func)
        list(iter_own(func))
    for info in module.classes.values():
        list(iter_own(info.node))
    list(iter_own(tree))
    assert len(module.nodes) > 5_000
    # one visit per node; the old index walked each function body a second time
    assert calls <= len(module.nodes), (calls, len(module.nodes))


def test_nodes_of_a_kind_are_those_of_the_walk_in_its_order() -> None:
    module = Module.from_tree("nested.py", ast.parse(NESTED))
    kinds = {type(node) for node in module.nodes}
    assert {ast.Name, ast.Call, ast.Lambda, ast.Global, ast.ClassDef} <= kinds
    for kind in kinds:
        assert module.nodes_of(kind) == [n for n in module.nodes if type(n) is kind]
    assert module.nodes_of(ast.Nonlocal) == [
        n for n in walk(module.tree) if type(n) is ast.Nonlocal
    ]
    assert module.nodes_of(ast.TryStar) == []
    assert module.function_nodes == [
        n for n in module.nodes if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


MODULE_LEVEL = textwrap.dedent(
    """
    import os as system, sys
    from x import y as z
    A = B = 1
    (C, [D, *E]) = F = range(3)
    G: int = 2
    H += 1
    if sys.version_info > (3,):
        def helper(p):
            inside = p  # a name bound in a def nested in a module-level block
            return lambda q: (lam := q)
        class InBlock:
            field = 1
    for I in range(3):
        with open(I) as J, open(I) as (K, L):
            pass
    try:
        M = [N for N in range(3) if (O := N)]
    except ValueError as P:
        del Q
    print(R := 5, {S: T for S, T in {}.items()})

    def top(a):
        global GLOBAL_FROM_DEF
        not_module_level = a

    class Top:
        global GLOBAL_FROM_CLASS
        attribute = 1
    """
)


def _module_names_by_ast_walk(module: Module) -> frozenset[str]:
    names: set[str] = set()
    for stmt in module.tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Global):
            names.update(node.names)
    return frozenset(names)


def test_module_names_are_those_ast_walk_finds() -> None:
    """``Module.module_names`` walks the module-level statements through ``children``."""
    module = Module.parse("levels.py", MODULE_LEVEL)
    names = module.module_names
    assert names == _module_names_by_ast_walk(module)
    # names bound anywhere under a module-level block count, a nested def's and class's too
    assert {"A", "C", "E", "H", "inside", "lam", "field", "I", "K", "M", "N", "O", "R"} <= names
    assert {"GLOBAL_FROM_DEF", "GLOBAL_FROM_CLASS"} <= names
    assert not {"not_module_level", "attribute", "P", "Q", "system"} & names
    for file in iter_files([ROOT / "src" / "racecheck", ROOT / "scenarios"]):
        module = Module.parse(str(file), file.read_text())
        assert module.module_names == _module_names_by_ast_walk(module), file
