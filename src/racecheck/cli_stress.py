"""``racecheck stress FILE[::NAME]``: the CLI of stress mode (:mod:`racecheck.stress`).

Registered by :func:`racecheck.cli._add_stress`; it shares only
:mod:`racecheck.cli_base` with the other commands. Exit codes follow the
CLI's: 1 when any run failed, hung or crashed, 0 when none did, 2 for bad
input (one line on stderr) and for Ctrl-C (after printing the partial
statistics).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from racecheck.cli_base import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    int_arg,
    non_negative_int,
    positive_int,
    positive_seconds_arg,
    replay_command,
    safe,
    seconds_arg,
)
from racecheck.errors import UsageError
from racecheck.progress import DEFAULT_INTERVAL


def _stress_targets(spec: str) -> list[tuple[str | None, Any, str | None]]:
    """``FILE``, ``FILE::NAME`` or ``FILE::NAME[VARIANT]`` -> (label, target, backend) each.

    The label of a scenario variant is the one its tokens are bound to (so
    ``racecheck replay`` takes a token the controlled re-check prints); a
    function keeps its own name.

    NAME is a scenario's name (every variant, or the one named) or a
    module-level function of the file; a bare FILE means every variant of
    every scenario in it.
    """
    from racecheck.loader import display_path, import_file, parse_selector, scenarios_in, select
    from racecheck.scenario import Scenario

    sel = parse_selector(spec)
    module = import_file(sel.path)
    shown = display_path(sel.path)
    scenarios = scenarios_in(module)
    picked: list[tuple[Scenario, list[str]]]
    if sel.name is None and sel.variant is None:
        if not scenarios:
            raise UsageError(
                f"{shown} defines no racecheck.Scenario; name the function to stress: {shown}::NAME"
            )
        picked = select(scenarios, where=shown)
    elif sel.name is not None and not any(s.name == sel.name for s in scenarios):
        value = getattr(module, sel.name, None)
        if isinstance(value, Scenario):
            picked = select([value], None, sel.variant, where=shown)
        elif callable(value) and sel.variant is None:
            return [(None, value, None)]
        else:
            raise UsageError(f"{shown} has no scenario or function named {sel.name!r}")
    else:
        picked = select(scenarios, sel.name, sel.variant, where=shown)
    out: list[tuple[str | None, Any, str | None]] = []
    for scen, variants in picked:
        for variant in variants:
            backend = scen.check_options(variant).get("backend")
            out.append((scen.label(variant), scen.variants[variant].target, backend))
    return out


class _StressProgress:
    """Runs done, failures and rate on stderr: redrawn on a terminal, else a line a while.

    stderr, not stdout: the reports on stdout stay clean for pipes and CI logs.
    """

    def __init__(self, label: str, every: float) -> None:
        self.label = safe(label)
        self.every = every
        self.tty = sys.stderr.isatty()
        self.started = self.last = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int, failed: int) -> None:
        now = time.monotonic()
        wait = 0.1 if self.tty else self.every
        if wait <= 0 or (now - self.last < wait and done != total):
            return
        self.last = now
        rate = done / max(now - self.started, 1e-9)
        text = f"{self.label}: {done:,}/{total:,} runs, {failed:,} failed, {rate:.0f}/s"
        if self.tty:
            sys.stderr.write(f"\r\033[K  {text}")
            self.shown = True
        elif done != total:
            sys.stderr.write(f"progress: {text}\n")
        sys.stderr.flush()

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _cmd_stress(args: argparse.Namespace) -> int:
    """Stress each target; exit 1 when any run failed, 2 on bad input or Ctrl-C."""
    import racecheck

    targets = _stress_targets(args.target)
    out = sys.stdout
    failed = interrupted = abandoned = False
    reports: list[dict[str, Any]] = []
    for label, target, backend in targets:
        if backend not in (None, "threads", "asyncio"):
            raise UsageError(f"{label}: stress mode runs threads and asyncio code, not {backend}")
        progress = _StressProgress(
            str(label or getattr(target, "__qualname__", "target")), args.progress_every
        )
        report = racecheck.stress(
            target,
            progress=progress,
            runs=args.runs,
            parallel=args.parallel,
            timeout=args.timeout,
            seed=args.seed,
            reproduce=args.reproduce,
            label=label,
            isolate=args.isolate,
            processes=args.processes,
        )
        progress.clear()
        repro = report.reproduction
        if repro is not None and repro.token and args.parallel == 1 and label is not None:
            # a scenario variant: the CLI's own replay command applies
            selector = f"{args.target.partition('::')[0]}::{label}"
            repro.replay = replay_command(selector, repro.token)
        if args.json:
            reports.append(report.to_dict())
        else:
            out.write(report.render(examples=not args.no_examples) + "\n\n")
            out.flush()
        failed |= not report.ok
        abandoned |= bool(report.abandoned_threads)
        if report.interrupted:
            interrupted = True
            break
    if args.json:
        json.dump(reports, out, indent=2)
        out.write("\n")
        out.flush()
    code = EXIT_FAILED if failed else EXIT_OK
    if interrupted:
        sys.stderr.write("racecheck: interrupted (the statistics above are partial)\n")
        code = EXIT_USAGE
    if abandoned:
        # A hung run's threads cannot be stopped, and the interpreter would wait
        # for the non-daemon ones at exit: leave without waiting.
        out.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "stress",
        help="run a target many times for real (uncontrolled) and report its failure rate",
        description=(
            "Stress mode, for what the controlled scheduler cannot reach (C extensions, real"
            " sockets, subprocesses, free-threaded builds): run the real target many times with"
            " a tiny switch interval and random jitter, report the failure rate with a 95%"
            " confidence interval and the distinct failures. Results are NOT replayable; a"
            " failure is re-checked under the controlled scheduler, which prints a token when it"
            " can reproduce it. Exit 1 when any run failed, 0 when none did, 2 on bad input."
        ),
    )
    p.add_argument(
        "target",
        metavar="FILE[::NAME]",
        help="a scenario file, FILE::SCENARIO[VARIANT], or FILE::FUNCTION (a zero-argument"
        " function or coroutine function defined in the file)",
    )
    p.add_argument("--runs", type=positive_int, default=1000, help="runs (default 1000)")
    p.add_argument(
        "--parallel",
        type=positive_int,
        default=1,
        metavar="K",
        help="copies started together in every run: threads, or tasks for async (default 1)",
    )
    p.add_argument(
        "--timeout",
        type=positive_seconds_arg,
        default=10.0,
        metavar="SECONDS",
        help="a run taking longer is a hang: its stacks are dumped and it is abandoned"
        " (default 10)",
    )
    p.add_argument("--seed", type=int_arg, default=None, help="seed of the jitter settings")
    p.add_argument(
        "--reproduce",
        type=non_negative_int,
        default=200,
        metavar="N",
        help="schedules the controlled scheduler may spend reproducing a failure (0: skip;"
        " default 200)",
    )
    p.add_argument(
        "--isolate",
        choices=("thread", "process"),
        default="thread",
        help="thread: each run in a thread of this process (default); process: runs in worker"
        " processes, for targets that may hang holding the GIL or crash the interpreter",
    )
    p.add_argument(
        "--processes",
        type=positive_int,
        default=1,
        metavar="P",
        help="worker processes running at once (implies --isolate process; default 1)",
    )
    p.add_argument(
        "--progress-every",
        type=seconds_arg,
        default=DEFAULT_INTERVAL,
        metavar="SECONDS",
        help="without a terminal, print a progress line on stderr this often"
        f" (default {DEFAULT_INTERVAL:g}; 0: never)",
    )
    p.add_argument(
        "--no-examples", action="store_true", help="omit the example traceback of each failure"
    )
    p.add_argument("--json", action="store_true", help="print the reports as JSON instead of text")
    p.set_defaults(func=_cmd_stress)
