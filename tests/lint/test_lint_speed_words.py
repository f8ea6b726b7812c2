"""The package search asks a file's words, and walks the package once per run.

Issue 14's 50 ms per file, on large packages (the sixteenth round: Home
Assistant, litellm, agno). Each name the concurrency evidence or the callers
index asks about was found by scanning every file's text (11 ms for Home
Assistant's 33 MB), and one finding asks about its callers' callers too:
hundreds of names for one small file. After a few names a file's words are
collected once and a name costs a look-up; these tests pin that the files a
name is looked for in are still every file the whole-word search can match in.
And every module asking about its package walked the package's directories
and compared every file's size and time (60-100 ms for Home Assistant): now
once per run, and the next run still sees a file that changed.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from test_lint_concurrency_evidence import _CLIENT, _HANDLER_SPAWNS

from racecheck.lint import lint_paths
from racecheck.lint.callers import _SCANS_BEFORE_WORDS, _File, _Package, _package
from racecheck.lint.severity import shape_severity

ROOT = Path(__file__).resolve().parents[2]

_TRICKY = textwrap.dedent(
    '''
    """Docs: fetch() and prefetch() and fetch_all(), 'fetch', "fetch"."""
    x = obj.fetch (1) + _fetch(2) + fetch2(3) + fetch\t(4)
    y = a.b.fetch
    class Fetch(fetch, Base): pass
    def naïve(fetch): return fetché
    z = éfetch + fetchµ + µfetch
    w = 1 if x else-fetch
    '''
)


def _whole_word_holders(files: list[_File], name: str) -> list[_File]:
    """The files in which the package search's patterns could match ``name``: a run of
    word characters (``\\w``, any alphabet) that is exactly the name."""
    return [f for f in files if name in _words(f)]


def _words(file: _File) -> set[str]:
    found: set[str] | None = getattr(file, "_test_words", None)
    if found is None:
        found = set(re.findall(r"\w+", file.text))
        file._test_words = found  # type: ignore[attr-defined]
    return found


def _assert_holders(package: _Package, name: str) -> None:
    holders = package.holding(name)
    expected = _whole_word_holders(package.files, name)
    # an ASCII file holds the name exactly when the whole word is in it; a file with
    # letters outside ASCII is scanned for the name in its text, which may hold more
    assert [f for f in holders if f.text.isascii()] == [f for f in expected if f.text.isascii()], (
        name
    )
    assert set(map(id, expected)) <= set(map(id, holders)), name
    assert holders == [f for f in package.files if f in holders], "in package order"


def test_the_files_holding_a_word_are_all_the_whole_word_search_can_match_in(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ascii.py").write_text(_TRICKY.replace("ï", "i").replace("é", "e").replace("µ", "u"))
    (pkg / "letters.py").write_text(_TRICKY)
    (pkg / "other.py").write_text("def prefetch(): pass\nvalue = 'refetch'\n")
    package = _package(pkg)
    # the first names are found by scanning the texts, the rest by the files' words
    names = ["fetch", "prefetch", "fetch2", "Fetch", "naïve", "fetché", "µfetch", "b", "x"]
    for filler in range(_SCANS_BEFORE_WORDS):
        package.holding(f"filler{filler}")
    assert len(package.holders) == _SCANS_BEFORE_WORDS
    for name in names:
        _assert_holders(package, name)
    assert [f.path.name for f in package.holding("fetch")] == ["ascii.py", "letters.py"]
    assert [f.path.name for f in package.holding("prefetch")] == [
        "ascii.py",
        "letters.py",
        "other.py",
    ]


def test_words_of_racecheck_are_held_by_every_file_that_holds_them_whole() -> None:
    package = _package(ROOT / "src" / "racecheck")
    words = sorted({w for f in package.files for w in _words(f)})
    for filler in range(_SCANS_BEFORE_WORDS):
        package.holding(f"no_such_name_{filler}")
    for word in words[:: max(1, len(words) // 120)]:
        _assert_holders(package, word)


def test_a_file_changed_between_two_runs_is_read_again(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "client.py").write_text(textwrap.dedent(_CLIENT))
    (pkg / "app.py").write_text("class App:\n    pass\n")

    def severity() -> str:
        (finding,) = [f for f in lint_paths([pkg]) if f.code == "RC102"]
        return shape_severity(finding)

    assert severity() == "warning"  # nothing spawns get_connection()
    (pkg / "app.py").write_text(textwrap.dedent(_HANDLER_SPAWNS))
    assert severity() == "error"  # the next run walks the package again
