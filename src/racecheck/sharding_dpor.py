"""DPOR split across shards by schedule prefix: a sound split, not the single search cut up.

Why no exact split of plain DPOR. Source-DPOR finds its backtrack points as
it runs: a race seen deep in one branch adds an alternative at a *shallow*
state, and whether that alternative is ever run, and which actors sleep in
the branches after it, depends on every run through that state so far. Cut
the tree into subtrees and hand them to shards, and each subtree's search
needs the races the other shards are finding in theirs, as they find them;
the single process's schedule numbers need, in addition, the order in which
all of that happened. Only a shard that runs the whole search knows that.

So sliced DPOR is a search of its own (*split DPOR*), defined without
reference to the shard count:

* Schedule 1, the natural order, fixes a depth ``D``: its first decisions
  whose alternatives multiply to at least :data:`SUBTREES` (a constant, not a
  function of the shard count, so the search is the same whatever the count).
* Above ``D`` the tree is expanded in full, like the exhaustive search: every
  prefix of ``D`` choices, in lexicographic order, is a *subtree*. A full
  expansion is a superset of any source set, so nothing DPOR would backtrack
  to up there is lost; races whose first step lies above ``D`` are dropped
  (their reversal is another subtree), and sleep sets start empty in every
  subtree. That costs runs (a trace can be run in two subtrees), never
  soundness.
* Below ``D`` each subtree runs its own source-DPOR with sleep sets, from a
  fresh :class:`SubtreeDPOR`: whatever a subtree does depends on its prefix
  and on the program, not on which shard runs it.
* Subtree ``o`` (counting from 0) belongs to shard ``o mod N + 1``. Every
  shard runs the first schedule of every subtree (a *probe*): it names the
  next prefix. Runs are numbered by keys (0, subtree, position), and the
  merge (:func:`racecheck.sharding_tree.merge_tree`) turns the lowest failing
  key into the number a one-slice run gives it, from the sizes of the
  subtrees before it. So the first failure, its number and its token are the
  same for 1, 2 or 4 slices; a shard's token is an ordinary token and
  replays on its own.

**Verified** is the merge's word alone: every shard finished every subtree it
owns, no subtree's DPOR saw a blind spot, no backend warning. One slice never
claims it. A run without slices (``strategy="dpor"`` and no ``shard``) is
plain DPOR, unchanged, and numbers its schedules differently from split DPOR;
a bounded DPOR (``bound=N``) is not split (full expansion above ``D`` would
run schedules past the bound) and runs whole in shard 1.

What it costs, measured on the programs of tests/test_sharding_dpor.py. A
correct three-task program that plain DPOR verifies in 8 schedules takes 74
in split DPOR (every one of its 16-odd prefixes runs at least once, and the
traces they share run again); split over two slices, each runs 37 of its
own (plus one probe per subtree of the other). Exhaustive search needs 6080.
The speed-up is the one of whichever subtree holds the work: ``three_workers``' first failure
lies in subtree 0, the prefix that keeps the natural order, whose owner (shard
1) runs 1661 schedules before it whatever the slice count. The exhaustive
split cuts that subtree further by first deviation
(:func:`racecheck.sharding_tree.subtree_depth`); doing the same here is
left to do. The portfolio's DPOR member is split with these subtrees too
once its search looks large (a small one runs as plain DPOR in every
slice), their turns interleaved rather than one subtree after another
(:mod:`racecheck.sharding_auto`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from racecheck.sharding_tree import TreeState, encode
from racecheck.strategies.dpor import DPORChooser
from racecheck.strategies.exhaustive import NondeterminismError

if TYPE_CHECKING:
    from racecheck.outcome import Report
    from racecheck.schedule import Decision

#: how many subtrees the full expansion above the split aims at: enough to
#: deal to a few shards evenly, few enough that the duplicated traces stay cheap
SUBTREES = 16


def split_depth(decisions: Sequence[Decision]) -> int:
    """Decisions enough for :data:`SUBTREES` prefixes, counted on the natural order."""
    product = 1
    for i, (n, _) in enumerate(decisions):
        if product >= SUBTREES:
            return i
        product *= n
    return len(decisions)


def next_prefix(decisions: Sequence[Decision], depth: int) -> tuple[int, ...] | None:
    """The subtree after the one whose first run made ``decisions`` (None: it was the last)."""
    top = list(decisions[:depth])
    for i in range(len(top) - 1, -1, -1):
        n, choice = top[i]
        if choice + 1 < n:
            return (*(c for _, c in top[:i]), choice + 1)
    return None


class UnwalkedKeys:
    """A set of int keys that the cyclic collector never walks, however many it holds.

    An exploration collects after every schedule, and the collection walks
    every container made since the exploration began (older ones are frozen:
    the session's quiet_gc). The unsliced DPOR member is made before
    schedule 1 and frozen with its set of trace keys; a slice's subtree searches
    are made later, and a ``set`` of one key per trace run would be walked
    after every schedule of the slice, a cost that grows with the slice's runs
    (tests/test_sharding_collector.py). A dict whose keys are ints and whose
    values are None holds nothing the collector tracks, so CPython leaves it
    untracked, and this object holds only that dict.
    """

    __slots__ = ("_keys",)

    def __init__(self) -> None:
        self._keys: dict[int, None] = {}

    def add(self, key: int) -> None:
        self._keys[key] = None

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)


class SubtreeDPOR(DPORChooser):
    """Source-DPOR under a fixed prefix of decisions, which it never backtracks into.

    The prefix's first ``depth`` decisions are forced (choices past the given
    prefix are the natural order's, 0). Their states are expanded in full by
    the split itself, so a race whose first step is one of them adds nothing.
    Its trace keys live in an :class:`UnwalkedKeys` (the same membership test).
    """

    def __init__(self, prefix: tuple[int, ...], depth: int | None) -> None:
        super().__init__()
        # DPOR only adds keys and tests membership: the same answers, never walked
        self._trace_keys = UnwalkedKeys()  # type: ignore[assignment]
        self.prefix = prefix
        #: None until schedule 1 is analysed (it fixes the depth for the whole search)
        self.depth = depth
        #: the step position of each of this run's first ``depth`` decisions
        self.positions: list[int] = []
        self._decision = 0

    def begin(self, run: int) -> None:
        super().begin(run)
        self.positions = []
        self._decision = 0

    def choose(self, candidates: Sequence[int], step: int) -> int:
        d = self._decision
        self._decision += 1
        if self.depth is None or d < self.depth:
            position = len(self.events)
            self.positions.append(position)
            if position >= len(self.path):
                choice = self.prefix[d] if d < len(self.prefix) else 0
                if choice >= len(candidates):
                    raise NondeterminismError(
                        f"decision {d + 1}: {len(candidates)} actors could run where an"
                        " earlier run had more: the target depends on something racecheck"
                        " does not control"
                    )
                return choice
        return super().choose(candidates, step)

    def end(self, decisions: Sequence[Decision], failed: bool, steps: int) -> None:
        super().end(decisions, failed, steps)
        # What only the run just analysed needed (its steps, who was enabled at
        # each, who held whom off): the next begin() starts them afresh. A slice
        # keeps several searches alive between their turns (racecheck.sharding_auto),
        # and the collection after every run of the slice walks what they keep.
        self.events, self._enabled, self._next_sleep, self._held = [], [], {}, {}

    @property
    def top(self) -> int:
        """The step position of the last forced decision (-1: none)."""
        depth = self.depth or 0
        if depth == 0 or not self.positions:
            return -1
        return self.positions[min(depth, len(self.positions)) - 1]

    def _reverse(self, i: int, j: int, hb: list[int]) -> None:
        if i <= self.top:
            return  # a state of the prefix: every alternative there is a subtree of its own
        super()._reverse(i, j, hb)


def eligible(chooser: object) -> bool:
    """Is this a search split DPOR stands in for? Plain, unbounded DPOR only."""
    return type(chooser) is DPORChooser and chooser.bound is None


def explore_dpor_subtrees(
    session: Any,
    chooser: DPORChooser,
    schedules: int,
    state: Any,
    found: Callable[[Any, Any, tuple[Decision, ...], int], Any],
) -> Report | Any:
    """One shard's part of split DPOR: every probe, and its own subtrees' searches whole.

    ``session`` is the exploration's (racecheck.session.Session), ``state`` the
    shard's SliceState, ``found`` explore's failure handling (shrink and
    trace). ``chooser`` only says the search was asked for: each subtree gets
    a fresh :class:`SubtreeDPOR`.
    """

    settings = session.settings
    seen = session.schedules_seen
    shard = state.shard
    tree = state.tree = TreeState(kind="dpor")
    board = state.board
    state.orderings = session.coverage.orderings
    depth: int | None = None
    prefix: tuple[int, ...] | None = ()
    ordinal = -1
    runs = probes = 0
    blind: dict[str, None] = {}
    finished = True
    while prefix is not None:
        ordinal += 1
        owned = ordinal % shard.count + 1 == shard.index
        tree.counts[0] = ordinal + 1
        sub = SubtreeDPOR(prefix, depth)
        position = 0
        following: tuple[int, ...] | None = None
        while True:
            key = (0, ordinal, position + 1)
            if runs >= schedules or session.interrupted:
                finished = False
                break
            if board is not None:
                limit = board.limit()
                if limit is not None and encode(key) > limit:
                    state.stopped = (
                        "another shard found a failure that comes before the rest of mine"
                    )
                    finished = False
                    break
            runs += 1
            controller = session.run(sub, runs)
            position += 1
            decisions = tuple(controller.decisions)
            if depth is None:
                depth = sub.depth = tree.depth = split_depth(decisions)
            if position == 1:
                following = next_prefix(decisions, depth)
            if owned:
                seen.add(hash(decisions))
                state.own_run(decisions, encode(key), controller.accesses)
            else:
                probes += 1
            if settings.progress is not None:
                settings.progress(runs, schedules)
            if controller.failure is not None and not session.interrupted:
                if not owned:
                    state.stopped = "a subtree another shard owns fails at its first schedule"
                    finished = False
                    break
                tree.failure = key
                if board is not None:
                    board.post_failure(encode(key))
                return found(session, controller.failure, decisions, runs)
            if not owned:
                break
            sub.end(decisions, False, controller.scheduling_steps)
            if not sub.has_more():
                tree.sizes[(0, ordinal)] = position
                blind.update(sub.blind)
                break
        if not finished:
            break
        prefix = following
    if session.interrupted:
        raise KeyboardInterrupt
    warnings = session.warnings()
    if finished:
        tree.last_level = 0
    tree.clean = (
        not warnings and not blind and not getattr(settings.backend, "scheduling_limit", None)
    )
    state.covered = runs
    what = "finished its part" if finished else "did not finish its part"
    notes = [
        f"shard {shard}: split DPOR: the first {depth or 0} decisions expanded in full into"
        f" {ordinal + 1} subtrees dealt round-robin, each searched by its own DPOR; this"
        f" shard ran {state.ran} schedules of its own subtrees and {probes} first schedules"
        f" of the others' ({what}{'; ' + state.stopped if state.stopped else ''});"
        " whether the program is verified is for the merge of every shard to say"
    ]
    if blind:
        notes.append("not verifiable: " + "; ".join(blind))
    return session.report(
        chooser,
        schedules_run=state.ran,
        exhausted=False,  # one slice never knows; the merge does
        notes=notes,
        warnings=warnings,
    )
