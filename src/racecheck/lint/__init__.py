"""racecheck's static await-atomicity lint: ``racecheck lint PATH...``.

It reads Python source with :mod:`ast` (nothing is imported or run) and reports
shapes that are races under concurrency: state kept on a shared object across
an ``await``, check-then-act and read-modify-write split by an ``await``,
shared collections mutated by fanned-out tasks or threads, asyncio objects used
from threads, and loop-bound primitives created too early. See ``docs/lint.md``.

Public API::

    from racecheck.lint import lint_paths, RULES
    for finding in lint_paths(["src/"], select=["RC1"]):
        print(finding.to_text())
"""

from __future__ import annotations

from racecheck.lint.findings import Finding, Severity
from racecheck.lint.registry import RULES, Rule, resolve_codes
from racecheck.lint.run import iter_files, lint_paths, lint_source

__all__ = [
    "RULES",
    "Finding",
    "Rule",
    "Severity",
    "iter_files",
    "lint_paths",
    "lint_source",
    "resolve_codes",
]
