"""Where a DPOR search's budget goes: the races it reverses, counted by what conflicted.

    python -m racecheck.bench.dpor_reversals SCENARIO_FILE VARIANT [--schedules N]
    python -m racecheck.bench.dpor_reversals scenarios/cleveragents_7105_bridge.py correct

Every reversal DPOR adds to a state (a new actor to try there) starts runs
below it, so the races that add them are where the budget goes. This runs
the variant under ``strategy="dpor"`` with :class:`CountingChooser`, which
labels each race whose reversal added an actor by the keys the two steps
conflicted on (object type, key, who wrote), plus the states where a step
disabled an actor that could run there (``disabled``: a lock taken), and
the races inside a task's turn reversed at the turn's start (``at a turn's
start:``, then what the two steps conflicted on), and prints the counts, most first.

A measurement aid, not part of a check: it subclasses the chooser for the
one run and changes nothing in the search (same runs, same traces).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import sys
import time
from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

from racecheck.accesses import ANY, OPAQUE, SOMEWHERE
from racecheck.strategies import dpor

#: at most this many conflicting keys name a race (the rest are dropped)
_LABEL_KEYS = 4


def _kinds(accesses: Sequence[Any]) -> dict[int, str]:
    return {obj: kind for obj, _, _, kind in accesses}


def label(first: Any, second: Any) -> tuple[str, ...]:
    """What two steps conflicted on: ``Type:key W/R`` (first step's access, then second's)."""
    out: set[str] = set()
    kinds = _kinds(first.accesses)
    for obj, keys in first.index.items():
        other = second.index.get(obj)
        if other is None:
            continue
        kind = kinds.get(obj) or str(obj)
        for key, write in keys.items():
            for other_key, other_write in other.items():
                same = key == other_key or ANY in (key, other_key)
                if same and (write or other_write):
                    shown: Hashable = other_key if key == ANY else key
                    out.add(f"{kind}:{shown} {'W' if write else 'R'}/{'W' if other_write else 'R'}")
    if OPAQUE in first.index or OPAQUE in second.index:
        out.add("OPAQUE")
    for reader in (first, second):
        # a read on an object that could not be rebuilt meets a write of its key anywhere
        for key in reader.index.get(SOMEWHERE, ()):
            out.add(f"SOMEWHERE:{key} R")
    return tuple(sorted(out))[:_LABEL_KEYS]


class CountingChooser(dpor.DPORChooser):
    """DPOR that counts, by label, the races whose reversal added an actor to try."""

    counts: ClassVar[collections.Counter[tuple[str, ...]]] = collections.Counter()
    #: the step a reversal's race began at, while DPOR moves it to a turn's start
    _race_from: int | None = None

    def _reverse(self, i: int, j: int, hb: list[int]) -> None:
        # A race inside a task's turn is reversed at the turn's start (DPORChooser._reverse
        # calls itself there): it is labelled by the two steps that raced, and said so.
        outer = self._race_from is None
        if outer:
            self._race_from = i
        try:
            node = self.path[i]
            before = len(node.backtrack)
            super()._reverse(i, j, hb)
            if len(node.backtrack) > before:
                origin = self._race_from
                assert origin is not None
                what = label(self.events[origin], self.events[j])
                CountingChooser.counts[("at a turn's start:", *what) if origin != i else what] += 1
        finally:
            if outer:
                self._race_from = None

    def _reverse_disabled(self, i: int, actor: int) -> None:
        node = self.path[i]
        before = len(node.backtrack)
        super()._reverse_disabled(i, actor)
        if len(node.backtrack) > before:
            CountingChooser.counts[("disabled",)] += 1


class _BadInput(Exception):
    pass


def _variant(path: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location("_reversals_scenario", path)
    if spec is None or spec.loader is None or not os.path.isfile(path):
        raise _BadInput(f"cannot load {path}: not a scenario file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    scenario = getattr(module, "SCENARIO", None)
    if scenario is None:
        raise _BadInput(f"{path} defines no SCENARIO")
    if name not in scenario.variants:
        raise _BadInput(f"no variant {name!r} in {path} (has: {', '.join(scenario.variants)})")
    return scenario.variants[name]


def main(argv: Sequence[str] | None = None) -> int:
    import racecheck

    parser = argparse.ArgumentParser(prog="python -m racecheck.bench.dpor_reversals")
    parser.add_argument("scenario", help="a scenario file (scenarios/*.py)")
    parser.add_argument("variant")
    parser.add_argument("--schedules", type=int, default=150)
    args = parser.parse_args(argv)
    try:
        variant = _variant(args.scenario, args.variant)
    except _BadInput as bad:
        print(f"racecheck.bench.dpor_reversals: {bad}", file=sys.stderr)
        return 2
    CountingChooser.counts.clear()
    original = dpor.DPORChooser
    dpor.DPORChooser = CountingChooser  # type: ignore[misc]
    started = time.perf_counter()
    try:
        report = racecheck.check(
            variant.target, strategy="dpor", schedules=args.schedules, **dict(variant.options)
        )
        print(*report.notes, sep="\n")
    except racecheck.RaceFound as found:
        print(f"race found at schedule {found.schedules_run}: {found.cause!r}")
    finally:
        dpor.DPORChooser = original  # type: ignore[misc]
    print(f"{time.perf_counter() - started:.1f} s; reversals added, by what conflicted:")
    for what, count in CountingChooser.counts.most_common():
        print(f"{count:6d}  {'; '.join(what)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
