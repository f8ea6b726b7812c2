"""``racecheck lint PATH...``: the command line of the await-atomicity lint.

:func:`add_parser` registers ``lint`` on the main ``racecheck`` parser;
:func:`main` runs it standalone (``python -m racecheck.lint``). Both share
:func:`run`, and both report a :class:`~racecheck.errors.UsageError` as one
line, ``racecheck: error: ...``, with exit code 2.

Exit codes: 0 no findings, 1 findings, 2 usage error (missing path, unknown
rule code, a file that does not parse).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any, NoReturn

from racecheck.errors import UsageError
from racecheck.lint.findings import Finding
from racecheck.lint.registry import RULES, resolve_codes
from racecheck.lint.run import (
    PHASES,
    FileTiming,
    count_files,
    lint_paths,
    lint_paths_timed,
)

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

#: issue 14's budget: CPU time per file
BUDGET_SECONDS = 0.050

HELP = "statically check Python files for await-atomicity and thread races"
DESCRIPTION = (
    "Report code shapes that race under concurrency (asyncio tasks, threads): state kept "
    "on a shared object across an await, check-then-act and read-modify-write split by an "
    "await, shared collections in fan-outs, asyncio objects used from threads, loop-bound "
    "primitives created in __init__. Silence one line with '# racecheck: ignore[RC101]'."
)
EPILOG = "exit codes: 0 no findings, 1 findings, 2 usage error. Rules: " + ", ".join(
    f"{code} {rule.name}" for code, rule in RULES.items()
)


def configure(parser: argparse.ArgumentParser) -> None:
    """The ``lint`` options, on whichever parser hosts them."""
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories")
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (text)"
    )
    parser.add_argument(
        "--select",
        action="append",
        metavar="CODES",
        help="only these codes or prefixes, comma-separated (RC1 = RC1xx); repeatable",
    )
    parser.add_argument(
        "--ignore",
        action="append",
        metavar="CODES",
        help="skip these codes or prefixes, comma-separated; repeatable",
    )
    parser.add_argument(
        "--statistics", action="store_true", help="print the number of findings per code"
    )
    parser.add_argument(
        "--explain", metavar="CODE", help="describe a rule (what, why, example, fix) and exit"
    )
    parser.add_argument(
        "--timing",
        action="store_true",
        help="print each file's CPU time by phase (slowest files, and how many are over "
        "50 ms) on stderr",
    )
    parser.add_argument(
        "--timing-top",
        type=int,
        default=10,
        metavar="N",
        help="with --timing: how many of the slowest files to list (10)",
    )
    parser.add_argument(
        "--timing-runs",
        type=int,
        default=1,
        metavar="K",
        help="with --timing: lint each file K times and keep its fastest run (1)",
    )
    parser.set_defaults(func=run)


def add_parser(subparsers: Any) -> None:
    """Register ``lint`` on the ``racecheck`` command's subparsers."""
    parser = subparsers.add_parser("lint", help=HELP, description=DESCRIPTION, epilog=EPILOG)
    configure(parser)


def explain(code: str) -> str:
    rule = RULES.get(code.strip().upper())
    if rule is None:
        raise UsageError(f"unknown rule code {code!r} ({', '.join(RULES)})")
    example = "\n".join(f"    {line}" for line in rule.example.splitlines())
    return (
        f"{rule.code} {rule.name} ({rule.reported or rule.severity})\n\n{rule.summary}.\n\n"
        f"Why: {rule.why}\n\nExample:\n\n{example}\n\nFix: {rule.fix}\n"
    )


def run(args: argparse.Namespace) -> int:
    """Lint ``args.paths``; print findings; return the exit code."""
    if args.explain:
        sys.stdout.write(explain(args.explain))
        return EXIT_CLEAN
    if not args.paths:
        raise UsageError("lint needs at least one PATH")
    resolve_codes(args.select, args.ignore)  # bad codes fail before any file is read
    timings: list[FileTiming] | None = None
    if getattr(args, "timing", False):
        if args.timing_top < 0:
            raise UsageError(f"--timing-top must be 0 or more, not {args.timing_top}")
        findings, timings = lint_paths_timed(
            args.paths, select=args.select, ignore=args.ignore, runs=args.timing_runs
        )
    else:
        findings = lint_paths(args.paths, select=args.select, ignore=args.ignore, pause_gc=True)
    if args.format == "json":
        json.dump([f.to_json() for f in findings], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for finding in findings:
            sys.stdout.write(finding.to_text() + "\n")
        sys.stderr.write(summary(findings, count_files(args.paths)) + "\n")
    if args.statistics:
        stream = sys.stderr if args.format == "json" else sys.stdout
        for code, count in sorted(Counter(f.code for f in findings).items()):
            stream.write(f"{count:5d}  {code}  {RULES[code].name}\n")
    if timings is not None:
        sys.stderr.write(timing_report(timings, args.timing_top, args.timing_runs))
    return EXIT_FINDINGS if findings else EXIT_CLEAN


def timing_report(timings: Sequence[FileTiming], top: int, runs: int) -> str:
    """The slowest files by phase, and how many files are over the 50 ms budget."""
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # not every platform has a load average
        load = "unknown"
    over = [t for t in timings if t.total > BUDGET_SECONDS]
    runs_text = "one run" if runs == 1 else f"fastest of {runs} runs"
    lines = [
        f"Timing: CPU ms per file ({runs_text}; load average {load}), slowest first:",
        "  ".join(f"{name:>7}" for name in ("total", *PHASES)) + "    lines  path",
    ]
    for t in sorted(timings, key=lambda t: -t.total)[:top]:
        cells = [t.total, *(t.seconds.get(name, 0.0) for name in PHASES)]
        lines.append("  ".join(f"{1000 * x:7.1f}" for x in cells) + f"  {t.lines:7d}  {t.path}")
    total = sum(t.total for t in timings)
    mean = 1000 * total / len(timings) if timings else 0.0
    worst = 1000 * max((t.total for t in timings), default=0.0)
    lines.append(
        f"{len(over)} of {_plural(len(timings), 'file')} over {1000 * BUDGET_SECONDS:.0f} ms; "
        f"mean {mean:.1f} ms, max {worst:.1f} ms, total {total:.2f} s"
    )
    return "\n".join(lines) + "\n"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summary(findings: Sequence[Finding], checked: int) -> str:
    if not findings:
        return f"No findings in {_plural(checked, 'file')} checked."
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = len(findings) - errors
    files = len({f.path for f in findings})
    return (
        f"Found {_plural(len(findings), 'finding')} ({_plural(errors, 'error')}, "
        f"{_plural(warnings, 'warning')}) in {_plural(files, 'file')}."
    )


class _Parser(argparse.ArgumentParser):
    """A usage error is one line and exit 2, like every other racecheck error."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"racecheck: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="racecheck lint", description=DESCRIPTION, epilog=EPILOG)
    configure(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Standalone entry point (``python -m racecheck.lint``); returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
        code: int = args.func(args)
        return code
    except UsageError as exc:
        sys.stderr.write(f"racecheck: error: {exc}\n")
        return EXIT_USAGE
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except BrokenPipeError:
        return EXIT_CLEAN  # `racecheck lint . | head`: stop quietly
