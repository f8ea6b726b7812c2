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

from racecheck.lint.callers import _attribute_refs, _class_bases, _Def, _File, _Package, _package
from racecheck.lint.concurrency import _defs_named, _Index, _refs, _Shape
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
    # the enclosing defs first, while the ends are still worked out on demand
    for line in range(len(file.line_starts) + 1):
        assert shape.enclosing(line) == _old_enclosing(file, ends, line), line
    assert [shape.end(i) for i in range(len(file.defs))] == ends


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


def _old_class_bases(package: _Package) -> dict[str, set[str]]:
    pattern = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:", re.MULTILINE)
    bases: dict[str, set[str]] = {}
    for file in package.files:
        for m in pattern.finditer(file.text):
            found = bases.setdefault(m.group(1), set())
            for part in (m.group(2) or "").split(","):
                part = part.split("[", 1)[0].strip()
                if part and "=" not in part:
                    found.add(part.rsplit(".", 1)[-1].strip())
    return bases


def test_class_bases_are_those_of_the_line_start_pattern(tmp_path: Path) -> None:
    text = TRICKY + textwrap.dedent(
        """
        label = "a class Fake(" + str(
        1)
        class Real(Base, metaclass=Meta):
            pass
        note = 'class Other(A,'
        class Late(
            Mixin,
            Generic[T],
        ):
            pass
        """
    )
    _package_of(tmp_path, text)
    package = _package(tmp_path / "pkg")
    bases = _class_bases(package)
    assert bases == _old_class_bases(package)
    assert bases["Real"] == {"Base"} and bases["Late"] == {"Mixin", "Generic"}
    racecheck = _package(ROOT / "src" / "racecheck")
    assert _class_bases(racecheck) == _old_class_bases(racecheck)


def test_defs_are_counted_per_name_as_over_every_file() -> None:
    package = _package(ROOT / "src" / "racecheck")
    counts: dict[str, int] = {}
    for file in package.files:
        for d in file.defs:
            if d.kind != "class":
                counts[d.name] = counts.get(d.name, 0) + 1
    index = _Index(package)
    for name in ["check", "run", "__init__", "_refs", "_Shape", "no_such_name_here"]:
        assert _defs_named(index, name) == counts.get(name, 0), name


def test_attribute_references_are_those_of_the_pattern_that_opens_with_a_dot() -> None:
    text = textwrap.dedent(
        """
        self.close()
        self . close ()
        obj.close = None
        obj.close == other
        getattr(self, "close")
        x = 'close'
        enclose()
        self.closed()
        self.\tclose(1)
        (self).close
        """
    )
    sources = [text] + [f.text for f in _package(ROOT / "src" / "racecheck").files]
    for name in ["close", "run", "check", "_refs", "append"]:
        old = re.compile(rf"\.[ \t]*{name}\b(?![ \t]*=[^=])|['\"]{name}['\"]")
        for source in sources:
            expected = [
                (m.start(), m.start() + len(m.group(0).rstrip("'\"")), m.group(0)[0] in "'\"")
                for m in old.finditer(source)
            ]
            assert list(_attribute_refs(re.compile(rf"{name}\b"), source)) == expected
    found = list(_attribute_refs(re.compile(r"close\b"), text))
    assert [quoted for _, _, quoted in found] == [False, False, False, True, True, False, False]


def test_string_spans_are_those_of_the_pattern_with_the_prefix_letters(tmp_path: Path) -> None:
    text = TRICKY + 'x = rb"""raw\n"""\ny = buf\'\'\'z\'\'\'\nz = f"""{a}""" + """unclosed\n'
    (file,) = _package_of(tmp_path, text)
    sources = [file, *_package(ROOT / "src" / "racecheck").files]
    old = re.compile(r"[rbuRBUfF]*(\"\"\"|\'\'\')")
    for source in sources:
        spans: list[int] = []
        pos = 0
        while (m := old.search(source.text, pos)) is not None:
            close = source.text.find(m.group(1), m.end())
            if close < 0:
                break
            spans += [m.start(), close + 3]
            pos = close + 3
        assert _Shape(source).spans == spans, source.path
