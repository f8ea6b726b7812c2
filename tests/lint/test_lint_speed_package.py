"""The package text behind the concurrency evidence, read faster with the same answers.

Issue 14's 50 ms per file: the first file of a package whose finding asks for
evidence of concurrency paid for reading the whole package's text (telethon's
``auth.py``, 678 lines: 973 ms; aioredis' ``client.py``: 2 s). Three things
were slow: every name's reference pattern opened with a look-behind, so it was
tried at every position of the text; each ``def``'s end was found by scanning
ahead from it to its end; the ``def`` headers were searched for with a pattern
that opens with ``^`` and an indent. These tests pin that the faster forms
answer exactly as the definitions they replace (written out here), on tricky
text and on racecheck's own files.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from racecheck.lint.callers import _Def, _File, _package
from racecheck.lint.concurrency import _Index, _refs, _Shape
from racecheck.lint.run import iter_files

ROOT = Path(__file__).resolve().parents[2]

TRICKY = textwrap.dedent(
    '''
    """A module docstring with an example:

    def not_a_function():
        pass
    """


    class Outer(Base):
        """class Nested: (in a string)"""

        def method(
            self,
            x,
        ):
            def inner():
                return x
            # a comment at the wrong depth
    # another one at column 0
            return inner

        async def other(self):
            text = """
    def still_a_string(): ...
            """
            return text

    \tdef tabbed(self): pass

    def after():
        undefined = 1
        classic = "class X:"
        return undefined


    async   def spaced_async(): pass
    '''
)


def _old_defs(text: str, starts: list[int]) -> list[_Def]:
    """The ``def``/``class`` headers as the pattern before this change found them."""
    import bisect

    pattern = re.compile(r"^([ \t]*)(?:(async)[ \t]+)?(def|class)[ \t]+(\w+)", re.MULTILINE)
    return [
        _Def(
            bisect.bisect_right(starts, m.start()) - 1,
            len(m.group(1).expandtabs()),
            "class" if m.group(3) == "class" else ("async def" if m.group(2) else "def"),
            m.group(4),
        )
        for m in pattern.finditer(text)
    ]


def _old_ends(shape: _Shape, file: _File) -> list[int]:
    """Each def's end by its definition: the first later line, outside a string,
    not blank, not a comment, not a closing bracket, indented no deeper."""
    text, starts = file.text, file.line_starts
    ends = []
    for d in file.defs:
        end = len(starts)
        for number in range(d.line + 1, len(starts)):
            begin = starts[number]
            stop = starts[number + 1] - 1 if number + 1 < len(starts) else len(text)
            source = text[begin:stop]
            stripped = source.lstrip(" \t")
            if not stripped or stripped.startswith("#") or shape.in_string(begin):
                continue
            if stripped[0] in ")]}":
                continue
            if len(source[: len(source) - len(stripped)].expandtabs()) <= d.indent:
                end = number
                break
        ends.append(end)
    return ends


def _old_enclosing(file: _File, ends: list[int], line: int) -> _Def | None:
    best = None
    for d, end in zip(file.defs, ends, strict=True):
        if d.line < line < end and (best is None or d.indent > best.indent):
            best = d
    return best


def _package_of(tmp_path: Path, text: str) -> list[_File]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(text)
    return [f for f in _package(pkg).files if f.path.name == "mod.py"]


def _assert_shape_as_defined(file: _File) -> None:
    assert file.defs == _old_defs(file.text, file.line_starts)
    shape = _Shape(file)
    ends = _old_ends(shape, file)
    assert shape.ends == ends
    for line in range(len(file.line_starts) + 1):
        assert shape.enclosing(line) == _old_enclosing(file, ends, line), line


def test_tricky_text_has_the_defs_ends_and_enclosing_defs_of_the_definition(
    tmp_path: Path,
) -> None:
    (file,) = _package_of(tmp_path, TRICKY)
    names = [d.name for d in file.defs]
    # headers inside strings are found by the text search, as before (the shape's
    # string spans are what keeps them from ending a body)
    assert names == [
        "not_a_function",
        "Outer",
        "method",
        "inner",
        "other",
        "still_a_string",
        "tabbed",
        "after",
        "spaced_async",
    ]
    _assert_shape_as_defined(file)


@pytest.mark.parametrize(
    "name", ["lint/concurrency.py", "lint/callers.py", "lint/flow.py", "lint/awaits.py"]
)
def test_racecheck_modules_have_the_shapes_of_the_definition(name: str) -> None:
    path = ROOT / "src" / "racecheck" / name
    if not path.is_file():
        pytest.skip(f"{name} is not in this tree")
    package = _package(ROOT / "src" / "racecheck")
    (file,) = [f for f in package.files if f.path == path]
    _assert_shape_as_defined(file)


def test_every_racecheck_file_has_the_def_headers_of_the_old_pattern() -> None:
    package = _package(ROOT / "src" / "racecheck")
    assert len(package.files) == sum(1 for _ in iter_files([ROOT / "src" / "racecheck"]))
    for file in package.files:
        assert file.defs == _old_defs(file.text, file.line_starts), file.path


def test_references_are_those_the_look_behind_pattern_finds(tmp_path: Path) -> None:
    text = textwrap.dedent(
        """
        async def run(self):
            fetch(1)
            self.fetch(2)
            prefetch(3)
            _fetch(4)
            x = "fetch(5)"
            y = 'fetch'
            asyncio.create_task(self.fetch())
            items.append(fetch)
            fetch (6)
            return fetch
        """
    )
    (file,) = _package_of(tmp_path, text)
    package = _package(tmp_path / "pkg")
    refs = _refs(_Index(package, {}), "fetch")
    old = re.compile(r"(?<![\w'\"])fetch\b(?=[ \t]*[(,)\n])")
    shape = _Shape(file)
    expected = [
        f"mod.py:{text.count(chr(10), 0, m.start()) + 1}"
        for m in old.finditer(file.text)
        if not shape.in_string(m.start())
    ]
    assert [r.where for r in refs] == expected
    assert [r.spawn for r in refs] == [False, False, True, False, False, False]
