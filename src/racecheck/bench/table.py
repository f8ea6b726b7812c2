"""The strategy table: schedules to the first failure, and to verification.

For every scenario variant that should fail, each strategy runs with each
seed and the table shows how many schedules it needed ('-' when the budget
ran out first). For the variants that should hold, the strategies that can
*verify* (say every schedule ran: exhaustive search, the portfolio when its
systematic member completes, DPOR when registered) show how many schedules
that took; the others cannot, and are not listed. A strategy that ignores the
seed (systematic search) runs once and its number is repeated.

Counts, not seconds: the table is the same on a fast machine and a loaded one,
so it can be compared across commits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import racecheck

#: strategies that can claim the whole space ran (the others only sample)
VERIFYING = ("auto", "exhaustive", "dpor")
#: strategies whose exploration does not depend on the seed
SEEDLESS = ("exhaustive", "dpor")


@dataclass
class Row:
    scenario: str
    variant: str
    strategy: str
    #: "failure" (schedules to the first failure) or "verify" (to verification)
    measure: str
    #: per seed: schedules run, or None when nothing was found / verified
    counts: list[int | None] = field(default_factory=list)
    #: per seed: "found by" (auto's member) or why nothing was verified
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.scenario}[{self.variant}]"


def measure(
    paths: Sequence[str],
    strategies: Sequence[str],
    seeds: Sequence[int],
    budget: int,
    on_row: Callable[[Row], None] | None = None,
) -> list[Row]:
    """Run every (variant, strategy, seed) and return the table's rows."""
    from racecheck.loader import load_scenarios

    rows: list[Row] = []
    for path in paths:
        for scenario in load_scenarios(Path(path)):
            for variant_name, variant in scenario.variants.items():
                safe = variant.expect == "safe"
                for strategy in strategies:
                    if safe and strategy not in VERIFYING:
                        continue
                    row = Row(
                        scenario.name, variant_name, strategy, "verify" if safe else "failure"
                    )
                    ran: tuple[int | None, str] | None = None
                    for seed in seeds:
                        if ran is None or strategy not in SEEDLESS:
                            ran = _one(
                                variant.target,
                                strategy,
                                seed,
                                budget,
                                scenario.label(variant_name),
                                scenario.check_options(variant_name),
                                safe,
                            )
                        row.counts.append(ran[0])
                        row.notes.append(ran[1])
                    rows.append(row)
                    if on_row is not None:
                        on_row(row)
    return rows


def _one(
    target: Callable[[], Any],
    strategy: str,
    seed: int,
    budget: int,
    label: str,
    options: dict[str, Any],
    safe: bool,
) -> tuple[int | None, str]:
    options = {k: v for k, v in options.items() if k not in ("strategy", "schedules", "seed")}
    try:
        report = racecheck.check(
            target,
            strategy=strategy,
            schedules=budget,
            seed=seed,
            minimize=False,
            label=label,
            **options,
        )
    except racecheck.RaceFound as exc:
        if safe:
            return None, f"failed at {exc.schedules_run}"
        return exc.schedules_run, exc.strategy
    if safe and report.exhausted:
        return report.schedules_run, "verified"
    return None, "saturated" if report.saturated else "budget"


def render(rows: Sequence[Row], seeds: Sequence[int], budget: int) -> list[str]:
    """The rows as two fixed-width tables."""
    width = max([len(r.name) for r in rows] + [len("scenario[variant]")]) + 2
    lines: list[str] = []
    head = f"{'scenario[variant]':<{width}}{'strategy':<12}" + "".join(
        f"{'seed ' + str(s):>9}" for s in seeds
    )
    for measure_name, title in (
        ("failure", f"schedules to first failure (budget {budget}; '-' = not found)"),
        ("verify", f"schedules to verification (budget {budget}; '-' = not verified)"),
    ):
        chosen = [r for r in rows if r.measure == measure_name]
        if not chosen:
            continue
        if lines:
            lines.append("")
        lines += [title, head]
        for row in chosen:
            cells = "".join(f"{'-' if n is None else str(n):>9}" for n in row.counts)
            lines.append(f"{row.name:<{width}}{row.strategy:<12}{cells}")
    return lines
