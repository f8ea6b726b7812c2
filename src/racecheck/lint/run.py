"""Lint files: find them, parse them, run every check, drop what is suppressed.

Errors the user must fix before linting can mean anything -- a path that does
not exist, a file that does not parse, an unknown rule code -- raise
:class:`racecheck.errors.UsageError`; the CLI prints it as one line (exit 2).

Speed (issue 14: under 50 ms per file). Every file is parsed whole, so a file
that does not parse is always an error. A check runs only when the file's text
holds one of the words it matches on (:data:`TRIGGERS`): the rules recognise
concurrency by names (``async``, ``Thread``, ``submit``, ``gather``, ...), so a
file without any of a check's words cannot give that check a finding, and a
file without any check's words is not even indexed. ``lint_source(...,
prescan=False)`` runs every check on every file: the test that both give the
same findings is ``tests/lint/test_lint_speed.py``. :func:`lint_paths_timed`
measures each phase of each file (``racecheck lint --timing``), the release of
its syntax tree included: it is part of the file's cost.

Only the whole file is parsed, never the parts a rule could match: on the
slowest files of the study corpus 79-100% of the lines sit in top-level
definitions that hold a needed check's words, so a partial parse would save
little, lose syntax errors in the parts skipped, and tie every rule to what
the parsed parts hold (docs/lint.md, fourth timing round).
"""

from __future__ import annotations

import gc
import os
import re
import time
import tokenize
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from racecheck.errors import UsageError, one_line
from racecheck.lint import awaits, fanout, loops, threads
from racecheck.lint.callers import one_run
from racecheck.lint.findings import Finding
from racecheck.lint.module import Module
from racecheck.lint.registry import resolve_codes
from racecheck.lint.suppress import is_suppressed, suppressions

#: directories never worth linting: tooling, environments, build output
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "__pycache__",
        "node_modules",
        "build",
        "dist",
        ".eggs",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)

Check = Callable[[Module, frozenset[str]], Iterator[Finding]]
#: every check, each taking the enabled codes and yielding findings
CHECKS: tuple[Check, ...] = (awaits.check, fanout.check, threads.check, loops.check)

#: Words without which a check cannot report: a rule matches concurrency by the
#: names in the code, so each name it matches on is in the text. Case-insensitive
#: and anywhere (comments and strings too): a stray hit only costs the check's time.
#: A rule that starts matching a new name must add it here (its tests fail if not:
#: every ``lint_source`` call goes through this pre-scan).
TRIGGERS: dict[Check, re.Pattern[str]] = {
    # RC101-RC103 look only at coroutines (``async def`` that awaits)
    awaits.check: re.compile(r"async", re.IGNORECASE),
    # RC104: gather / create_task / ensure_future / start_soon / submit /
    # run_in_executor / to_thread (and anyio's run_sync over to_thread) /
    # executor.map and pool.map
    fanout.check: re.compile(
        r"gather|create_task|ensure_future|start_soon|submit|run_in_executor|to_thread"
        r"|executor|pool",
        re.IGNORECASE,
    ),
    # RC105/RC106 need a thread: threading.* (locks, Thread, Timer), concurrent.futures,
    # a hand-off (submit, start_new_thread, run_in_executor, to_thread, subscribe,
    # anything given a pool/executor/scheduler argument)
    threads.check: re.compile(
        r"thread|timer|submit|concurrent|executor|pool|scheduler|subscribe", re.IGNORECASE
    ),
    # RC107 looks only at classes with async methods
    loops.check: re.compile(r"async", re.IGNORECASE),
}

#: the phases :func:`lint_paths_timed` reports, in order
PHASES: tuple[str, ...] = (
    "read",
    "parse",
    "index",
    *(check.__module__.rsplit(".", 1)[-1] for check in CHECKS),
    "suppress",
    "free",
    "gc",
)


def iter_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Python files under ``paths``: files as given, directories walked in sorted order."""
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            yield path
        elif path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(
                    d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")
                )
                for name in sorted(files):
                    if name.endswith(".py"):
                        yield Path(root) / name
        else:
            raise UsageError(f"{raw}: no such file or directory")


def read_source(file: Path) -> str:
    """A file's text, decoded as Python does it (BOM, ``# -*- coding: ... -*-``)."""
    try:
        with tokenize.open(file) as stream:
            return stream.read()
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise UsageError(f"{file}: cannot read: {one_line(exc, named=False)}") from None


def lint_source(
    source: str,
    path: str = "<string>",
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    *,
    prescan: bool = True,
) -> list[Finding]:
    """Lint one module's source text.

    ``prescan=False`` runs every check whatever the text holds: slower, the same
    findings (the reference the pre-scan is tested against).
    """
    return _lint(source, path, resolve_codes(select, ignore), prescan=prescan)


def _lint(
    source: str,
    path: str,
    codes: frozenset[str],
    timing: dict[str, float] | None = None,
    prescan: bool = True,
) -> list[Finding]:
    try:
        return _lint_checked(source, path, codes, timing, prescan)
    except RecursionError:
        # The parser and the checks both recurse on the syntax tree: code nested
        # past Python's recursion limit is refused, not answered with a traceback.
        raise UsageError(
            f"{path}: cannot lint: the code is nested too deeply for Python's parser and checks"
        ) from None


def _words(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """A trigger pattern's words, if it is only an alternation of words (else None)."""
    words = tuple(pattern.pattern.split("|"))
    plain = pattern.flags & re.IGNORECASE and all(re.fullmatch(r"\w+", w) for w in words)
    return tuple(w.lower() for w in words) if plain else None


#: each trigger pattern as lower-case words, looked for with ``in``: an
#: ``IGNORECASE`` alternation cannot use the regex engine's literal-prefix search
#: and walks the whole text when no word is there (34 ms on redis-py's
#: ``commands/core.py``, 13% of the corpus's CPU); ``str.lower`` and ``in`` take
#: well under a millisecond
_TRIGGER_WORDS: dict[Check, tuple[str, ...] | None] = {
    check: _words(pattern) for check, pattern in TRIGGERS.items()
}

#: the only characters outside ASCII that ``re.IGNORECASE`` matches to an ASCII
#: letter (dotted and dotless i, long s, the Kelvin sign; CPython 3.11-3.13, every
#: code point tried); ``str.lower`` folds only two of them, so a text holding
#: any of them is scanned with the patterns themselves
_FOLDS_TO_ASCII = re.compile("[\u0130\u0131\u017f\u212a]")


def needed_checks(source: str) -> tuple[Check, ...]:
    """The checks that can report on ``source``: those whose trigger words it holds.

    A check with no entry in :data:`TRIGGERS` (a new one) always runs. The
    answer is the patterns' (``TRIGGERS[check].search(source)``), found faster.
    """
    lowered = source.lower() if source.isascii() or not _FOLDS_TO_ASCII.search(source) else None
    needed: list[Check] = []
    for check in CHECKS:
        pattern = TRIGGERS.get(check)
        if pattern is None:
            needed.append(check)
            continue
        words = _TRIGGER_WORDS.get(check)
        if lowered is not None and words is not None:
            if any(word in lowered for word in words):
                needed.append(check)
        elif pattern.search(source) is not None:
            needed.append(check)
    return tuple(needed)


def _lint_checked(
    source: str,
    path: str,
    codes: frozenset[str],
    timing: dict[str, float] | None = None,
    prescan: bool = True,
) -> list[Finding]:
    clock = time.process_time
    now = clock()

    def lap(phase: str) -> None:
        nonlocal now
        if timing is not None:
            then, now = now, clock()
            timing[phase] = timing.get(phase, 0.0) + now - then

    try:
        tree = Module.parse_tree(path, source)
    except SyntaxError as exc:
        where = f"{path}:{exc.lineno}" if exc.lineno else path
        raise UsageError(f"{where}: syntax error: {exc.msg}") from None
    except ValueError as exc:  # for example a null byte in the source
        raise UsageError(f"{path}: cannot parse: {exc}") from None
    except MemoryError:  # 3.13: "Parser stack overflowed - Python source too complex"
        raise UsageError(
            f"{path}: cannot lint: the code is nested too deeply for Python's parser"
        ) from None
    lap("parse")
    checks = needed_checks(source) if prescan else CHECKS
    if not checks:
        del tree  # released here, not on return, to be counted (see below)
        lap("free")
        return []  # parsed (a syntax error is still an error), nothing to look for
    module = Module.from_tree(path, tree)
    lap("index")
    raw: list[Finding] = []
    for check in CHECKS:
        if check in checks:
            raw.extend(check(module, codes))
        lap(_phase(check))
    table = suppressions(source)
    found = {f for f in raw if f.code in codes and not is_suppressed(f.code, f.line, table)}
    lap("suppress")
    # Freeing the tree and its indexes (an object and a dict per node: 8 ms on
    # redis-py's commands/core.py) is part of what a file costs; on return it
    # would happen after the last lap, counted in no phase. Findings hold no node.
    del module, tree
    lap("free")
    return sorted(found)


def _phase(check: Check) -> str:
    return check.__module__.rsplit(".", 1)[-1]


def lint_paths(
    paths: Iterable[str | os.PathLike[str]],
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    *,
    pause_gc: bool = False,
) -> list[Finding]:
    """Lint every Python file under ``paths``; findings sorted by path, line, column.

    ``pause_gc``: the garbage collector off while each file is linted (see
    :func:`paused_gc`); the command line's choice, not a library's.
    """
    codes = resolve_codes(select, ignore)
    findings: list[Finding] = []
    with one_run():
        for file in iter_files(paths):
            source = read_source(file)
            with paused_gc() if pause_gc else nullcontext():
                findings.extend(_lint(source, str(file), codes))
    return sorted(findings)


@dataclass
class FileTiming:
    """The CPU time one file took, by phase (seconds; the best run of each phase's file)."""

    path: str
    lines: int
    seconds: dict[str, float] = field(default_factory=dict)
    findings: int = 0

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector off for one file, then its young garbage collected.

    Parsing allocates one object per syntax node; with the collector on, every
    few hundred of them start a collection that walks the tree built so far
    (about 10% of a large file's time). A lint makes little cyclic garbage, and
    what it makes is collected when the file is done (a young-generation
    collection, counted in the file's time). Used by the command line, whose
    process is the lint's own; the state the caller had is restored.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)


def lint_paths_timed(
    paths: Iterable[str | os.PathLike[str]],
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    runs: int = 1,
    pause_gc: bool = True,
) -> tuple[list[Finding], list[FileTiming]]:
    """:func:`lint_paths`, and each file's CPU time by phase (:data:`PHASES`).

    CPU time (``time.process_time``), not wall time: on a shared machine other
    processes' load then counts only through contention. With ``runs`` > 1 each
    file is linted that many times in a row and its fastest run kept, which
    filters out a collection or a preemption landing in one run.
    """
    if runs < 1:
        raise UsageError(f"the number of timing runs must be at least 1, not {runs}")
    codes = resolve_codes(select, ignore)
    findings: list[Finding] = []
    timings: list[FileTiming] = []
    with one_run():
        for file in iter_files(paths):
            timings.append(_timed(file, codes, runs, pause_gc, findings))
    return sorted(findings), timings


def _timed(
    file: Path, codes: frozenset[str], runs: int, pause_gc: bool, findings: list[Finding]
) -> FileTiming:
    """One file's best timing of ``runs``; the first run's findings added to ``findings``."""
    best: FileTiming | None = None
    for attempt in range(runs):
        seconds: dict[str, float] = {}
        start = time.process_time()
        source = read_source(file)
        seconds["read"] = time.process_time() - start
        with paused_gc() if pause_gc else nullcontext():
            found = _lint(source, str(file), codes, timing=seconds)
            start = time.process_time()
        if pause_gc:  # the young collection at the end belongs to this file
            seconds["gc"] = time.process_time() - start
        timing = FileTiming(str(file), source.count("\n") + 1, seconds, len(found))
        if attempt == 0:
            findings.extend(found)
        if best is None or timing.total < best.total:
            best = timing
    assert best is not None
    return best


def count_files(paths: Iterable[str | os.PathLike[str]]) -> int:
    return sum(1 for _ in iter_files(paths))
