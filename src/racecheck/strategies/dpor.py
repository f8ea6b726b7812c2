"""Dynamic partial-order reduction: one schedule per Mazurkiewicz trace.

Two schedules that differ only in the order of *independent* steps (steps that
touch nothing in common) reach the same state; running both is waste. This is
source-DPOR with sleep sets (Abdulla, Aronis, Jonsson, Sagonas, POPL 2014),
stateless: every schedule is a fresh run of the target from the start.

* A run follows a prefix of forced choices, then takes the first enabled actor
  that is not asleep (natural order first).
* After each step the engine hands over what the step touched
  (:mod:`racecheck.accesses`). At the end of the run, happens-before is built
  from program order and conflicts (same object and key, one side writes).
  For every *race* — two conflicting steps of different actors with nothing
  ordered between them — DPOR adds to the state before the first step an
  actor that starts the reversed order (an *initial* of the steps not ordered
  after the first, followed by the second's actor), unless one already is
  there. This set is a source set: every trace has a representative.
* A step that takes a primitive (a lock) and so disables a waiter that
  could run before it (woken by the release, not retried yet) also gets
  that waiter added to its state: the waiter's retry races with it, but the
  next release sits between the two in happens-before and no race of the
  run's steps leads to that order (:meth:`DPORChooser._reverse_disabled`).
* A task's turn on a loop inside a thread (``accesses.TURN``) holds the
  loop's other ready tasks off, like a lock's critical section, but orders
  nothing: a race between a step inside the turn and a held task's step is
  reversed at the turn's start, where the held task could run
  (:meth:`DPORChooser._holds_of`, :meth:`DPORChooser._reverse`), so turns
  that touch nothing in common are not reordered.
* An order-only read (a finished join, a get that took its item, an await
  of a done future: ``accesses.ORDER_ONLY``, ``ITEM``) orders its step after
  the write it reads without a race: run first, the step would have waited.
  What the step did *before* that read could have run first all the same,
  so those accesses are checked again without that order, and their races
  reversed (``_order_only_points``).
* Sleep sets: after an actor's branch at a state was explored, that actor
  sleeps in its siblings' branches until a step conflicts with what it would
  do next. A run whose every enabled actor sleeps is redundant; it is run to
  its end (a run cannot be cut short) but not analysed, and counted apart.

With no bound the search ends when every state's source set was explored: for
a terminating program whose every conflict was observed, every reachable
final state and every failure was reached — **verified**. The claim is only
as good as the observed conflicts: a run where untraced code ran, a C call
could not be placed, or the backend reports a blind spot is never verified
(``verified`` stays False and the notes say why).

``bound=N`` keeps to schedules with at most N *delays* (choices other than the
natural order). Reduction and a bound do not compose into a guarantee (a trace
may have its only representative beyond the bound), so a bounded search
reports what it covered and is never "verified".

Within a run objects are told apart exactly; a sleeping actor's step, recorded
in an earlier run, is compared with this run's steps exactly on the objects
both runs touched, in the same accesses, before the sleeper's state, and by
type of object on the others (:meth:`DPORChooser._wakes`): conservative,
never missing a conflict.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from racecheck.accesses import (
    ACTOR,
    ANY,
    HELD,
    IDLE_CLOCK,
    LATE_READ,
    OPAQUE,
    QUEUED,
    SOMEWHERE,
    STUTTER,
    SYNC,
    TAKEN,
    TURN,
    WAKE,
    Access,
    order_only,
)
from racecheck.schedule import Decision
from racecheck.strategies.base import BaseChooser
from racecheck.strategies.dpor_order import SearchOrder, pending
from racecheck.strategies.dpor_traces import trace_key
from racecheck.strategies.exhaustive import NondeterminismError

#: pseudo-objects that are no object's state: they order or mark, never conflict as keys
_PSEUDO = frozenset({OPAQUE, STUTTER, WAKE, IDLE_CLOCK})

#: object (ordinal within a run, type name across runs) -> key -> written?
Index = dict[Hashable, dict[Hashable, bool]]


@dataclass
class _Event:
    actor: int
    accesses: tuple[Access, ...]
    #: by object, exact within the run
    index: Index = field(default_factory=dict)
    #: by type of object, to compare with another run's step (sleep sets)
    typed: Index = field(default_factory=dict)
    opaque: bool = False
    final: bool = False
    #: the step's position in its run
    position: int = 0
    #: names the accesses its run's earlier steps made (see DPORChooser._wakes)
    prefix: int = 0
    #: by object for the objects those steps touched, by type for the others
    #: (see DPORChooser._wakes; made when first needed)
    mixed: Index | None = None

    def finalise(self, enabled_before: Sequence[int], enabled_after: Sequence[int]) -> None:
        """Add the actor-state accesses: who this step woke, started or blocked."""
        if self.final:
            return
        self.final = True
        extra: list[Access] = []
        if not (self.actor not in enabled_after and any(a[0] == STUTTER for a in self.accesses)):
            # A step that ended in a stutter wait (accesses.STUTTER) is not
            # ordered against whoever ends the wait; every other step is.
            extra.append((ACTOR, self.actor, False, ""))
        changed = set(enabled_before) ^ set(enabled_after)
        changed.discard(self.actor)
        extra += [(ACTOR, actor, True, "") for actor in sorted(changed)]
        self.accesses = (*self.accesses, *extra)
        self.index = _index(self.accesses, typed=False)
        self.typed = _index(self.accesses, typed=True)
        self.opaque = OPAQUE in self.index


def _index(
    accesses: Sequence[Access], typed: bool, seen: Mapping[int, int] | None = None, before: int = 0
) -> Index:
    """The accesses by object and key; ``typed``: objects by type, except those
    ``seen`` (object -> the position of the first step that touched it) says a
    step before position ``before`` touched."""
    index: Index = {}
    for obj, key, write, kind in accesses:
        place: Hashable = obj
        if typed and obj >= 0 and (seen is None or seen.get(obj, before) >= before):
            place = kind
        keys = index.get(place)
        if keys is None:
            keys = index[place] = {}
        keys[key] = keys.get(key, False) or write
    return index


def _keys_conflict(a: dict[Hashable, bool], b: dict[Hashable, bool]) -> bool:
    any_a = a.get(ANY)
    if any_a is not None and (any_a or any(b.values())):
        return True
    any_b = b.get(ANY)
    if any_b is not None and (any_b or any(a.values())):
        return True
    for key, write in a.items():
        other = b.get(key)
        if other is not None and (write or other):
            return True
    return False


def _actor_keys_conflict(a: dict[Hashable, bool], b: dict[Hashable, bool]) -> bool:
    """An actor's enabled state: a change conflicts with the actor's own steps only.

    Two steps that each changed whether actor p may run are ordered against
    p's steps (which read it), not against each other: whether p may run is a
    function of the state they leave, whose conflicts are recorded where they
    happen. Ordering them against each other only multiplied the traces (two
    threads ending while the main thread joins them one after the other).
    """
    for key, write in a.items():
        other = b.get(key)
        if other is not None and write != other:
            return True
    return False


def _takes(index: Index) -> bool:
    """Did the step change a primitive (a lock taken or released, an event set or cleared)?

    Only such a step can disable a waiter its release or set woke (see
    DPORChooser._reverse_disabled). Steps that change whether another actor
    may run for other reasons (a loop's tasks taking turns) are left alone:
    they are ordered against that actor's steps as before. A queue's method
    taking the queue's mutex (HELD, accesses._in_queue) counts as taking it.
    """
    for obj, keys in index.items():
        if not isinstance(obj, int) or obj < 0:
            continue
        if keys.get(TAKEN) or keys.get(SYNC) or HELD in keys:
            return True
    return False


def _turn(index: Index) -> bool:
    """Is the step the start of a task's turn on a loop inside a thread (accesses.TURN)?"""
    return any(TURN in keys for obj, keys in index.items() if isinstance(obj, int) and obj >= 0)


def _without_actors(index: Index, dropped: set[Hashable]) -> Index:
    """``index`` without its writes of the enabled state of the actors in ``dropped``."""
    actors = {k: w for k, w in index[ACTOR].items() if k not in dropped}
    return {**index, ACTOR: actors}


def _touches_state(index: Index) -> bool:
    """Did the step touch any object's state (or do something that cannot be placed)?

    A step that only read its own enabled state (and marks: waits, wakes)
    touched nothing an opaque step could have changed or read, and changed
    nobody's enabled state but through the ACTOR writes the engine records
    for every step alike: the two commute. Ordering every opaque step against
    such steps made the threads of a program that calls one unknown C function
    (``sys.getrecursionlimit()``) run in every order there is.
    """
    return any(obj == OPAQUE or (obj != ACTOR and obj not in _PSEUDO) for obj in index)


def _writes_key(index: Index, keys: dict[Hashable, bool]) -> bool:
    """Does the step write one of ``keys`` (or any key, for ANY) on some object?

    What a read of SOMEWHERE (an object that could not be rebuilt) meets.
    """
    for obj, written in index.items():
        if obj == ACTOR or obj == SOMEWHERE or obj in _PSEUDO:
            continue
        for key, write in written.items():
            if write and (key == ANY or key in keys or ANY in keys):
                return True
    return False


def _conflict(a: Index, b: Index) -> bool:
    if OPAQUE in a:
        return _touches_state(b)
    if OPAQUE in b:
        return _touches_state(a)
    somewhere = a.get(SOMEWHERE)
    if somewhere is not None and _writes_key(b, somewhere):
        return True
    somewhere = b.get(SOMEWHERE)
    if somewhere is not None and _writes_key(a, somewhere):
        return True
    if len(a) > len(b):
        a, b = b, a
    for obj, keys in a.items():
        other = b.get(obj)
        if other is not None:
            if obj == ACTOR:
                if _actor_keys_conflict(keys, other):
                    return True
            elif _keys_conflict(keys, other):
                return True
    return False


#: (conflicting, ordered, after, gates): what _find_conflicts fills in
_Found = tuple[set[int], set[int], set[int], set[int]]


def _find_conflicts(
    index: Index,
    actor: int,
    idle: object,
    events: Sequence[_Event],
    state: dict[tuple[Hashable, Hashable], tuple[int | None, dict[int, int]]],
    keys_of: dict[Hashable, set[Hashable]],
    actor_writes: dict[Hashable, list[int]],
    found: _Found,
    somewhere: dict[Hashable, dict[int, int]],
) -> None:
    """The earlier steps a step with ``index`` conflicts with, as the run's state says.

    ``gates``: the steps an order-only read follows (ENDED, an ITEM), which
    are also in ``ordered``. A step's accesses before such a read could have
    run before the write it reads: see _order_only_points. ``somewhere``: the
    run's reads of SOMEWHERE so far, key -> actor -> its last such step.
    """
    conflicting, ordered, after, gates = found
    for obj, keys in index.items():
        if obj == SOMEWHERE:
            _read_somewhere(keys, actor, events, state, keys_of, conflicting)
            continue
        if obj != ACTOR and obj in _PSEUDO:
            continue
        if obj != ACTOR and somewhere:
            for key, write in keys.items():
                if write:
                    met = (
                        somewhere.values()
                        if key == ANY
                        else (somewhere.get(key, {}), somewhere.get(ANY, {}))
                    )
                    for reads_of_key in met:
                        conflicting.update(r for a, r in reads_of_key.items() if a != actor)
        known = keys_of.setdefault(obj, set())
        for key, write in keys.items():
            places = list(known) if key == ANY else [key, ANY]
            for place in places:
                entry = state.get((obj, place))
                if entry is None:
                    continue
                last_write, reads = entry
                if obj == ACTOR:
                    # see _actor_keys_conflict: changes of an actor's
                    # enabled state are ordered against its steps only
                    if write:
                        # A step that moved a clock because nobody could run
                        # (IDLE_CLOCK) wakes actors that were all blocked: their
                        # last steps came first (run first, the move could not
                        # have happened), an order, like the clock's reads.
                        # Orders through a task's turn (see _holds_of) used to
                        # hide this, and without them it raced every time. The
                        # move only: what the step did before it races them
                        # (_before_idle_move).
                        woken = (r for a, r in reads.items() if a != actor)
                        (after if idle else conflicting).update(woken)
                    else:
                        conflicting.update(w for w in actor_writes.get(place, ()))
                    continue
                if last_write is not None and events[last_write].actor != actor:
                    # only a read of that very key is order-only: a read of the
                    # whole object (``future.done()``) races the write as usual
                    if not write and place == key and order_only(place):
                        ordered.add(last_write)
                        gates.add(last_write)
                    else:
                        conflicting.add(last_write)
                if write and not _queued_key(place):
                    readers = (r for a, r in reads.items() if a != actor)
                    (after if obj in idle else conflicting).update(readers)  # type: ignore[operator]


def _queued_key(key: Hashable) -> bool:
    """Is ``key`` a task step's place in a ready queue (accesses.QUEUED)?

    Its writes after reads are the step that runs from it, after a callback
    was queued behind it. Run first, that step would have left the callback
    behind the task's next step instead: its waiter would wake no earlier,
    and every order with a later wake is reached from this run by delaying
    the waiter. So the pair is no race to reverse. Sleep sets still see the
    conflict: with the callback queued first, the step lets the waiter wake
    before the task's next step, which a run where the step came first never
    tried (the other race, the append's against the callback, tries it).
    """
    return type(key) is tuple and len(key) == 3 and key[0] == QUEUED


def _real(index: Index) -> Index:
    """``index`` without the keys that order or mark: ready-queue places, enabled states, marks."""
    real: Index = {}
    for obj, keys in index.items():
        if obj == ACTOR or (obj != OPAQUE and obj in _PSEUDO):
            continue
        kept = {key: write for key, write in keys.items() if not _queued_key(key)}
        if kept:
            real[obj] = kept
    return real


def _without_reads(index: Index, reads: set[tuple[Hashable, Hashable]]) -> Index:
    """``index`` without the reads ``reads`` (object, key)."""
    trimmed = dict(index)
    for obj, key in reads:
        keys = trimmed.get(obj)
        if keys is not None and key in keys and not keys[key]:
            keys = {k: w for k, w in keys.items() if k != key}
            if keys:
                trimmed[obj] = keys
            else:
                del trimmed[obj]
    return trimmed


def _read_somewhere(
    keys: dict[Hashable, bool],
    actor: int,
    events: Sequence[_Event],
    state: dict[tuple[Hashable, Hashable], tuple[int | None, dict[int, int]]],
    keys_of: dict[Hashable, set[Hashable]],
    conflicting: set[int],
) -> None:
    """A read of SOMEWHERE meets the last write of its keys on every object."""
    for obj, known in keys_of.items():
        if obj == ACTOR or obj in _PSEUDO:
            continue
        places = known if ANY in keys else [k for k in (*keys, ANY) if k in known]
        for place in places:
            entry = state.get((obj, place))
            if entry is not None and entry[0] is not None and events[entry[0]].actor != actor:
                conflicting.add(entry[0])


def _order_only_points(accesses: Sequence[Access]) -> list[int]:
    """Positions in a step's accesses of its order-only reads that something came before.

    An order-only read (a finished join, an asyncio get that took an item,
    an ``await`` of a future that was done) is the point where the step
    could not have gone on before the write it reads: run first, it would
    have waited there (a stutter). What the step did *before* that point
    could have run first all the same (``r = box.x; await queue.get()``
    reads ``box.x`` whether the get waits or not), so those accesses race
    as usual, unordered by that write (see DPORChooser._add_backtracks).
    """
    points = []
    seen = False
    for position, (obj, key, write, _) in enumerate(accesses):
        if obj >= 0 and not write and order_only(key):
            if seen:
                points.append(position)
        elif obj >= 0 or obj == OPAQUE:
            seen = True
    return points


def _before(accesses: Sequence[Access], position: int) -> Index:
    """What a step did before ``position`` (order-only reads left out), as an index.

    The step's read of its own enabled state and its wakes (recorded at
    its end and start) belong to its start, whatever came after.
    """
    early = [a for a in accesses[:position] if a[0] < 0 or a[2] or not order_only(a[1])]
    early += [a for a in accesses[position:] if (a[0] == ACTOR and not a[2]) or a[0] == WAKE]
    return _index(early, typed=False)


def _before_idle_move(accesses: Sequence[Access]) -> Index:
    """What a step did before it moved a clock because nobody could run (IDLE_CLOCK).

    The move follows the last steps of the actors that had blocked, its
    clock's readers and those it wakes, without racing them: run before
    them, the step would not have moved the clock. What it did before the
    move (a write, then the thread's end that left nobody to run) could
    have run before them all the same, so those accesses race as usual.
    Ordered with the whole step, a two-thread write-write race was verified
    with one of its two orders (tests/core/test_dpor_soundness.py), and
    three threads' unlocked "fewer than 2" checks (semaphore_oversubscribed)
    were not overrun in 20,000 schedules. The clock's write that goes with
    the move is left out; the step's read of its own enabled state and its
    wakes belong to its start.
    """
    marker = next(k for k, access in enumerate(accesses) if access[0] == IDLE_CLOCK)
    clock = accesses[marker][1]
    early = [a for a in accesses[:marker] if not (a[0] == clock and a[2])]
    early += [a for a in accesses[marker:] if (a[0] == ACTOR and not a[2]) or a[0] == WAKE]
    return _index(early, typed=False)


@dataclass
class _Node:
    """A state of the current path: what could run, what ran, what is left."""

    enabled: tuple[int, ...]
    actor: int
    #: delays (non-natural choices) on the path before this state
    delays: int
    backtrack: set[int] = field(default_factory=set)
    #: actors explored from here, with the step each took
    done: dict[int, _Event] = field(default_factory=dict)
    #: actors asleep here, with the step each would take
    sleep: dict[int, _Event] = field(default_factory=dict)
    #: (what the earlier steps made, actor, what its step from here made) ->
    #: a name for the accesses up to and with that step (see DPORChooser._wakes)
    prefixes: dict[tuple[int, int, tuple[Access, ...]], int] = field(default_factory=dict)


#: why a search that started again after the first run is not exhaustive (DPORChooser._diverged)
FIRST_USE_RESTART = (
    "the first run did one-time initialisation (a cache filled on first use) that later runs"
    " skip: the search started again from the warm state, and the interleavings of that"
    " first-run work were not explored"
)


class DPORChooser(BaseChooser):
    """Source-DPOR with sleep sets, behind the ordinary chooser interface."""

    name = "dpor"
    #: tells the exploration to record each step's accesses (racecheck.accesses)
    observes_accesses = True
    #: systematic: never repeats an interleaving, so saturation does not apply to it
    samples = False
    #: run a few probes off the search (see _probe_prefix)
    probes = True
    #: compare a sleeper's step with this run's exactly on the objects both runs
    #: touched before the sleeper's state (see DPORChooser._wakes); off: by type only
    shared_identity = True

    def __init__(self, bound: int | None = None) -> None:
        if bound is not None and bound < 0:
            raise ValueError("bound must be at least 0")
        self.bound = bound
        self.path: list[_Node] = []
        self.events: list[_Event] = []
        self._enabled: list[tuple[int, ...]] = []
        self._blocked = False
        #: who could run at the state where a sleep set cut this run short
        self._blocked_at: tuple[int, ...] | None = None
        #: sleepers of the next state a late read woke (see _late_reads)
        self._wake_next: set[int] = set()
        self._next_sleep: dict[int, _Event] = {}
        #: object -> the position of this run's first step that touched it; per
        #: position, the name of the accesses the steps before it made (see _wakes)
        self._first_touch: dict[int, int] = {}
        self._prefixes: list[int] = [0]
        #: names given to the accesses of runs' first steps so far
        self._prefix_names = 0
        #: actor -> the turns that held it off in the run analysed: [start, end or None]
        #: (see _holds_of and _reverse)
        self._held: dict[int, list[list[int | None]]] = {}
        self._done = False
        self._gave_up: str | None = None
        #: runs that were a new trace, and runs a sleep set made redundant
        self.traces = 0
        self.redundant = 0
        #: runs that completed an earlier run's trace again (see _new_trace)
        self.repeated = 0
        self._trace_keys: set[int] = set()
        #: alternatives never run because another schedule of the same trace did
        self.pruned = 0
        #: reversals the bound kept out
        self.beyond_bound = 0
        #: why some run may hold conflicts that were not seen (then never verified)
        self.blind: dict[str, None] = {}
        #: which pending state each run starts from (see racecheck.strategies.dpor_order)
        self.order = SearchOrder(on_finished=self._finished)
        #: this run started off the depth-first order: past its prefix, the last actor goes on
        self._persist = False
        #: runs ended so far (probes included), and the probes among them
        self._runs = 0
        self.probe_runs = 0
        #: this run is a probe: its forced prefix, and how many steps it ran
        self._probe: list[int] | None = None
        self._probe_steps = 0
        self._probe_last = -1
        #: (state, actor) pairs a probe already started from
        self._probed: set[tuple[int, int]] = set()
        #: the search started again from the warm state once (see _diverged)
        self._restarted = False
        #: this run left the cold tree: it finishes in natural order, then the search restarts
        self._restarting = False

    # -- a run ---------------------------------------------------------------------------
    def begin(self, run: int) -> None:
        self.events = []
        self._enabled = []
        self._blocked = False
        self._blocked_at = None
        self._wake_next = set()
        self._next_sleep = {}
        self._first_touch = {}
        self._prefixes = [0]
        upcoming = self._runs + 1
        self._probe = None
        if self.probes and upcoming >= 2 and upcoming & (upcoming - 1) == 0:
            self._probe = self._probe_prefix()
            self._probe_steps = 0

    def _probe_prefix(self) -> list[int] | None:
        """A run off the search: the least-delayed pending alternative, then persist.

        Depth-first order reaches an alternative near the root only after
        every alternative below it, which can be never (the starved
        consumer: one actor must run twenty steps ahead from the start). A
        probe, at runs 2, 4, 8, 16 ..., takes the pending alternative with
        the fewest delays on the current path that no probe took yet, and
        then lets the actor that ran last go on while it can. Its run is not
        analysed and changes nothing in the search, so it cannot cost the
        search any pruning (unlike ``SearchOrder``'s jumps, which leave
        branches unfinished that then may not sleep) nor make a verified
        claim wrong: it is one extra run, and a failure it finds is real.
        """
        best: tuple[int, int, int] | None = None  # (delays, depth, actor)
        for depth, node in enumerate(self.path):
            if best is not None and node.delays > best[0]:
                break  # delays only grow along a path
            for actor in pending(node):
                if (id(node), actor) in self._probed:
                    continue
                cost = node.delays + (node.enabled.index(actor) != 0)
                if best is None or (cost, depth) < best[:2]:
                    best = (cost, depth, actor)
        if best is None:
            return None
        _, depth, actor = best
        if depth == len(self.path) - 1 and actor == self.path[-1].actor:
            return None  # the search runs exactly that next
        self._probed.add((id(self.path[depth]), actor))
        return [node.actor for node in self.path[:depth]] + [actor]

    def _probe_choice(self, candidates: Sequence[int]) -> int:
        assert self._probe is not None
        position = self._probe_steps
        if position < len(self._probe):
            wanted = self._probe[position]
            # the run may leave the path (nothing forces it): then it just goes on
            return list(candidates).index(wanted) if wanted in candidates else 0
        last = self._probe_last
        return list(candidates).index(last) if last in candidates else 0

    def choose(self, candidates: Sequence[int], step: int) -> int:
        if self._probe is not None:
            return self._probe_choice(candidates)
        position = len(self.events)
        if position < len(self.path):
            wanted = self.path[position].actor
            if wanted not in candidates:
                self._diverged(
                    f"step {position + 1}: actor {wanted} is not enabled as it was in an"
                    " earlier run: the target depends on something racecheck does not control"
                )
                return 0
            return list(candidates).index(wanted)
        if self._blocked:
            return 0
        self._settle(candidates)
        awake = [i for i, actor in enumerate(candidates) if actor not in self._next_sleep]
        if not awake:
            self._blocked = True  # every continuation from here was explored already
            self._blocked_at = tuple(candidates)
            return 0
        if self._persist and self.events:
            last = self.events[-1].actor
            for index in awake:
                if candidates[index] == last:
                    return index
        return awake[0]

    def observe(
        self, step: int, actor: int, accesses: Sequence[Access], enabled: Sequence[int]
    ) -> None:
        if self._probe is not None:
            self._probe_steps += 1
            self._probe_last = actor
            return
        if any(access[0] == LATE_READ for access in accesses):
            accesses = self._late_reads(accesses)
        if self._blocked:
            return
        enabled = tuple(enabled)
        position = len(self.events)
        self._settle(enabled)
        if position < len(self.path):
            node = self.path[position]
            if node.actor != actor or node.enabled != enabled:
                self._diverged(
                    f"step {position + 1} ran another actor, or from another set of enabled"
                    " actors, than in an earlier run: the target depends on something"
                    " racecheck does not control"
                )
                return
        else:
            if actor in self._next_sleep:
                self._blocked = True  # the only way on is a sleeping actor
                self._blocked_at = enabled
                return
            previous = self.path[-1] if self.path else None
            delays = 0
            if previous is not None:
                delays = previous.delays + (previous.enabled.index(previous.actor) != 0)
            node = _Node(enabled, actor, delays, {actor}, {}, dict(self._next_sleep))
            node.backtrack.update(a for a in self._wake_next if a in enabled)
            self.path.append(node)
        self._wake_next.clear()
        event = _Event(actor, tuple(accesses), position=position)
        self._note_objects(node, event)
        self.events.append(event)
        self._enabled.append(enabled)
        node.backtrack.add(actor)

    def _diverged(self, message: str) -> None:
        """This run could not follow the tree: start the search again once, or stop.

        Real code does one-time work on first use (a format parsed and cached, a
        pattern compiled into a module-level dict): the first run of an
        exploration runs lines no later run runs, and the tree DPOR built from
        it does not fit the runs after it. When the tree is the first run's
        alone (probes build none), the search starts again from the warm state:
        this run ends in natural order and the next is the new root. Anything
        else that leaves the tree is a program that does not repeat itself, and
        systematic search cannot work on it. The restarted search never claims
        to be exhaustive: the first run's path was run once, not explored.
        """
        if self._restarted or self._runs - self.probe_runs != 1:
            raise NondeterminismError(message)
        self._restarted = True
        self._restarting = True
        self._blocked = True
        self.blind[FIRST_USE_RESTART] = None
        self.path = []
        self.events = []
        self._enabled = []
        self._next_sleep = {}
        self._first_touch = {}
        self._prefixes = [0]
        self._held = {}
        self._persist = False
        self._probed = set()
        self.order = SearchOrder(on_finished=self._finished)

    def _late_reads(self, accesses: Sequence[Access]) -> tuple[Access, ...]:
        """Add to earlier steps of this run the reads this step found they made (LATE_READ).

        Two kinds of step learn late what they read. An asyncio wait recorded
        a look that does not race the release, put or set that ends it
        (accesses._ENDED_BY): with that first, it would have gone on, as its
        wake does. Cancelled instead, it did not: the look reads the key that
        operation writes. A step that queued a callback read the task steps
        queued ahead of it, which matters once the callback's chain wakes a
        task (accesses.StepLog.scheduled). The race analysis at the run's end
        then sees the races. Sleep sets decided on the old accesses since that
        step: an actor kept asleep there whose step writes the key is woken at
        every state since, and explored at the first where it could run (it
        may never have run after that step in this run, so no race would show
        it). Only more is explored, never less. Done even in a run cut short
        by its sleep set: the earlier step is in it.
        """
        kept: list[Access] = []
        for access in accesses:
            if access[0] != LATE_READ:
                kept.append(access)
                continue
            where: tuple[int, int, Hashable] = access[1]  # type: ignore[assignment]
            step, ordinal, key = where
            if step >= len(self.events):
                continue
            event = self.events[step]
            look = (ordinal, key, False, access[3])
            if look in event.accesses:
                continue
            event.accesses = (*event.accesses, look)
            if event.final:
                event.index = _index(event.accesses, typed=False)
                event.typed = _index(event.accesses, typed=True)
            event.mixed = None
            reads = _index((look,), typed=True)
            explored: set[int] = set()
            for node in self.path[step + 1 : len(self.events) + 1]:
                for sleeper_actor, sleeper in list(node.sleep.items()):
                    if _conflict(reads, sleeper.typed):
                        del node.sleep[sleeper_actor]
                        if sleeper_actor in node.enabled and sleeper_actor not in explored:
                            node.backtrack.add(sleeper_actor)
                            explored.add(sleeper_actor)
            for sleeper_actor, sleeper in list(self._next_sleep.items()):
                if _conflict(reads, sleeper.typed):
                    del self._next_sleep[sleeper_actor]
                    if sleeper_actor not in explored:
                        # the next state has no node yet (it is made as this step is
                        # observed), or none at all (a sleep set cut the run short
                        # there): explored there (observe, _next_prefix)
                        self._wake_next.add(sleeper_actor)
        return tuple(kept)

    def _note_objects(self, node: _Node, event: _Event) -> None:
        """Record which objects the run touched so far, and name the accesses it made."""
        position = event.position
        first_touch = self._first_touch
        for obj, _, _, _ in event.accesses:
            if obj >= 0 and obj not in first_touch:
                first_touch[obj] = position
        prefix = event.prefix = self._prefixes[position]
        key = (prefix, event.actor, event.accesses)
        name = node.prefixes.get(key)
        if name is None:
            self._prefix_names += 1
            name = node.prefixes[key] = self._prefix_names
        self._prefixes.append(name)

    def _settle(self, enabled_now: Sequence[int]) -> None:
        """The previous step's effect on who is enabled is known now: finish it."""
        if not self.events:
            return
        event = self.events[-1]
        if event.final:
            return
        event.finalise(self._enabled[-1], enabled_now)
        node = self.path[len(self.events) - 1]
        node.done[event.actor] = event
        asleep = {
            **node.sleep,
            **{
                a: e
                for a, e in node.done.items()
                if a != event.actor and self.order.may_sleep(node, a)
            },
        }
        by_position: dict[int, Index] = {}
        self._next_sleep = {
            actor: sleeper
            for actor, sleeper in asleep.items()
            if not self._wakes(sleeper, event, by_position)
        }

    def _wakes(self, sleeper: _Event, event: _Event, by_position: dict[int, Index]) -> bool:
        """Does this run's step ``event`` conflict with the step ``sleeper`` recorded earlier?

        Objects are ordinals, numbered by first touch within a run, so a
        number in the sleeper's run and the same number in this one need not
        name the same object: compared by type of object, they never miss a
        conflict, but any step that touches another object of the type wakes
        the sleeper, and the search then runs a trace again (73 of 250 runs
        of cleveragents-7105-bridge). Compared exactly where that is sound:

        * The sleeper's run and this one went through the sleeper's state,
          so their steps before it ran the same actors (for a deterministic
          target, as the whole search assumes, the same code). When those steps
          also made the same accesses (same ordinals, keys, type names; each
          step's accesses are named on its state with the name of the ones
          before, ``_Node.prefixes``, so equal names are equal sequences),
          the two runs are one replay up to there, and an object those steps
          touched has the same number in both runs: the number it got there.
          The accesses say so, not the schedule: racecheck's own machinery
          touches objects in the first run that later runs do not (a thread
          start), which shifts every number after it, and a run whose steps
          differ in any way falls back to types.
        * Such an object, numbered ``n`` in both runs, is the same object on
          both sides when both name ``n``, and is not the object any other
          number names on either side: no other object has ``n``, in either
          run. So a pair where one side is such a number is decided exactly.
        * Every other number was first given at or after the sleeper's
          state (in the sleeper's own step, or in a step of this run since),
          or given before it without an access to show for it: the two runs
          may give it to different objects, and the same object may have
          different numbers. Those are compared by type.

        The pseudo-objects (negative numbers) are compared as before.
        ``by_position`` keeps ``event`` indexed so, per sleeper's position.
        """
        position = sleeper.position
        if not self.shared_identity or sleeper.prefix != self._prefixes[position]:
            return _conflict(sleeper.typed, event.typed)
        seen = self._first_touch
        index = by_position.get(position)
        if index is None:
            index = by_position[position] = _index(event.accesses, True, seen, position)
        if sleeper.mixed is None:
            # the same objects whichever run with this name computes it
            sleeper.mixed = _index(sleeper.accesses, True, seen, position)
        return _conflict(sleeper.mixed, index)

    def end(self, decisions: Sequence[Decision], failed: bool, steps: int) -> None:
        self._runs += 1
        if self._probe is not None:
            self._probe = None
            self.probe_runs += 1
            return
        if self._restarting:
            # the run left the cold tree (see _diverged): the next run is the new root
            self._restarting = False
            self._blocked = False
            self.events = []
            return
        if self.events and not self.events[-1].final:
            self._settle(())
        hb = self._add_backtracks()
        if self._blocked:
            self.redundant += 1
        elif self._new_trace(hb):
            self.traces += 1
        else:
            self.repeated += 1
        self._next_prefix()

    def _new_trace(self, hb: list[int]) -> bool:
        """Is this run's trace one no earlier run had? (see racecheck.strategies.dpor_traces)"""
        key = trace_key(self.events, hb)
        if key in self._trace_keys:
            return False
        self._trace_keys.add(key)
        return True

    # -- the analysis ---------------------------------------------------------------------
    def _placements(self) -> tuple[dict[int, set[tuple[Hashable, Hashable]]], dict[int, set[int]]]:
        """Which ready-queue placements (accesses.QUEUED) this run's analysis tells apart.

        A step that queued a waking callback read the places of the task steps
        queued ahead of it (accesses.StepLog.scheduled): the callback runs
        after such a step ``r``, so the task it wakes runs after ``r`` too.
        Queued before ``r``'s append instead, the callback could let the woken
        task, and what follows it, run before ``r``. Take such a run, and in it
        the first step ``p`` of those that ran before ``r`` that conflicts
        with ``r`` on what they really touch (no queue places, enabled states
        or marks). The steps before ``p`` commute with ``r``, so ``r`` can run
        first, with the callback behind it, and ``p``, the same up to that
        access, makes it after ``r``. So the other order is a new one only if
        some run with the callback behind ``r`` has a step of another actor
        after ``r`` that conflicts with ``r``, and DPOR runs each trace of
        those. Where this run has none, the read is left out of the analysis:
        no reversal, and no order either (an order kept without its race
        would cover the step's other races, which then were never reversed).
        A place whose step never ran is kept. First returned: step ->
        (object, key) of the reads left out.

        Second: ``r`` may have run before the callback was queued. Its place
        was gone, nothing was read of it, and yet, queued before ``r``'s
        append, the callback would have been ahead of ``r``. Only a run with
        the callback queued between the append and ``r`` reads the place, and
        with a third task's step queued first no run did (a gather's waiter
        never wrote before a task that had yielded first:
        tests/core/test_dpor_wake_placement.py). So the step that queued a
        waking callback (one that read a place) also races the appends of the
        places whose step ran before it, under the same test. Step -> those
        appends.
        """
        events = self.events
        reads: list[tuple[int, Hashable, Hashable]] = []
        #: (object, key) of a place -> the steps that wrote it: its append, its runner
        writers: dict[tuple[Hashable, Hashable], list[int]] = {}
        for position, event in enumerate(events):
            for obj, keys in event.index.items():
                if obj == ACTOR or obj in _PSEUDO:
                    continue
                for key, write in keys.items():
                    if _queued_key(key):
                        if write:
                            writers.setdefault((obj, key), []).append(position)
                        else:
                            reads.append((position, obj, key))
        if not reads:
            return {}, {}
        real: dict[int, Index] = {}

        def real_of(position: int) -> Index:
            found = real.get(position)
            if found is None:
                found = real[position] = _real(events[position].index)
            return found

        decided: dict[int, bool] = {}

        def decides(runner: int) -> bool:
            """Does a later step of another actor conflict with ``runner``?"""
            found = decided.get(runner)
            if found is None:
                actor = events[runner].actor
                touched = real_of(runner)
                found = decided[runner] = any(
                    events[k].actor != actor and _conflict(touched, real_of(k))
                    for k in range(runner + 1, len(events))
                )
            return found

        unplaced: dict[int, set[tuple[Hashable, Hashable]]] = {}
        for position, obj, key in reads:
            runner = next((w for w in writers.get((obj, key), ()) if w > position), None)
            if runner is not None and not decides(runner):
                unplaced.setdefault(position, set()).add((obj, key))
        passed: dict[int, set[int]] = {}
        for queuer in sorted({position for position, _, _ in reads}):
            for places in writers.values():
                if len(places) < 2:
                    continue
                append, runner = places[0], places[1]
                if (
                    runner < queuer
                    and events[append].actor != events[queuer].actor
                    and decides(runner)
                ):
                    passed.setdefault(queuer, set()).add(append)
        return unplaced, passed

    def _add_backtracks(self) -> list[int]:
        """Add the reversals of this run's races; its happens-before, per step (bitmasks)."""
        unplaced, passed = self._placements()
        events = self.events
        hb = [0] * len(events)
        last_of: dict[int, int] = {}
        #: actor -> its last step that touched state (_touches_state): what an opaque step meets
        last_touching: dict[int, int] = {}
        last_opaque: int | None = None
        #: (object, key) -> (last write, {actor: its last read since})
        state: dict[tuple[Hashable, Hashable], tuple[int | None, dict[int, int]]] = {}
        keys_of: dict[Hashable, set[Hashable]] = {}
        #: reads of SOMEWHERE: key -> actor -> its last such step (never reset: a
        #: write of the key on one object leaves the others' reads standing)
        somewhere: dict[Hashable, dict[int, int]] = {}
        #: actor -> the steps that changed whether it may run since its last step
        actor_writes: dict[Hashable, list[int]] = {}
        self._held = {}
        holding: dict[int, int] = {}  # actor held off now -> the turn start holding it
        for j, event in enumerate(events):
            actor = event.actor
            index = event.index
            left_out = unplaced.get(j)
            if left_out:
                index = _without_reads(index, left_out)
            dropped = self._holds_of(j, event, holding)
            if dropped:
                index = _without_actors(index, dropped)
            conflicting: set[int] = set()
            #: earlier steps this one must follow but could not have run before (ORDER_ONLY)
            ordered: set[int] = set()
            touching = event.opaque or _touches_state(index)
            if event.opaque:
                conflicting.update(k for a, k in last_touching.items() if a != actor)
            elif touching and last_opaque is not None and events[last_opaque].actor != actor:
                conflicting.add(last_opaque)
            wake = event.index.get(WAKE)
            if wake is not None:
                # woken by a chain of callbacks that step started (accesses.WAKE)
                for cause in wake:
                    c = int(cause)  # type: ignore[call-overload]  # WAKE's keys are step indices
                    if c < j and events[c].actor != actor:
                        ordered.add(c)
            #: earlier reads of a clock this step moved as nobody could run: ordered
            #: before it, racing it only through another conflict (accesses.IDLE_CLOCK)
            idle = event.index.get(IDLE_CLOCK, ())
            after: set[int] = set()
            gates: set[int] = set()
            wakes = set(ordered)
            _find_conflicts(
                index,
                actor,
                idle,
                events,
                state,
                keys_of,
                actor_writes,
                (conflicting, ordered, after, gates),
                somewhere,
            )
            #: what the step did up to a point where it came to follow more steps, which
            #: could have run before those: (its accesses so far, the steps they follow,
            #: the idle clock moves among them)
            starts: list[tuple[Index, set[int], object]] = []
            if gates:
                # before each order-only read (see _order_only_points)
                followed: set[int] = set()  # the writes the reads so far follow
                for position in _order_only_points(event.accesses):
                    start_index = _before(event.accesses, position)
                    if left_out:
                        start_index = _without_reads(start_index, left_out)
                    starts.append((start_index, wakes | followed, idle))
                    read = event.accesses[position]
                    entry = state.get((read[0], read[1]))
                    if entry is not None and entry[0] is not None:
                        followed.add(entry[0])
            if idle:
                # before the clock moved (_before_idle_move): not after its readers
                start_index = _before_idle_move(event.accesses)
                if left_out:
                    start_index = _without_reads(start_index, left_out)
                starts.append((start_index, set(wakes), ()))
            early: list[_Found] = []
            for start, follows, start_idle in starts:
                start_found: _Found = (set(), follows, set(), set())
                if OPAQUE in start:
                    start_found[0].update(k for a, k in last_touching.items() if a != actor)
                elif (
                    _touches_state(start)
                    and last_opaque is not None
                    and events[last_opaque].actor != actor
                ):
                    start_found[0].add(last_opaque)
                _find_conflicts(
                    start,
                    actor,
                    start_idle,
                    events,
                    state,
                    keys_of,
                    actor_writes,
                    start_found,
                    somewhere,
                )
                early.append(start_found)
            for obj, keys in index.items():
                if obj == SOMEWHERE:
                    for key in keys:
                        somewhere.setdefault(key, {})[actor] = j
                    continue
                if obj != ACTOR and obj in _PSEUDO:
                    continue
                known = keys_of[obj]
                for key, write in keys.items():
                    known.add(key)
                    if obj == ACTOR:
                        # every change since the actor's last step, not only the last one
                        if write:
                            actor_writes.setdefault(key, []).append(j)
                            state[(obj, key)] = (j, {})
                        else:
                            actor_writes[key] = []
                            state[(obj, key)] = (None, {actor: j})
                        continue
                    if write:
                        state[(obj, key)] = (j, {})
                    else:
                        found = state.get((obj, key))
                        if found is None:
                            state[(obj, key)] = (None, {actor: j})
                        else:
                            found[1][actor] = j
            if j in passed:
                conflicting |= passed[j]
            predecessors = conflicting | ordered | after
            own = last_of.get(actor)
            if own is not None:
                predecessors.add(own)
            before = 0
            cover = 0
            for p in predecessors:
                before |= hb[p] | (1 << p)
                cover |= hb[p]
            hb[j] = before
            for i in sorted(conflicting - ordered):  # a step it could not precede: no race
                if not (cover >> i) & 1:
                    self._reverse(i, j, hb)
            for early_conflicts, early_ordered, early_after, _ in early:
                early_before = early_cover = 0
                for p in early_conflicts | early_ordered | early_after:
                    early_before |= hb[p] | (1 << p)
                    early_cover |= hb[p]
                if own is not None:
                    early_before |= hb[own] | (1 << own)
                    early_cover |= hb[own]
                # the reversal runs the step's start first: there it follows what
                # that start follows, not the writes its later reads follow
                hb[j] = early_before
                for i in sorted(early_conflicts - early_ordered):
                    if not (early_cover >> i) & 1:
                        self._reverse(i, j, hb)
                hb[j] = before
            if j + 1 < len(self._enabled) and _takes(event.index):
                for other in self._enabled[j]:
                    if other != actor and other not in self._enabled[j + 1]:
                        self._reverse_disabled(j, other)
            if STUTTER in event.index and actor not in event.index.get(ACTOR, ()):
                # It waits, a stutter (accesses.STUTTER): whatever wakes it next is
                # not ordered against its earlier steps either. Left in place,
                # their reads of its enabled state made that wake a race, whose
                # reversal (the wake first) only repeats the trace.
                state.pop((ACTOR, actor), None)
            last_of[actor] = j
            if touching:
                last_touching[actor] = j
            if event.opaque:
                last_opaque = j
        if events and not self._blocked:
            self._reverse_ended(len(events) - 1)
        return hb

    def _holds_of(self, j: int, event: _Event, holding: dict[int, int]) -> set[Hashable]:
        """The actors whose enabled state step ``j`` changed only by a turn's hold.

        A task's turn on a loop inside a thread (accesses.TURN) holds the
        loop's other ready tasks off from its start until the loop's thread
        can choose again, like a lock's critical section. That hold is no
        order: the disabling at the start and the enabling at the end are
        left out of happens-before, so a held task's steps race the steps
        inside the turn, and such a race is reversed at the turn's start,
        where the held task could run (:meth:`_reverse`). A start that takes
        a primitive too (``_takes``) keeps the plain treatment: its orders,
        and each task it disabled tried first there (_reverse_disabled).
        ``holding`` (held actor -> the start holding it) is updated.
        """
        actors = event.index.get(ACTOR)
        if not actors:
            return set()
        dropped: set[Hashable] = set()
        before = self._enabled[j]
        for held in [a for a in holding if actors.get(a)]:
            if held not in before:  # enabled again: the hold is over
                dropped.add(held)
                self._held[held][-1][1] = j
                del holding[held]
        if _turn(event.index) and not _takes(event.index):
            for other, write in actors.items():
                if write and other != event.actor and other in before:
                    assert isinstance(other, int)
                    dropped.add(other)
                    holding[other] = j
                    self._held.setdefault(other, []).append([j, None])
        return dropped

    def _held_at(self, actors: Sequence[int], i: int) -> int | None:
        """The latest turn start that held one of ``actors`` off at state ``i``, if any."""
        found: int | None = None
        for actor in actors:
            for start, end in self._held.get(actor, ()):
                assert start is not None
                if start < i and (end is None or i <= end) and (found is None or start > found):
                    found = start
        return found

    def _reverse_ended(self, last: int) -> None:
        """The run ended while other actors could still run: try each before its last step.

        A program ends when its main actor does, whoever else could still run
        (a daemon thread is abandoned). An actor that never ran has no step
        in the run, so no race names it, and the order where it ran before
        the end was never tried (a daemon's write before main's last read:
        tests/core/test_dpor_soundness.py). The end disables it, as an acquire
        disables a woken waiter (_reverse_disabled): it is tried first there.
        """
        actor = self.events[last].actor
        for other in self._enabled[last]:
            if other != actor:
                self._reverse_disabled(last, other)

    def _reverse(self, i: int, j: int, hb: list[int]) -> None:
        """Make sure some actor that starts the reversal of race (i, j) is tried at state i.

        When no actor that could start it is enabled at state i because a
        task's turn on a loop holds them off (see _holds_of), the reversal
        is placed at that turn's start instead: the held task runs its turn
        first there, before the turn the race lay in.
        """
        node = self.path[i]
        events = self.events
        later = [k for k in range(i + 1, j) if not (hb[k] >> i) & 1]
        later.append(j)
        initials: list[int] = []
        seen: set[int] = set()
        inside = 0
        for k in later:
            actor = events[k].actor
            if actor not in seen and not hb[k] & inside:
                initials.append(actor)
            seen.add(actor)
            inside |= 1 << k
        possible = [actor for actor in node.enabled if actor in initials]
        if not possible:
            start = self._held_at(initials, i) if self._held else None
            if start is not None:
                self._reverse(start, j, hb)
            return  # else the second step could not have run first: not a reversible race
        if len(node.enabled) < 2:
            return
        if any(actor in node.backtrack or actor in node.sleep for actor in possible):
            return
        preferred = events[j].actor
        actor = preferred if preferred in possible else possible[0]
        if self.bound is not None:
            cost = node.delays + (node.enabled.index(actor) != 0)
            if cost > self.bound:
                self.beyond_bound += 1
                return
        node.backtrack.add(actor)

    def _reverse_disabled(self, i: int, actor: int) -> None:
        """Step ``i`` disabled ``actor``, which could run there: try it first at state i.

        Only a step that takes what a woken waiter waits for does this (a lock
        acquired while the thread its release woke has not retried yet). The
        waiter's retry conflicts with that acquire, but the release that wakes
        it again lies between the two in happens-before, and the waiter,
        disabled at that release, cannot be moved before it: the race is
        never reversed from the run's steps, and the order where the waiter
        retried first was lost (tests/core/test_dpor_soundness.py). Running it
        first where it was still enabled is that reversal.
        """
        node = self.path[i]
        if actor in node.backtrack or actor in node.sleep:
            return
        if self.bound is not None:
            cost = node.delays + (node.enabled.index(actor) != 0)
            if cost > self.bound:
                self.beyond_bound += 1
                return
        node.backtrack.add(actor)

    def _next_prefix(self) -> None:
        path = self.path
        # The analysed run may have ended before the path did (a redundant run):
        # deeper states belong to no run any more.
        del path[len(self.events) :]
        self._explore_woken_where_blocked()
        found = self.order.next(path)
        if found is None:
            self.path = []
            self._done = True
            return
        prefix, self._persist = found
        self.path = [node for node in prefix if isinstance(node, _Node)]

    def _explore_woken_where_blocked(self) -> None:
        """A late read woke a sleeper at the state where a sleep set cut this run short.

        That state was never made a node (the run stopped being followed
        there), so the sleeper, awake after all, had nowhere to be explored:
        DPOR called a woken task's read before a write unreachable, which a
        gather of a gather reaches (tests/core/test_dpor_wake_placement.py).
        The state is made a node now, with the sleeper to try.
        """
        enabled = self._blocked_at
        woken = self._wake_next
        if not self._blocked or enabled is None or not woken:
            return
        todo = {actor for actor in woken if actor in enabled}
        if not todo or len(self.path) != len(self.events):
            return
        previous = self.path[-1] if self.path else None
        delays = 0
        if previous is not None:
            delays = previous.delays + (previous.enabled.index(previous.actor) != 0)
        sleep = {a: e for a, e in self._next_sleep.items() if a not in todo}
        first = next(a for a in enabled if a in todo)
        self.path.append(_Node(enabled, first, delays, set(todo), {}, sleep))

    def _finished(self, node: object) -> None:
        """A state left the search: the alternatives never run there were pruned."""
        assert isinstance(node, _Node)
        self.pruned += len(node.enabled) - len(node.done)

    # -- what it covered -------------------------------------------------------------------
    def estimated_runs(self) -> float | None:
        """About how many runs the whole search takes (done ones included), or None.

        The depth-first position of the next run, read as a fraction of the
        tree: at each state of its prefix the branches finished before it,
        out of all that state has (finished, current, pending), each level
        weighted by the share of its parent (the search-progress measure of
        backtracking solvers). Runs so far over that fraction assumes the
        branches not run yet are as big as the ones that ran; the first
        branches (the natural order's) are usually the biggest, so this
        overestimates (cleveragents-7120-changeset: about 1,200 while 595
        were needed) but tells a finite search from one it cannot finish
        (10^10 and more). The portfolio uses it to decide whether budget
        moved to DPOR can end in a proof.
        """
        if self._done:
            return float(self._runs)
        fraction, share = 0.0, 1.0
        for node in self.path:
            current = 1 if node.actor in node.done else 0
            finished = len(node.done) - current
            total = max(1, finished + current + len(pending(node)))
            fraction += share * finished / total
            share /= total
        return self._runs / fraction if fraction > 0 else None

    def has_more(self) -> bool:
        return not self._done

    @property
    def exhausted(self) -> bool:
        """The search ended (within its bound), and saw every conflict it compared."""
        return self._done and not self.blind

    @property
    def verified(self) -> bool:
        """Every trace of the program ran, and every conflict was observed."""
        return self._done and self.bound is None and not self.blind

    def notes(self, schedules_run: int) -> list[str]:
        cut = (
            f"; {self.redundant} run{'s' if self.redundant != 1 else ''} ended in a state"
            " whose continuations were all explored (sleep sets)"
            if self.redundant
            else ""
        )
        if self.repeated:
            cut += (
                f"; {self.repeated} run{'s' if self.repeated != 1 else ''} repeated a trace"
                " already explored (not counted)"
            )
        if self.probe_runs:
            cut += (
                f"; {self.probe_runs} probe run{'s' if self.probe_runs != 1 else ''} off the"
                " search (a deviation near the start kept up; see DPORChooser._probe_prefix)"
            )
        blind = "; ".join(self.blind)
        if self.verified:
            return [
                f"verified: all {self.traces} non-equivalent interleavings explored"
                f" ({self.pruned} pruned){cut}"
            ]
        if self._done and self.bound is None:
            return [
                f"dpor: all {self.traces} interleavings racecheck could tell apart ran"
                f" ({self.pruned} pruned){cut}; not verified: {blind}"
            ]
        if self._done:
            return [
                f"dpor: all {self.traces} non-equivalent interleavings with at most"
                f" {self.bound} delays from the natural order explored ({self.pruned} pruned,"
                f" {self.beyond_bound} reversals beyond the bound skipped){cut}; not verified:"
                " a bound leaves schedules out, and reduction under a bound can leave out"
                " some within it" + (f"; also {blind}" if blind else "")
            ]
        return [
            f"dpor: the budget ran out after {self.traces} non-equivalent interleavings"
            f" ({schedules_run} schedules){cut}; not verified: the space was not covered"
            + (f"; also {blind}" if blind else "")
        ]
