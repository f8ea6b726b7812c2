"""The verdict of all the shards of one exploration, whichever way it was split.

It sits below every sharding module: :func:`racecheck.sharding.merge` gives it for
slices of schedule numbers, :func:`racecheck.sharding_tree.merge_tree` for an
exhaustive search split into subtrees, and the report merge reads it either way.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Merged:
    """The verdict of all the shards of one exploration."""

    #: the index into the given results of the shard whose failure wins, or None
    winner: int | None
    #: schedule number of the first failure, or the last schedule of the exploration
    schedules_run: int
    #: schedules the shards ran in all (schedule 1 counted once)
    total_ran: int
    ended: bool
    #: the whole search ran and nothing was out of sight (None: as ``ended``)
    exhausted: bool | None = None
    #: the coverage tally counts runs numbered up to this (None: up to ``schedules_run``);
    #: a split exhaustive search numbers its coverage by keys (racecheck.sharding_tree)
    coverage_limit: int | None = None
    #: split DPOR searched every subtree and saw every conflict (racecheck.sharding_dpor)
    verified: bool = False

    def __post_init__(self) -> None:
        if self.exhausted is None:
            self.exhausted = self.ended
        if self.coverage_limit is None:
            self.coverage_limit = self.schedules_run
