"""The portfolio (``strategy="auto"``, the default): several strategies take turns.

No single strategy wins everywhere. A random walk finds a one-preemption
deadlock that PCT at depth 3 keeps missing; PCT finds the deep ordering bug a
random walk dilutes; POS and SURW let one actor run far ahead of another,
which a coin flip at every step almost never does; systematic search finds
whatever needs a handful of precise delays and, on a small program, can prove
there is nothing left to find.

How the budget is split, and why. Shuttle's portfolio runner hands each of
its schedulers to its own thread, each with its own full iteration budget,
and stops them all at the first failure when asked to: the split is by
*cores*, and every member runs as if alone. Coyote, as we read it, does the
same across the processes of a parallel test run (each process its own
strategy) and, inside one engine, alternates strategies from one iteration to
the next. racecheck runs one schedule at a time in one process (an
exploration patches process-wide state), so only the second shape applies:
the budget is spent in rounds, one schedule per member per round. That keeps
the time to the first failure within a factor of the number of members of
the best member's, whichever member that is, and needs no guess about which
member suits the program. Rounds of one schedule, not blocks: a block of N
would delay every member but the first by N schedules.

DPOR (:mod:`racecheck.strategies.dpor`) takes two turns per round, the
others one: about 2/9 of the budget. Why more than an equal share:

* it is the only member that can end the exploration with a proof
  ("verified"), and that takes one schedule per Mazurkiewicz trace of the
  program; with an equal share (1/8) the default 1,000 schedules verify
  programs of up to 125 traces, with 2/9 up to 222 (the classic fixed thread
  programs need up to about 300);
* none of its schedules repeats an earlier trace, while the samplers' often do;
* the cost to the others is small: each sampling member goes from 1/8 to
  1/9 of the schedules, so a bug it alone finds takes 12.5% more schedules.
  The held-out classic suite (tests/core/test_portfolio_dpor.py) checks
  that no classic bug moves past 2,000 schedules.

Not more than that, because a DPOR schedule costs more: it records every
step's accesses (the race detector's feed), several times the cost of a
plain step on asyncio, and only DPOR's schedules pay it. The exploration
asks the portfolio before each schedule (``observes_next_schedule``) and
records accesses for DPOR's turns alone, so the other members keep their
speed.

Schedule 1 is the natural order, run by the systematic member; the sampling
members skip their own natural-order schedule. DPOR's first run is the
natural order too: it watches schedule 1 (accesses recorded) instead of
running it again. Each member keeps its own
schedule numbering and random stream, so a member's schedules are the same
whatever the others did, and any failing schedule replays from its decisions
alone (a token holds decisions, not the strategy that chose them).

When the portfolio stops early:

* a member that has covered the whole space (``complete``, or ``verified``
  for a reduction-based member such as DPOR) ends the exploration: more
  sampled schedules could only repeat one it ran; the report is exhausted,
  and *verified* (with DPOR's note, "verified: all N non-equivalent
  interleavings explored (M pruned)") only when DPOR ended it: DPOR that
  finished but ran code it could not observe drops out and verifies nothing;
* a sampling member that saturates (:mod:`racecheck.saturation`: its recent
  schedules added nothing new) drops out and its turns go to the others;
  when no member is left, the exploration stops and says so;
* DPOR's turns grow when its search looks finite and either the sampling
  members together have converged or DPOR can finish in the budget left
  (below);
* a member that cannot go on (systematic search on a target that is not
  deterministic) drops out and says why.

Moving the budget to DPOR. The fixed 2/9 share verifies programs of up to
about 222 traces' runs in 1,000 schedules; cleveragents-7120-changeset's fix
needs 595 DPOR runs, so ``racecheck run`` said "safe" where it could say
"verified". Once sampling has stopped paying, the samplers' turns buy less
than DPOR's: after each sampled schedule :class:`~racecheck.saturation.
SaturationWatch` estimates how likely the next sampled schedule is to show a
fingerprint not seen yet (Good-Turing: the share of sampled schedules whose
fingerprint came up once), and when that is at most 5% after at least 150
sampled schedules it asks the portfolio (:meth:`PortfolioChooser.
after_sampling`). The portfolio moves the budget only if DPOR can use
it: DPOR's own estimate of its search's size
(:meth:`~racecheck.strategies.dpor.DPORChooser.estimated_runs`, the
depth-first position read as a fraction of the tree) must leave at most
``FINITE_FACTOR`` (4) times the runs it could make in the budget left; the
estimate runs about 2x high on finite searches and is 10^10 and more on the
ones DPOR cannot finish (bridge today), where DPOR's schedules
would cost several times a sampled one for no proof. The estimate must
also have settled (within 1.25x of what it was at half as many DPOR runs):
early on a state's alternatives are not all known, and an exploding search's
estimate starts small and keeps growing. Without convergence the budget moves
too when DPOR's estimate of the runs left fits in what it could run in the
budget left (factor 1): the run can then end in a proof whatever the samplers
still find, which is what a program whose sampled orderings stay diverse
needs (the same checks after each sampled schedule from the 150th on; the
note then says "dpor's search came within reach"). Then DPOR takes 8 turns
in 9; the other members share the ninth in turn, so a bug only a sampler
reaches is still looked for. The notes say when and what: "saturated: the
sampling members' 150 schedules showed 18 distinct orderings ...; dpor's
search looked finite (about 1,088 runs in all, 51 done), so after schedule
225 it took 8 turns in 9" and "auto: sampling saturated after 225
schedules; of the remaining 611, 544 went to dpor and 67 to the other
members; dpor covered every schedule at schedule 836".

What it costs, and what it does not:

* nothing before the shift: it cannot happen before 150 sampled schedules
  (about schedule 225), and every bug of tests/classic and of the reference
  scenarios is found by schedule 180 at the latest (seeds 0, 1, 2, coverage on
  or off: the same schedule and member as before the shift existed,
  tests/core/test_portfolio_shift.py);
* ``schedules=`` stays a hard cap: only the split inside it moves;
* it needs the sampled schedules' fingerprints to repeat: they are
  orderings of conflicting accesses, which repeat on a program with few of
  them; decision sequences hardly ever repeat on a long run. With coverage on
  (``racecheck run``) every schedule records its accesses. With it off
  (``racecheck.check``'s and the pytest plugin's default) the portfolio asks
  for them on demand (:meth:`PortfolioChooser.fingerprints_next_schedule`):
  on sampled schedules only, while DPOR's settled estimate says its search is
  finite (within ``FINITE_FACTOR`` of its reach) but not within reach (then
  the budget moves whatever the samplers show) and the budget has not moved,
  at most ``RECORD_CAP`` (150) of them; the Good-Turing estimate then
  counts those schedules alone and needs at least
  :data:`~racecheck.saturation.RECORDED_MIN` (60) of them, and the note says
  how many of how many were recorded. Recording accesses changes no decision
  (the schedules and tokens are a plain run's); it costs up to several
  plain schedules each on asyncio (about 6x on autobot's and marsys's
  programs, nothing measurable on the changeset's threads), paid only on
  programs whose DPOR search looks finite, after DPOR's estimate has settled
  (at least 16 of its runs). Before this, ``racecheck.check`` of the
  changeset fix at 500 schedules said "safe" where ``racecheck run
  --schedules 500`` said "verified"; now both verify it
  (tests/core/test_portfolio_plain.py, tests/test_plugin_auto_verified.py);
* ``saturation=0`` turns it off with saturation;
* a sharded exploration (``-j``, ``--racecheck-shards``) never shifts: which
  member owns a schedule number must be known to every slice in advance, and
  convergence is seen only by the whole run; such a run keeps the 2/9 split.

Adding a member is one line in :data:`MEMBERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from racecheck.accesses import Access
from racecheck.schedule import Decision
from racecheck.strategies.base import BaseChooser, Chooser
from racecheck.strategies.dpor import DPORChooser
from racecheck.strategies.exhaustive import ExhaustiveChooser, NondeterminismError
from racecheck.strategies.pct import PCTChooser
from racecheck.strategies.pos import POSChooser
from racecheck.strategies.random import RandomChooser
from racecheck.strategies.surw import SURWChooser


class MemberDPOR(DPORChooser):
    """DPOR as a portfolio member.

    Its first run is the natural order, which the first member runs as
    schedule 1: DPOR watches that schedule (its accesses are recorded for it)
    instead of running it again. It is systematic, so saturation never
    applies to it.
    """

    samples = False
    profiles_natural_order = True


#: (name, factory(seed)): the members, in turn order. A systematic member
#: (``samples = False``) runs the natural order first; put it first.
MEMBERS: tuple[tuple[str, Callable[[int], Chooser]], ...] = (
    ("exhaustive", lambda seed: ExhaustiveChooser()),
    ("dpor", lambda seed: MemberDPOR()),
    ("random", lambda seed: RandomChooser(seed)),
    ("pos", lambda seed: POSChooser(seed)),
    ("surw", lambda seed: SURWChooser(seed)),
    ("pct depth 2", lambda seed: PCTChooser(seed, depth=2)),
    ("pct depth 3", lambda seed: PCTChooser(seed + 1, depth=3)),
    ("pct depth 1-5", lambda seed: PCTChooser(seed + 2, depth="random")),
)

#: turns per round of the members that take more than one (see the module docstring)
TURNS: dict[str, int] = {"dpor": 2}

#: after the shift (see the module docstring): DPOR's turns for each other member's one
SHIFT_TURNS = 8
#: the shift needs DPOR's estimated remaining runs within this many times what
#: it can run in the budget left: its estimate overestimates (about 2x on the
#: reference scenarios); a search of 10^10 runs is never moved to
FINITE_FACTOR = 4
#: ... and the estimate must have settled: after at least SETTLE_RUNS DPOR runs,
#: at most SETTLE_GROWTH times what it was at half as many (see _settled)
SETTLE_RUNS = 16
SETTLE_GROWTH = 1.25
#: sampled schedules whose accesses are recorded on demand, at most, when
#: coverage is off (see fingerprints_next_schedule): the estimate needs
#: RECORDED_MIN of them; more than this many say little more, and each costs
#: up to several plain schedules on asyncio
RECORD_CAP = 150


def rotation(names: Sequence[str], turns: Mapping[str, int]) -> list[int]:
    """One round: member indices in turn order, a member's extra turns spread over it.

    A member with ``w`` turns takes them at evenly spaced points of the round,
    so the members between its turns wait no longer than in a plain round.
    """
    count = len(names)
    keyed = [
        ((index + k * count) / weight, index)
        for index, name in enumerate(names)
        for weight in [max(1, turns.get(name, 1))]
        for k in range(weight)
    ]
    return [index for _, index in sorted(keyed)]


def _samples(chooser: Chooser) -> bool:
    return bool(getattr(chooser, "samples", True))


def _observes(chooser: Chooser) -> bool:
    return bool(getattr(chooser, "observes_accesses", False))


def _profiles(chooser: Chooser) -> bool:
    return bool(getattr(chooser, "profiles_natural_order", False))


def _covered_everything(chooser: Chooser) -> bool:
    """Did this member run (or verify) every schedule of the program?"""
    return bool(getattr(chooser, "complete", False) or getattr(chooser, "verified", False))


def _unclaimed(note: str) -> str:
    # Only the member that ended the exploration may say "verified".
    return note.replace("verified: all", "dpor: all", 1) if note.startswith("verified") else note


class PortfolioChooser(BaseChooser):
    name = "auto"

    def __init__(
        self,
        seed: int = 0,
        members: Sequence[tuple[str, Callable[[int], Chooser]]] = MEMBERS,
        turns: Mapping[str, int] | None = None,
    ) -> None:
        self.members: list[tuple[str, Chooser]] = [(name, make(seed)) for name, make in members]
        if turns is None:  # a list of one's own: one turn each unless told
            turns = TURNS if members is MEMBERS else {}
        #: one round of turns (a member index per turn) while every member is in
        self.round = rotation([name for name, _ in self.members], turns)
        #: the round as it is now: dropped members' turns gone
        self.active = list(self.round)
        #: schedules each member has run; a sampling member skips its own
        #: natural-order schedule when a systematic member runs it, and a
        #: member that watches schedule 1 counts it as its own first
        has_systematic = any(not _samples(c) for _, c in self.members)
        self.member_runs = [
            1 if index and ((has_systematic and _samples(c)) or _profiles(c)) else 0
            for index, (_, c) in enumerate(self.members)
        ]
        self._skipped = list(self.member_runs)
        self.turn = 0
        self.current = 0
        self.dropped: list[str] = []
        #: "pct depth 3, its schedule 12": who found the failure, and when
        self.found_by: str | None = None
        #: the member that covered the whole space, if one did
        self.completed_by: int | None = None
        #: the current member failed mid-run (nondeterminism): finish in natural order
        self._failed_member = False
        #: members watching the current (natural-order) schedule as their profile
        self._profiling: list[Chooser] = []
        #: the exploration's budget, when it told us (explore calls plan_budget)
        self.budget: int | None = None
        #: the budget moved to DPOR: (after schedule, DPOR's own runs then, estimate), and why
        self.shifted: tuple[int, int, float] | None = None
        self.shift_reason = ""
        #: the schedule at which a member covered the whole space
        self.completed_at: int | None = None
        #: DPOR's estimate of its search's size after each of its runs (until the shift)
        self.estimates: list[float | None] = []
        #: a saturation watch counts the sampled schedules' fingerprints (it said so)
        self.counted = False
        #: sampled schedules whose accesses were recorded on demand, for that count
        self.recorded_on_demand = 0

    @property
    def systematic(self) -> Chooser | None:
        """The first systematic member (exhaustive search), if any."""
        for _, chooser in self.members:
            if not _samples(chooser):
                return chooser
        return None

    @property
    def observes_accesses(self) -> bool:
        """Some member uses per-step accesses: the exploration must be able to record them.

        Whether one schedule records them is :meth:`observes_next_schedule`.
        """
        return any(_observes(chooser) for _, chooser in self.members)

    def observes_next_schedule(self) -> bool:
        """Does the schedule about to begin record accesses?

        Only the schedules of a member that uses them (DPOR), and schedule 1
        when such a member watches it: recording runs the detector's feed on
        every step, several times the cost of a plain step, and the other
        members must keep their speed.
        """
        if not self.active:
            return False
        index = self.active[self.turn % len(self.active)]
        if _observes(self.members[index][1]):
            return True
        return self.turn == 0 and any(
            _observes(chooser) and _profiles(chooser)
            for i, (_, chooser) in enumerate(self.members)
            if i != index
        )

    @property
    def blind(self) -> dict[str, None] | None:
        """What this schedule's access log could not see, for the member that reads it."""
        for chooser in self._observers():
            found = getattr(chooser, "blind", None)
            if isinstance(found, dict):
                return found
        return None

    def _observers(self) -> list[Chooser]:
        """The members that receive this schedule's accesses."""
        if self._failed_member:
            return []
        current = self.members[self.current][1]
        found = [current] if _observes(current) else []
        return found + [c for c in self._profiling if _observes(c)]

    @property
    def verified(self) -> bool:
        """A reduction-based member covered every trace and saw every conflict (DPOR)."""
        if self.completed_by is None:
            return False
        return bool(getattr(self.members[self.completed_by][1], "verified", False))

    @property
    def member(self) -> str:
        """The member running the current schedule ("random", "pct depth 3", ...)."""
        return self.members[self.current][0]

    @property
    def samples(self) -> bool:
        """Whether the current schedule is sampled (saturation applies to its member)."""
        return _samples(self.members[self.current][1])

    def begin(self, run: int) -> None:
        self.current = self.active[self.turn % len(self.active)]
        self.turn += 1
        self.member_runs[self.current] += 1
        self.members[self.current][1].begin(self.member_runs[self.current])
        self._failed_member = False
        # Schedule 1 (the natural order) is also the profile run of the
        # members that learn from it, which skip their own natural order.
        self._profiling = [
            chooser
            for index, (_, chooser) in enumerate(self.members)
            if self.turn == 1
            and index != self.current
            and getattr(chooser, "profiles_natural_order", False)
        ]
        for chooser in self._profiling:
            chooser.begin(1)

    def skip(self, run: int) -> None:
        """Pass over schedule ``run`` without running it (another shard runs it).

        The turn and the member's numbering advance exactly as :meth:`begin`
        would, so the schedules this process does run keep their numbers.
        """
        member = self.active[self.turn % len(self.active)]
        self.turn += 1
        self.member_runs[member] += 1

    def stand_in(self, name: str, chooser: Chooser) -> int | None:
        """Let ``chooser`` take member ``name``'s turns (sharding's split DPOR); its index.

        Before the first schedule only. The stand-in keeps the member's turns
        and numbering, so the rotation, and every other member's schedule
        numbers, stay those of the unsliced portfolio (racecheck.sharding_auto).
        """
        for index, (member, _) in enumerate(self.members):
            if member == name:
                self.members[index] = (name, chooser)
                return index
        return None

    def slot_member(self, run: int) -> str:
        """The member that runs schedule ``run`` while every member is active."""
        return self.members[self.round[(run - 1) % len(self.round)]][0]

    def slot_sequential(self, run: int) -> bool:
        """Does a systematic member (each schedule follows from its last) own slot ``run``?"""
        return not _samples(self.members[self.round[(run - 1) % len(self.round)]][1])

    def choose(self, candidates: Sequence[int], step: int) -> int:
        if self._failed_member:
            return 0
        for profiling in self._profiling:
            profiling.choose(candidates, step)  # natural order: it picks index 0 too
        chooser = self.members[self.current][1]
        try:
            return chooser.choose(candidates, step)
        except NondeterminismError:
            # The program does not repeat itself: systematic search cannot
            # work on it. Finish this run in natural order; drop the member.
            self._failed_member = True
            self._drop(self.current, "the target is not deterministic")
            return 0

    def observe(
        self, step: int, actor: int, accesses: Sequence[Access], enabled: Sequence[int]
    ) -> None:
        """Per-step access information, for the members that use it (DPOR)."""
        current = self.members[self.current][1]
        for chooser in self._observers():
            try:
                chooser.observe(step, actor, accesses, enabled)
            except NondeterminismError:
                # As in choose: the run left the member's prefix. A watching
                # member follows the natural order and cannot leave it.
                if chooser is current:
                    self._failed_member = True
                    self._drop(self.current, "the target is not deterministic")
                    return

    def end(self, decisions: Sequence[Decision], failed: bool, steps: int) -> None:
        index = self.current
        for profiling in self._profiling:
            profiling.end(decisions, failed, steps)
            at = next(i for i, (_, c) in enumerate(self.members) if c is profiling)
            if _covered_everything(profiling):
                self.completed_by = at  # schedule 1 was the only trace
                self.completed_at = self.turn
            if not profiling.has_more():
                self._retire(at)
        self._profiling = []
        if failed:
            own = self.member_runs[index] - self._skipped[index]
            self.found_by = f"{self.members[index][0]}, its schedule {own}"
        if self.turn == 1:
            # Schedule 1 is the natural order: it sizes every PCT member's k,
            # so their schedule N does not depend on what ran before it.
            for _, member in self.members:
                if isinstance(member, PCTChooser):
                    member.calibrate(steps)
        if index in self.active and not self._failed_member:
            chooser = self.members[index][1]
            chooser.end(decisions, failed, steps)
            if _covered_everything(chooser):
                self.completed_by = index
                self.completed_at = self.turn
            if not chooser.has_more():
                self._retire(index)
            estimate = getattr(chooser, "estimated_runs", None)
            if callable(estimate) and self.shifted is None:
                self.estimates.append(estimate())

    def plan_budget(self, schedules: int) -> None:
        """The exploration's budget: what the shift to DPOR weighs its estimate against."""
        self.budget = schedules

    def _own_runs(self, index: int) -> int:
        chooser = self.members[index][1]
        return self.member_runs[index] - self._skipped[index] + (1 if _profiles(chooser) else 0)

    def after_sampling(self, sampled: int, converged: bool, claim: str) -> str | None:
        """Saturation hook: how much the sampling members, together, still find.

        Move the budget to DPOR (``SHIFT_TURNS`` turns to every other
        member's one) once its estimate of its search has settled
        (:meth:`_settled`) and either

        * the sampling members have converged and DPOR's estimate of the runs
          left (:meth:`DPORChooser.estimated_runs`) is within
          ``FINITE_FACTOR`` times what it can run in the budget left, or
        * that estimate fits in what it can run in the budget left: the run
          can end in a proof, however much the samplers still find.

        Returns the note, or None while nothing moved (asked again after the
        next sampled schedule).
        """
        outlook = self._outlook()
        if outlook is None:
            return None
        dpor, estimate, own, reach = outlook
        name = self.members[dpor][0]
        size = f"about {estimate:,.0f} runs in all, {own} done"
        if converged and estimate - own <= FINITE_FACTOR * reach:
            why = f"saturated: {claim}; {name}'s search looked finite ({size})"
            reason = "sampling saturated"
        elif estimate - own <= reach:
            why = (
                f"{name}'s search looked finite and within reach ({size}, the budget left"
                f" gives it {reach:,.0f}); sampling had not saturated: {claim}"
            )
            reason = f"{name}'s search came within reach"
        else:
            return None  # DPOR could not end it in this budget: the samplers keep their turns
        others = [i for i in dict.fromkeys(self.active) if i != dpor]
        self.active = [i for other in others for i in [dpor] * SHIFT_TURNS + [other]] or [dpor]
        self.shifted = (self.turn, own, estimate)
        self.shift_reason = reason
        return (
            f"{why}, so after schedule {self.turn} it took {SHIFT_TURNS} turns in {SHIFT_TURNS + 1}"
        )

    def _outlook(self) -> tuple[int, float, int, float] | None:
        """DPOR's settled view of its search: (its index, estimate, runs done, reach).

        ``reach`` is what it could run in the budget left once it takes
        ``SHIFT_TURNS`` turns in ``SHIFT_TURNS + 1``. None before the budget
        is known, after the shift, or while DPOR's estimate is missing or
        still growing.
        """
        found = [
            i
            for i in dict.fromkeys(self.active)
            if callable(getattr(self.members[i][1], "estimated_runs", None))
        ]
        if not found or self.budget is None or self.shifted is not None:
            return None
        dpor = found[0]
        chooser = self.members[dpor][1]
        estimate = chooser.estimated_runs()  # type: ignore[attr-defined]
        left = self.budget - self.turn
        if estimate is None or left <= 0 or not chooser.has_more() or not self._settled():
            return None  # a search whose estimate still grows has no size yet
        return dpor, float(estimate), self._own_runs(dpor), left * SHIFT_TURNS / (SHIFT_TURNS + 1)

    def fingerprints_counted(self) -> None:
        """Saturation hook: a watch counts the sampled schedules' fingerprints.

        Only then is recording accesses for them (fingerprints_next_schedule)
        worth its cost; a sharded slice, or ``saturation=0``, has no watch.
        """
        self.counted = True

    def fingerprints_next_schedule(self) -> bool:
        """Should the schedule about to begin record its accesses, for saturation alone?

        With interleaving coverage off (``racecheck.check``'s and the pytest
        plugin's default) a sampled schedule's fingerprint is its decision
        sequence, which rarely repeats: the samplers would never be seen to
        converge, and a shift to DPOR on a program whose DPOR search is
        finite but larger than the budget left waited in vain. Recording
        every schedule's accesses costs up to several times a plain schedule
        on asyncio, so the portfolio asks for it only where the answer can
        move the budget: on sampled schedules, while DPOR's settled estimate
        says its search is finite (within ``FINITE_FACTOR`` times what it can
        run in the budget left) but not within reach (then the budget moves
        whatever the samplers show) and the shift has not happened, at most
        ``RECORD_CAP`` of them. A program whose DPOR search explodes, or that
        fails before DPOR's estimate settles (at least ``SETTLE_RUNS`` of its
        runs, about schedule 72), never pays for it. Recording changes no
        decision: the schedules, and their tokens, are those of a plain run.

        Asked once per schedule, before it begins.
        """
        if not self.counted or self.recorded_on_demand >= RECORD_CAP or not self.active:
            return False
        if not _samples(self.members[self.active[self.turn % len(self.active)]][1]):
            return False
        outlook = self._outlook()
        if outlook is None:
            return False
        _, estimate, own, reach = outlook
        if not reach < estimate - own <= FINITE_FACTOR * reach:
            return False  # within reach it moves anyway; beyond 4x it never does
        self.recorded_on_demand += 1
        return True

    def _settled(self) -> bool:
        """Has DPOR's estimate stopped growing with its runs?

        Early on a state's alternatives are not known yet (a source set grows
        as races are found), so the estimate of a search that explodes starts
        small and keeps doubling with the runs (five tasks taking one lock
        four times each: 198 after 8 runs, 768 after 32, 8,192 after 512),
        while a finite one levels off (the changeset fix: 1,524 after 32,
        1,088 after 51). Settled: at least ``SETTLE_RUNS`` runs, and the
        estimate now within ``SETTLE_GROWTH`` times the one at half as many.
        """
        runs = len(self.estimates)
        if runs < SETTLE_RUNS:
            return False
        now, then = self.estimates[-1], self.estimates[runs // 2 - 1]
        return now is not None and then is not None and now <= SETTLE_GROWTH * then

    def saturated(self, member: str, note: str) -> bool:
        """Saturation hook: drop the member; True while others can go on."""
        for index, (name, _) in enumerate(self.members):
            if name == member:
                self._drop(index, "saturated")
        return bool(self.active)

    def _drop(self, index: int, why: str) -> None:
        if index in self.active:
            self._retire(index)
            self.dropped.append(f"{self.members[index][0]} ({why})")

    def _retire(self, index: int) -> None:
        """The member takes no more turns (all of them, if it had several)."""
        self.active = [i for i in self.active if i != index]

    def has_more(self) -> bool:
        if self.completed_by is not None:
            return False  # every schedule ran: nothing left that others could find
        return bool(self.active)

    @property
    def exhausted(self) -> bool:
        return self.completed_by is not None

    def notes(self, schedules_run: int) -> list[str]:
        counts = ", ".join(
            f"{name} {self.member_runs[i] - self._skipped[i]}"
            for i, (name, _) in enumerate(self.members)
        )
        notes = [f"auto: schedules per member: {counts}"]
        if self.completed_by is not None:
            name, chooser = self.members[self.completed_by]
            notes.append(f"auto: {name} covered every schedule; the exploration stopped there")
            notes += chooser.notes(schedules_run)
        else:
            notes += self._systematic_notes() + self._reduction_notes()
        notes += self._shift_notes(schedules_run)
        pct = [c for _, c in self.members if isinstance(c, PCTChooser)]
        if pct:
            depths = ", ".join(
                "1-5 drawn per schedule" if c.random_depth else str(c.depth) for c in pct
            )
            widest = max(pct, key=lambda c: c.max_steps)
            notes.append(
                f"auto: pct members assume bug depths {depths}; deeper bugs are not covered by"
                f" pct's bound (n={widest.max_actors}, k={widest.max_steps}); random, pos and"
                " surw sample without any bound"
            )
        if self.dropped:
            notes.append(f"auto: dropped {', '.join(self.dropped)}")
        return notes

    def for_backend(self, backend: str) -> None:
        """Tell the members which backend runs (their notes name what a bound counts).

        DPOR stays a member on every backend: a run that records its accesses
        decides exactly where a plain run does (tests/core/
        test_dpor_replay_threads.py), so its failures replay plainly.
        """
        for _, chooser in self.members:
            tell = getattr(chooser, "for_backend", None)
            if tell is not None:
                tell(backend)

    def _shift_notes(self, schedules_run: int) -> list[str]:
        """Where the budget went after it moved to DPOR (see after_sampling)."""
        if self.shifted is None:
            return []
        after, own_then, _ = self.shifted
        index = next(
            i
            for i, (_, c) in enumerate(self.members)
            if callable(getattr(c, "estimated_runs", None))
        )
        name = self.members[index][0]
        moved = self._own_runs(index) - own_then
        rest = schedules_run - after
        ended = (
            f"; {name} covered every schedule at schedule {self.completed_at}"
            if self.completed_by == index
            else ""
        )
        return [
            f"auto: {self.shift_reason} after {after} schedules; of the remaining {rest},"
            f" {moved} went to {name} and {rest - moved} to the other members{ended}"
        ]

    def _reduction_notes(self) -> list[str]:
        """Where DPOR got to, when it did not end the exploration (never "verified")."""
        notes: list[str] = []
        for index, (name, chooser) in enumerate(self.members):
            if not isinstance(chooser, DPORChooser):
                continue
            if any(dropped.startswith(f"{name} (") for dropped in self.dropped):
                continue  # it covered nothing it can vouch for
            own = self.member_runs[index] - self._skipped[index] + (1 if _profiles(chooser) else 0)
            notes += [_unclaimed(note) for note in chooser.notes(own)]
        return notes

    def _systematic_notes(self) -> list[str]:
        systematic = self.systematic
        if not isinstance(systematic, ExhaustiveChooser):
            return []
        if any(name.startswith("exhaustive") for name in self.dropped):
            return []  # it covered nothing it can vouch for
        level = systematic.preemption_bound
        if level > 0:
            return [
                f"auto: all schedules with at most {level - 1} {systematic.unit()} ran"
                " (systematic member); deeper schedules were sampled, not covered"
            ]
        return []
