"""Interleaving coverage: how much of the space of orderings a run explored.

Schedules are a poor measure on their own: two schedules can differ only in
the order of steps that touch nothing in common. What matters is the order of
*conflicting* operations — two actors touching the same attribute or lock, at
least one of them writing. Each run contributes the ordered pairs of
consecutive conflicting accesses it saw (``Task-2 wrote .balance, then Task-3
read it``); the number of distinct pairs over an exploration says how many
different races it actually exercised.
"""

from __future__ import annotations

from collections.abc import Sequence


def ordered_conflicts(accesses: Sequence[tuple[int, str]]) -> set[tuple[str, int, str, int, str]]:
    """(name, first actor, its kind, second actor, its kind) for adjacent conflicts."""
    last: dict[str, tuple[int, str]] = {}
    pairs: set[tuple[str, int, str, int, str]] = set()
    for actor, access in accesses:
        kind, _, name = access.partition(":")
        previous = last.get(name)
        if previous is not None and previous[0] != actor and _WRITES & {previous[1], kind}:
            pairs.add((name, previous[0], previous[1], actor, kind))
        last[name] = (actor, kind)
    return pairs


_WRITES = frozenset(("w", "lock"))


class CoverageTally:
    """Distinct conflict orderings seen across the runs of one exploration."""

    def __init__(self) -> None:
        self.orderings: set[tuple[str, int, str, int, str]] = set()

    def add_run(self, accesses: Sequence[tuple[int, str]] | None) -> None:
        if accesses:
            self.orderings |= ordered_conflicts(accesses)

    def __len__(self) -> int:
        return len(self.orderings)
