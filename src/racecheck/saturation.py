"""Saturation: notice when a sampling strategy stopped finding anything new.

A correct program with little freedom (a pool whose workers mostly wait on
one queue) can have a handful of distinct schedules; a sampling strategy
then spends a 20,000-schedule budget re-running them. After each schedule
the exploration hands the run to :class:`SaturationWatch`; when the last
``window`` schedules of one strategy added nothing new, that strategy has
*saturated*:

* on its own (``strategy="pct"``, ``"random"``, ...) the exploration stops
  early, and the report says so;
* in the portfolio the saturated member (after ``window // 5`` repeats: giving
  turns away changes no verdict) drops out and its turns go to the
  members still finding new schedules; the exploration stops when every
  sampling member has saturated (and the systematic one is done or absent);
* in the portfolio, the sampling members *together* have converged when,
  after at least ``NOVELTY_MIN`` sampled schedules, the Good-Turing estimate
  of a new fingerprint (:meth:`SaturationWatch.novelty`) is at most
  ``NOVELTY_THRESHOLD``; the portfolio may then move its budget to DPOR
  (``after_sampling``; see :mod:`racecheck.strategies.portfolio`).

What "new" means is named in the note, because it changes what saturation
says:

* with per-run access information (interleaving coverage on, as in
  ``racecheck run``), a run's fingerprint is the order, per shared object, of
  the actors' conflicting accesses (reads between two writes count as one
  unordered group): two runs with the same fingerprint ordered every
  observed conflict the same way;
* without it, the fingerprint is the run's decision sequence: two runs with
  the same decisions *are* the same schedule of a deterministic program;
* with coverage off, a portfolio may record the accesses of some sampled
  schedules on demand (``fingerprints_next_schedule``): the Good-Turing
  estimate then counts those schedules alone (at least ``RECORDED_MIN``),
  since a decision sequence and an ordering are different measures, and its
  note says how many of the sampled schedules were recorded.

What the estimate assumes: the sampled schedules are independent draws from
one distribution (each member draws its own, the rotation mixes them), and
only traced code's accesses are seen (an ordering that differs only inside
untraced code counts as a repeat). Getting it wrong moves budget, never a
verdict: "verified" comes from DPOR alone, which withholds it whenever a run
ran code it could not see.

Either way the claim is about the strategy, not the program: after ``w``
schedules in a row that were all repeats, a further schedule is new with
probability below about ``3/w`` (the "rule of three", 95% confidence). A
bug in a schedule the strategy rarely draws can still be there; the note
says that too. Systematic search (exhaustive, DPOR) never repeats a
schedule by construction and is exempt: its coverage claims are its own.

A chooser takes part through optional attributes only, so strategies that
know nothing of saturation keep working:

* ``samples`` (default True): False for systematic search, which is exempt;
* ``member``: the name of the portfolio member that ran the last schedule;
* ``saturated(member: str, note: str) -> bool``: the portfolio drops the
  member; True means the exploration can go on with the others;
* ``after_sampling(sampled: int, converged: bool, claim: str) -> str | None``:
  the portfolio moved its budget (the note to add), or did nothing (None:
  asked again after the next sampled schedule).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

#: consecutive schedules without anything new before a strategy has saturated
DEFAULT_WINDOW = 1000

#: the portfolio's sampling members, together, have converged when at least
#: NOVELTY_MIN sampled schedules ran and the Good-Turing estimate of the chance
#: that the next one is new (fingerprints seen exactly once / schedules) is at
#: most NOVELTY_THRESHOLD (see :meth:`SaturationWatch.novelty`)
NOVELTY_MIN = 150
NOVELTY_THRESHOLD = 0.05
#: ... and, when only some sampled schedules had their accesses recorded (on
#: demand, coverage off), at least this many of those: a 5% estimate then rests
#: on at most 3 fingerprints seen once
RECORDED_MIN = 60

_ORDERINGS = "ordering of conflicting accesses (per-object access order)"


def access_fingerprint(accesses: Sequence[tuple[int, str]]) -> Hashable:
    """Per shared object, the order of the actors' conflicting accesses."""
    per_object: dict[str, list[Any]] = {}
    for actor, access in accesses:
        kind, _, name = access.partition(":")
        order = per_object.setdefault(name, [])
        if kind == "r":
            # Reads between two writes commute: keep them as one unordered group.
            if order and isinstance(order[-1], set):
                order[-1].add(actor)
            else:
                order.append({actor})
        elif not order or order[-1] != actor:
            order.append(actor)
    return hash(
        tuple(
            (name, tuple(frozenset(x) if isinstance(x, set) else x for x in order))
            for name, order in sorted(per_object.items())
        )
    )


class SaturationWatch:
    """Counts, per strategy (or portfolio member), the schedules in a row that added nothing."""

    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        if window < 0:
            raise ValueError("saturation window must be at least 0 (0 turns it off)")
        self.window = window
        self.seen: set[Hashable] = set()
        #: member -> (schedules in a row without a new fingerprint, schedules run)
        self.streak: dict[str, int] = {}
        self.runs: dict[str, int] = {}
        #: what the fingerprints measured: "decisions" or "accesses" (both when mixed)
        self.measured: set[str] = set()
        self.notes: list[str] = []
        #: the exploration stopped because of saturation
        self.stopped = False
        #: sampled schedules, and how often each fingerprint came up among them
        self.sampled = 0
        self.counts: dict[Hashable, int] = {}
        #: fingerprints seen exactly once (Good-Turing's N1)
        self.singletons = 0
        #: the same, for the sampled schedules whose accesses were recorded
        #: (every one with coverage on; on demand without it: see _tell_converged)
        self.recorded = 0
        self.recorded_singletons = 0
        self.recorded_distinct = 0
        #: the chooser acted on the sampling members' convergence (once)
        self.converged = False

    def after_run(self, chooser: Any, decisions: Sequence[Any], accesses: Any) -> bool:
        """Record one finished (passing) schedule; True when the exploration should stop."""
        if self.window == 0 or not getattr(chooser, "samples", True):
            return False
        if accesses:
            self.measured.add("accesses")
            fingerprint: Hashable = ("a", access_fingerprint(accesses))
        else:
            self.measured.add("decisions")
            fingerprint = ("d", hash(tuple(decisions)))
        member = str(getattr(chooser, "member", None) or chooser.name)
        self.runs[member] = self.runs.get(member, 0) + 1
        listens = getattr(chooser, "fingerprints_counted", None)
        if listens is not None:
            listens()  # a portfolio may record accesses on demand (see _tell_converged)
        self._count(fingerprint)
        self._tell_converged(chooser)
        if fingerprint in self.seen:
            self.streak[member] = self.streak.get(member, 0) + 1
        else:
            self.seen.add(fingerprint)
            self.streak[member] = 0
        shift = getattr(chooser, "saturated", None)
        # A portfolio member that saturates hands its turns to the others,
        # which costs the verdict nothing: it may give up sooner.
        window = self.window if shift is None else max(1, self.window // 5)
        if self.streak[member] < window:
            return False
        self.streak[member] = -(10**18)  # reported once
        what = self.what()
        claim = (
            f"the last {window} {member} schedules added no new {what}"
            f" ({len(self.seen)} distinct in all): a further {member} schedule would be new"
            f" with probability below about {3 / window:.2g} (95% confidence); a bug in"
            " a schedule it rarely draws is not ruled out"
        )
        if shift is not None:
            go_on = bool(shift(member, claim))
            self.notes.append(
                f"saturated: {claim}; its remaining turns went to the other members"
                if go_on
                else f"saturated: {claim}; every sampling member has saturated: stopped early"
            )
            self.stopped = not go_on
            return not go_on
        self.notes.append(
            f"saturated: {claim}; stopped early after {self.runs[member]} schedules, the rest"
            " of the budget unspent"
        )
        self.stopped = True
        return True

    def _count(self, fingerprint: Hashable) -> None:
        self.sampled += 1
        seen = self.counts.get(fingerprint, 0)
        self.counts[fingerprint] = seen + 1
        change = 1 if seen == 0 else -1 if seen == 1 else 0
        self.singletons += change
        if isinstance(fingerprint, tuple) and fingerprint[0] == "a":
            self.recorded += 1
            self.recorded_singletons += change
            self.recorded_distinct += 1 if seen == 0 else 0

    def novelty(self) -> float:
        """Good-Turing: about how likely the next sampled schedule shows something new.

        The share of sampled schedules whose fingerprint came up exactly
        once estimates the probability mass of the fingerprints not seen yet
        (Good, 1953). Unlike a streak of repeats it does not need the
        samplers to stop finding anything: a program whose samplers still
        find a new ordering every hundred schedules has a novelty of about
        1%, which says the same about their value as the streak would after
        hundreds more.

        Counted over the schedules whose accesses were recorded, when there
        are any: a decision sequence and an ordering of conflicting accesses
        are different measures, and mixing them would count one run's
        decisions as new next to another's identical ordering.
        """
        if self.recorded:
            return self.recorded_singletons / self.recorded
        return self.singletons / self.sampled if self.sampled else 1.0

    def _tell_converged(self, chooser: Any) -> None:
        """Tell a portfolio how much its sampling members, together, still find.

        From ``NOVELTY_MIN`` sampled schedules on, after each one, the hook
        ``after_sampling(sampled, converged, claim)`` hears whether they have
        converged (novelty at most ``NOVELTY_THRESHOLD``) and the claim that
        says so; the chooser decides what to do with it and returns the note
        of what it did (then it is not asked again), or None.

        Without coverage a portfolio records the accesses of its sampled
        schedules on demand only (``fingerprints_next_schedule``, while a
        shift to DPOR waits for convergence alone): the estimate is then
        taken over those schedules, and needs at least ``RECORDED_MIN`` of
        them; the other sampled schedules' decision sequences are not counted in it.
        """
        hook = getattr(chooser, "after_sampling", None)
        if hook is None or self.converged or self.sampled < NOVELTY_MIN:
            return
        novelty = self.novelty()
        estimate = (
            f"a further sampled schedule would be new with probability about {novelty:.2g}"
            " (Good-Turing estimate)"
        )
        if self.recorded == self.sampled or not self.recorded:
            what = _plural(self.what()) if not self.recorded else _plural(_ORDERINGS)
            singletons = self.recorded_singletons if self.recorded else self.singletons
            claim = (
                f"the sampling members' {self.sampled} schedules showed {self._distinct()}"
                f" distinct {what}, {singletons} of them once: {estimate}"
            )
            enough = True
        else:
            enough = self.recorded >= RECORDED_MIN
            claim = (
                f"{self.recorded} of the sampling members' {self.sampled} schedules had their"
                " accesses recorded (the others are told apart by decision sequence only and"
                f" are not counted here) and showed {self._distinct()}"
                f" distinct {_plural(_ORDERINGS)}, {self.recorded_singletons} of them once: "
                + (estimate if enough else f"too few to judge (fewer than {RECORDED_MIN})")
            )
        done = hook(self.sampled, enough and novelty <= NOVELTY_THRESHOLD, claim)
        if done:
            self.converged = True
            self.notes.append(str(done))

    def _distinct(self) -> int:
        """Distinct fingerprints of the measure novelty() counts."""
        return self.recorded_distinct if self.recorded else len(self.counts)

    def what(self) -> str:
        if self.measured == {"accesses"}:
            return _ORDERINGS
        if self.measured == {"decisions"}:
            return "decision sequence (no access information was recorded)"
        return "ordering of conflicting accesses, or decision sequence where no access was recorded"


def _plural(what: str) -> str:
    """What :meth:`SaturationWatch.what` names, counted: "orderings", "decision sequences"."""
    for one in ("ordering", "sequence"):
        if one in what:
            return what.replace(one, one + "s", 1)
    return what
