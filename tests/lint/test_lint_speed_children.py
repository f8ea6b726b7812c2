"""Every walk's ``children`` lists what reading each field would list, for every node class.

``module.children`` reads a node's child fields through a function generated
per node class from the class's signature (``Call(expr func, expr* args,
keyword* keywords)``): straight-line code instead of a ``getattr`` and an
``isinstance`` per field. The walks of every rule rest on it, so it must give
the same lists, in the same order, as reading the fields one by one
(``_children_by_fields``) and as ``ast.iter_child_nodes`` without tokens: on
racecheck's own code, on modules of the standard library, on a file using every
kind of syntax this Python has, and on nodes built by hand without some fields.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import pytest

from racecheck.lint.module import _TOKEN_FIELDS, _children_by_fields, children
from racecheck.lint.run import iter_files, read_source

ROOT = Path(__file__).resolve().parents[2]
STDLIB = Path(ast.__file__).parent

EVERY_SHAPE = """
    from __future__ import annotations
    import a.b as c, d
    from .e import f as g, h
    x: int = 1
    y: "T"
    del x, y[0], y.z
    global_ = {1: 2, **d, 3: 4}
    s = {*a, 1}; t = [*a, 2]; u = (*a, 3)
    v = a if b else c
    w = lambda p, /, q=1, *r, k, m=2, **n: (p, q, r, k, m, n)
    z = [i async for i in a if i] if False else {k: v for k, v in a.items() if k if v}
    fs = f"{a!r:>{width}} {b=} {'nested'}"
    sl = a[1:2:3, ::, ...]
    cmp = a < b <= c is not d not in e
    op = -a + b * c ** d // e @ f
    bools = a and b or not c
    named = (n := 10)
    assert a, "message"
    raise E from F


    @decorator(arg)
    @other
    async def coroutine(p, /, q: int = 1, *args: str, k: bool, m=None, **kw) -> None:
        global G
        async with a as b, c:
            async for i in b:
                await i
                yield i
        for i, j in pairs:
            continue
        else:
            pass
        while a:
            break
        else:
            pass
        try:
            x = yield
        except (E, F) as exc:
            pass
        except G:
            pass
        else:
            pass
        finally:
            pass
        with open(p) as (a, b):
            pass
        match command:
            case [1, 2, *rest]:
                pass
            case {"k": v, **others}:
                pass
            case Point(x=0, y=yy) | Point(0, yy) if yy:
                pass
            case str() as s:
                pass
            case None | True | -1 | 1.5j:
                pass
            case _:
                pass


    def gen():
        def inner():
            nonlocal value
            return (yield from other())
        value = 1
        return inner


    class C(Base, metaclass=Meta):
        attr: int
        def method(self, *, key=None): ...
    """

NEWER = {
    (3, 11): """
        try:
            pass
        except* ValueError as group:
            pass
        """,
    (3, 12): """
        type Alias[T: int, *Ts, **P] = list[T]
        def generic[T, U: (int, str)](a: T) -> U: ...
        class Box[T]:
            pass
        """,
    (3, 13): """
        def defaults[T = int, *Ts = *tuple[int], **P = [int]](): ...
        """,
}


def _reference(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes`` minus the tokens: what ``children`` promises."""
    return [
        child
        for name, value in ast.iter_fields(node)
        if name not in _TOKEN_FIELDS
        for child in (value if isinstance(value, list) else [value])
        if isinstance(child, ast.AST)
    ]


def _check_tree(tree: ast.AST) -> int:
    count = 0
    for node in ast.walk(tree):
        got = children(node)
        assert got == _children_by_fields(node) == _reference(node), ast.dump(node)[:200]
        assert all(a is b for a, b in zip(got, _reference(node), strict=True))
        count += 1
    return count


def test_every_kind_of_syntax_is_listed_as_its_fields_are() -> None:
    source = textwrap.dedent(EVERY_SHAPE)
    for version, extra in NEWER.items():
        if sys.version_info >= version:
            source += textwrap.dedent(extra)
    tree = ast.parse(source)
    kinds = {type(node) for node in ast.walk(tree)}
    assert {ast.MatchClass, ast.MatchMapping, ast.comprehension, ast.arguments} <= kinds
    assert _check_tree(tree) > 400
    assert len(kinds) > 75  # most node classes of the grammar


@pytest.mark.parametrize(
    "tree",
    [
        sorted(iter_files([ROOT / "src" / "racecheck"])),
        sorted(STDLIB.glob("*.py"))[:60],
    ],
    ids=["racecheck", "stdlib"],
)
def test_real_modules_are_listed_as_their_fields_are(tree: list[Path]) -> None:
    assert len(tree) > 50
    total = sum(_check_tree(ast.parse(read_source(file))) for file in tree)
    assert total > 50_000


def test_nodes_built_by_hand_are_listed_as_their_fields_are() -> None:
    name = ast.Name(id="x")  # no ctx
    call = ast.Call(func=name, args=[ast.Constant(1)])  # no keywords (3.11), [] (3.13)
    partial_args = ast.arguments(args=[ast.arg(arg="a")])
    odd = ast.Call(func=name, args=None, keywords=[ast.keyword(arg="k", value=name)])
    for node in (name, call, partial_args, odd, ast.Dict(keys=[None], values=[name])):
        assert children(node) == _children_by_fields(node)
    assert children(call)[0] is name
    assert children(odd) == [name, odd.keywords[0]]
