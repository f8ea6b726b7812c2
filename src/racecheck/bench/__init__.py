"""``racecheck bench``: what control costs, and how fast each strategy finds each race.

Two parts, both printed as tables: the overhead of controlled runs against
uninstrumented ones (:mod:`racecheck.bench.overhead`, rates in one process),
and the strategy table (:mod:`racecheck.bench.table`): schedules to the first
failure for every strategy x scenario x seed, and schedules to verification
for the correct variants where a strategy can verify. ``--strategies`` and
``--seeds`` keep a run short; ``--no-overhead`` skips the timing part.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from racecheck.errors import UsageError

DEFAULT_SEEDS = (0, 1, 2)


def _names(text: str) -> list[str]:
    from racecheck.strategies import STRATEGIES

    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown strategy {', '.join(map(repr, unknown)) or '(none given)'};"
            f" choose from {', '.join(STRATEGIES)}"
        )
    return names


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"seeds must be integers separated by commas, not {text!r}"
        ) from None
    if not seeds:
        raise argparse.ArgumentTypeError("give at least one seed")
    return seeds


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from racecheck.strategies import STRATEGIES

    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="scenario files or folders (default: scenarios/)"
    )
    parser.add_argument(
        "--strategies",
        type=_names,
        default=list(STRATEGIES),
        help=f"comma-separated strategies for the table (default: all: {','.join(STRATEGIES)})",
    )
    parser.add_argument(
        "--seeds",
        type=_seeds,
        default=list(DEFAULT_SEEDS),
        help="comma-separated seeds (default: 0,1,2)",
    )
    parser.add_argument("--budget", type=_positive, default=1000, help="schedule budget per search")
    parser.add_argument(
        "--schedules", type=_positive, default=2000, help="runs per overhead workload"
    )
    parser.add_argument("--no-overhead", action="store_true", help="skip the overhead measurements")
    parser.add_argument(
        "--no-table", action="store_true", help="skip the strategy table (overhead only)"
    )
    parser.add_argument(
        "--only",
        metavar="TEXT",
        default=None,
        help="measure only the overhead rows whose name contains TEXT"
        " (e.g. 'detect=True' for the race detector's rows)",
    )


def _progress(row: Any) -> None:
    """One line on stderr per finished row: a full table takes minutes."""
    cells = " ".join("-" if n is None else str(n) for n in row.counts)
    print(f"bench: {row.name} {row.strategy}: {cells}", file=sys.stderr, flush=True)


def run(args: Any) -> int:
    from racecheck.bench.table import measure, render

    only = getattr(args, "only", None)
    if only is not None:
        from racecheck.bench.overhead import ROW_NAMES

        if not any(only in name for name in ROW_NAMES):
            raise UsageError(
                f"bench: --only {only!r} matches no overhead row; rows: {', '.join(ROW_NAMES)}"
            )
    print(f"racecheck bench (python {'.'.join(map(str, sys.version_info[:3]))})")
    if not args.no_overhead:
        from racecheck.bench.overhead import detector_feed, overhead

        rounds = 5
        print()
        print(
            f"overhead: {args.schedules} schedules per measurement, median of {rounds} rounds;"
            " plain = the same workload uninstrumented (asyncio: one reused event loop)"
        )
        print(f"the race detector's feed on this python: {detector_feed()}")
        print(f"{'workload':<40} {'plain/s':>10} {'racecheck/s':>12} {'cost':>7} {'cpu cost':>9}")
        for row in overhead(args.schedules, rounds, only):
            print(
                f"{row['workload']:<40} {row['uninstrumented_per_s']:>10.0f}"
                f" {row['racecheck_per_s']:>12.0f} {row['cost_ratio']:>6.2f}x"
                f" {row['cpu_cost_ratio']:>8.2f}x"
            )
    if getattr(args, "no_table", False):
        return 0
    print()
    try:
        rows = measure(
            list(args.paths) or ["scenarios/"],
            args.strategies,
            args.seeds,
            args.budget,
            on_row=_progress,
        )
    except (OSError, ValueError) as exc:
        raise UsageError(f"bench: {exc}") from None
    for line in render(rows, args.seeds, args.budget):
        print(line)
    return 0


__all__ = ["add_arguments", "run"]
