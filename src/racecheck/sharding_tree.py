"""Exhaustive search split across shards by schedule prefix (see racecheck.sharding).

The single-process search (:class:`~racecheck.strategies.exhaustive.ExhaustiveChooser`)
is a depth-first walk over the decision tree, level by level (a level is a
preemption bound; without a user bound the bound grows until a level prunes
nothing). Within a level it visits schedules in lexicographic order of their
choices, so the *subtree* under a prefix of its decisions is a contiguous
run of its numbering. Schedule 1 (the natural order, which every shard runs
first) fixes a *block* length: the first decisions whose alternatives
multiply to :data:`SUBTREES_PER_SHARD` times the shard count. A schedule's
subtree is named by its decisions up to the end of the block in which it
first leaves the natural order (:func:`subtree_depth`): a fixed depth would
leave one subtree, the one that keeps the natural order in its leading
decisions, with most of the work. A shard:

* runs the first schedule of every subtree (a *probe*: it is what shows where
  the next subtree starts, and every shard needs that to walk the same tree);
* runs the rest of a subtree only when it owns it: subtree ``o`` of a level
  (counting from 0 in the walk's order) belongs to shard ``o mod N + 1``, at
  every level, so a subtree keeps its owner while the bound grows;
* numbers each of its runs by a *key* (level, subtree, position in the
  subtree), whose order is the order of the single process's numbering.

Measured on a three-task program whose first failure is schedule 1540 of one
process (tests/test_sharding_tree.py's ``three_workers``): with a shared
board, the busiest of 2 shards ran 849 schedules (probes included) before
the verdict was known, the busiest of 4 ran 569. A fixed depth gave 1296
and 1054.

The schedule number a single process would give a key is not known to any one
shard: it adds up the sizes of every subtree before it, most of them owned by
others. So a shard reports the sizes of the subtrees it completed, per level,
and :func:`merge_tree` computes the single-process number of the lowest-keyed
failure, or, with none, where the single process would have stopped (the
budget, or the end of the search). A shard that saw its subtrees and the
top of the tree prune nothing stops deepening: its subtrees are the same at
every further level, and the merge counts them again from the last level it
ran. "Exhausted" is the merge's word alone, when every shard finished its part;
one slice never claims it.

A shard's own budget is the single process's: its runs (probes included) are
a subset of the single process's runs, in the same order, so running as many
as the budget covers everything of its own among the single process's first
``budget`` schedules. A failure whose number comes out above the budget is not
one a single process reports, and the merge drops it.

The :class:`~racecheck.strategies.dpor.DPORChooser` is not split: its backtrack
points are found while it runs (from the accesses of earlier schedules), so no
prefix split fixed in advance is the same search. It runs whole in shard 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from racecheck.sharding_verdict import Merged

if TYPE_CHECKING:
    from racecheck.outcome import Report
    from racecheck.schedule import Decision
    from racecheck.strategies.exhaustive import ExhaustiveChooser

# The exploration's session, a shard's SliceState and ShardResult, and explore's
# failure handling come in as arguments (typed Any): this module sits below
# racecheck.sharding and racecheck.explore, which call it, and imports neither.

#: how many subtrees per shard a block aims at (smaller blocks deal the work
#: more evenly, and cost every shard one probe per subtree)
SUBTREES_PER_SHARD = 4

#: keys as one int for the board and the coverage tally: order-preserving while
#: a level has fewer than 2**32 subtrees and a subtree fewer than 2**32 schedules
_WIDE = 1 << 32

Key = tuple[int, int, int]


def encode(key: Key) -> int:
    level, ordinal, position = key
    return (level * _WIDE + ordinal) * _WIDE + position


def split_depth(decisions: tuple[Decision, ...], shards: int) -> int:
    """The block length: decisions enough for ``SUBTREES_PER_SHARD`` subtrees per shard."""
    product = 1
    for i, (n, _) in enumerate(decisions):
        if product >= SUBTREES_PER_SHARD * shards:
            return i
        product *= n
    return len(decisions)


def subtree_depth(decisions: tuple[Decision, ...], block: int) -> int:
    """How many leading decisions name a schedule's subtree: up to its first deviation's block end.

    A fixed depth would leave one subtree far bigger than the rest: the one
    whose leading decisions are all the natural order holds every schedule
    that deviates only further down. Cutting at the end of the block where a
    schedule first deviates splits that region block by block as well.
    """
    block = max(1, block)
    for i, (_, choice) in enumerate(decisions):
        if choice:
            return (i // block + 1) * block
    return len(decisions)  # the natural order: a subtree of its own


@dataclass
class TreeState:
    """What one shard of a split exhaustive search did, as the merge needs it."""

    depth: int = 0
    #: (level, subtree) -> schedules in it, for the subtrees this shard owns and completed
    sizes: dict[tuple[int, int], int] = field(default_factory=dict)
    #: level -> subtrees seen at it (all of them once the level is walked to its end)
    counts: dict[int, int] = field(default_factory=dict)
    #: the key of this shard's failure
    failure: Key | None = None
    #: the last level this shard ran, once it finished its part (None: it did not)
    last_level: int | None = None
    #: nothing was out of racecheck's sight (no warnings, no scheduling limit)
    clean: bool = True
    #: "exhaustive", or "dpor" for split DPOR (racecheck.sharding_dpor), whose
    #: complete and clean merge is a proof: verified
    kind: str = "exhaustive"

    def to_dict(self) -> dict[str, Any]:
        return {
            "depth": self.depth,
            "sizes": [[lv, o, n] for (lv, o), n in sorted(self.sizes.items())],
            "counts": [[lv, n] for lv, n in sorted(self.counts.items())],
            "failure": None if self.failure is None else list(self.failure),
            "last_level": self.last_level,
            "clean": self.clean,
            "kind": self.kind,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TreeState:
        failure = data.get("failure")
        last = data.get("last_level")
        return cls(
            depth=int(data.get("depth", 0)),
            sizes={(int(lv), int(o)): int(n) for lv, o, n in data.get("sizes", ())},
            counts={int(lv): int(n) for lv, n in data.get("counts", ())},
            failure=None
            if failure is None
            else (int(failure[0]), int(failure[1]), int(failure[2])),
            last_level=None if last is None else int(last),
            clean=bool(data.get("clean", True)),
            kind=str(data.get("kind", "exhaustive")),
        )


def explore_subtrees(
    session: Any,
    chooser: ExhaustiveChooser,
    schedules: int,
    state: Any,
    found: Callable[[Any, Any, tuple[Decision, ...], int], Any],
) -> Report | Any:
    """One shard's part of an exhaustive search: every probe, and its own subtrees whole.

    ``session`` is the exploration's (racecheck.session.Session), ``state`` the
    shard's SliceState, and ``found`` explore's failure handling (shrink and
    trace), which makes the Found this returns on a failure.
    """

    settings = session.settings
    seen = session.schedules_seen
    shard = state.shard
    tree = state.tree = TreeState()
    board = state.board
    state.orderings = session.coverage.orderings
    depth: int | None = None
    level = chooser.preemption_bound
    ordinal, position, owned, fresh = -1, 0, False, True
    runs = 0
    probes = 0
    while runs < schedules and not session.interrupted:
        if fresh:
            ordinal, position, fresh = ordinal + 1, 0, False
            owned = ordinal % shard.count + 1 == shard.index
            tree.counts[level] = ordinal + 1
        key = (level, ordinal, position + 1)
        if board is not None:
            limit = board.limit()
            if limit is not None and encode(key) > limit:
                state.stopped = "another shard found a failure that comes before the rest of mine"
                break
        runs += 1
        controller = session.run(chooser, runs)
        position += 1
        decisions = tuple(controller.decisions)
        failed = controller.failure is not None
        if depth is None:
            depth = tree.depth = split_depth(decisions, shard.count)
        if owned:
            seen.add(hash(decisions))
            state.own_run(decisions, encode(key), controller.accesses)
        else:
            probes += 1
        if settings.progress is not None:
            settings.progress(runs, schedules)
        if failed and not session.interrupted:
            assert controller.failure is not None
            if not owned:
                # A probe of another shard's subtree: its owner runs it too and reports it.
                state.stopped = "a subtree another shard owns fails at its first schedule"
                break
            tree.failure = key
            if board is not None:
                board.post_failure(encode(key))
            return found(session, controller.failure, decisions, runs)
        cut = subtree_depth(decisions, depth)
        bumped = chooser.bump(decisions, None if owned else cut)
        if 0 <= bumped < cut:
            fresh = True  # the next run starts the next subtree
        if bumped < 0 or fresh:
            if owned:
                tree.sizes[(level, ordinal)] = position
        if bumped < 0:
            chooser.next_level()
            if not chooser.has_more():
                tree.last_level = level
                break
            level, ordinal, fresh = chooser.preemption_bound, -1, True
    if session.interrupted:
        raise KeyboardInterrupt
    warnings = session.warnings()
    tree.clean = not warnings and not getattr(settings.backend, "scheduling_limit", None)
    state.covered = runs
    what = (
        f"finished its part, up to {level} {chooser.unit(level)}"
        if tree.last_level is not None
        else "did not finish its part"
    )
    notes = [
        f"shard {shard}: exhaustive search split by schedule prefix (blocks of"
        f" {depth or 0} decisions) into subtrees dealt round-robin; this shard ran"
        f" {state.ran} schedules of its own subtrees and {probes} first schedules of"
        f" the others' ({what}"
        f"{'; ' + state.stopped if state.stopped else ''}); whether the search is"
        " exhausted is for the merge of every shard to say"
    ]
    return session.report(
        chooser,
        schedules_run=state.ran,
        exhausted=False,  # one slice never knows; the merge does
        notes=notes,
        warnings=warnings,
    )


def merge_tree(results: list[Any]) -> Merged:
    """The single-process verdict from the shards (ShardResults) of a split exhaustive search."""
    from racecheck.errors import UsageError

    count = results[0].shard.count
    trees: dict[int, TreeState] = {}
    for r in results:
        if r.tree is None:
            raise UsageError(
                f"shard {r.shard} did not split the exhaustive search by subtrees like the"
                " others: merge the slices of one run"
            )
        try:
            trees[r.shard.index] = TreeState.from_dict(r.tree)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise UsageError(f"shard {r.shard}: malformed subtree entry: {exc}") from None
    if len({t.kind for t in trees.values()}) > 1:
        raise UsageError(
            "the shards split different searches (exhaustive and DPOR): merge the slices of one run"
        )
    budget = max(r.budget for r in results)
    total_ran = sum(r.ran for r in results)

    def size(level: int, ordinal: int) -> int | None:
        owner = trees[ordinal % count + 1]
        found = owner.sizes.get((level, ordinal))
        if found is None and owner.last_level is not None and level > owner.last_level:
            # Its subtrees pruned nothing at its last level: the same at every deeper one.
            found = owner.sizes.get((owner.last_level, ordinal))
        return found

    levels = sorted({lv for t in trees.values() for lv in t.counts})

    def subtrees(level: int) -> int:
        known = [t.counts[level] for t in trees.values() if level in t.counts]
        return max(known) if known else 0

    def number(key: tuple[int, int, int]) -> int | None:
        """The single process's number of ``key``; None when it is past the budget."""
        level, ordinal, position = key
        n = position
        for lv in range(levels[0], level):
            for o in range(subtrees(lv)):
                s = size(lv, o)
                if s is None:  # its owner ran out of budget before it: past the budget
                    return None
                n += s
        for o in range(ordinal):
            s = size(level, o)
            if s is None:
                return None
            n += s
        return n if n <= budget else None

    failing = sorted((t.failure, i) for i, t in trees.items() if t.failure is not None)
    if failing:
        key, index = failing[0]
        at = number(key)
        if at is not None:
            winner = next(i for i, r in enumerate(results) if r.shard.index == index)
            return Merged(winner, at, total_ran, False, coverage_limit=encode(key))
    if all(t.last_level is not None for t in trees.values()):
        end = max(t.last_level for t in trees.values() if t.last_level is not None)
        total = 0
        complete = True
        for lv in range(levels[0], end + 1):
            for o in range(subtrees(lv)):
                s = size(lv, o)
                if s is None:
                    complete = False
                    break
                total += s
        if complete and total <= budget:
            clean = all(t.clean for t in trees.values())
            return Merged(
                None,
                total,
                total_ran,
                True,
                exhausted=clean,
                coverage_limit=encode((end + 1, 0, 0)),
                verified=clean and all(t.kind == "dpor" for t in trees.values()),
            )
    # The budget ran out first: the single process's last schedule is number ``budget``.
    return Merged(
        None, budget, total_ran, False, coverage_limit=_key_at(budget, size, subtrees, levels)
    )


def _key_at(target: int, size: Any, subtrees: Any, levels: list[int]) -> int | None:
    """The key of the single process's schedule number ``target`` (for the coverage tally)."""
    done = 0
    for level in range(levels[0], levels[-1] + 1):
        for ordinal in range(subtrees(level)):
            s = size(level, ordinal)
            if s is None or done + s >= target:
                # an unfinished subtree: its owner's budget ended in it, at or past the target
                return encode((level, ordinal, target - done))
            done += s
    return None
