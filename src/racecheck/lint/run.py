"""Lint files: find them, parse them, run every check, drop what is suppressed.

Errors the user must fix before linting can mean anything -- a path that does
not exist, a file that does not parse, an unknown rule code -- raise
:class:`racecheck.errors.UsageError`; the CLI prints it as one line (exit 2).
"""

from __future__ import annotations

import os
import tokenize
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from racecheck.errors import UsageError, one_line
from racecheck.lint import awaits, fanout, loops, threads
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
) -> list[Finding]:
    """Lint one module's source text."""
    return _lint(source, path, resolve_codes(select, ignore))


def _lint(source: str, path: str, codes: frozenset[str]) -> list[Finding]:
    try:
        return _lint_checked(source, path, codes)
    except RecursionError:
        # The parser and the checks both recurse on the syntax tree: code nested
        # past Python's recursion limit is refused, not answered with a traceback.
        raise UsageError(
            f"{path}: cannot lint: the code is nested too deeply for Python's parser and checks"
        ) from None


def _lint_checked(source: str, path: str, codes: frozenset[str]) -> list[Finding]:
    try:
        module = Module.parse(path, source)
    except SyntaxError as exc:
        where = f"{path}:{exc.lineno}" if exc.lineno else path
        raise UsageError(f"{where}: syntax error: {exc.msg}") from None
    except ValueError as exc:  # for example a null byte in the source
        raise UsageError(f"{path}: cannot parse: {exc}") from None
    except MemoryError:  # 3.13: "Parser stack overflowed - Python source too complex"
        raise UsageError(
            f"{path}: cannot lint: the code is nested too deeply for Python's parser"
        ) from None
    table = suppressions(source)
    found = {
        finding
        for check in CHECKS
        for finding in check(module, codes)
        if finding.code in codes and not is_suppressed(finding.code, finding.line, table)
    }
    return sorted(found)


def lint_paths(
    paths: Iterable[str | os.PathLike[str]],
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
) -> list[Finding]:
    """Lint every Python file under ``paths``; findings sorted by path, line, column."""
    codes = resolve_codes(select, ignore)
    findings: list[Finding] = []
    for file in iter_files(paths):
        findings.extend(_lint(read_source(file), str(file), codes))
    return sorted(findings)


def count_files(paths: Iterable[str | os.PathLike[str]]) -> int:
    return sum(1 for _ in iter_files(paths))
