"""Sharding one exploration: slices run disjoint schedule numbers; the result ignores how many.

An exploration is a numbered sequence of schedules 1, 2, 3, ... A *shard*
``I/N`` runs the numbers it owns and skips the others. What makes that exact
is that schedule ``k`` of a seeded strategy is a pure function of (seed, k):

* random: one stream per (seed, k);
* PCT: one stream per (seed, k), and ``k`` (the run length its change points
  are drawn over) is fixed by the natural-order run, schedule 1, which every
  shard runs;
* auto, the portfolio: schedule k goes to member ``(k - 1) mod 9`` of its
  rotation with the member's own numbering, so skipping a number advances the
  turn without running it (:meth:`PortfolioChooser.skip`). Its systematic
  member (exhaustive search) is sequential: each of its schedules follows
  from the one before, so all of its numbers belong to shard 1. Its DPOR
  member, about nine tenths of the work on asyncio, runs plain DPOR in
  every slice while its search is small (so a small program verifies where
  it does unsliced, and the portfolio's move of its budget to DPOR happens
  in the slices too when DPOR's search fits in the budget left), and split
  DPOR, its subtrees' turns dealt across the slices, once the search is
  large (:mod:`racecheck.sharding_auto`): a sliced auto run is the same
  search for any slice count; it is the unsliced run up to the split, except
  where the unsliced run acted on its sampling members' convergence, which
  no slice sees. The rotation is read from the portfolio as each number is
  dealt, so a move to DPOR deals the numbers after it alike in every slice.
  The sampling members' numbers are dealt to whichever shard has the
  fewest so far, so every prefix of the sequence is spread evenly;
* exhaustive (alone) is split by schedule prefix into subtrees dealt to the
  shards (:mod:`racecheck.sharding_tree`). The single-process number of a
  schedule in one shard's subtree depends on the sizes of the other shards'
  subtrees before it, which no shard knows until they have all run, so such a
  shard numbers its runs by keys (level, subtree, position) whose order is the
  single process's, and the merge turns the winning key into its number;
* DPOR and hypothesis are sequential searches that are not split: shard 1 runs
  them whole and the other shards run nothing. DPOR's backtrack points come
  from the accesses of the schedules before, so no split fixed in advance is
  the same search. The result is the same for any shard count; only the
  speed-up is missing.

All of this assumes a deterministic target, as replay does. On one that is
not, the portfolio's systematic member drops out in shard 1 alone, and from
there shard 1 numbers the other members' schedules differently from the
other shards.

Ownership is interleaved (number k, not a block of numbers), because the
verdict is the failure with the *lowest* number: with contiguous blocks, the
shard holding the block where the first failure sits would run alone up to
it, and time to first failure would not improve at all. Interleaved, every
shard is busy below the first failing number.

The union of the shards runs exactly the schedules a single process runs;
the reported failure is the one with the lowest number (a single process
stops at it), and it is shrunk and traced by the shard that ran it, from the
same decisions, so it gives the same token whatever the shard count. A shard
stops at its own first failure: nothing it owns above that can matter. When
shards share a directory (a :class:`Board`, for pytest-xdist on one machine)
a shard also stops once every number it still owns lies above a failure
another shard found, and once the systematic search has run every schedule
of the program.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from racecheck.errors import UsageError
from racecheck.sharding_verdict import Merged

if TYPE_CHECKING:
    from racecheck.found import Found
    from racecheck.outcome import Report
    from racecheck.session import Session
    from racecheck.strategies.base import Chooser

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    """Slice ``index`` (counting from 1, like CI job numbers) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: object, what: str = "shard") -> Shard:
    """``"I/N"`` (1 <= I <= N) as a :class:`Shard`; a one-line UsageError otherwise."""
    if isinstance(text, Shard):
        return text
    if isinstance(text, tuple) and len(text) == 2:
        text = f"{text[0]}/{text[1]}"
    match = _SHARD.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise UsageError(
            f"{what} must be I/N with whole numbers, slice I of N (e.g. 2/4), not {text!r}"
        )
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise UsageError(f"{what} {index}/{count}: I must be between 1 and N, and N at least 1")
    return Shard(index, count)


class Board:
    """A directory the shards of one exploration share: found failures, and the end.

    Only names are written (``fail-<number>``, ``end-<number>``), each created
    whole, so a reader never sees half a fact and no lock is needed. Reads are
    throttled: a listing per schedule would cost more than a short run.
    """

    def __init__(self, directory: str, label: str) -> None:
        digest = hashlib.sha1(label.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        self.path = os.path.join(directory, digest)
        os.makedirs(self.path, exist_ok=True)
        self._checked = 0.0
        self._fail: int | None = None
        self._end: int | None = None
        #: shard index -> where its split DPOR subtrees were all finished (sharding_auto)
        self._dpor: dict[int, int] = {}

    def _post(self, kind: str, number: int) -> None:
        try:
            with open(os.path.join(self.path, f"{kind}-{number:012d}"), "w"):
                pass
        except OSError:  # the board is an optimisation; a shard is right without it
            pass

    def post_failure(self, number: int) -> None:
        self._post("fail", number)

    def post_end(self, number: int) -> None:
        self._post("end", number)

    def post_dpor(self, index: int, number: int) -> None:
        """Shard ``index``'s split DPOR subtrees were all finished at schedule ``number``."""
        self._post(f"dpor{index}", number)

    def limit(self, shards: int = 0) -> int | None:
        """The lowest number past which nothing can matter any more, if one is known.

        With ``shards``, that includes where split DPOR ended: the last of
        that many shards to finish its subtrees.
        """
        now = time.monotonic()
        if now - self._checked >= 0.005:
            self._checked = now
            try:
                names = os.listdir(self.path)
            except OSError:
                names = []
            for name in names:
                kind, _, number = name.partition("-")
                if not number.isdigit():
                    continue
                if kind == "fail" and (self._fail is None or int(number) < self._fail):
                    self._fail = int(number)
                elif kind == "end" and (self._end is None or int(number) < self._end):
                    self._end = int(number)
                elif kind.startswith("dpor") and kind[4:].isdigit():
                    self._dpor[int(kind[4:])] = int(number)
        known = [n for n in (self._fail, self._end) if n is not None]
        if shards and all(i in self._dpor for i in range(1, shards + 1)):
            known.append(max(self._dpor.values()))
        return min(known) if known else None


@dataclass
class SliceState:
    """One shard's part of an exploration: what it is given, and what it did."""

    shard: Shard
    board: Board | None = None
    #: schedules this shard ran that it owns (the calibration run is not counted)
    ran: int = 0
    #: every number this shard owns up to here was run without failing (or was
    #: the failure)
    covered: int = 0
    #: the exploration as a whole ended here (the systematic search ran every schedule)
    ended_at: int | None = None
    #: why the shard stopped before its budget, in words
    stopped: str | None = None
    #: the budget (schedule numbers 1..budget)
    budget: int = 0
    #: how numbers are dealt: "interleaved", "auto" or "shard 1 only"
    plan: str = ""
    #: keep, for each distinct schedule (hash of its decisions) and each
    #: conflict ordering, the first schedule number that had it: what merging
    #: coverage exactly over schedules 1..verdict needs, in the size of the
    #: coverage rather than of the budget (racecheck run -j, pytest shards)
    keep_runs: bool = False
    first_schedule: dict[int, int] = field(default_factory=dict)
    first_ordering: dict[Any, int] = field(default_factory=dict)
    #: the exploration's coverage tally, which goes on past the loop (shrinking)
    orderings: set[Any] | None = None
    #: a split exhaustive search: what the merge needs (racecheck.sharding_tree.TreeState)
    tree: Any = None
    #: auto's split DPOR member (racecheck.sharding_auto): "done", the number at
    #: which this slice's subtrees were all finished (None: not yet, or never),
    #: and "clean", nothing out of sight up to there
    dpor: dict[str, Any] | None = None
    #: this slice's own runs per portfolio member (what the bench and tests count)
    by_member: dict[str, int] = field(default_factory=dict)
    #: the portfolio may move its budget to DPOR (``saturation=0`` says no, as unsliced)
    shift: bool = True

    def own_run(self, decisions: tuple[Any, ...], number: int, accesses: Any) -> None:
        """Count a run of this slice's own, and note what it saw first (with keep_runs)."""
        self.ran += 1
        if self.keep_runs:
            self.first_schedule.setdefault(hash(decisions), number)
            for ordering in _orderings(accesses):
                self.first_ordering.setdefault(ordering, number)

    def coverage_data(self) -> dict[str, Any]:
        """:attr:`first_schedule`, :attr:`first_ordering` and :attr:`orderings` as plain lists."""
        return {
            # as text: a 64-bit hash does not fit the 32-bit ints xdist's channel sends
            "schedules": [[str(h), n] for h, n in self.first_schedule.items()],
            "orderings": [[list(o), n] for o, n in self.first_ordering.items()],
            "after": [list(o) for o in self.orderings or ()],
        }

    def load_coverage(self, data: dict[str, Any]) -> None:
        self.first_schedule = {int(h): int(n) for h, n in data.get("schedules", ())}
        self.first_ordering = {tuple(o): int(n) for o, n in data.get("orderings", ())}
        self.orderings = {tuple(o) for o in data.get("after", ())}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.shard.index,
            "count": self.shard.count,
            "ran": self.ran,
            "covered": self.covered,
            "ended_at": self.ended_at,
            "stopped": self.stopped,
            "budget": self.budget,
            "plan": self.plan,
        }
        if self.tree is not None:
            out["tree"] = self.tree.to_dict()
        if self.dpor is not None:
            out["dpor"] = dict(self.dpor)
        if self.by_member:
            out["by_member"] = dict(self.by_member)
        return out


def slice_state(value: object) -> SliceState:
    """The ``shard`` option of :func:`racecheck.check`: "I/N", a Shard, or a SliceState."""
    if isinstance(value, SliceState):
        return value
    return SliceState(parse_shard(value))


class Plan:
    """Who owns schedule number k, computed the same way in every shard."""

    def __init__(self, chooser: Chooser, shard: Shard, sliced: Any = None) -> None:
        self.shard = shard
        self.count = shard.count
        self._loads = [0] * shard.count
        self._next = 1
        self._owners: dict[int, tuple[int, str]] = {}
        #: numbers dealt so far to sampling members, and whether the last one was
        #: one (the portfolio's shift to DPOR counts them as the unsliced run does)
        self.sampled = 0
        self.sampling = False
        from racecheck.strategies.exhaustive import ExhaustiveChooser
        from racecheck.strategies.pct import PCTChooser
        from racecheck.strategies.portfolio import PortfolioChooser
        from racecheck.strategies.random import RandomChooser

        self.portfolio = chooser if isinstance(chooser, PortfolioChooser) else None
        #: auto's DPOR member as split DPOR (racecheck.sharding_auto), and its turn count
        self.sliced = None if sliced is None else sliced[0]
        self._sliced_name = ""
        self._sliced_turns = 0
        if sliced is not None and self.portfolio is not None:
            self._sliced_name = self.portfolio.members[sliced[1]][0]
            # the turns the member counts before its first slot (it watches schedule 1)
            self._sliced_turns = self.portfolio.member_runs[sliced[1]]
        if self.portfolio is not None and (shard.count > 1 or self.sliced is not None):
            self.kind = "auto"
        elif shard.count == 1:
            self.kind = "single"
        elif isinstance(chooser, (RandomChooser, PCTChooser)):
            self.kind = "interleaved"
        elif type(chooser) is ExhaustiveChooser:
            # split by schedule prefix, numbered by keys (racecheck.sharding_tree)
            self.kind = "subtrees"
        else:
            # A sequential search (exhaustive, and any strategy not known to
            # number its schedules independently): each schedule follows from
            # the last, so one shard runs it all.
            self.kind = "shard 1 only"

    def owner(self, number: int) -> int:
        """The shard (from 1) that runs schedule ``number``."""
        return self.deal(number)[0]

    def deal(self, number: int) -> tuple[int, str]:
        """(owner, what the number is): "run"; "probe", which every shard runs; "empty".

        Numbers are dealt in order, each just before it runs: a split DPOR
        turn's owner, and whether it is a probe, follow from the runs before.
        """
        if self.kind == "single" or self.kind == "shard 1 only":
            return 1, "run"
        if self.kind == "interleaved":
            return (number - 1) % self.count + 1, "run"
        while self._next <= number:  # deal in order: every shard agrees
            k = self._next
            portfolio = self.portfolio
            assert portfolio is not None
            kind = "run"
            # the member whose turn k is, as the portfolio will take it (dealt
            # just before it runs: after a shift to DPOR the rotation is another)
            name, member = portfolio.members[portfolio.active[(k - 1) % len(portfolio.active)]]
            if self.sliced is not None and name == self._sliced_name:
                self._sliced_turns += 1
                _, owner, kind = self.sliced.turn(self._sliced_turns)
                who = owner - 1
                if owner == 0:  # run in every slice, counted by the least loaded
                    who = min(range(self.count), key=lambda i: (self._loads[i], i))
            elif not getattr(member, "samples", True):  # exhaustive, plain dpor: shard 1
                who = 0
            else:
                who = min(range(self.count), key=lambda i: (self._loads[i], i))
                self.sampled += 1
            self.sampling = kind == "run" and bool(getattr(member, "samples", True))
            self._loads[who] += 1
            self._owners[k] = (who + 1, kind)
            self._next += 1
        return self._owners.pop(number)

    def mine(self, number: int) -> bool:
        return self.owner(number) == self.shard.index


def explore_slice(
    session: Session, chooser: Chooser, schedules: int, state: SliceState
) -> Report | Found:
    """:func:`racecheck.explore._explore` for one shard: the numbers it owns, in order."""
    from racecheck.found import shrink_and_trace

    settings = session.settings
    seen = session.schedules_seen
    from racecheck.sharding_dpor import eligible

    if eligible(chooser):
        # split DPOR, the same search for any slice count (racecheck.sharding_dpor)
        from racecheck.sharding_dpor import explore_dpor_subtrees
        from racecheck.strategies.dpor import DPORChooser

        assert isinstance(chooser, DPORChooser)
        state.plan, state.budget = "dpor subtrees", schedules
        split: Report | Found = explore_dpor_subtrees(
            session, chooser, schedules, state, shrink_and_trace
        )
        return split
    from racecheck.sharding_auto import install

    # auto's DPOR member becomes split DPOR, its turns dealt by subtree (racecheck.sharding_auto)
    sliced = install(chooser, state.shard.index, state.shard.count)
    plan = Plan(chooser, state.shard, sliced)
    state.plan, state.budget = plan.kind, schedules
    if plan.kind == "shard 1 only" and state.shard.index != 1:
        return idle_report(state, chooser.name, settings.backend.name)
    if plan.kind == "subtrees":
        from racecheck.sharding_tree import explore_subtrees
        from racecheck.strategies.exhaustive import ExhaustiveChooser

        assert isinstance(chooser, ExhaustiveChooser)
        outcome: Report | Found = explore_subtrees(
            session, chooser, schedules, state, shrink_and_trace
        )
        return outcome
    member_dpor = None if sliced is None else sliced[0]
    if member_dpor is not None:
        state.dpor = {"done": None, "clean": False}
        member_dpor.budget = schedules
    plan_budget = getattr(chooser, "plan_budget", None)
    if plan_budget is not None:
        plan_budget(schedules)
    shifted: list[str] = []
    board = state.board
    state.orderings = session.coverage.orderings
    number = 0
    while number < schedules and not session.interrupted:
        number += 1
        owner, kind = plan.deal(number)
        mine = owner == state.shard.index
        # Schedule 1, the natural order, runs in every shard: it sizes PCT's
        # k and starts the systematic search, exactly as in a single process.
        # So does every probe of split DPOR: it names the next subtree.
        here = number == 1 or kind == "probe" or (mine and kind != "empty")
        if not here:
            skip = getattr(chooser, "skip", None)
            if skip is not None:
                skip(number)
            if mine:  # a finished subtree's turn: nothing runs under its number
                state.covered = number
            _shift(chooser, plan, state, shifted)
            continue
        if board is not None and mine:
            limit = board.limit(state.shard.count)
            if limit is not None and number > limit:
                state.stopped = f"another shard settled the exploration at schedule {limit}"
                number -= 1
                break
        controller = session.run(chooser, number)
        decisions = tuple(controller.decisions)
        failed = controller.failure is not None
        member = getattr(chooser, "member", None)
        chooser.end(decisions, failed, controller.scheduling_steps)
        if mine:
            seen.add(hash(decisions))
            state.own_run(decisions, number, controller.accesses)
            state.covered = number
            if member is not None:
                state.by_member[member] = state.by_member.get(member, 0) + 1
        if settings.progress is not None:
            settings.progress(number, schedules)
        if failed and not session.interrupted:
            assert controller.failure is not None
            if not mine:
                # Schedule 1 or a probe fails: its owner reports it; nothing here is lower.
                state.stopped = f"schedule {number} fails; shard {owner}/{plan.count} reports it"
                break
            if (
                member_dpor is not None
                and state.dpor is not None
                and state.dpor["done"] is not None
            ):
                state.dpor["clean"] = state.dpor["clean"] and not session.warnings()
            if board is not None:
                board.post_failure(number)
            return shrink_and_trace(session, controller.failure, decisions, number)
        if not chooser.has_more():
            state.ended_at = number
            if board is not None:
                board.post_end(number)
            break
        _shift(chooser, plan, state, shifted)
        if (
            member_dpor is not None
            and _split_done(session, member_dpor, state, number)
            and (plan.count == 1 or member_dpor.over)
        ):
            # the whole split search was this slice's, or ended at schedule 1 in
            # every slice: it is over (see sharding_auto)
            break
        del controller  # as in explore._explore: alive, the next run's collection walks it
    if session.interrupted:
        raise KeyboardInterrupt
    if state.stopped is None:
        state.covered = number
    warnings = session.warnings()
    notes = chooser.notes(number)
    limit = getattr(settings.backend, "scheduling_limit", None)
    # Only shard 1 can vouch for the whole space: it ran schedule 1 and, for
    # DPOR (whose backtrack points are found as it runs), the whole search.
    whole = state.shard.index == 1 and not warnings and not limit
    if member_dpor is not None:
        assert state.dpor is not None
        state.dpor["clean"] = state.dpor["clean"] and not warnings and not limit
        notes.append(f"shard {state.shard}: {member_dpor.summary()}")
    notes += shifted
    notes.append(
        f"shard {state.shard}: ran {state.ran} of schedules 1..{number}"
        f" ({plan.kind}){'; ' + state.stopped if state.stopped else ''}"
    )
    return session.report(
        chooser,
        schedules_run=state.ran,
        exhausted=whole and chooser.exhausted,
        verified=whole and bool(getattr(chooser, "verified", False)),
        notes=notes,
        warnings=warnings,
    )


def _shift(chooser: Any, plan: Plan, state: SliceState, notes: list[str]) -> None:
    """Let the portfolio move its budget to DPOR where every slice can agree it should.

    The unsliced portfolio asks after each sampled schedule from the
    ``NOVELTY_MIN``-th on (racecheck.saturation). A slice asks at the same
    numbers, run here or not, but cannot say whether sampling converged (it
    saw only its own samples), so only the other reason can move the budget:
    DPOR's search, which every slice runs alike while it is plain DPOR
    (racecheck.sharding_auto), looks finite and fits in the budget left.
    """
    from racecheck.saturation import NOVELTY_MIN

    hook = getattr(chooser, "after_sampling", None)
    if hook is None or notes or not plan.sampling or plan.sampled < NOVELTY_MIN:
        return
    if not state.shift:
        return
    if plan.sliced is not None and plan.sliced.decided:
        # split (or over): no slice knows DPOR's size any more, so the hook
        # could only say no; asked for every number in every slice, it cost
        # a slice about 8 us a number
        return
    note = hook(
        plan.sampled,
        False,
        f"a slice does not know whether the sampling members' {plan.sampled} schedules converged",
    )
    if note:
        notes.append(f"shard {state.shard}: {note}")


def _split_done(session: Session, split: Any, state: SliceState, number: int) -> bool:
    """Note (and post) the number at which this slice's split DPOR subtrees were all finished.

    Only a clean finish counts: a search that ran code it could not see
    proves nothing and, as DPOR in the unsliced portfolio, ends nothing.
    """
    dpor = state.dpor
    assert dpor is not None
    if dpor["done"] is not None:
        return True
    if not split.own_done or not split.clean or session.warnings():
        return False
    if getattr(session.settings.backend, "scheduling_limit", None):
        return False
    dpor["done"], dpor["clean"] = number, True
    if state.board is not None:
        state.board.post_dpor(state.shard.index, number)
    return True


def _orderings(accesses: Any) -> frozenset[Any]:
    if not accesses:
        return frozenset()
    from racecheck.coverage import ordered_conflicts

    return frozenset(ordered_conflicts(accesses))


def merged_coverage(
    slices: Sequence[SliceState], last: int, winner: SliceState | None
) -> tuple[int, int]:
    """(distinct schedules, distinct orderings) of schedules 1..``last`` over every slice.

    Exactly what one process counts: its schedules up to the verdict, and for a
    failure, what the winning slice's shrinking saw after it.
    """
    hashes: set[int] = set()
    orderings: set[Any] = set()
    for state in slices:
        hashes.update(h for h, number in state.first_schedule.items() if number <= last)
        orderings.update(o for o, number in state.first_ordering.items() if number <= last)
    if winner is not None and winner.orderings is not None:
        orderings |= winner.orderings
    return len(hashes), len(orderings)


def verified_note(slices: int, schedules: int) -> str:
    """What a merged split DPOR search proved, in the words of DPOR's own note."""
    # not the slice count: what the merge proved is the same for any (sharding_auto)
    return (
        f"verified: all non-equivalent interleavings explored by split DPOR ({schedules} schedules)"
    )


def merged_proof(verified: bool, note: str, merged: Merged, slices: int) -> dict[str, Any]:
    """``verified`` and ``verified_note`` of a merged record, from its first slice's.

    A sequential search that shard 1 ran whole says it itself; a split DPOR
    search never does in a slice, only the merge of all of them can
    (racecheck.sharding_dpor).
    """
    if verified:
        return {"verified": True, "verified_note": note}
    if merged.verified:
        return {"verified": True, "verified_note": verified_note(slices, merged.schedules_run)}
    return {"verified": False, "verified_note": ""}


def idle_report(state: SliceState, strategy: str, backend: str) -> Report:
    """A shard with nothing to run: the strategy is sequential and shard 1 runs it whole."""
    from racecheck.outcome import Report

    state.plan = "shard 1 only"
    state.covered = state.budget
    return Report(
        schedules_run=0,
        exhausted=False,
        strategy=strategy,
        seed=0,
        backend=backend,
        notes=[
            f"shard {state.shard}: {strategy} is a sequential search; shard 1 runs all of it"
            " and this shard runs nothing"
            + (
                # unbounded DPOR is split (racecheck.sharding_dpor); a full
                # expansion above the split would run schedules past a bound
                " (a bounded DPOR is not split: the subtrees of split DPOR would run"
                " schedules past the bound)"
                if strategy == "dpor"
                else ""
            )
        ],
    )


# ------------------------------------------------------------------ merging


@dataclass
class ShardResult:
    """What one shard reports, as plain data (JSON reports, pytest-xdist properties)."""

    shard: Shard
    ran: int
    covered: int
    budget: int
    #: the number of the shard's first failure, or None
    failure: int | None = None
    ended_at: int | None = None
    stopped: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: a split exhaustive search's subtree sizes and failure key (racecheck.sharding_tree)
    tree: dict[str, Any] | None = None
    #: auto's split DPOR member: where this slice's subtrees were all finished (sharding_auto)
    dpor: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any], failure: int | None) -> ShardResult:
        try:
            shard = Shard(int(data["index"]), int(data["count"]))
            result = cls(
                shard=shard,
                ran=int(data.get("ran", 0)),
                covered=int(data.get("covered", 0)),
                budget=int(data.get("budget", 0)),
                failure=failure,
                ended_at=None if data.get("ended_at") is None else int(data["ended_at"]),
                stopped=data.get("stopped"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"malformed shard entry {data!r}: {exc}") from None
        if isinstance(data.get("tree"), dict):
            result.tree = data["tree"]
        dpor = data.get("dpor")
        if isinstance(dpor, dict):
            done = dpor.get("done")
            if done is not None and (isinstance(done, bool) or not isinstance(done, int)):
                raise UsageError(f"malformed shard entry {data!r}: dpor done {done!r}")
            result.dpor = {"done": done, "clean": bool(dpor.get("clean"))}
        return result


def merge(results: Sequence[ShardResult]) -> Merged:
    """The first failure (lowest number) over complete shards; UsageError if some are missing."""
    if not results:
        raise UsageError("no shard results to merge")
    count = results[0].shard.count
    seen: dict[int, ShardResult] = {}
    for r in results:
        if r.shard.count != count:
            raise UsageError(
                f"shard {r.shard} does not belong with shards of {count}: merge the slices of"
                " one run"
            )
        if r.shard.index in seen:
            raise UsageError(f"shard {r.shard} given twice")
        seen[r.shard.index] = r
    missing = [str(i) for i in range(1, count + 1) if i not in seen]
    if missing:
        raise UsageError(
            f"missing shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} of {count}:"
            " the first failure cannot be known without every slice"
        )
    if any(r.tree is not None for r in results):
        from racecheck.sharding_tree import merge_tree

        return merge_tree(list(results))
    ends = [r.ended_at for r in results if r.ended_at is not None]
    end = min(ends) if ends else None
    # auto's split DPOR (racecheck.sharding_auto) ends the exploration where
    # the last slice finished its subtrees, if every slice did, cleanly
    split = [r.dpor for r in results]
    by_dpor = False
    if split and all(d is not None and d["done"] is not None and d["clean"] for d in split):
        done = max(int(d["done"]) for d in split if d is not None)
        if end is None or done < end:
            end, by_dpor = done, True
    failing = [
        (r.failure, i)
        for i, r in enumerate(results)
        if r.failure is not None and (end is None or r.failure <= end)
    ]
    total = sum(r.ran for r in results)
    if failing:
        number, winner = min(failing)
        return Merged(winner, number, total, False)
    budget = max(r.budget for r in results)
    return Merged(
        None, end if end is not None else budget, total, end is not None, verified=by_dpor
    )
