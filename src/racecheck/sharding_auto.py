"""The default strategy sliced: auto's DPOR member runs split DPOR, its turns dealt by subtree.

Why. In the portfolio (``strategy="auto"``) DPOR takes 2 turns in 9, and on
asyncio one of its schedules costs some 30 to 40 sampled ones (it records
every step's accesses and analyses the run). So DPOR is about nine tenths
of the work of an exploration. Plain DPOR is a sequential search (each
schedule follows from the accesses of all the earlier ones:
:mod:`racecheck.sharding_dpor` says why no split of it is the same search),
and while it ran whole in shard 1, shard 1 was the critical path and two
shards were no faster than one (0.96x on a rare asyncio race).

What a sliced auto run is. Every slice of a run with ``shard=`` (one slice,
``1/1``, included) replaces the portfolio's DPOR member by a
:class:`SlicedDPOR` that keeps that member's turns and numbering, so the
rotation, and the schedule every other member runs at every number, are
those of the unsliced run. Its turns go through two phases:

* First, plain DPOR, the unsliced member's own search, run by *every* slice
  (each number counted by one, the least loaded), for as long as DPOR's
  estimate of its whole search (:meth:`DPORChooser.estimated_runs`) stays
  within :data:`WHOLE_LIMIT` runs and the budget. Every slice then holds the
  whole search, so a small program is verified at the unsliced run's number
  (a three-task program at 20, where split DPOR needed 452; a three-thread
  locked counter at 790, where split DPOR did not finish in 3,000), and the
  portfolio's shift of its budget to DPOR (racecheck.strategies.portfolio)
  happens in the slices too, at the same numbers, when DPOR's search fits in
  the budget left: every slice knows that estimate. The other reason to shift,
  sampling having converged, needs every sampled schedule and is not used
  sliced (racecheck.sharding._shift). Why not split from the start: split
  DPOR needs many times plain DPOR's runs to cover a program (its full
  expansion above ``D`` and its subtrees' empty sleep sets run shared traces
  again; >5,000 against 399 on that counter), and while a search is small,
  running it whole in every slice costs little.
* Once the estimate passes the limit, the search is large: no budget verifies
  it and it is most of the run's work, so it is split, from its natural order
  again, and its turns run split DPOR, dealt across the slices:

  - the split's first turns are its *probes*: the first (the natural order)
    fixes a depth ``D`` (:func:`racecheck.sharding_dpor.split_depth`, a
    constant number of subtrees, never the slice count); its turns 1..S are
    the first schedules of the S subtrees (every prefix of ``D`` choices, in
    order), each naming the next;
  - after that, its turn ``S + 1 + t`` runs the next schedule of group
    ``t mod G`` of the subtrees, searched by that subtree's own source-DPOR
    (:class:`racecheck.sharding_dpor.SubtreeDPOR`). A finished group's turn
    runs nothing: its number is used, no schedule runs under it.

Where a large search is split depends on DPOR's estimate after each of its
runs, which every slice computes alike (every slice ran every run of the
first phase), so the split happens at the same number for any slice count.

So the DPOR work is spread over the subtrees turn by turn, not subtree after
subtree: at every point of the numbering each subtree has had its share.
Subtree ``o`` belongs to slice ``o mod N + 1``: a slice runs the turns of
its own subtrees, skips the others', and runs every probe (the probes of
others' subtrees are calibration, like schedule 1: they tell it where the
next subtree starts). Nothing here depends on the slice count: the schedule
under every number is the same for 1, 2 or 4 slices, so the union of the
slices is exactly the schedules of the one-slice run (probes aside, run
again by every slice), the lowest failing number and its token are the same,
and each slice's token is an ordinary one that replays on its own.

The price: a sliced auto run is not always the unsliced run. Up to the
split (for a small program, all of it) it is, schedule for schedule, unless
the unsliced run dropped a saturated sampling member or shifted because
sampling converged: neither is known to one slice. After the split, the
other members' schedules are the same at the same numbers, so a failure
they find first is the same failure, number and token; a failure DPOR finds
first may be a different one, at another number. What it gains, measured by
:mod:`racecheck.bench.shards`: past the split, each of N slices carries about
1/N of the DPOR turns at every point of the numbering; before it, the DPOR
runs are every slice's (a rare race's search is split after a handful of
runs: an asyncio one at schedule 1, a four-thread one after 20 or so).

DPOR's end. Plain DPOR's end (first phase) is known to every slice at the
same number. Split DPOR's search is complete when every subtree is finished. A slice
knows that of its own subtrees: it notes the number of the run that
finished the last of them (and whether any of them ran code DPOR could not
see). The exploration ends at the largest such number over all slices,
*verified* if none was blind: the merge says so (:func:`racecheck.sharding.
merge`), never a slice; with a shared board the slices learn it as they go.
A slice whose own subtrees are finished keeps taking the sampling turns it
owns. The member never drops out of the rotation (a slice would renumber
what follows and the slices would disagree): on a target that is not
deterministic it gives up its subtrees, its turns run nothing, and the
search is never complete.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from racecheck.accesses import Access
from racecheck.schedule import Decision
from racecheck.sharding_dpor import SubtreeDPOR, next_prefix, split_depth
from racecheck.strategies.base import BaseChooser
from racecheck.strategies.dpor import DPORChooser
from racecheck.strategies.exhaustive import NondeterminismError

#: what a turn of the member does in this slice
PROBE, RUN, EMPTY = "probe", "run", "empty"

#: how many subtrees are searched side by side (fewer if there are fewer): a
#: constant, so the search is the same for any slice count; it deals evenly to
#: 2, 4 or 8 slices, and each search kept alive costs every run of the slice
#: (the collector walks it after every run: 25 live searches made a sampled
#: asyncio schedule 2-3x slower)
GROUPS = 8

#: plain DPOR goes on in every slice while its estimate of its whole search
#: (DPORChooser.estimated_runs) stays at most this many runs (and the budget):
#: a small search verifies at the unsliced run's number; a larger one is split
WHOLE_LIMIT = 2000


class SlicedDPOR(BaseChooser):
    """Split DPOR behind the portfolio's DPOR member's turns (see the module docstring)."""

    name = "dpor"
    observes_accesses = True
    samples = False
    profiles_natural_order = True

    def __init__(self, index: int, count: int) -> None:
        self.index, self.count = index, count
        #: the split depth, fixed by schedule 1
        self.depth: int | None = None
        #: the subtrees' prefixes found so far, in order
        self.prefixes: list[tuple[int, ...]] = [()]
        #: every subtree's prefix is known (the probes are over)
        self.enumerated = False
        #: groups of subtrees searched side by side (known once enumerated)
        self.groups = 0
        #: group -> the search of its current subtree (this slice's groups only)
        self.searches: dict[int, tuple[int, SubtreeDPOR]] = {}
        #: group -> its next subtree to search (past the last: the group is done)
        self.following: dict[int, int] = {}
        #: finished subtrees of this slice, with the traces each counted
        self.finished: dict[int, int] = {}
        #: what a finished subtree's runs could not see
        self.unseen: dict[str, None] = {}
        #: why the search was given up (a target that is not deterministic)
        self.gave_up: str | None = None
        #: schedules of own subtrees run, and probes of other slices' subtrees
        self.own_runs = 0
        self.probes = 0
        self._current: SubtreeDPOR | None = None
        self._group = -1
        self._ordinal = -1
        self._probing = False
        self._spare: dict[str, None] = {}
        self._run = 0
        #: plain DPOR, the unsliced member's search, run by every slice while
        #: its search looks small (the first phase; None once split)
        self._whole: DPORChooser | None = DPORChooser()
        #: the exploration's budget (schedule numbers), which caps the first phase
        self.budget: int | None = None
        #: the member's turns the first phase used: split DPOR numbers its own from here
        self.offset = 0
        #: why the first phase ended, and after how many of plain DPOR's runs
        self.split_why = ""
        self.whole_runs = 0
        #: every slice knows the whole search is over (plain DPOR finished it)
        self.over = False

    # -- who runs which turn ---------------------------------------------------------------
    def owner(self, group: int) -> int:
        return group % self.count + 1

    def turn(self, run: int) -> tuple[int, int, str]:
        """(subtree or group, owning slice, what it does here) of the member's turn ``run``.

        Turns 1..S are the probes of subtrees 0..S-1 (every slice runs them;
        subtree ``o``'s is counted by slice ``o mod N + 1``); turn ``S + 1 + t``
        is group ``t mod G``'s.
        """
        if self._whole is not None:
            # plain DPOR: every slice runs it; owner 0 lets the plan deal the count
            return -1, 0, PROBE
        if not self.enumerated:
            ordinal = len(self.prefixes) - 1
            return ordinal, self.owner(ordinal), PROBE
        group = (run - self.offset - 1 - len(self.prefixes)) % self.groups
        owner = self.owner(group)
        if owner == self.index and (self.gave_up is not None or self._group_done(group)):
            return group, owner, EMPTY
        return group, owner, RUN

    def _group_done(self, group: int) -> bool:
        return group not in self.searches and self.following.get(group, group) >= len(self.prefixes)

    @property
    def own_groups(self) -> list[int]:
        return [g for g in range(self.groups) if self.owner(g) == self.index]

    @property
    def own_done(self) -> bool:
        """Every subtree this slice owns is searched to its end (and the probes are over)."""
        return (
            self.enumerated
            and self.gave_up is None
            and all(self._group_done(g) for g in self.own_groups)
        )

    # -- a run -----------------------------------------------------------------------------
    def begin(self, run: int) -> None:
        self._run = run
        if self._whole is not None:
            self._current = None
            self._probing = False
            self._whole.begin(run)
            return
        where, owner, kind = self.turn(run)
        self._probing = kind == PROBE
        self._current = None
        mine = owner == self.index and self.gave_up is None
        if kind == PROBE:
            self._group = self._ordinal = where
            self._current = SubtreeDPOR(self.prefixes[where], self.depth)
            if mine and where < GROUPS:
                # the first subtree of its group: its search goes on from here
                self.searches[where] = (where, self._current)
        elif kind == RUN and mine:
            self._group = where
            found = self.searches.get(where)
            if found is None:  # the group's next subtree starts (its first run again)
                ordinal = self.following.get(where, where)
                found = self.searches[where] = (
                    ordinal,
                    SubtreeDPOR(self.prefixes[ordinal], self.depth),
                )
            self._ordinal, self._current = found
        if self._current is not None:
            self._current.begin(run)

    @property
    def blind(self) -> dict[str, None]:
        """What this run could not see, for the subtree whose run it is."""
        if self._whole is not None:
            return self._whole.blind
        if self._current is None:
            self._spare = {}
            return self._spare
        return self._current.blind

    def choose(self, candidates: Sequence[int], step: int) -> int:
        if self._whole is not None:
            try:
                return self._whole.choose(candidates, step)
            except NondeterminismError as exc:
                self._give_up(str(exc))
                return 0
        if self._current is None:
            return 0
        try:
            return self._current.choose(candidates, step)
        except NondeterminismError as exc:
            self._give_up(str(exc))
            return 0

    def observe(
        self, step: int, actor: int, accesses: Sequence[Access], enabled: Sequence[int]
    ) -> None:
        if self._whole is not None:
            try:
                self._whole.observe(step, actor, accesses, enabled)
            except NondeterminismError as exc:
                self._give_up(str(exc))
            return
        if self._current is None:
            return
        try:
            self._current.observe(step, actor, accesses, enabled)
        except NondeterminismError as exc:
            self._give_up(str(exc))

    def end(self, decisions: Sequence[Decision], failed: bool, steps: int) -> None:
        if self._whole is not None:
            self._end_whole(decisions, failed, steps)
            return
        search, group, ordinal = self._current, self._group, self._ordinal
        self._current = None
        if self._probing:
            if self.depth is None:
                self.depth = split_depth(decisions)
                if search is not None:
                    search.depth = self.depth
            following = next_prefix(decisions, self.depth)
            if following is None or self.gave_up is not None:
                self.enumerated = True
                self.groups = min(len(self.prefixes), GROUPS)
            else:
                self.prefixes.append(following)
            if self.owner(ordinal) != self.index:
                self.probes += 1
            if self.searches.get(group, (None, None))[1] is not search:
                return  # a probe only: its subtree's search starts when its group gets to it
        if search is None or self.gave_up is not None:
            return
        self.own_runs += 1
        try:
            search.end(decisions, failed, steps)
        except NondeterminismError as exc:
            self._give_up(str(exc))
            return
        if not search.has_more():
            self.finished[ordinal] = search.traces
            self.unseen.update(search.blind)
            self.following[group] = ordinal + GROUPS
            del self.searches[group]

    def _end_whole(self, decisions: Sequence[Decision], failed: bool, steps: int) -> None:
        """A run of the first phase: plain DPOR goes on, ends the search, or is split."""
        whole = self._whole
        assert whole is not None
        self.whole_runs += 1
        if self.gave_up is None:
            try:
                whole.end(decisions, failed, steps)
            except NondeterminismError as exc:
                self._give_up(str(exc))
        if self.gave_up is None and not whole.has_more() and not whole.verified:
            # it ran code it could not see: it proves nothing, and its turns run nothing
            self.unseen.update(whole.blind)
            self._give_up("plain DPOR finished but could not see every conflict")
        if self.gave_up is not None or not whole.has_more():
            # the search is over in every slice (each ran all of it): one group of
            # one subtree, finished, or given up (then its turns run nothing)
            self._whole = None
            self.depth, self.prefixes, self.enumerated, self.groups = 0, [()], True, 1
            self.following[0] = 1
            self.offset = self._run
        if self.gave_up is not None:
            return
        if self._whole is None:
            self.over = True
            self.finished[0] = whole.traces
            self.split_why = f"plain DPOR verified the program in {self.whole_runs} runs"
            return
        estimate = whole.estimated_runs()
        limit = min(WHOLE_LIMIT, self.budget or WHOLE_LIMIT)
        if self.whole_runs >= limit or (estimate is not None and estimate > limit):
            # too large for every slice to run: split it (from its natural order again)
            self._whole = None
            self.offset = self._run
            self.split_why = (
                f"plain DPOR's search looked larger than {limit:,} runs (about"
                f" {estimate or 0:,.0f}) after {self.whole_runs} of its runs, so it was split"
            )

    @property
    def decided(self) -> bool:
        """The first phase is over (split, finished or given up): for good, in every slice."""
        return self._whole is None

    def estimated_runs(self) -> float | None:
        """Plain DPOR's estimate while every slice runs it (the portfolio's shift reads it)."""
        if self._whole is None:
            return None  # split DPOR's size is known to no one slice: never shift to it
        return self._whole.estimated_runs()

    def _give_up(self, why: str) -> None:
        """The target does not repeat itself: no subtree of this slice can be searched."""
        if self.gave_up is None:
            self.gave_up = why
        self.searches.clear()
        self._current = None

    # -- what it covered ---------------------------------------------------------------------
    def has_more(self) -> bool:
        return True  # never leave the rotation: the other slices would number differently

    @property
    def clean(self) -> bool:
        """No run of this slice's subtrees ran code DPOR could not see."""
        return not self.unseen and not any(s.blind for _, s in self.searches.values())

    def summary(self) -> str:
        gave_up = f"; gave up: {self.gave_up}" if self.gave_up else ""
        runs = f"{self.whole_runs} run{'s' if self.whole_runs != 1 else ''}"
        first = f"auto's dpor member ran plain DPOR in every slice for {runs}"
        if self._whole is not None:
            return f"{first} (its search still looked small){gave_up}"
        if self.over or self.gave_up is not None:
            return f"{first} ({self.split_why or 'not split'}){gave_up}"
        if not self.enumerated:
            where = f"{len(self.prefixes)} subtrees found so far"
        else:
            owned = [
                o for o in range(len(self.prefixes)) if self.owner(o % self.groups) == self.index
            ]
            where = (
                f"the first {self.depth or 0} decisions expanded in full into"
                f" {len(self.prefixes)} subtrees, searched {self.groups} at a time; this slice"
                f" owns {len(owned)} and finished {len(self.finished)}"
            )
        return (
            f"{first}; {self.split_why}: split DPOR ({where}): {self.own_runs} schedules of"
            f" its own subtrees, {self.probes} first schedules of other slices'{gave_up}"
        )


def install(chooser: Any, index: int, count: int) -> tuple[SlicedDPOR, int] | None:
    """Put a SlicedDPOR in place of the portfolio's unbounded DPOR member: (it, member index)."""
    from racecheck.strategies.portfolio import PortfolioChooser

    if not isinstance(chooser, PortfolioChooser):
        return None
    for name, member in chooser.members:
        if isinstance(member, DPORChooser) and member.bound is None:
            sliced = SlicedDPOR(index, count)
            at = chooser.stand_in(name, sliced)
            assert at is not None
            return sliced, at
    return None
