"""The dynamic race detector: shadow state for every shared location a run touches.

Two questions are asked of every access, and either answer fails the run:

* **Atomicity across a scheduling point** (asyncio, threads, trio). An actor's
  two consecutive accesses to one location, with another actor's write in
  between, are unserialisable in two shapes that matter:

  - *stale read, then write* (R–W–W): ``v = self.x`` … ``await`` … ``self.x =
    v + 1`` loses the other write; ``if k not in d`` … ``d[k] = ...`` acts on
    a check that no longer holds. The read must still be in scope: its frame
    is the writing frame or one of its callers.
  - *own write overwritten, then read* (W–W–R): ``self._current = inst`` …
    ``await`` … ``self._current`` returns a sibling's instance. Only reported
    when the value read differs from the one written, and not for the read of
    a read-modify-write (``self.n += 1`` reads the latest value on purpose).

  - *stale hand-off* (asyncio): task A checks ``x`` and, in the same step,
    wakes task B; task C writes ``x``; B, in the step A woke it into, writes
    ``x`` without checking it again (two writers inside an RW lock, a woken
    waiter left queued).

  Reads after reads and writes after a remote read are left alone: a loop
  re-checking a flag, or a busy marker others may observe, are how correct
  code looks. A read whose value is only displayed (passed to a call and
  dropped) decided nothing and is never the first access of a report.

* **Unsynchronised conflicting accesses** (threads only). Classic
  happens-before: vector clocks advance at lock hand-offs, ``Event.set``/
  ``wait``, queue put/get (through their locks), thread start and join, and
  ``call_soon_threadsafe``. Two accesses to one location from different
  threads, one of them a write, with neither ordered before the other, are a
  data race that free-threaded Python turns into a real one. Operations that
  are atomic on their own (``list.append``, ``set.add``, ``deque.popleft``,
  ``len``) do not race with each other, but they do race with a thread
  iterating the same container. A plain load is atomic too, unless its value
  decides a later write of the same location by the same thread (``if
  self.balance >= n:`` outside the lock, ``self.balance -= n`` under it):
  then the unordered write it saw could have landed between check and act.

Locations are keyed by object identity (the objects are kept alive for the
run, so an id is never reused): attributes ``(obj, "name")``, items
``(container, key)``, membership ``(container, ∋ element)`` and the whole
container ``(container, *)``, touched by iteration, ``len`` and mutation.
"""

from __future__ import annotations

import _thread
import array
import asyncio
import bisect
import dis
import gc
import os
import sys
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from operator import attrgetter, itemgetter, methodcaller
from types import (
    BuiltinFunctionType,
    CellType,
    ClassMethodDescriptorType,
    CodeType,
    FrameType,
    FunctionType,
    MappingProxyType,
    MethodDescriptorType,
    MethodType,
    MethodWrapperType,
    ModuleType,
    WrapperDescriptorType,
)
from typing import Any
from weakref import CallableProxyType, ProxyType, ReferenceType, WeakSet, WeakValueDictionary

from racecheck.detect.handback import awaiting_frame, waited_for
from racecheck.detect.operands import (
    CONTAINER_METHODS,
    INSORT_FUNCTIONS,
    MISSING,
    NEW,
    NULL,
    POSITION_FUNCTIONS,
    SLOT_CALLS,
    STEP_LOG_OPS,
    Recipe,
    Sym,
    buffer_exporter,
    c_attribute,
    evaluate,
    instance_attribute,
    instance_dict,
    member_slot,
    recipes,
)
from racecheck.detect.operands import (
    _recipes as _RECIPES,
)
from racecheck.instance_state import dict_getter
from racecheck.sources import source_line

_CONTAINERS = (dict, list, set, deque)
_SEQUENCES = (list, deque)
#: sequences whose slices are recorded besides lists (exact types: a subclass
#: with item methods of its own is traced as code instead)
_BUFFERS = (bytearray, array.array)
_SCALARS = (int, float, str, bytes, bool, type(None), tuple, frozenset)
_UNTRACKED_GLOBALS = (ModuleType, type, FunctionType, type(len), type(object.__init__))
_ROUTINES = (FunctionType, type(len))
#: objects whose attribute is another name for some storage (see Detector._other_name)
_OTHER_NAMES = (CellType, ProxyType, CallableProxyType)
#: containers a C operation may read or change whole (``lst == x``, ``t |= x``)
_WHOLE_TYPES = (dict, list, set, deque, bytearray, array.array)
_VARIABLES = frozenset(("global-read", "global-write", "deref-read", "deref-write"))
#: a plain module's own ``__dict__``, read as ``instance_dict`` reads it
_MODULE_DICT: Any = dict_getter(ModuleType)
WHOLE = "*"
#: a container's emptiness: tested by `if self.items:`, changed by removals
NONEMPTY = ("nonempty",)
_REMOVALS = frozenset(("pop", "popleft", "popitem", "remove", "clear"))
LAST = ("last",)


@dataclass(frozen=True)
class Access:
    """One side of a race: who, what, where."""

    actor: str
    action: str  # "read" | "wrote" | "iterated" | "appended to" ...
    target: str  # "self.balance", "context['prior_agent_findings']"
    filename: str
    lineno: int
    line: str
    locks: tuple[str, ...] = ()

    def where(self) -> str:
        return f"{os.path.basename(self.filename)}:{self.lineno}"

    def describe(self) -> str:
        held = f" holding {', '.join(self.locks)}" if self.locks else ""
        return f"{self.actor} {self.action} {self.target} at {self.where()}{held}"


@dataclass(frozen=True)
class Finding:
    """A race the detector saw: its kind, a one-line story, and the accesses."""

    kind: str  # "atomicity-violation" | "data-race"
    pattern: str  # "lost update" | "stale check" | "overwritten before read" | "unsynchronised"
    accesses: tuple[Access, ...]

    def message(self) -> str:
        first, *rest = self.accesses
        if self.kind == "data-race" and len(rest) == 2:
            middle, last = rest
            return (
                f"data race on {last.target}: {first.describe()}; {middle.describe()}"
                " (no happens-before, no common lock), and that read decided: "
                f"{last.describe()}"
            )
        if self.kind == "data-race":
            # a common lock would have ordered them: its hand-off is a happens-before edge
            second = rest[-1]
            return (
                f"data race on {second.target}: {first.describe()}; {second.describe()}"
                " (no happens-before, no common lock)"
            )
        middle, last = rest
        return f"{self.pattern} on {last.target}: " + ", then ".join(
            a.describe() for a in (first, middle, last)
        )


class RaceDetected(AssertionError):
    """The detector's verdict on a run, carried as the failure's cause."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message())
        self.finding = finding


# _Site, _Shadow and _View are made at every access a detected run records:
# plain classes with __slots__: made through a dataclass's generated __init__
# (and, for _Shadow, its default factories), each cost about twice as much.
class _Site:
    """Where and how one access happened."""

    __slots__ = (
        "action",
        "actor",
        "atomic",
        "blind",
        "call_offset",
        "caller",
        "clock",
        "frame",
        "hb",
        "line",
        "locks",
        "offset",
        "passed",
        "private",
        "slot",
    )

    def __init__(
        self,
        actor: int,
        hb: int,
        clock: int,
        action: str,
        frame: FrameType | None,
        lineno: int,
        locks: tuple[str, ...],
        atomic: bool = False,
        caller: FrameType | None = None,
        offset: int = -1,
        slot: bool = False,
        call_offset: int = -1,
        private: bool = False,
        blind: bool = False,
    ) -> None:
        self.actor = actor
        self.hb = hb
        self.clock = clock
        self.action = action
        self.frame = frame
        #: the line, or -1: worked out from ``frame``'s code and ``offset`` when asked
        #: (most sites are never reported; ``f_lineno`` scans the line table)
        self.line = lineno
        self.locks = locks
        #: a single C-level container operation
        self.atomic = atomic
        #: who called ``frame`` (a property's user)
        self.caller = caller
        #: the instruction, to tell a deciding read from a displayed one
        self.offset = offset
        #: a container write of one key or element (not a clear, an extend)
        self.slot = slot
        #: where ``caller`` was when this access ran (its call of ``frame``): what a
        #: returned value is for is read there (see _use)
        self.call_offset = call_offset
        #: a read that ``caller`` returns on again: the frame further up that uses
        #: the value, and where it was then (see _passed_on)
        self.passed: tuple[FrameType, int] | None = None
        #: a write to an object no tracked store had put anywhere yet (see _published_to)
        self.private = private
        #: a write whose actor had not read the location since its own last write: what
        #: it stores was decided by nothing read there (see _nothing_lost)
        self.blind = blind

    @property
    def lineno(self) -> int:
        line = self.line
        if line == -1 and self.frame is not None:
            line = self.line = _line_at(self.frame.f_code, self.offset)
        return line


class _Shadow:
    """What the detector knows of one location."""

    __slots__ = ("checks", "history", "last_writer", "reads", "seq", "writes")

    def __init__(self) -> None:
        self.seq = 0
        self.last_writer: _Site | None = None
        #: per thread, its latest write / read (happens-before checks)
        self.writes: dict[int, _Site] = {}
        self.reads: dict[int, _Site] = {}
        #: per actor, its latest deciding (branch) read: (site, seq then, task step)
        self.checks: dict[int, tuple[_Site, int, int]] = {}
        #: the latest writes, (seq, site): who wrote between a decision and its act
        self.history: list[tuple[int, _Site]] = []


class _View:
    """An actor's last access to a location, for the atomicity checks."""

    __slots__ = ("kind", "seq", "site", "slot", "value")

    def __init__(self, kind: str, seq: int, site: _Site, value: Any, slot: bool = False) -> None:
        self.kind = kind  # "r" | "w"
        self.seq = seq
        self.site = site
        self.value = value
        #: a write of one key or element of a container (its WHOLE view)
        self.slot = slot


#: the key under which an exploration's ``hot_lines`` keeps its type caches
_TYPES: Any = object()
#: entries the type caches hold at most: a class made by each run (a test body's
#: own class) must not pile up over a long exploration
_TYPE_CACHE_LIMIT = 4096


def _type_caches(
    hot_lines: dict[Any, Any],
) -> tuple[dict[Any, bool], dict[tuple[type, str], bool], dict[type, bool]]:
    """The exploration's answers about classes: plain containers, properties, queues.

    Kept for every run of the exploration, in its ``hot_lines`` (which lives as
    long as the exploration), not worked out again by every run's detector:
    the same classes answer the same way from one run to the next, as they
    already did between the accesses of one run.
    """
    caches = hot_lines.get(_TYPES)
    if caches is None or len(caches[0]) + len(caches[1]) + len(caches[2]) > _TYPE_CACHE_LIMIT:
        caches = hot_lines[_TYPES] = ({}, {}, {})
    return caches


class Detector:
    """Shadow memory and clocks for one run; fails the run through ``on_finding``."""

    # One detector per run, and its tables are read at every access: slots, as an
    # instance dictionary of this many entries costs more to make and to read.
    __slots__ = (
        "access_log",
        "awaiting",
        "callback_clock",
        "cells",
        "channel_closes",
        "clocks",
        "current",
        "decisions",
        "descriptors",
        "found",
        "fresh_wake",
        "happens_before",
        "held",
        "hot_lines",
        "keep",
        "last_actor",
        "loaded",
        "locked_gets",
        "log_free",
        "loops",
        "names",
        "next_waker",
        "on_finding",
        "pending",
        "plain",
        "positions",
        "published",
        "queue_items",
        "queues",
        "ranked_items",
        "ranked_waits",
        "received",
        "record_only",
        "removing",
        "running_feed",
        "shadows",
        "signallers",
        "signals",
        "spare_feed",
        "stamps",
        "steps",
        "stored",
        "sync",
        "unsettled",
        "views",
        "woken",
    )

    def __init__(
        self,
        on_finding: Callable[[Finding, int], None],
        *,
        happens_before: bool,
        hot_lines: dict[CodeType, frozenset[int] | None] | None = None,
    ) -> None:
        self.on_finding = on_finding
        self.happens_before = happens_before
        #: actor id -> the name reports use; backends fill it as actors appear
        self.names: dict[int, str] = {}
        #: code object -> lines holding an access (user code), or None (not traced);
        #: shared by the runs of one exploration
        self.hot_lines = {} if hot_lines is None else hot_lines
        self.shadows: dict[tuple[int, Any], _Shadow] = {}
        self.views: dict[tuple[int, tuple[int, Any]], _View] = {}
        self.keep: dict[int, Any] = {}  # objects whose ids key the shadows
        self.clocks: dict[int, dict[int, int]] = {}
        self.signals: dict[int, dict[int, int]] = {}
        #: asyncio: id(handle) -> (the handle, the clock it carries, who (actor, task
        #: step) scheduled it, or None for a plain callback): one entry, made by
        #: ``stamp`` and taken by the step or callback that runs the handle
        self.stamps: dict[int, tuple[Any, dict[int, int], tuple[int, int] | None]] = {}
        self.current: int | None = None
        self.callback_clock: dict[int, int] = {}
        #: id -> (the sync object, its full clock, its signal clock)
        self.sync: dict[int, tuple[Any, dict[int, int], dict[int, int]]] = {}
        self.held: dict[int, list[str]] = {}
        self.last_actor = -1
        #: W–W–R reads waiting to see whether the same actor writes next (then it was
        #: a read-modify-write): (actor, location, view, remote write, read, target)
        self.pending: list[tuple[int, tuple[int, Any], _View, _Site, _Site, str]] = []
        #: writes whose value is known only once the store has run
        self.unsettled: list[tuple[_View, Callable[[], Any]]] = []
        self.found = False
        types = _type_caches(self.hot_lines)
        #: container subclass (and the methods an operation calls) -> whether it
        #: stores like its builtin base
        self.plain: dict[Any, bool] = types[0]
        #: (class, attribute) -> whether a property (data descriptor) handles it
        self.descriptors: dict[tuple[type, str], bool] = types[1]
        #: frame -> closure variable -> its cell (frames stay alive through ``keep``)
        self.cells: dict[FrameType, dict[str, Any]] = {}
        #: (actor, location) -> a read that decides a later write, and a write of
        #: another thread it is not ordered with
        self.decisions: dict[tuple[int, tuple[int, Any]], tuple[_Site, _Site]] = {}
        #: asyncio hand-offs: task steps per actor, and who woke each actor into
        #: its current step (who scheduled a handle: ``stamps``)
        self.steps: dict[int, int] = {}
        self.woken: dict[int, tuple[int, int] | None] = {}
        #: trio: who (actor, step) made each actor runnable, until its next step;
        #: threads: who (thread, critical section) last signalled each sync object
        self.next_waker: dict[int, tuple[int, int] | None] = {}
        self.signallers: dict[int, tuple[int, int]] = {}
        self.fresh_wake: set[int] = set()
        #: type -> whether it is a queue whose emptiness test and take the detector reads
        self.queues: dict[type, bool] = types[2]
        #: id of an asyncio FIFO queue -> (the queue, its items' putters' clocks and
        #: signals, oldest first; None for an item put where the detector did not see)
        self.queue_items: dict[
            int, tuple[Any, deque[tuple[dict[int, int], dict[int, int]] | None]]
        ] = {}
        #: id of an asyncio LIFO or priority queue -> (the queue, its items' putters'
        #: clocks and signals and the objects put, in put order; see _ranked_item)
        self.ranked_items: dict[
            int, tuple[Any, deque[tuple[dict[int, int], dict[int, int], Any] | None]]
        ] = {}
        #: threads: clock id -> (the LIFO or priority ``queue.Queue`` its get is in, the
        #: objects its heap or stack held when the get took the queue's mutex)
        self.locked_gets: dict[int, tuple[Any, list[Any] | None]] = {}
        #: actor -> (the LIFO or priority queue its get waited on, its clock's id, LIFO?)
        self.ranked_waits: dict[int, tuple[Any, int, bool]] = {}
        #: asyncio/trio ``for`` loops over a container: (frame, GET_ITER offset) ->
        #: (container, its WHOLE seq then, its size then, the iterating site, label)
        self.loops: dict[tuple[FrameType, int], tuple[Any, int, Any, _Site, str]] = {}
        #: racecheck.accesses.StepLog fed every access and hand-off (DPOR); with
        #: ``record_only`` the detector only feeds it and never reports
        self.access_log: Any = None
        self.record_only = False
        #: no run of this exploration records DPOR's steps (its chooser observes no
        #: accesses): a 3.12+ feed may switch off for good what only a step log reads
        self.log_free = False
        #: the step feed of the task step running now (3.11's settrace road): a frame
        #: resumed without a call event hands its events to it (detect._step_now)
        self.running_feed: Any = None
        #: the step feed the run's next task step reuses (one object a run, not a step)
        self.spare_feed: Any = None
        #: sequence id -> actor -> (where it located a position in it, the sequence's
        #: WHOLE seq then, the actor's step then): ``bisect``/``index`` results, valid
        #: only until someone else shifts the sequence (see _stale_index)
        self.positions: dict[int, dict[int, tuple[_Site, int, int]]] = {}
        #: (sequence id, actor) -> the user frame that awaited the trio ``to_thread``
        #: worker which located that actor's position (see detect/handback.py)
        self.awaiting: dict[tuple[int, int], FrameType] = {}
        #: (queue, element) of the ``.remove()`` being recorded (see _woken_head_leaves)
        self.removing: tuple[Any, Any] | None = None
        #: threads: reader -> writer -> the writer's clock values whose writes the
        #: reader found published under a lock (see _observed)
        self.published: dict[int, dict[int, set[int]]] = {}
        #: id -> every object a tracked store has put somewhere this run (attribute, item,
        #: global, closure variable): what a thread changes before that is its own
        self.stored: dict[int, Any] = {}
        #: (reader's hb, id) -> (the object, the hb of the thread whose store of it the
        #: reader's load found): that thread published it to the reader (see _published_to)
        self.received: dict[tuple[int, int], tuple[Any, int]] = {}
        #: (frame, offset of an attribute load) -> what it loaded, for the instruction
        #: that acts on it later (Recipe.feeds, Recipe.base_at; MISSING: not known)
        self.loaded: dict[tuple[FrameType, int], Any] = {}
        #: id of a trio memory channel's shared state -> (the state, the clocks and
        #: signals of the steps that closed its ends, joined): see _channel_closed
        self.channel_closes: dict[int, tuple[Any, dict[int, int], dict[int, int]]] = {}

    # -- synchronisation (happens-before) ---------------------------------------------
    # Two vector clocks per actor. ``clocks`` learns every hand-off and decides
    # data races. ``signals`` leaves out lock hand-offs: it says whether an actor
    # *waited for* another (a join, an event, a queue item, an awaited task), which
    # is when seeing that actor's write instead of one's own is the point.
    def _clock(self, hb: int) -> dict[int, int]:
        clock = self.clocks.get(hb)
        if clock is None:
            clock = self.clocks[hb] = {hb: 1}
            self.signals[hb] = {hb: 1}
        return clock

    def _tick(self, hb: int) -> None:
        clock = self._clock(hb)
        clock[hb] += 1
        self.signals[hb][hb] = clock[hb]

    def release(self, hb: int, obj: Any, signal: bool = True, record: bool = True) -> None:
        # ``record=False``: an edge the step log already has through a lock (a
        # Condition's notify -> wait), kept out of DPOR's record
        if record and self.access_log is not None:
            self.access_log.sync(obj)
        clock = self._clock(hb)
        entry = self.sync.get(id(obj))
        if entry is None:
            entry = self.sync[id(obj)] = (obj, {}, {})
        _join(entry[1], clock)
        if signal:
            _join(entry[2], self.signals[hb])
            # threads: a signal sent from a critical section hands over what it decided
            self.signallers[id(obj)] = (hb, self.steps.get(hb, 0))
        self._tick(hb)

    def acquire(self, hb: int, obj: Any, signal: bool = True, record: bool = True) -> None:
        if record and self.access_log is not None:
            self.access_log.sync(obj)
        entry = self.sync.get(id(obj))
        if entry is not None:
            _join(self._clock(hb), entry[1])
            if signal:
                _join(self.signals[hb], entry[2])
                signaller = self.signallers.get(id(obj))
                if signaller is not None and signaller[0] != hb:
                    # acting on the signaller's decision in its next critical section
                    self.woken[hb] = signaller
                    self.fresh_wake.add(hb)

    def fork(self, parent: int, child: int) -> None:
        clock = self._clock(parent)
        self.clocks[child] = {**clock, child: 1}
        self.signals[child] = {**self.signals[parent], child: 1}
        self._tick(parent)

    def joined(self, waiter: int, finished: int) -> None:
        other = self.clocks.get(finished)
        if other is not None:
            _join(self._clock(waiter), other)
            _join(self.signals[waiter], self.signals[finished])

    def lock_acquired(self, hb: int, lock: Any, name: str) -> None:
        self.acquire(hb, lock, signal=False)
        if self.locked_gets:
            self._queue_mutex(hb, lock, True)
        self.held.setdefault(hb, []).append(name)
        # threads: each critical section is a step; a check and a signal made in
        # one are a decision handed over (the stale hand-off rule), acted on by the
        # woken thread before or in its first critical section after the wake-up
        self.steps[hb] = self.steps.get(hb, 0) + 1
        if hb in self.fresh_wake:
            self.fresh_wake.discard(hb)
        elif self.woken.get(hb) is not None:
            self.woken[hb] = None

    def lock_released(self, hb: int, lock: Any, name: str) -> None:
        if self.locked_gets:
            self._queue_mutex(hb, lock, False)
        held = self.held.get(hb)
        if held and name in held:
            held.remove(name)
        self.release(hb, lock, signal=False)

    # asyncio: every wake-up goes through a scheduled handle. The handle carries
    # the clock of whoever scheduled it (a task finishing, a future resolved, a
    # lock released), and the task or callback it runs starts from that clock.
    # stamp and begin_task_step run at every call_soon and every task step,
    # under the step's trace function on 3.11: _tick and _join are written
    # out here (the same operations, in the same order) to spare the calls.
    def stamp(self, handle: Any) -> None:
        current = self.current
        if current is not None:
            own = self.clocks.get(current)
            if own is None:
                own = self._clock(current)
            signals = self.signals[current]  # made with ``own``, by _clock or fork
            clock = signals.copy()
            tick = own[current] + 1
            own[current] = signals[current] = tick
            self.stamps[id(handle)] = (handle, clock, (current, self.steps.get(current, 0)))
        else:
            self.stamps[id(handle)] = (handle, self.callback_clock.copy(), None)

    def begin_task_step(self, actor: int, handle: Any) -> None:
        if actor not in self.clocks:
            self._clock(actor)
        self.steps[actor] = self.steps.get(actor, 0) + 1
        stamped = self.stamps.pop(id(handle), None)
        if stamped is None:
            self.woken[actor] = None
        else:
            stamper = self.woken[actor] = stamped[2]
            # A handle the actor stamped itself (its own ``sleep(0)``, a future it
            # resolved) carries an earlier copy of its own signal clock: both its
            # clocks hold that already (they only grow, and ``signals`` never runs
            # ahead of ``clocks``), so the joins would change nothing.
            if stamper is None or stamper[0] != actor:
                clock = self.clocks[actor]
                signals = self.signals[actor]
                for who, tick in stamped[1].items():
                    if clock.get(who, 0) < tick:
                        clock[who] = tick
                    if signals.get(who, 0) < tick:
                        signals[who] = tick
        self.current = actor

    # trio: a task made runnable (``reschedule``) inside another task's step was woken
    # by that step; one made runnable by trio's run loop (a deadline, I/O) by nobody
    def woke(self, waker: int | None, actor: int) -> None:
        self.next_waker[actor] = None if waker is None else (waker, self.steps.get(waker, 0))

    def begin_step(self, actor: int) -> None:
        """trio: ``actor`` starts a step, on behalf of whoever made it runnable."""
        self.steps[actor] = self.steps.get(actor, 0) + 1
        self.woken[actor] = self.next_waker.pop(actor, None)

    # trio: a wake-up made in a step (``reschedule``) and a child's exit carry the
    # step's signal clock, as asyncio's stamped handles do; the woken task (the
    # nursery's parent, once it is closed) joins it when it next steps
    def hand_off(self, actor: int) -> dict[int, int]:
        """trio: the clock a hand-off made in ``actor``'s step carries; ``actor`` moves on."""
        # _clock and _tick written out (as in stamp): this runs at every wake-up
        own = self.clocks.get(actor)
        if own is None:
            own = self._clock(actor)
        signals = self.signals[actor]
        clock = signals.copy()
        own[actor] = signals[actor] = own[actor] + 1
        return clock

    def handed(self, actor: int, clock: dict[int, int]) -> None:
        """trio: ``actor`` steps on behalf of a hand-off that carried ``clock``."""
        own = self.clocks.get(actor)
        if own is None:
            own = self._clock(actor)
        signals = self.signals[actor]
        for who, tick in clock.items():  # both joins in one pass, as begin_task_step's
            if own.get(who, 0) < tick:
                own[who] = tick
            if signals.get(who, 0) < tick:
                signals[who] = tick

    def begin_callback(self, handle: Any) -> None:
        stamped = self.stamps.pop(id(handle), None)
        if stamped is not None:
            # Callbacks are one pseudo-actor whose clock only grows: a gather's
            # done-callbacks each see one child finish, and the waiter waited for all.
            _join(self.callback_clock, stamped[1])
        self.current = None

    # -- accesses ------------------------------------------------------------------------
    def on_instruction(
        self, frame: FrameType, code: CodeType, offset: int, actor: int, hb: int
    ) -> None:
        if self.found:
            return
        # recipes(code), without the call: the threads tracer hands over every access
        entry = _RECIPES.get(id(code))
        recipe = (entry[1] if entry is not None else recipes(code)).get(offset)
        if recipe is None:
            return
        self.on_recipe(frame, recipe, actor, hb)

    def on_recipe(self, frame: FrameType, recipe: Recipe, actor: int, hb: int) -> None:
        """``on_instruction`` for a caller that has looked the recipe up already."""
        if self.found:
            return
        if recipe.op in STEP_LOG_OPS:
            if self.access_log is None:
                return  # read by DPOR's step log only (a 3.12+ feed still hands them over)
            if recipe.op == "await":
                self._awaited(frame, recipe)
                return
        if self.unsettled:
            # what a store puts somewhere is kept for the threads' publication rule
            # (see _published_to), which only the happens-before checks ask
            stored = self.stored if self.happens_before else None
            for view, value_of in self.unsettled:
                value = view.value = value_of()
                if stored is not None and type(value) not in _EQUAL_BY_VALUE:
                    if id(value) not in stored:
                        stored[id(value)] = value
            self.unsettled.clear()
        if actor != self.last_actor:
            if self.ranked_waits:
                self._resumed_get(actor)
            self._switched(actor)
        try:
            self._access(frame, recipe, actor, hb)
        except Exception:
            pass  # an object the detector cannot read must never break the code under test

    def _awaited(self, frame: FrameType, recipe: Recipe) -> None:
        """An ``await``: no access of its own, but DPOR orders one of a done future."""
        try:
            awaited = evaluate(recipe.base, frame, frame.f_locals)
            if awaited is not MISSING:
                self.access_log.awaited(awaited)
        except Exception:
            pass  # an object the detector cannot read must never break the code under test

    def finish(self) -> None:
        """The run ended: W–W–R reads still pending were not part of an update.

        Then the shadow state lets go of the run's objects (and the frames
        whose locals hold them), so that they die with the run: a library
        keeping its instances in a weak mapping (filelock's singletons, tqdm's
        bars) must start the next schedule as empty as it would without the
        detector. Kept alive, one run's singleton made every later run take
        the cache hit, and the race never showed again.
        """
        if not self.found:
            self._switched(-1, settle=True)
        self._forget()

    def let_go(self) -> None:
        """The run failed: let go of its objects, as :meth:`finish` does, settling nothing.

        The failure is the run's verdict; what the tables still hold (a frame
        whose locals hold a handle a weak cache maps) must not reach the replay
        that checks the failure, or the cache is not empty there.
        """
        self._forget()

    def _forget(self) -> None:
        for table in (
            self.shadows,
            self.views,
            self.keep,
            self.stamps,
            self.sync,
            self.cells,
            self.decisions,
            self.loops,
            self.signallers,
            self.positions,
            self.awaiting,
            self.published,
            self.stored,
            self.received,
            self.loaded,
            self.channel_closes,
            self.pending,
            self.unsettled,
            self.queue_items,
            self.ranked_items,
            self.ranked_waits,
            self.locked_gets,
        ):
            if table:  # most are empty: a test is cheaper than the call
                table.clear()

    def _switched(self, actor: int, settle: bool = False) -> None:
        """Another actor runs: pending W–W–R reads were not the start of an update.

        Unless the read was made holding a lock: a thread preempted between the
        read and the write of a locked ``+=`` is still in its update. Those wait
        for the next access to the location (another actor's: reported; their
        own write: an update) or the end of the run.
        """
        self.last_actor = actor
        if self.pending:
            pending, self.pending = self.pending, []
            for entry in pending:
                owner, _location, view, remote, site, target = entry
                if owner == actor or (site.locks and not settle):
                    self.pending.append(entry)
                else:
                    self._report(
                        "atomicity-violation",
                        "overwritten before read",
                        target,
                        view.site,
                        remote,
                        site,
                    )

    def _access(self, frame: FrameType, recipe: Recipe, actor: int, hb: int) -> None:
        op = recipe.op
        if op in _VARIABLES:
            if op == "global-read":
                # most are a module, class or function: answered here, as _variable would
                value = frame.f_globals.get(recipe.name, MISSING)
                if value is MISSING or isinstance(value, _UNTRACKED_GLOBALS):
                    return
            self._variable(frame, recipe.name, op, actor, hb)
            return
        if self.access_log is not None:
            # what it records may go on past a callback into traced code
            self.access_log.operation_starts(frame, frame.f_lasti)
        if op == "next":
            if not self.happens_before and self.loops:
                self._loop_continues(frame, recipe.name, actor, hb)
            if self.access_log is not None and self.access_log.advancing:
                self.access_log.loop_advanced(frame, recipe.name)
            return
        cached = _LABELS.get(id(recipe))
        if cached is None:
            cached = _LABELS[id(recipe)] = _recipe_plan(recipe)
        # ``for h in core.handlers.values():`` loads the dict here and calls on it at a
        # later point: another thread may store a new dict in between (Recipe.feeds)
        feeds = recipe.feeds
        plain = cached[3]
        if plain is not None:
            # ``name.attr`` (the commonest access): the road below, without its questions
            if plain[0]:
                base = frame.f_globals.get(plain[1], MISSING)
                if base is MISSING:
                    base = frame.f_builtins.get(plain[1], MISSING)
            else:
                base = frame.f_locals.get(plain[1], MISSING)
            if feeds is not None:
                self.loaded[(frame, frame.f_lasti)] = (
                    MISSING if base is MISSING else instance_attribute(base, plain[2])
                )
            if base is MISSING:
                return
            if isinstance(base, ModuleType):
                if type(base) is ModuleType and op == "read":
                    # ``asyncio.sleep``: what _module_attribute answers first, without
                    # the two calls (a plain module's own dictionary, as
                    # instance_dict reads it; a subclass keeps the road)
                    value = _MODULE_DICT(base).get(plain[2], MISSING)
                    if isinstance(value, _UNTRACKED_GLOBALS):
                        return
                self._module_attribute(frame, actor, hb, base, plain[2], op == "write", cached[2])
                return
            self._attribute(
                frame, actor, hb, base, plain[2], op == "write", cached[1], cached[2], recipe.stored
            )
            return
        named = cached[4]
        if named is not None:
            # ``f(...)``, ``module.f(...)`` (most calls): the callable as the general road
            # below rebuilds it, without ``frame.f_locals`` (on 3.11 a copy of every
            # local); a function or a class written in Python runs traced code: done
            callee = frame.f_globals.get(named[0], MISSING)
            if callee is MISSING:
                callee = frame.f_builtins.get(named[0], MISSING)
            if named[1] is not None:
                callee = (
                    callee.__dict__.get(named[1], MISSING)
                    if type(callee) is ModuleType
                    else MISSING  # not a module's: the general road asks the rest
                )
            if type(callee) in _TRACED_CALLABLES or (
                isinstance(callee, type) and _made_in_python(callee)
            ):
                return
        f_locals = frame.f_locals
        if feeds is not None:
            self.loaded[(frame, frame.f_lasti)] = evaluate(feeds, frame, f_locals)
        if op == "whole-read" or op == "inplace":
            if self.access_log is not None:
                self._whole_operands(frame, recipe, f_locals)
            return
        if op == "callee":
            called = recipe.base
            if called is not None and called[0] == "method" and called[2] in _CLOSES:
                # a method written in Python is not rebuilt below: its receiver is enough
                self._channel_closed(hb, evaluate(called[1], frame, f_locals))
            callee = _rebuild_callee(called, frame, f_locals)
            if callee is MISSING:
                if self.access_log is not None and not _python_method(recipe.base, frame, f_locals):
                    self._unknown_callee(frame, actor, hb, recipe, f_locals, cached[1])
                return
            if type(callee) in _TRACED_CALLABLES:
                return
            if isinstance(callee, type) and _made_in_python(callee):
                return  # its __init__ or __new__ is traced code (as _hidden_call finds)
            if callable(callee):
                arguments = _rebuild_arguments(recipe.args, frame, f_locals)
                self._handed(
                    frame,
                    actor,
                    hb,
                    callee,
                    arguments,
                    recipe.args,
                    cached[1],
                    recipe.returns_at[1:],
                )
            return
        if recipe.args and (op == "call" or op == "scan-arg"):
            self._arguments_of_c_call(frame, actor, hb, recipe, f_locals, cached[1])
        base = MISSING
        if recipe.base_at is not None:
            base = self.loaded.get((frame, recipe.base_at), MISSING)
        if base is MISSING:
            base = evaluate(recipe.base, frame, f_locals)
        if base is MISSING:
            if self.access_log is None:
                return
            if recipe.base is not None and recipe.base[0] == "result":
                base = _rebuild_result(recipe.base, frame, f_locals)  # ``list(d.get(k))``
            if base is MISSING:
                self._unplaced(frame, recipe, f_locals)
                return
        if type(base) is MappingProxyType:
            if self.access_log is not None:
                self._class_namespace(frame, recipe, f_locals)
            return
        if op == "slot-call":
            self._slot_call(frame, actor, hb, base, recipe, f_locals, cached[1])
            return
        if type(base) in _MAPPING_VIEWS and not recipe.namespace:
            base = self._behind_view(frame, actor, hb, base, op, cached[1])
            if base is MISSING:
                return
        if type(base) in _WEAK and (recipe.name is None or (op != "read" and op != "write")):
            if recipe.namespace:
                return
            base = _weak_data(base)  # its contents: a set of references, a dict of them
            if base is MISSING:
                return
        label = cached[1]
        if op == "read" or op == "write":
            if recipe.namespace:
                name = evaluate(recipe.key, frame, f_locals)
                if not _is_builtin(recipe.via, frame, f_locals):
                    return
                if type(name) is not str:
                    # ``getattr(o, name_of(k))``: which attribute cannot be told
                    if name is MISSING and self.access_log is not None:
                        self.access_log.touch_any(base, op == "write")
                    return
                self._attribute(frame, actor, hb, base, name, op == "write", label)
                return
            if recipe.name is not None:  # attribute
                self._attribute(
                    frame,
                    actor,
                    hb,
                    base,
                    recipe.name,
                    op == "write",
                    label,
                    cached[2],
                    recipe.stored,
                )
                return
            if not self._plain(base, _item_runs(frame, op)) and not (
                recipe.inner and self._storage(base, recipe)
            ):
                if type(base) in _BUFFERS or type(base) is memoryview:
                    self._buffer_item(frame, base, recipe, op == "write")
                    self._slice_key(frame, actor, hb, base, recipe, label)
                return
            key = evaluate(recipe.key, frame, f_locals)
            if key is MISSING:
                # ``d[id(o)]``, ``lst[i + 1]``: which item cannot be told, so every one
                if self.access_log is not None:
                    self.access_log.touch_any(base, op == "write")
                return
            if type(key) is slice:
                self._slice_key(frame, actor, hb, base, recipe, label)
                return
            if op == "read" and type(base) is not dict and self.access_log is not None:
                _insert_default(self.access_log, base, key)
            self._item(frame, actor, hb, base, key, op == "write", label)
            return
        if op in _SLICE_OPS or op == "position" or op == "insort":
            self._sequence_op(frame, actor, hb, base, recipe, label)
            return
        if op == "call" and recipe.name in _ITEM_HANDOFFS:
            # every ``d.get(k)`` asks: the kind is one cached answer per class
            handoff = _HANDOFF_KINDS.get(type(base))
            if handoff is None:
                if len(_HANDOFF_KINDS) >= _TYPE_CACHE_LIMIT:
                    _HANDOFF_KINDS.clear()  # classes made per run must not pile up
                handoff = _HANDOFF_KINDS[type(base)] = _handoff_kind(type(base))
            if handoff == _FIFO_QUEUE:
                self._queue_item(hb, base, recipe.name in _PUTS, _queue_size(base))
                if recipe.name in _PUTS:
                    return
            elif handoff == _LOCKED_RANKED:
                put = recipe.name in _PUTS
                item = evaluate(recipe.key, frame, f_locals) if put and recipe.key else MISSING
                self._locked_item(hb, base, put, item)
                if put:
                    return
            elif handoff == _LIFO_QUEUE or handoff == _PRIORITY_QUEUE:
                put = recipe.name in _PUTS
                item = evaluate(recipe.key, frame, f_locals) if put and recipe.key else MISSING
                self._ranked_item(actor, hb, base, put, item, handoff == _LIFO_QUEUE)
                if put:
                    return
            elif handoff == _MEMORY_CHANNEL:
                channel = _memory_channel(base)
                if channel is not None:
                    state, buffer = channel
                    put = recipe.name in _PUTS
                    if self.channel_closes and _finds_closed(base, state, buffer, put):
                        self._after_close(hb, state)
                    self._queue_item(hb, state, put, len(buffer))
                    return
        if op == "call" and recipe.name in _QUEUE_METHODS and self._queue(base):
            self._queue_call(frame, actor, hb, base, recipe.name, label)
            return
        if (
            type(base) not in _CONTAINERS
            and not self._plain(base, _runs(recipe))
            and not (recipe.inner and self._storage(base, recipe))
        ):
            if self.access_log is not None:
                self._c_whole(frame, base, recipe)
            return
        if op == "truth":
            self._emptiness(frame, actor, hb, base, label)
            return
        if op == "contains":
            element = evaluate(recipe.key, frame, f_locals)
            if element is MISSING:
                self._whole(frame, actor, hb, base, False, label, "checked")
                return
            location = element if isinstance(base, dict) else ("in", element)
            self._membership(base)
            self._touch_item(frame, actor, hb, base, location, False, label, element, "checked")
            return
        if op == "scan-arg" and recipe.name == "len":
            # one C call, atomic like a single load; `if len(q) > 0:` tests emptiness
            self._emptiness(frame, actor, hb, base, label)
            if not self.found:
                self._whole(frame, actor, hb, base, False, label, "measured", atomic=True)
            return
        if op == "iterate" or op == "scan-arg":
            # list(x), tuple(x), sorted(x) copy the container in one C call before
            # anything else runs (sorted compares the copy): atomic, like len, so
            # they race with a loop over x but not with another atomic store
            copy = op == "scan-arg" and recipe.name in _COPIES
            self._whole(frame, actor, hb, base, False, label, "iterated", atomic=copy)
            if op == "iterate" and not self.happens_before and not self.found:
                self._loop_began(frame, actor, base, label)
            return
        if op == "call":
            kind, _ = CONTAINER_METHODS[recipe.name]
            if kind == "queue":
                return  # a queue's method on something that is not a queue
            element = evaluate(recipe.key, frame, f_locals) if recipe.key is not None else MISSING
            self._method(frame, actor, hb, base, kind, recipe.name, element, label)

    def _unplaced(self, frame: FrameType, recipe: Recipe, f_locals: dict[str, Any]) -> None:
        """For DPOR: an access whose object cannot be rebuilt without running code.

        ``get().counter = 1``, ``next(...)["id"]``, ``self.prop.x``: the
        object is a call's result or a property's value. Dropping the access
        let DPOR call a lost update through ``get().counter`` verified. A write
        (or a dunder call) may change anything; a read meets every write of
        its key on any object (``StepLog.unplaced_read``). The
        container operations' C calls (``.append``) are recorded by the step
        log itself, bound to their object.
        """
        log = self.access_log
        assert log is not None
        op = recipe.op
        if op in ("write", "slice-write", "slice-delete", "slot-call", "insort"):
            log.opaque()
            return
        base = recipe.base
        if op in _READS_WHOLE:
            # a loop reads it on in the actor's later steps, and a lazy C iterator
            lingers = op == "iterate" or (
                op == "scan-arg" and _lazy_iterator(evaluate(("global", recipe.name), frame))
            )
            returned_at = recipe.returns_at[0] if recipe.returns_at else None
            if base is not None and (
                base[0] == "merged" or base[0] == "awaited" or returned_at is not None
            ):
                self._unreached_read(frame, base, f_locals, lingers, returned_at)
                return
            if _may_hide_state(base, frame, f_locals, 0):
                # ``sorted(get())``, ``for x in get()``: all of a container no name reaches
                _read_anything(log, lingers)
                return
        if op != "read" and op != "contains" and op != "slice-read":
            return
        if recipe.name is not None:
            key: Any = recipe.name
        else:
            key = evaluate(recipe.key, frame, f_locals) if op != "slice-read" else MISSING
            if key is MISSING:
                key = None  # any key
        log.unplaced_read(key)

    def _class_namespace(self, frame: FrameType, recipe: Recipe, f_locals: dict[str, Any]) -> None:
        """For DPOR: a class's ``__dict__`` (a mappingproxy) kept in a variable:
        ``ns = Cls.__dict__; ... ns["x"]``, ``"x" in ns``, ``ns.get("x")``.

        Its items are the class's attributes, but which class it shows cannot be
        had from the proxy without a scan of the heap: a read of the key on an
        unknown object (StepLog.unplaced_read), which meets ``Cls.x = ...``; a
        whole read (iteration, ``len``) reads any key. It was dropped (a proxy
        is no container the detector knows), and DPOR called an order bug verified.
        """
        log = self.access_log
        assert log is not None
        op = recipe.op
        keyed = op == "read" or op == "contains" or (op == "call" and recipe.name == "get")
        key = evaluate(recipe.key, frame, f_locals) if keyed else MISSING
        log.unplaced_read(key if isinstance(key, str) else None)

    def _whole_operands(self, frame: FrameType, recipe: Recipe, f_locals: dict[str, Any]) -> None:
        """For DPOR: containers a C operation reads (or changes) whole, in one instruction.

        ``lst == [1]``, ``first, = lst``, ``f"{lst}"``, ``repr(lst)`` and ``lst + other``
        read every item; ``table |= {...}``, ``items += [...]`` and ``items *= 2`` change
        the container in its own C slot, which fires no profile event. Spelled on a
        local alias of shared state, nothing else records them, and DPOR called an
        order bug on ``1 in lst`` and a lost update on ``t = shared; t |= ...`` verified.
        """
        log = self.access_log
        assert log is not None
        if recipe.op == "inplace":
            target = evaluate(recipe.base, frame, f_locals)
            if isinstance(target, _WHOLE_TYPES):
                log.touch_any(target, True)
        for operand in recipe.args:
            value = evaluate(operand, frame, f_locals)
            if isinstance(value, _WHOLE_TYPES):
                log.touch_any(value, False)

    def _membership(self, base: Any) -> None:
        """For DPOR: ``x in lst`` reads every item, as any item store may make it true."""
        if self.access_log is not None and isinstance(base, _SEQUENCES):
            self.access_log.touch_any(base, False)

    def _absent_attribute(self, base: Any, namespace: dict[str, Any], name: str) -> None:
        """For DPOR: a read of ``base.name`` that the instance's own dictionary does not answer.

        ``hasattr(o, "conn")`` before a lazy ``o.conn = ...``, ``getattr(o, "x", None)``
        after another thread's ``del o.x``, ``conf.timeout`` answered by the class:
        what it finds depends on the instance's entry (absent now, stored by another
        thread later) and on each class along the MRO up to the one that defines the
        name. These reads were dropped, and DPOR called such order bugs verified.
        ``o.__dict__`` (``vars(o)``) is the storage itself: its items are ``o``'s
        attributes from then on (StepLog.alias).
        """
        log = self.access_log
        assert log is not None
        owner = namespace if type(base) is _thread._local else base
        log.touch(owner, name, False)
        if name == "__dict__":
            log.alias(namespace, owner)
            return
        if name == "__class__":
            return  # the object's own: written as a whole (see _attribute)
        for klass in _TYPE_MRO(type(base)):
            found = _TYPE_DICT(klass).get(name, MISSING)
            if found is MISSING:
                log.touch(klass, name, False)
                continue
            if not _is_code(found):  # a method or property is code, not state
                log.touch(klass, name, False)
            return

    def _other_name(self, base: Any, name: str, write: bool) -> None:
        """For DPOR: ``cell.cell_contents``, ``proxy.x``: another name for some storage.

        A closure's cell is the storage of its variable (``_variable``): its contents
        are that variable, named by the functions that close over the cell (a scan
        of the heap, for a rare operation); a cell no function holds is treated as
        a proxy's object. A ``weakref.proxy`` forwards to an object that no
        code can name without running the proxy, so a write through one may
        change anything, and a read is checked as one on an unknown object
        (StepLog.unplaced_read). Both were dropped: their types have no ``__dict__``.
        """
        log = self.access_log
        assert log is not None
        if type(base) is CellType:
            if name != "cell_contents":
                return
            names = _cell_names(base)
            for variable in names:
                # as _variable keys it, with the detector (the cell) and without (merged)
                merged = _MERGED_CELLS.get(variable)
                if merged is None:
                    merged = _MERGED_CELLS[variable] = _MergedCell()
                log.touch(base, ("cell", variable), write)
                log.touch(merged, ("cell", variable), write)
            if names:
                return
        if write:
            log.opaque()
        else:
            log.unplaced_read(None if type(base) is CellType else name)  # a cell's: any name

    def _lookup_misses(self, cls: type, name: str) -> None:
        """For DPOR: the classes a lookup of ``cls.name`` passed along the MRO, finding nothing.

        Another thread giving one of them ``name`` (``Derived.timeout = 1`` over
        ``Base.timeout``) changes what the lookup finds: each is a read of (class, name).
        """
        log = self.access_log
        assert log is not None
        for klass in _TYPE_MRO(cls):
            if name in _TYPE_DICT(klass):
                return
            log.touch(klass, name, False)

    def _module_attribute(
        self,
        frame: FrameType,
        actor: int,
        hb: int,
        module: ModuleType,
        name: str,
        write: bool,
        target: str,
    ) -> None:
        """``settings.counter``: a module's global, read or written from outside it.

        Keyed as the module's own code keys it (its namespace and the name), so
        ``settings.counter += 1`` conflicts with ``global counter`` inside
        ``settings``. As for globals, reading a function, class or submodule is
        no access: bindings nobody races on, and most of what ``mod.name``
        reads. A read that finds nothing is one (a lazy module's ``__getattr__``
        runs next, and whether it does depends on the writes). These were all
        skipped once, and DPOR called lost updates on a settings module, and
        apipkg's half-set-up lazy module, verified.
        """
        namespace = instance_dict(module)  # never a ``__dict__`` property (apipkg's loads all)
        if type(namespace) is not dict:
            return
        if not write:
            value = namespace.get(name, MISSING)
            if isinstance(value, _UNTRACKED_GLOBALS):
                return
        self._touch(
            frame,
            actor,
            hb,
            namespace,
            name,
            write,
            target if target.endswith(f".{name}") else f"{target}.{name}",
            lambda: namespace.get(name, MISSING),
        )

    def _slot_call(
        self,
        frame: FrameType,
        actor: int,
        hb: int,
        receiver: Any,
        recipe: Recipe,
        f_locals: dict[str, Any],
        label: str,
    ) -> None:
        """An attribute or item access spelled as a call of its dunder.

        ``object.__setattr__(obj, "x", v)`` and ``dict.__setitem__(d, k, v)``
        call a type's slot wrapper unbound, ``obj.__setattr__("x", v)`` bound.
        A slot wrapper is C code that fires no profile event, so nothing else
        sees these: DPOR called lost updates through them verified. A dunder
        written in Python is traced code, and its own accesses are the real ones.
        """
        args = [evaluate(sym, frame, f_locals) for sym in recipe.args]
        if isinstance(receiver, type):
            owner = receiver
            target = args.pop(0) if args else MISSING
        else:
            owner, target = type(receiver), receiver
        method = recipe.name
        if any(isinstance(_TYPE_DICT(klass).get(method), FunctionType) for klass in owner.__mro__):
            return
        key = args[0] if args else MISSING
        if target is MISSING or key is MISSING:
            if self.access_log is not None:
                self.access_log.opaque()  # what it touched cannot be told
            return
        kind = SLOT_CALLS[method]
        write = kind == "write"
        if method.endswith("attr__") or method == "__getattribute__":
            if type(key) is str:
                self._attribute(frame, actor, hb, target, key, write, label)
            return
        if not isinstance(target, _CONTAINERS):
            return
        if kind == "contains":
            location = key if isinstance(target, dict) else ("in", key)
            self._membership(target)
            self._touch_item(frame, actor, hb, target, location, False, label, key, "checked")
            return
        self._item(frame, actor, hb, target, key, write, label)

    def _arguments_of_c_call(
        self,
        frame: FrameType,
        actor: int,
        hb: int,
        recipe: Recipe,
        f_locals: dict[str, Any],
        label: str,
    ) -> None:
        """The other arguments of a container method or scanning builtin (``mine.extend(l)``,
        ``map(l.append, xs)``): what C reads or calls of them. The recipe's own operand (the
        bound container, a scanning builtin's container) is recorded where it is handled."""
        arguments = _rebuild_arguments(recipe.args, frame, f_locals)
        if recipe.op == "call":
            if recipe.name in _STORES_ARGUMENTS:
                return
            owner = evaluate(recipe.base, frame, f_locals)
            method = _c_method(owner, recipe.name) if owner is not MISSING else MISSING
            if method is MISSING:
                return  # a method written in Python: traced code, recorded where it runs
            self._handed(
                frame, actor, hb, method, arguments, recipe.args, label, recipe.returns_at[1:]
            )
            return
        if isinstance(arguments[0], _CONTAINERS):
            arguments[0] = MISSING  # read by the recipe itself (len: only its size)
        callee = evaluate(("global", recipe.name), frame, f_locals)
        if callee is not MISSING and type(callee) not in _TRACED_CALLABLES:
            # the first argument is the recipe's own operand, which _unplaced reads
            others = (None, *recipe.args[1:])
            self._handed(frame, actor, hb, callee, arguments, others, label, recipe.returns_at[1:])

    def _handed(
        self,
        frame: FrameType,
        actor: int,
        hb: int,
        callee: Any,
        arguments: list[Any],
        syms: tuple[Sym, ...],
        label: str,
        returns_at: tuple[int | None, ...] = (),
    ) -> None:
        """A C call from traced code: what it does (_hidden_call), and for DPOR what it
        is handed that no name reaches (_unseen_arguments; ``returns_at``: where a
        getter returns each argument, Recipe.returns_at)."""
        self._hidden_call(frame, actor, hb, callee, arguments, label, 0)
        if self.access_log is not None and any(a is MISSING for a in arguments):
            self._unseen_arguments(frame, syms, frame.f_locals, callee, returns_at)

    def _unseen_arguments(
        self,
        frame: FrameType,
        syms: tuple[Sym, ...],
        f_locals: dict[str, Any],
        callee: Any,
        returns_at: tuple[int | None, ...] = (),
    ) -> None:
        """For DPOR: C code handed a value no name reaches: ``islice(get(), 2)``,
        ``sorted(self.snapshot())``, ``mine.extend(*a)`` with ``a`` made in place.

        The value is the result of a call the detector cannot rebuild (a function
        written in Python may return shared state), so which container C reads is
        not known: a read of any key on any object (StepLog.unplaced_read), to the
        actor's end when a lazy iterator reads it as it is consumed. Dropped, DPOR
        called order bugs through ``list(islice(get(), 1))`` verified.
        """
        log = self.access_log
        assert log is not None
        if isinstance(callee, type) and _made_in_python(callee):
            return  # its __init__ is traced code, which records what it reads
        for index, sym in enumerate(syms):
            if sym is None:
                continue
            at = returns_at[index] if index < len(returns_at) else None
            if (
                sym[0] == "merged"
                or sym[0] == "awaited"
                or (at is not None and evaluate(sym, frame, f_locals) is MISSING)
            ):
                self._unreached_read(frame, sym, f_locals, _lazy_iterator(callee), at)
            elif _may_hide_state(sym, frame, f_locals, 0):
                _read_anything(log, _lazy_iterator(callee))
                return

    def _unreached_read(
        self,
        frame: FrameType,
        sym: tuple[Any, ...],
        f_locals: dict[str, Any],
        lingers: bool,
        returned_at: int | None = None,
    ) -> None:
        """For DPOR: a loop or C code reads all of a value no name reaches: one two paths
        merged (``for v in (self.items or [])``, ``sorted(a if c else b)``,
        ``mine.extend(l or [])``), an await's (``for v in await self.fetch()``), or a
        property's (``for v in self.pending``: its getter returns it at ``returned_at``).

        Which alternative ran cannot be told when it is read, so each is read: all
        of each object its alternative names (StepLog.touch_any), or Python code
        returned (StepLog.returned_value); anything when one is a value that may
        hide state and was not kept. ``lingers``: a loop or a lazy C iterator goes
        on reading it in the actor's later steps. Only the step log records this:
        an access that may not have happened is no race to report.
        """
        log = self.access_log
        assert log is not None
        start = len(log.current)
        for alternative in sym[1] if sym[0] == "merged" else (sym,):
            if alternative[0] == "awaited":
                value = log.returned_value(frame, alternative[1])
            else:
                value = evaluate(alternative, frame, f_locals)
                if value is MISSING and returned_at is not None:
                    value = log.returned_value(frame, returned_at)
            if value is not MISSING:
                if type(value) not in _SCALARS:
                    log.touch_any(value, False)
            elif _may_hide_state(alternative, frame, f_locals, 0):
                log.unplaced_read(None)
        if lingers:
            log.linger_from(start)

    def _unknown_callee(
        self,
        frame: FrameType,
        actor: int,
        hb: int,
        recipe: Recipe,
        f_locals: dict[str, Any],
        label: str,
    ) -> None:
        """For DPOR: a call whose callable the detector cannot rebuild without running code:
        ``make_setter()(v)``, ``getattr(holder, name)(v)``, ``self.prop.setter(v)``.

        A function written in Python is traced code, and a builtin fires a profile
        event that names it (then its arguments are read as for any C call); a C
        callable object (``functools.partial(setattr, o, "x")``) fires nothing, and
        DPOR called lost updates through one verified. So the step log waits for
        the call's event (StepLog.expect_call): a call that fires none makes the
        step opaque.
        """
        log = self.access_log
        assert log is not None
        arguments = _rebuild_arguments(recipe.args, frame, f_locals)

        def builtin_called(function: Any) -> None:
            self._handed(
                frame, actor, hb, function, arguments, recipe.args, label, recipe.returns_at[1:]
            )

        log.expect_call(frame, frame.f_lasti, builtin_called)

    def _hidden_call(
        self,
        frame: FrameType,
        actor: int,
        hb: int,
        callee: Any,
        arguments: list[Any],
        label: str,
        depth: int,
    ) -> None:
        """A call of C code from traced code, or (``depth`` > 0) by C code for it.

        A profile hook reports a C call only for a builtin function or method called
        from Python code, and only names the object the method is bound to. What C
        does inside goes unseen: a ``functools.partial`` or ``operator`` object calls
        C functions, reads attributes and items; an ``lru_cache`` wrapper checks and
        fills its cache; ``map``/``filter``/``itertools`` objects read containers lazily
        and call what they were given; ``"".join(l)``, ``mine.extend(l)``, ``t.update(d)``
        read the container handed over. DPOR called lost updates through each of these
        verified. Unknown operands stay conservative: an attribute read of an object
        not rebuilt is an unplaced read, a C function called with unknown arguments is
        recorded as a C call of unknown effect (StepLog.c_called), an unknown kind of C
        callable object makes the step opaque.
        """
        log = self.access_log
        kind = type(callee)
        if depth > _HIDDEN_DEPTH:
            if log is not None:
                log.opaque()
            return
        if kind in _TRACED_CALLABLES:
            return  # its frame is traced code (called by C, its caller is still the user's)
        if kind is staticmethod:
            self._hidden_call(frame, actor, hb, callee.__func__, arguments, label, depth + 1)
            return
        if kind is partial:
            given = [*callee.args, *arguments, *callee.keywords.values()]
            self._hidden_call(frame, actor, hb, callee.func, given, label, depth + 1)
            return
        if kind is attrgetter or kind is itemgetter:
            self._getter(frame, actor, hb, callee, arguments, label)
            return
        if kind is methodcaller:
            name, given = _methodcaller_parts(callee)
            target = arguments[0] if arguments else MISSING
            method = _c_method(target, name) if target is not MISSING else MISSING
            if method is not MISSING:
                self._hidden_call(frame, actor, hb, method, given, label, depth + 1)
            elif target is MISSING and log is not None:
                log.opaque()  # a method of an object not rebuilt
            return
        if kind is _LRU_WRAPPER:
            if log is not None:
                log.cached_call(callee)
            return
        kind = _routine_kind(kind)
        if kind in _C_ROUTINES:
            if kind in _UNBOUND and arguments and isinstance(arguments[0], callee.__objclass__):
                callee, arguments = callee.__get__(arguments[0]), arguments[1:]
                kind = _routine_kind(type(callee))
            name = getattr(callee, "__name__", "")
            if depth > 0 or kind not in _PROFILED:
                if callee in _ATTRIBUTE_BUILTINS and len(arguments) >= 2:
                    target, attribute = arguments[0], arguments[1]
                    if target is not MISSING and type(attribute) is str:
                        write = callee is setattr or callee is delattr
                        self._attribute(frame, actor, hb, target, attribute, write, label)
                        return
                if log is not None:
                    log.c_called(callee, frame)  # no profile event fires for it
            if name not in _STORES_ARGUMENTS:
                self._c_arguments(frame, actor, hb, arguments, label, depth)
            return
        if isinstance(callee, type):
            if not _made_in_python(callee):  # else its __init__ or __new__ is traced code
                lazy = _lazy_iterator(callee)
                self._c_arguments(frame, actor, hb, arguments, label, depth, lazy, lazy)
            return
        if _python_call(kind) or kind in _INERT_CALLABLES:
            return
        if log is not None:
            log.opaque()  # a C callable object racecheck does not know: anything may happen

    def _c_arguments(
        self,
        frame: FrameType,
        actor: int,
        hb: int,
        arguments: list[Any],
        label: str,
        depth: int,
        lazy: bool = False,
        calls: bool = True,
    ) -> None:
        """What C code does with what it is handed: a container is read whole, a C
        callable is called (``calls``: by a C routine, or a lazy iterator). A lazy
        iterator (``map``, ``filter``, ``itertools``) does so as it is consumed, maybe
        in the actor's later steps: there it is recorded again, to the actor's end."""
        log = self.access_log
        start = len(log.current) if log is not None and lazy else -1
        for value in arguments:
            if value is MISSING or isinstance(value, _SCALARS):
                continue
            if isinstance(value, _CONTAINERS):
                self._whole(frame, actor, hb, value, False, label, "iterated", atomic=not lazy)
            elif isinstance(value, _BUFFERS):
                if log is not None:
                    log.touch_any(value, False)
            elif calls and callable(value) and type(value) not in _TRACED_CALLABLES:
                self._hidden_call(frame, actor, hb, value, [], label, depth + 1)
        if log is not None and start >= 0:
            log.linger_from(start)

    def _getter(
        self,
        frame: FrameType,
        actor: int,
        hb: int,
        getter: Any,
        arguments: list[Any],
        label: str,
    ) -> None:
        """``attrgetter("x")(o)``, ``itemgetter("k")(d)``: reads made by C."""
        log = self.access_log
        keys = getter.__reduce__()[1]
        target = arguments[0] if arguments else MISSING
        for key in keys:
            if type(getter) is attrgetter:
                head, *rest = key.split(".")
                if target is MISSING:
                    if log is not None:
                        log.unplaced_read(head)
                else:
                    self._attribute(frame, actor, hb, target, head, False, label)
                for name in rest:  # of an object the detector does not rebuild
                    if log is not None:
                        log.unplaced_read(name)
            elif isinstance(target, _CONTAINERS) and self._plain(target):
                self._item(frame, actor, hb, target, key, False, label)
            elif log is not None:
                if target is MISSING:
                    log.unplaced_read(key if isinstance(key, _SCALARS) else None)
                elif isinstance(target, (*_CONTAINERS, *_BUFFERS)):
                    log.touch_any(target, False)

    def _attribute(
        self,
        frame: FrameType,
        actor: int,
        hb: int,
        base: Any,
        name: str,
        write: bool,
        label: str,
        target: str | None = None,
        stored: Sym = None,
    ) -> None:
        """``base.name``, however spelled: ``.name``, ``getattr``, ``vars(base)[...]``.

        ``target``: ``f"{label}.{name}"`` when the caller has it already (made
        once per recipe, not at every access); ``stored``: a store's value (Recipe).
        """
        # most accesses are to an ordinary object's own attribute: what kind of
        # object it is is one cached answer per class (_ordinary_dict)
        getter = _ORDINARY_DICTS.get(type(base), MISSING)
        if getter is MISSING:
            if len(_ORDINARY_DICTS) >= _TYPE_CACHE_LIMIT:
                _ORDINARY_DICTS.clear()  # classes made per run must not pile up
            getter = _ORDINARY_DICTS[type(base)] = _ordinary_dict(type(base))
        if getter is not None and not callable(base):
            namespace = getter(base)
        else:
            if type(base) in _OTHER_NAMES and self.access_log is not None:
                self._other_name(base, name, write)
                return
            if isinstance(base, type):
                self._class_attribute(frame, actor, hb, base, name, write, label)
                return
            if isinstance(base, ModuleType):
                self._module_attribute(frame, actor, hb, base, name, write, target or label)
                return
            if callable(base) and not hasattr(base, "__dict__"):
                return
            try:
                if type(base) is _thread._local:
                    # its per-thread dict; a subclass could run its __init__ here: not read
                    namespace = _thread._local.__getattribute__(base, "__dict__")
                else:
                    namespace = instance_dict(base)
            except AttributeError:
                # no __dict__: a class with __slots__ keeps its state in them
                self._slot_attribute(frame, actor, hb, base, name, write, label)
                return
        if type(namespace) is not dict:
            return
        if target is None:
            target = f"{label}.{name}"
        if not write:
            value = namespace.get(name, MISSING)
            if value is MISSING:
                if self.access_log is not None:
                    self._absent_attribute(base, namespace, name)
                self._slot_attribute(frame, actor, hb, base, name, write, label)
                return
            if isinstance(value, _ROUTINES):
                return  # a method or class attribute: not instance state
            # a read's value is the one just loaded: no closure to read it again; a
            # threading.local's __dict__ is the current thread's: that dict is the storage
            owner = namespace if type(base) is _thread._local else base
            self._touch(frame, actor, hb, owner, name, False, target, _no_value, value=value)
            return
        if name == "__class__" and self.access_log is not None:
            # every later lookup on the object changes: its methods, isinstance
            self.access_log.touch_any(base, True)
            return
        if self._descriptor(type(base), name):
            # a property's setter runs instead: its own accesses are the real ones
            self._slot_attribute(frame, actor, hb, base, name, write, label)
            return
        if self.positions and self._stale_index(
            frame, actor, hb, namespace.get(name, MISSING), target, "replaced"
        ):
            return
        # a threading.local's __dict__ is the current thread's: that dict is the storage
        owner = namespace if type(base) is _thread._local else base
        self._touch(
            frame,
            actor,
            hb,
            owner,
            name,
            write,
            target,
            lambda: namespace.get(name, MISSING),
            stored=stored,
        )

    def _slot_attribute(
        self, frame: FrameType, actor: int, hb: int, base: Any, name: str, write: bool, label: str
    ) -> None:
        """``base.name`` where ``name`` is one of the class's ``__slots__``.

        A slot is a member descriptor on the class, not an entry of an
        instance ``__dict__``: libraries that declare ``__slots__`` for speed
        (aiorwlock 1.5.1's lock) keep all their state there. Keyed like a
        ``__dict__`` attribute, ``(obj, name)``; read through the descriptor
        itself, so no user ``__getattr__`` runs.
        """
        cls = type(base)
        slot = member_slot(cls, name)
        if slot is None:
            if self.access_log is not None and c_attribute(cls, name):
                # kept in the C object (ctypes' .value, decimal.Context's .prec): for DPOR
                self.access_log.touch(base, name, write)
            return

        def value_of() -> Any:
            try:
                return slot.__get__(base, cls)
            except AttributeError:
                return MISSING  # a slot never set (or deleted)

        if not write and value_of() is MISSING:
            return  # the read raises AttributeError: nothing was read
        if write and self.positions:
            if self._stale_index(frame, actor, hb, value_of(), f"{label}.{name}", "replaced"):
                return
        self._touch(frame, actor, hb, base, name, write, f"{label}.{name}", value_of=value_of)

    def _loop_began(self, frame: FrameType, actor: int, base: Any, label: str) -> None:
        """A ``for`` loop over a container began: remember what it saw (asyncio, trio)."""
        location = (id(base), WHOLE)
        view = self.views.get((actor, location))
        if view is not None:
            self.loops[(frame, frame.f_lasti)] = (base, view.seq, view.value, view.site, label)

    def _loop_continues(self, frame: FrameType, began: int, actor: int, hb: int) -> None:
        """The loop takes its next element: did another task resize the container meanwhile?

        Across an ``await`` in the loop's body, another task's insert or removal
        makes a set or dict raise "changed size during iteration", and makes a
        list skip or repeat an element without a word: iteration against
        mutation, the single-threaded form of the data race. Storing a value
        under an existing key (same size) is not one.
        """
        entry = self.loops.get((frame, began))
        if entry is None:
            return
        base, seq, size, site, label = entry
        shadow = self.shadows.get((id(base), WHOLE))
        if shadow is None or shadow.seq <= seq:
            return
        others = [w for s, w in shadow.history if s > seq and w.actor != actor]
        if not others:
            return
        if all(w.action == "wrote" for w in others) and _builtin_of(base).__len__(base) == size:
            return  # values stored under keys it already had
        now = _Site(
            actor,
            hb,
            self._clock(hb)[hb],
            "kept iterating",
            frame,
            frame.f_lineno,
            tuple(self.held.get(hb, ())),
        )
        self.loops.pop((frame, began), None)
        self._report("atomicity-violation", "iterated while mutated", label, site, others[-1], now)

    def _sequence_op(
        self, frame: FrameType, actor: int, hb: int, base: Any, recipe: Recipe, label: str
    ) -> None:
        """Slices (``lst[a:b]``, ``lst[a:b] = v``, ``del lst[a:b]``) and ``bisect`` calls.

        A slice read copies part of the sequence: one C call, atomic like
        ``len``. A slice store or delete rewrites the sequence as a whole (an
        insertion at the front shifts every index). ``bisect`` searches the
        whole sequence for a position, which stays true only until somebody
        shifts the sequence; ``insort`` searches and inserts in one call.
        """
        op = recipe.op
        if op == "position" or op == "insort":
            function = evaluate(recipe.via, frame, frame.f_locals)
            if not any(function is known for known in _BISECT_FUNCTIONS):
                return
        if type(base) not in _BUFFERS and (
            not isinstance(base, _SEQUENCES) or not self._plain(base)
        ):
            return
        if op == "slice-read":
            self._whole(frame, actor, hb, base, False, label, "copied a slice of", atomic=True)
            return
        if op == "position":
            self._whole(frame, actor, hb, base, False, label, "located a position in")
            if not self.found:
                self._located(frame, actor, base)
            return
        action = {
            "slice-write": "wrote a slice of",
            "slice-delete": "deleted a slice of",
            "insort": f"called {recipe.name}() on",
        }[op]
        if self.access_log is not None and op != "insort":
            # for DPOR: the items it replaces or shifts are written, not only the
            # size and the end (``b[0:1] = x`` against a read of ``b[0]``)
            self.access_log.touch_any(base, True)
        # insort calls a key function of the user's between its comparisons
        self._whole(frame, actor, hb, base, True, label, action, atomic=op != "insort")
        if not self.found:
            self._touch_item(frame, actor, hb, base, LAST, True, label, -1, action, atomic=True)

    def _buffer_item(self, frame: FrameType, base: Any, recipe: Recipe, write: bool) -> None:
        """For DPOR: an item of a bytearray, an ``array.array`` or a memoryview.

        The detector does not judge these (a byte buffer filled in a loop is no
        shared counter), but they are state two actors can race on: unrecorded,
        DPOR called a lost update on ``b[0]`` verified. An index is keyed as
        its place (``b[-1]`` is ``b[len(b) - 1]``); a slice store or a
        deletion may move every item, and a memoryview's items are its
        exporter's, at an offset and in a format of the view's: every item.
        """
        log = self.access_log
        if log is None:
            return
        if type(base) is memoryview:
            log.touch_any(buffer_exporter(base), write)
            return
        key = evaluate(recipe.key, frame, frame.f_locals)
        if type(key) is int and not (write and _deletes(frame)):
            log.touch(base, key + len(base) if key < 0 else key, write)
            return
        log.touch_any(base, write)

    def _c_whole(self, frame: FrameType, base: Any, recipe: Recipe) -> None:
        """For DPOR: a loop, a scan or a test of a C object the detector does not judge.

        A buffer (or a memoryview's exporter) is read as a whole. An iterator
        that advances in C (a list's, a range's, a generator, a file) is
        changed by whatever takes items from it: ``list(it)``, ``sum(it)``,
        and each later step of ``for x in it`` (StepLog.loop_advanced). Two
        actors sharing one take each other's items.
        """
        log = self.access_log
        op = recipe.op
        if type(base) in _BUFFERS or type(base) is memoryview:
            if op in ("iterate", "scan-arg", "contains", "truth"):
                owner = buffer_exporter(base) if type(base) is memoryview else base
                log.touch(owner, WHOLE, False, op == "iterate")
        elif (op == "iterate" or op == "scan-arg") and _self_iterator(type(base)):
            if op == "iterate":
                following = recipes(frame.f_code).get(frame.f_lasti + 2)
                log.loop_over(frame, base, following is not None and following.op == "next")
            else:
                log.advanced(base)

    def _behind_view(
        self, frame: FrameType, actor: int, hb: int, view: Any, op: str, label: str
    ) -> Any:
        """The dict a ``MappingProxyType`` or a dict's view made once shows, or MISSING.

        Its items, its size and its keys are the dict's: ``proxy[k]``,
        ``k in keys``, ``len(items)`` are accesses of the dict. ``(k, v) in
        items`` and ``v in values`` compare with every entry: a read of the
        whole (recorded here; MISSING tells the caller it is done).
        """
        referents = gc.get_referents(view)
        mapping = referents[0] if len(referents) == 1 else MISSING
        if not isinstance(mapping, dict):
            return MISSING
        if op == "contains" and type(view) in _ENTRY_VIEWS:
            self._whole(frame, actor, hb, mapping, False, label, "checked")
            return MISSING
        return mapping

    def _slice_key(
        self, frame: FrameType, actor: int, hb: int, base: Any, recipe: Recipe, label: str
    ) -> None:
        """A subscript whose key turns out to be a slice object at run time.

        ``self._data[key] = value`` in a user sequence's ``__setitem__``, called
        with ``seq[a:b] = v``, or ``lst[s]`` with ``s = slice(...)``: a slice
        access like ``lst[a:b]``, not an item keyed by the slice (unhashable
        before 3.12, and keyed so, two overlapping slices would never meet).
        """
        key = evaluate(recipe.key, frame, frame.f_locals)
        if type(key) is not slice:
            return  # a bytearray's or an array's single items are not recorded
        if recipe.op == "read":
            op = "slice-read"
        elif frame.f_code.co_code[frame.f_lasti] == _DELETE_SUBSCR:
            op = "slice-delete"
        else:
            op = "slice-write"
        self._sequence_op(frame, actor, hb, base, Recipe(op, recipe.base), label)

    def _located(self, frame: FrameType, actor: int, base: Any) -> None:
        """``actor`` just computed a position in ``base`` (its latest one replaces the last)."""
        location = (id(base), WHOLE)
        view = self.views.get((actor, location))
        shadow = self.shadows.get(location)
        if view is None or shadow is None or view.kind != "r":
            return
        table = self.positions.setdefault(id(base), {})
        table[actor] = (view.site, shadow.seq, self.steps.get(actor, 0))
        awaiting = awaiting_frame(frame)
        if awaiting is not None:
            self.awaiting[(id(base), actor)] = awaiting
        else:
            self.awaiting.pop((id(base), actor), None)

    def _stale_index(
        self, frame: FrameType, actor: int, hb: int, base: Any, target: str, action: str
    ) -> bool:
        """``actor`` rewrites (or replaces) a sequence in which a position was located.

        A position (``bisect``, ``lst.index``) holds only until the sequence
        shifts. The first write after it is the act it decided: the locating
        actor's own, while the frame that located it still runs, or the write
        of the task that actor woke in the very step it located it (work handed
        to a worker thread, ``await asyncio.to_thread(bisect...)``: the worker
        locates, its completion wakes the awaiting task, which slices). If a
        third actor shifted the sequence in between (an insert, a slice store,
        a removal; an append or an item store shifts nothing), the act applies
        an index into a list that no longer exists: limits 5.2.0's expiry pass
        cut a live entry off its window so. Each position decides one act.
        """
        table = self.positions.get(id(base))
        if not table or action in _POSITIONLESS:
            return False  # an append uses no position: it neither acts on one nor spends it
        shadow = self.shadows.get((id(base), WHOLE))
        if shadow is None:
            return False
        woke = self.woken.get(actor)
        mine = table.get(actor)
        for who, (located, seen, step) in list(table.items()):
            if who == actor:
                if not _read_in_scope(located, frame) and not _in_scope(
                    self.awaiting.get((id(base), who)), frame
                ):
                    continue
            elif (
                woke != (who, step)
                and not waited_for(self.signals, hb, located.hb, located.clock)
                # or found it published with a flag, after it located the position
                and not self._published_after(hb, located.hb, located.clock)
            ):
                continue
            elif mine is not None and mine[1] >= seen:
                del table[who]  # it located the position again itself since: that decides
                continue
            del table[who]  # acted on, stale or not
            if shadow.seq <= seen:
                continue
            since = [w for s, w in shadow.history if s > seen]
            if len(since) == len(shadow.history) and shadow.seq - seen > len(since):
                continue  # the history no longer reaches back to the position
            if any(w.actor in (actor, who) for w in since):
                continue  # moved by the actors themselves: they knew
            shifts = [w for w in since if not w.slot or w.action in _SHIFTING_SLOT_WRITES]
            if not shifts:
                continue
            now = _Site(
                actor,
                hb,
                self._clock(hb)[hb],
                action,
                frame,
                frame.f_lineno,
                tuple(self.held.get(hb, ())),
                offset=frame.f_lasti,
            )
            self._report("atomicity-violation", "stale index", target, located, shifts[-1], now)
            return True
        return False

    def _queue(self, base: Any) -> bool:
        """``queue.Queue`` and its kin, ``asyncio.Queue``, or racecheck's ``SimpleQueue``."""
        cls = type(base)
        known = self.queues.get(cls)
        if known is None:
            known = self.queues[cls] = any(
                klass.__module__ in _QUEUE_MODULES and klass.__name__.endswith("Queue")
                for klass in _TYPE_MRO(cls)
            )
        return known

    def _queue_item(self, hb: int, base: Any, put: bool, size: int) -> None:
        """An asyncio queue's or a trio memory channel's item carries its putter's clock.

        A ``get`` that finds an item already queued never suspends, so no
        wake-up carries the putter's clock (as a handle does when the getter
        waited): the item must. Only the item taken counts, not every put so
        far: a consumer that takes an item queued *before* the producer's write
        did not wait for that write. A FIFO queue's order gives the item; the
        clocks are lined up with the buffer at every call, so items put or taken
        where the detector did not look (untraced code) carry nothing and never
        shift the others. Called at the ``put``/``get`` call, before it runs
        (``size``: the items buffered then); an awaited ``get`` or ``receive``
        of an item already there takes it in that same step. A trio channel's
        two ends share one state, ``base`` here; a send to a receiver already
        waiting reschedules it, and that wake-up carries the clock.
        """
        entry = self.queue_items.get(id(base))
        if entry is None:
            if not put:
                return
            entry = self.queue_items[id(base)] = (base, deque())
        carried = entry[1]
        while len(carried) > size:
            carried.popleft()  # taken where the detector did not see
        while len(carried) < size:
            carried.appendleft(None)  # put where it did not see
        if put:
            clock = self._clock(hb)
            carried.append((clock.copy(), self.signals[hb].copy()))
            self._tick(hb)
            return
        if not carried:
            return  # the get will wait: the put that wakes it stamps the wake-up
        taken = carried.popleft()
        if taken is not None:
            _join(self._clock(hb), taken[0])
            _join(self.signals[hb], taken[1])

    def _channel_closed(self, hb: int, end: Any) -> None:
        """A trio memory channel end is closed: what this step wrote, its ends see.

        A receiver parked in ``receive()`` is woken by the close, and that
        wake-up carries the closer's clock. One that was not parked (it had
        an item to take, and comes back for the next) finds the channel closed
        without waiting: ``EndOfChannel`` is the same message, and what the
        closer wrote before closing (trio-websocket's close reason, set just
        before its reader task closes the channel) is what it reads next. So
        the close keeps its step's clock on the channel, for _after_close.
        """
        kind = _HANDOFF_KINDS.get(type(end))
        if kind is None:
            kind = _HANDOFF_KINDS[type(end)] = _handoff_kind(type(end))
        channel = _memory_channel(end) if kind == _MEMORY_CHANNEL else None
        if channel is None:
            return
        state = channel[0]
        clock = self._clock(hb)
        closes = self.channel_closes.get(id(state))
        if closes is None:
            self.channel_closes[id(state)] = (state, clock.copy(), self.signals[hb].copy())
        else:
            _join(closes[1], clock)
            _join(closes[2], self.signals[hb])
        self._tick(hb)

    def _after_close(self, hb: int, state: Any) -> None:
        """A send or receive that will fail on a closed channel waited for its closers."""
        closes = self.channel_closes.get(id(state))
        if closes is not None and closes[0] is state:
            _join(self._clock(hb), closes[1])
            _join(self.signals[hb], closes[2])

    def _ranked_item(
        self, actor: int, hb: int, base: Any, put: bool, item: Any, lifo: bool
    ) -> None:
        """An asyncio ``LifoQueue``'s or ``PriorityQueue``'s item carries its putter's clock.

        As _queue_item, but the item taken is the newest (``LifoQueue``) or the
        smallest (``PriorityQueue``), not the oldest. A LIFO buffer is a stack:
        the clocks are lined up with it at every call from its top, where
        unseen puts and takes happen. A priority queue's heap is reordered by
        each call, so an item is known by identity (the object put, which the
        heap keeps): the item at the heap's root is the one a get takes. An
        item whose object the detector could not tell at its put (an argument
        it cannot evaluate) carries nothing: the reader then waited for nobody,
        which can only report a read back, never hide one.

        A get that finds the queue empty waits, and the put that wakes it is
        not the item it takes: by the time it runs, a later put may be newer
        or smaller. Its take is settled when it next runs (_resumed_get).
        """
        buffer = _ranked_buffer(base)
        if buffer is None:
            return
        carried = self._carried_items(base)
        _line_up(carried, buffer, lifo)
        if put:
            clock = self._clock(hb)
            carried.append((clock.copy(), self.signals[hb].copy(), item))
            self._tick(hb)
            return
        if not buffer:
            self.ranked_waits[actor] = (base, hb, lifo)
            return
        if lifo:
            taken = carried.pop() if carried else None
        else:
            taken = _take_object(carried, buffer[0])
        if taken is not None:
            _join(self._clock(hb), taken[0])
            _join(self.signals[hb], taken[1])

    def _carried_items(self, base: Any) -> deque[Any]:
        """The clocks carried by ``base``'s queued items, made empty on first use.

        Keyed by id and holding ``base`` itself, so the id cannot be reused
        while the entry lives.
        """
        entry = self.ranked_items.get(id(base))
        if entry is None:
            entry = self.ranked_items[id(base)] = (base, deque())
        return entry[1]

    def _locked_item(self, hb: int, base: Any, put: bool, item: Any) -> None:
        """A ``queue.LifoQueue``'s or ``queue.PriorityQueue``'s item carries its putter's signal.

        Threads: the queue's mutex orders a get after every put before it, but
        a getter woken by the first put's notify, that then takes a newer or
        smaller item put after a write, has waited only for the first put. The
        object put is recorded here, at the call; which object the get took is
        settled inside its own critical sections (_queue_mutex), where nothing
        else can change the buffer, so another thread's take or put racing the
        call can never be credited to it.
        """
        buffer = _ranked_buffer(base)
        if buffer is None:
            return
        carried = self._carried_items(base)
        if len(carried) > 2 * len(buffer) + 8:
            # items taken where the detector did not see; a put called but not yet
            # in the buffer goes too (it then carries nothing: a report, not a miss)
            _line_up(carried, buffer, False)
        if put:
            clock = self._clock(hb)
            carried.append((clock.copy(), self.signals[hb].copy(), item))
            self._tick(hb)
        else:
            self.locked_gets[hb] = (base, None)

    def _queue_mutex(self, hb: int, lock: Any, acquired: bool) -> None:
        """A get of _locked_item's in a critical section of its queue's mutex.

        The buffer is read when the mutex is taken and when it is let go: the
        one object gone in between is what the get took (a ``wait`` lets the
        mutex go with nothing taken yet: the get goes on in the next section).
        """
        waiting = self.locked_gets.get(hb)
        if waiting is None:
            return
        base, before = waiting
        try:
            mutex = instance_dict(base).get("mutex")
        except (AttributeError, TypeError):
            mutex = None
        if mutex is not lock:
            return
        buffer = _ranked_buffer(base)
        entry = self.ranked_items.get(id(base))
        if buffer is None or entry is None:
            del self.locked_gets[hb]
            return
        if acquired:
            self.locked_gets[hb] = (base, list(buffer))
            return
        if before is None:
            return
        removed = _missing(before, buffer)
        if not removed:
            self.locked_gets[hb] = (base, None)  # waited: the take comes later
            return
        del self.locked_gets[hb]
        if len(removed) == 1:
            taken = _take_object(entry[1], before[removed[0]])
            if taken is not None:
                _join(self._clock(hb), taken[0])
                _join(self.signals[hb], taken[1])

    def _resumed_get(self, actor: int) -> None:
        """A get that waited on a LIFO or priority queue has taken its item: which one?

        Asked at the getter's first access after it resumed, when ``get``
        has returned: the items gone from the buffer since the detector last
        looked. One gone is the getter's; none (it was cancelled) or several
        (others took unseen) carry nothing.
        """
        waited = self.ranked_waits.pop(actor, None)
        if waited is None:
            return
        base, hb, lifo = waited
        entry = self.ranked_items.get(id(base))
        buffer = _ranked_buffer(base)
        if entry is None or buffer is None:
            return
        carried = entry[1]
        if lifo:
            taken = carried.pop() if len(carried) == len(buffer) + 1 else None
            _line_up(carried, buffer, lifo)
        else:
            gone = _gone(carried, buffer)
            taken = carried[gone[0]] if len(gone) == 1 else None
            for index in reversed(gone):
                del carried[index]
            if taken is not None and any(
                held is not None and held[2] is taken[2] for held in carried
            ):
                taken = None  # the same object queued twice: which one went is unknown
        if taken is not None:
            _join(self._clock(hb), taken[0])
            _join(self.signals[hb], taken[1])

    def _queue_call(
        self, frame: FrameType, actor: int, hb: int, base: Any, method: str, label: str
    ) -> None:
        """``q.empty()``/``q.qsize()`` test a queue's emptiness; ``q.get()`` acts on it.

        The queue's own lock makes each call atomic, not the pair: ``while not
        q.empty(): q.get()`` takes the item another consumer may have taken in
        between (a blocked ``get``, or ``queue.Empty`` after its timeout). The
        size is read off the queue's buffer, never through its locked methods.
        """
        taking = method in ("get", "get_nowait")
        self._touch(
            frame,
            actor,
            hb,
            base,
            NONEMPTY,
            taking,
            label,
            lambda: _queue_size(base) > 0,
            f"called .{method}() on" if taking else "checked",
            atomic=True,
            stale_only=True,
        )

    def _plain(self, base: Any, runs: tuple[str, ...] = ()) -> bool:
        """A dict, list or set, or a subclass that leaves item access to the builtin.

        ``OrderedDict``, ``defaultdict`` and registries deriving from ``dict``
        store like one; a subclass that redefines item access in Python is
        skipped: its own methods are traced, and their accesses are the real ones.

        ``runs``: the methods one operation would call (``__iter__`` for a
        ``for`` loop, ``setdefault`` for ``obj.setdefault(...)``). Only those
        are looked up: a registry that redefines ``__setitem__`` to validate
        its stores is still iterated and filled by ``setdefault`` in the
        builtin's C code, which never calls the subclass's methods, and those
        accesses are real (multimethod 1.9's dispatch cache: missed, and DPOR
        called the race verified).
        """
        cls = type(base)
        if cls in _CONTAINERS:
            return True
        key: Any = (cls, runs) if runs else cls
        known = self.plain.get(key)
        if known is None:
            known = self.plain[key] = isinstance(base, _CONTAINERS) and not any(
                isinstance(_TYPE_DICT(klass).get(name), FunctionType)
                for klass in _TYPE_MRO(cls)
                for name in runs or _ITEM_METHODS
            )
        return known

    def _storage(self, base: Any, recipe: Recipe) -> bool:
        """Does an ``inner`` recipe reach ``base``'s builtin storage?

        ``super().__setitem__(k, v)`` in a subclass's own ``__setitem__`` does
        (the subclass's ``obj[k]`` is skipped, so this is the one access); ``k
        in self.keys()`` does unless the class redefines ``keys`` in Python.
        """
        if not isinstance(base, _CONTAINERS):
            return False
        if recipe.name == "keys":
            return not isinstance(getattr(type(base), "keys", None), FunctionType)
        return True

    def _descriptor(self, cls: type, name: str) -> bool:
        known = self.descriptors.get((cls, name))
        if known is None:
            known = self.descriptors[(cls, name)] = _data_descriptor(cls, name)
        return known

    def _class_attribute(
        self, frame: FrameType, actor: int, hb: int, cls: type, name: str, write: bool, label: str
    ) -> None:
        """``cls.name``: class-level state (singletons, registries, counters).

        A read finds the class that defines ``name`` along the MRO, as Python
        does; a write lands on ``cls`` itself. Methods, properties and other
        descriptors, and nested classes, are code, not state. The class
        dictionaries are read directly, so no metaclass code runs.
        """
        owner = cls
        if not write:
            defining = [klass for klass in _TYPE_MRO(cls) if name in _TYPE_DICT(klass)]
            if self.access_log is not None:
                self._lookup_misses(cls, name)
            if not defining:
                return
            owner = defining[0]
            if _is_code(_TYPE_DICT(owner)[name]):
                return
        elif _is_code(_TYPE_DICT(cls).get(name)):
            return
        namespace = _TYPE_DICT(owner)
        self._touch(
            frame,
            actor,
            hb,
            owner,
            name,
            write,
            f"{label}.{name}",
            value_of=lambda: namespace.get(name, MISSING),
        )

    def _variable(self, frame: FrameType, name: str, op: str, actor: int, hb: int) -> None:
        """A module global, or a closure variable (a cell shared by nested functions)."""
        is_global = op.startswith("global")
        write = op.endswith("write")
        if not write:
            # (most reads end here: looked up before a closure is made for the rest)
            value = (frame.f_globals if is_global else frame.f_locals).get(name, MISSING)
            if value is MISSING or isinstance(value, _UNTRACKED_GLOBALS):
                return  # a module, class or function: bindings nobody races on

        def value_of() -> Any:
            # f_locals, not a saved dict: on 3.11 it is a snapshot taken when read
            namespace = frame.f_globals if is_global else frame.f_locals
            return namespace.get(name, MISSING)

        if is_global:
            self._touch(frame, actor, hb, frame.f_globals, name, write, f"global {name}", value_of)
        else:
            if self.record_only:
                # Feeding DPOR only: every closure variable of this name is taken
                # for one (more conflicts, never fewer), where telling activations
                # apart costs a scan of the whole heap per access (_cell) and
                # still drops an access it cannot place.
                owner = _MERGED_CELLS.get(name)
                if owner is None:
                    owner = _MERGED_CELLS[name] = _MergedCell()
            else:
                owner = self._cell(frame, name)
            if owner is None:
                return  # which activation's variable this is cannot be told: say nothing
            self._touch(frame, actor, hb, owner, ("cell", name), write, name, value_of)

    def _method(
        self,
        frame: FrameType,
        actor: int,
        hb: int,
        base: Any,
        kind: str,
        method: str,
        element: Any,
        label: str,
    ) -> None:
        action = f"called .{method}() on"
        if method in _REMOVALS:
            # acts on "not empty": a stale `if self.items:` before it is a stale check
            size = _builtin_of(base).__len__
            self._touch(
                frame,
                actor,
                hb,
                base,
                NONEMPTY,
                True,
                label,
                lambda: size(base) > 0,
                action,
                atomic=True,
                stale_only=True,
            )
            if self.found:
                return
        if kind == "scan":
            self._whole(frame, actor, hb, base, False, label, action)
            if method == "index" and isinstance(base, _SEQUENCES) and not self.found:
                self._located(frame, actor, base)
        elif kind == "get" and isinstance(base, dict) and element is not MISSING:
            self._touch_item(frame, actor, hb, base, element, False, label, element, "read")
        elif kind in ("append", "add", "remove", "pop", "setdefault"):
            if method == "remove" and isinstance(base, _SEQUENCES):
                self.removing = (base, element)  # for _woken_head_leaves
            self._whole(frame, actor, hb, base, True, label, action, atomic=True, slot=True)
            self.removing = None
            if element is MISSING:
                return
            for slot in _slots_changed(base, kind, element):
                self._touch_item(
                    frame,
                    actor,
                    hb,
                    base,
                    slot,
                    True,
                    label,
                    -1 if slot is LAST else element,
                    action,
                    atomic=True,
                )
        elif kind == "get":
            self._whole(frame, actor, hb, base, False, label, "read")
        else:
            self._whole(frame, actor, hb, base, True, label, action, atomic=True)
            if isinstance(base, _SEQUENCES):
                self._touch_item(frame, actor, hb, base, LAST, True, label, -1, action, atomic=True)

    def _item(
        self, frame: FrameType, actor: int, hb: int, base: Any, key: Any, write: bool, label: str
    ) -> None:
        try:
            hash(key)
        except TypeError:
            return
        location = key
        if isinstance(base, _SEQUENCES) and type(key) is int and key < 0:
            location = LAST if key == -1 else ("neg", key)
        action = "wrote" if write else "read"
        if write and self.positions and type(base) is dict:
            old = dict.get(base, key, MISSING)
            if self._stale_index(frame, actor, hb, old, f"{label}[{_short(key)}]", "replaced"):
                return
        if write:
            self._whole(frame, actor, hb, base, True, label, action, atomic=True, slot=True)
        self._touch_item(frame, actor, hb, base, location, write, label, key, action)

    def _touch_item(
        self,
        frame: FrameType,
        actor: int,
        hb: int,
        base: Any,
        location: Any,
        write: bool,
        label: str,
        key: Any,
        action: str,
        atomic: bool = False,
    ) -> None:
        if isinstance(location, tuple) and location and location[0] == "in":
            target = f"{_short(key)} in {label}"
        else:
            target = f"{label}[{_short(key)}]"

        # the builtin's own methods: a subclass's __missing__ (defaultdict) must not run
        kind = _builtin_of(base)

        def value_of() -> Any:
            if isinstance(location, tuple) and location and location[0] == "in":
                try:
                    return kind.__contains__(base, key)
                except TypeError:
                    return MISSING
            try:
                if kind is dict:
                    return dict.get(base, key, MISSING)
                return kind.__getitem__(base, key) if kind in _SEQUENCES else MISSING
            except (IndexError, TypeError):
                return MISSING

        self._touch(frame, actor, hb, base, location, write, target, value_of, action, atomic)

    def _emptiness(self, frame: FrameType, actor: int, hb: int, base: Any, label: str) -> None:
        size = _builtin_of(base).__len__
        self._touch(
            frame,
            actor,
            hb,
            base,
            NONEMPTY,
            False,
            label,
            lambda: size(base) > 0,
            "checked",
            atomic=True,
            stale_only=True,
        )

    def _whole(
        self,
        frame: FrameType,
        actor: int,
        hb: int,
        base: Any,
        write: bool,
        label: str,
        action: str,
        atomic: bool = False,
        slot: bool = False,
    ) -> None:
        """The container as a whole; ``slot``: a write that changes one key or element."""
        if write and self.positions and self._stale_index(frame, actor, hb, base, label, action):
            return
        size = _builtin_of(base).__len__
        self._touch(
            frame,
            actor,
            hb,
            base,
            WHOLE,
            write,
            label,
            lambda: size(base),
            action,
            atomic,
            slot=slot,
        )

    def _cell(self, frame: FrameType, name: str) -> Any:
        """The cell behind closure variable ``name`` in ``frame``: one per activation.

        A frame does not expose its cells, so they are found through the
        functions that close over them. In the owning frame: a nested function
        among its locals; failing that (none made yet, or a comprehension's),
        the frame itself stands for its own cell, which is still per
        activation. In a nested function: the function objects running this
        code, told apart by what their cell holds now. None when that stays
        ambiguous: a guess could merge two activations into a false race.
        """
        known = self.cells.get(frame)
        if known is not None and name in known:
            return known[name]
        code = frame.f_code
        current = frame.f_locals.get(name, MISSING)
        if name in code.co_freevars:
            index = code.co_freevars.index(name)
            found = _closure_cell(_callers_functions(frame, code), index, current)
            if found is None:
                found = _closure_cell(_functions_running(code), index, current)
            if found is None:
                return None
        else:
            found = _own_cell(frame, name, current)
            if found is None:
                return frame  # not cached: a nested function made later names the real cell
        self.cells.setdefault(frame, {})[name] = found
        return found

    # -- the checks ----------------------------------------------------------------------
    def _touch(
        self,
        frame: FrameType,
        actor: int,
        hb: int,
        obj: Any,
        key: Any,
        write: bool,
        target: str,
        value_of: Callable[[], Any],
        action: str | None = None,
        atomic: bool = False,
        stale_only: bool = False,
        slot: bool = False,
        value: Any = None,
        stored: Sym = None,
    ) -> None:
        """One access to ``(obj, key)``: record it, and judge it against the others.

        ``value_of`` reads the location's current value; a read that has its
        value already passes it as ``value`` (with ``_no_value``), so no
        closure is made for it. Nothing runs between the load and this call,
        so it is the value ``value_of`` would give. ``stored``: how to read what a
        write stores, when its recipe knows (asked only when the write would be
        reported, see _nothing_lost).
        """
        if self.access_log is not None:
            # a copy (list(x), tuple(x), sorted(x): atomic) reads x in this step only;
            # a for loop goes on reading it in the actor's later steps
            self.access_log.touch(obj, key, write, action == "iterated" and not atomic)
            if self.record_only:
                return
        if action is None:
            action = "wrote" if write else "read"
        oid = id(obj)
        if oid not in self.keep:
            self.keep[oid] = obj
        location = (oid, key)
        shadow = self.shadows.get(location)
        if shadow is None:
            shadow = self.shadows[location] = _Shadow()
        clock = self.clocks.get(hb)
        if clock is None:
            clock = self._clock(hb)
        held = self.held.get(hb)
        # who called the frame is asked only of reads (what their value is for, and
        # whether they are still in scope): a write leaves it out, and the caller's
        # frame is not made into an object and kept alive for nothing
        caller = None if write else frame.f_back
        view_key = (actor, location)
        view = self.views.get(view_key)
        site = _Site(
            actor,
            hb,
            clock[hb],
            action,
            frame,
            -1,
            tuple(held) if held else (),
            atomic,
            caller,
            frame.f_lasti,
            slot,
            caller.f_lasti if caller is not None else -1,
            write and self.happens_before and oid not in self.stored,
            write and (view is None or view.kind == "w"),
        )
        own = ""
        if not write:
            if value_of is not _no_value:
                value = value_of()  # read once: nothing of the program runs meanwhile
            if (
                self.happens_before
                and shadow.last_writer is not None
                and type(value) not in _EQUAL_BY_VALUE
            ):
                self._received(shadow.last_writer, hb, value)
            # what the reading frame does with the value: asked once here, and
            # again below only when it returns it (_use follows the callers)
            own = _use_at(frame.f_code, site.offset)
            if (
                own == "return"
                and caller is not None
                # a load that raises (a missing key) returns nothing: the handler it
                # raises into decides, and where that is is not followed
                and value is not MISSING
            ):
                # where a returned value goes must be read now: the callers move on
                site.passed = _passed_on(caller)
        if not write and site.locks and self.happens_before and (view is None or view.kind != "w"):
            # (reading back a slot one wrote oneself is what "overwritten before
            # read" judges, never a check of what another published)
            self._observed(shadow, site, clock)
        if self.pending:
            for entry in self.pending:
                if entry[1] == location and entry[0] != actor:
                    _, _, seen, remote, read, read_target = entry
                    self._report(
                        "atomicity-violation",
                        "overwritten before read",
                        read_target,
                        seen.site,
                        remote,
                        read,
                    )
                    return
        if write and self.pending:
            # The same actor read this location and now writes it, nobody in
            # between: a read-modify-write, which wants the latest value.
            self.pending = [p for p in self.pending if not (p[0] == actor and p[1] == location)]
        if view is not None and shadow.seq > view.seq and shadow.last_writer is not None:
            remote = shadow.last_writer
            if remote.actor != actor:
                if (
                    view.kind == "r"
                    and write
                    and _read_in_scope(view.site, frame)
                    and _use(view.site)  # a value only displayed decided nothing
                    # a sweep over a snapshot of the keys, then one key stored: the
                    # others' entries survive (limits' expiry); a measure still counts
                    and not (slot and view.site.action not in ("measured", "checked"))
                    and not self._handed_over(shadow, view, actor)
                    and not self._nothing_lost(shadow, location, view.seq, frame, stored)
                ):
                    pattern = "stale check" if view.site.action == "checked" else "lost update"
                    self._report("atomicity-violation", pattern, target, view.site, remote, site)
                    return
                if (
                    view.kind == "w"
                    and not stale_only  # re-testing emptiness after one's own pop is a loop
                    and not write
                    # one's own element is still there after another's element went in
                    and not (view.slot and remote.slot)
                    and not self._waited_for(remote, hb)
                    and not _same(value, view.value)
                    and not _waits_in_loop(site)
                ):
                    self.pending.append((actor, location, view, remote, site, target))
        if (
            write
            and shadow.checks
            and self.woken.get(actor) is not None
            and self._stale_handoff(shadow, site, actor, target)
        ):
            return
        if (
            write
            and shadow.checks
            and self._stale_decision(shadow, site, actor, frame, target, slot, location, stored)
        ):
            return
        # what was written, and which reads decided a branch
        if write:
            history = shadow.history
            history.append((shadow.seq + 1, site))
            if len(history) > 8:
                del history[0]
        elif action == "checked" or own == "branch" or (own == "return" and _use(site) == "branch"):
            shadow.checks[actor] = (site, shadow.seq, self.steps.get(actor, 0))
        if self.happens_before:
            if write:
                decided = self.decisions.pop(view_key, None) if self.decisions else None
                if (
                    decided is not None
                    and _read_in_scope(decided[0], frame)
                    and not _inserts_if_absent(site, *decided)
                ):
                    read, racing = decided
                    self._report("data-race", "unsynchronised", target, racing, read, site)
                    return
            else:
                self._decide(shadow, site, clock, view_key, obj)
            if self._hb_check(shadow, site, clock, write, target, key is WHOLE, obj):
                return
            (shadow.writes if write else shadow.reads)[hb] = site
        new_view = _View("w" if write else "r", shadow.seq + write, site, MISSING, slot)
        if write:
            shadow.seq += 1
            shadow.last_writer = site
            # the store runs right after this event: read what it wrote later
            self.unsettled.append((new_view, value_of))
        else:
            new_view.value = value
        self.views[view_key] = new_view

    def _decide(
        self,
        shadow: _Shadow,
        site: _Site,
        clock: dict[int, int],
        view_key: tuple[int, tuple[int, Any]],
        obj: Any,
    ) -> None:
        """Remember a read that decides a later write while another thread's write races it.

        A load is atomic, so the read alone is no race (a value read only to
        display it never is). But when it decides what this thread writes next
        (``if self.balance >= n:`` ... ``with lock: self.balance -= n``), the
        other thread's write, unordered with the read, could as well have
        landed between the read and the act: that is reported at the act, in
        every schedule, not only in the one where it lands there. A re-check
        that is ordered after every write (under the lock) replaces it.
        """
        hb = site.hb
        racing = None
        for other in shadow.writes.values():
            if (
                other.hb != hb
                and other.clock > clock.get(other.hb, 0)
                and not (other.private and self._published_to(hb, obj, other.hb))
            ):
                racing = other
                break
        if racing is None:
            if self.decisions and _use(site) == "branch":
                self.decisions.pop(view_key, None)
            return
        if _use(site):
            self.decisions[view_key] = (site, racing)

    def _stale_decision(
        self,
        shadow: _Shadow,
        site: _Site,
        actor: int,
        frame: FrameType,
        target: str,
        slot: bool,
        location: tuple[int, Any],
        stored: Sym,
    ) -> bool:
        """The first write after one's own check acts on it, whatever was read in between.

        ``if self.opened < self.max_size:`` ... ``await self._connect()`` ...
        ``self.opened += 1``: the ``+=`` reads ``opened`` again, but only to
        add one; the decision to open was made by the check, and another task
        opened in between. The same for a woken ``Condition`` waiter that
        checked with ``if`` before waiting. Reported when the check (a read
        that decided a branch) is still in scope, another actor wrote since,
        this actor has not written the location since its check (then this
        write is not the act the check decided), and has not checked again.
        """
        mine = shadow.checks.get(actor)
        if mine is None or mine[1] >= shadow.seq:
            return False
        check, seen, _ = mine
        if slot and check.action not in ("measured", "checked"):
            return False  # a sweep over a snapshot of the keys, then one key stored
        since = [w for seq, w in shadow.history if seq > seen]
        if not since or any(w.actor == actor for w in since):
            return False
        # The waker's own write (a release handing over) is left to the hand-off
        # rule, which names the third task that wrote in between, if any.
        woke = self.woken.get(actor)
        waker = woke[0] if woke is not None else None
        # Writes before the waker's own last one happened while this actor waited
        # (a lock passing through other holders): the waker saw them, and its
        # write and wake-up are what this actor acts on.
        handed = max((i for i, w in enumerate(since) if w.actor == waker), default=-1)
        others = [w for w in since[handed + 1 :] if w.actor != waker]
        if not others and handed >= 0 and self._consumed(shadow, since[handed], waker):
            # the waker's write acted on its own check (it took the slot itself, then
            # woke this actor by releasing a lock): what was waited for is gone
            others = [since[handed]]
        if not others:
            return False
        if len(since) == len(shadow.history) and shadow.seq - seen > len(since):
            return False  # the history no longer reaches back to the check: unknown
        if not _read_in_scope(check, frame):
            return False
        if self._nothing_lost(shadow, location, seen, frame, stored):
            return False
        self._report("atomicity-violation", "stale check", target, check, others[-1], site)
        return True

    def _nothing_lost(
        self,
        shadow: _Shadow,
        location: tuple[int, Any],
        since: int,
        frame: FrameType,
        stored: Sym,
    ) -> bool:
        """Were the others' writes since ``since`` blind, and each of what this one stores?

        A read, another task's write, then this task's write: a lost update,
        or a stale check, when the other write changed what the read decided.
        Not when every write in between is *blind* (its task had not read the
        location since its own last write: nothing there decided it) and
        stores what this write stores (an immutable value equal to it, or the
        same object): moved after this write instead, each such write leaves
        the location as it is now, and this task's read sees what it saw. The
        interleaving is one where this task ran first: trio-websocket 0.10.2's
        reader loops ``while self._reader_running`` and clears the flag when
        its stream is gone, and ``aclose()`` clears it too, without reading
        it. A claim stays reported: there the other task checked the flag too
        before storing the same ``True``, and both go on as its owner. So
        does any write whose value the recipe cannot tell without running
        code (``self.n = f(x)``).
        """
        if stored is None or shadow.seq - since > len(shadow.history):
            return False
        between = [w for seq, w in shadow.history if seq > since]
        if len(between) != shadow.seq - since:
            return False  # the history no longer reaches back to the read
        mine = evaluate(stored, frame, frame.f_locals)
        if mine is MISSING:
            return False
        for write in between:
            theirs = self.views.get((write.actor, location))
            if (
                not write.blind
                or theirs is None
                or theirs.site is not write
                or not _same(theirs.value, mine)
            ):
                return False
        return True

    def _handed_over(self, shadow: _Shadow, view: _View, actor: int) -> bool:
        """A waiter's check, then its waker's write, then its act: a hand-off.

        ``if self._locked:`` (wait) ... the releaser writes ``self._locked =
        False`` and wakes this waiter ... ``self._locked = True``. The check
        decided to wait; the waker's write is what it waited for, and the
        hand-off rule judges whether a third actor wrote in between. A value
        read and written back (``v = self.x`` ... ``self.x = v + 1``) stays a
        lost update whoever woke the writer, and so is a waker's write that was
        the act of its own check (it took what was waited for itself).
        """
        woke = self.woken.get(actor)
        if woke is None or _use(view.site) != "branch":
            return False
        # the lock may have passed through other holders while this one waited:
        # what matters is that the write it acts after is its waker's
        last = shadow.last_writer
        return (
            last is not None and last.actor == woke[0] and not self._consumed(shadow, last, woke[0])
        )

    @staticmethod
    def _consumed(shadow: _Shadow, write: _Site, waker: int | None) -> bool:
        """Was ``write`` the waker's act on its own latest check (taking, not releasing)?

        ``if state["free"] == 0: ...`` then ``state["free"] -= 1``, then the waker
        leaves the Condition's lock, which wakes the waiter: it took the slot the
        waiter waited for. A release (``self._locked = False``) is a later write,
        or one with no check before it.
        """
        mine = shadow.checks.get(waker) if waker is not None else None
        if mine is None:
            return False
        writes = [w for seq, w in shadow.history if seq > mine[1] and w.actor == waker]
        return len(writes) == 1 and writes[0] is write

    def _stale_handoff(self, shadow: _Shadow, site: _Site, actor: int, target: str) -> bool:
        """A task woken by a hand-off acts on the waker's decision after a third party wrote.

        Task A checks the state (``if self._w_state == 0:``, a scan of the
        waiters) and, in the same step, wakes task B (``fut.set_result``). B
        resumes and writes that state on the decision's behalf
        (``self._w_state += 1``, removing its own queue entry). If task C wrote
        the same state between A's check and B's write, and B did not check it
        again, B acts on a decision that no longer holds: two writers inside an
        RW lock, a woken waiter left queued for a newcomer to line up behind.
        The fix hands the state over with the wake-up (A writes it for B).
        """
        woke = self.woken.get(actor)
        if woke is None or not shadow.checks:
            return False
        waker, step = woke
        decided = shadow.checks.get(waker)
        if waker == actor or decided is None or decided[2] != step:
            return False
        check, seen, _ = decided
        between = [w for seq, w in shadow.history if seq > seen and w.actor not in (actor, waker)]
        if not between:
            return False
        mine = shadow.checks.get(actor)
        latest = max(seq for seq, w in shadow.history if w is between[-1])
        if mine is not None and mine[1] >= latest:
            return False  # B checked again after C's write
        if site.slot and all(w.slot for w in between) and not _walks_queue(check):
            # B takes its own entry out of a queue others only lined up in, and the
            # waker looked at the first entry alone (``q[0]``, ``next(iter(q))``:
            # CPython's asyncio.Lock): no entry was passed over and left queued
            return False
        if site.slot and self._woken_head_leaves(between):
            return False
        self._report("atomicity-violation", "stale hand-off", target, check, between[-1], site)
        return True

    def _woken_head_leaves(self, between: list[_Site]) -> bool:
        """The woken waiter takes its own entry off the head of a walked queue.

        The releaser walked the queue and woke its first entry; only newcomers
        lined up (behind it) since. Nothing was passed over and left queued:
        the walk acted like a look at ``q[0]``, and the woken waiter leaving
        the head is the queue's normal order (aiorwlock 1.5's writers). A
        walk that did pass entries over (a cancelled waiter skipped and left
        queued, anyio 4.13's lock) shows as another actor's removal in
        between, or as entries still ahead of this one.
        """
        removing = self.removing
        if removing is None or not between:
            return False
        base, element = removing
        if element is MISSING or any(w.action != "called .append() on" for w in between):
            return False
        kind = _builtin_of(base)
        return kind.__len__(base) > 0 and kind.__getitem__(base, 0) is element

    def _waited_for(self, remote: _Site, hb: int) -> bool:
        """Did ``hb`` wait for the actor that wrote ``remote`` (so it expects its value)?

        Tasks of a loop hosted in a thread share that thread's clock, which
        cannot tell them apart: only waits across threads count there. A
        write published with a flag that ``hb`` then found set counts too
        (see _observed): the answer was already there, so no wait was needed.
        """
        if remote.hb == hb:
            return False
        if remote.clock <= self.signals[hb].get(remote.hb, 0):
            return True
        published = self.published.get(hb)
        if published is None:
            return False
        seen = published.get(remote.hb)
        return seen is not None and remote.clock in seen

    def _observed(self, shadow: _Shadow, site: _Site, clock: dict[int, int]) -> None:
        """A thread checks, under a lock, a slot another thread wrote under that lock.

        ``with cond: while not slot["answered"]: cond.wait()`` never waits when
        the answer is already there; the check found what the answerer
        published. That reader now knows the writer's step that published it:
        the writer's writes of that very step (its clock value at the write:
        everything it wrote since its previous release, up to the release that
        ended the publishing critical section) are what the reader expects to
        see. Not the writer's earlier critical sections (a shared scratch slot
        overwritten in one, a counter bumped in the next, is still cross-talk),
        and nothing it wrote after that release. Only a read that decides a
        branch is such a check: ``self.n += 1`` reads to update, not to learn.
        """
        last = shadow.last_writer
        if (
            last is None
            or last.hb == site.hb
            or not last.locks
            or last.clock > clock.get(last.hb, 0)  # not ordered before: no publication
            or not set(last.locks).intersection(site.locks)
            or _use(site) != "branch"
        ):
            return
        self.published.setdefault(site.hb, {}).setdefault(last.hb, set()).add(last.clock)

    def _published_after(self, hb: int, who: int, tick: int) -> bool:
        """Did ``hb`` find published (see _observed) a step of ``who`` at or after ``tick``?"""
        seen = self.published.get(hb, {}).get(who) if hb != who else None
        return seen is not None and max(seen) >= tick

    def _hb_check(
        self,
        shadow: _Shadow,
        site: _Site,
        clock: dict[int, int],
        write: bool,
        target: str,
        whole: bool,
        obj: Any,
    ) -> bool:
        """A conflicting access of another thread that is not ordered before this one.

        Python loads and stores of one reference are atomic, with or without the
        GIL: an unordered read of a published value is not a race. What tears
        is writes against writes (two read-modify-writes lose one), and a whole
        container read — iteration, ``len``, a copy — against its mutation.
        """
        hb = site.hb
        if whole:
            others = list((shadow.reads if write else shadow.writes).values())
        elif write:
            others = list(shadow.writes.values())
        else:
            return False
        for other in others:
            if other.hb == hb or other.clock <= clock.get(other.hb, 0):
                continue
            if site.atomic and other.atomic:
                continue  # two single C-level operations: each is atomic
            if other.private and self._published_to(hb, obj, other.hb):
                continue  # changed before the store this thread found it through
            self._report("data-race", "unsynchronised", target, other, site)
            return True
        return False

    def _received(self, writer: _Site, hb: int, value: Any) -> None:
        """A thread's load found ``value`` where another thread's store (the last) put it."""
        if writer.hb != hb and self.stored.get(id(value)) is value:
            self.received[(hb, id(value))] = (value, writer.hb)

    def _published_to(self, hb: int, obj: Any, writer: int) -> bool:
        """Did ``hb`` get ``obj`` by a load that found ``writer``'s store of it?

        Copy-on-write (loguru 0.7.3's handlers): a thread changes a new dict
        while no other thread can reach it, then stores it in a shared
        attribute; another thread loads the attribute and loops over the dict.
        A load that finds a store is ordered after it (one reference is read
        or written whole), so whatever the storing thread did to the object
        before any tracked store had put it anywhere (a ``private`` write) came
        before this thread could hold it: no race. What it changes after its
        first store is reported as ever (the reader may hold it by then:
        loguru 0.7.2), and so is a change seen by a thread that reached the
        object some other way (a global made at import, never stored).
        """
        got = self.received.get((hb, id(obj))) if self.received else None
        return got is not None and got[0] is obj and got[1] == writer

    def _report(self, kind: str, pattern: str, target: str, *sites: _Site) -> None:
        if self.found:
            return
        self.found = True
        accesses = tuple(self._describe(site, target) for site in sites)
        self.on_finding(Finding(kind, pattern, accesses), sites[-1].actor)
        # the finding is text now; the run's objects must not outlive it (the replay
        # of this failure starts right after, and must find weak caches empty)
        self._forget()

    def _describe(self, site: _Site, target: str) -> Access:
        frame = site.frame
        filename = frame.f_code.co_filename if frame is not None else "?"
        return Access(
            self.names.get(site.actor, f"actor-{site.actor}"),
            site.action,
            target,
            filename,
            site.lineno,
            source_line(filename, site.lineno) if frame is not None else "",
            site.locks,
        )


def _no_value() -> Any:
    """``value_of`` of a read that passed its value to ``_touch`` already."""
    return MISSING


#: class -> the C-level getter of its instances' ``__dict__`` when they are
#: ordinary objects (see _ordinary_dict), else None; at most _TYPE_CACHE_LIMIT
_ORDINARY_DICTS: dict[type, Any] = {}


def _ordinary_dict(cls: type) -> Any:
    """The getter of ``cls`` instances' own ``__dict__``, if ``Detector._attribute``
    may read their attributes there without asking anything else of the object.

    None (ask everything) for a class, a module, a ``threading.local``, and
    objects without an instance dictionary. Callability is asked of each
    object still (it is cheap, and decides the road for functions and
    callable instances).
    """
    if issubclass(cls, (type, ModuleType, _thread._local)):
        return None
    return dict_getter(cls)


_WEAK = (WeakSet, WeakValueDictionary)
#: what _recipe_plan works out once per recipe
_Plan = tuple[Recipe, str, str, tuple[bool, str, str] | None, tuple[str, str | None] | None]
#: id(recipe) -> _recipe_plan(recipe): worked out once, not at every access (the
#: entry keeps the recipe alive, so its id stays its own)
_LABELS: dict[int, _Plan] = {}


def _recipe_plan(recipe: Recipe) -> _Plan:
    """What ``Detector._access`` needs of a recipe before it reads anything.

    The recipe; how its base reads in a report; the attribute's target
    (``base.name``); for a plain read or write of ``name.attr`` where
    ``name`` is a local, closure or global variable, (global?, name, attr):
    that access goes straight to ``_attribute``, without the questions the
    general road asks of every recipe (a weak container's contents are never
    an attribute's owner), and without ``frame.f_locals`` for a global base;
    and for a call of a global ``f`` or of a global's ``f.attr``, (f, attr or
    None): its callable is looked up without ``frame.f_locals``.
    """
    label = render(recipe.base)
    plain = None
    base = recipe.base
    if (
        (recipe.op == "read" or recipe.op == "write")
        and recipe.name is not None
        and not recipe.namespace
        and base is not None
        and base is not NULL
        and base[0] in ("local", "deref", "global")
    ):
        plain = (base[0] == "global", base[1], recipe.name)
    target = f"{label}.{recipe.name}" if recipe.name is not None else label
    named = None
    if recipe.op == "callee" and base is not None and base is not NULL:
        if base[0] == "global":
            named = (base[1], None)
        elif base[0] == "attr" and base[1] is not None and base[1][0] == "global":
            named = (base[1][1], base[2])
    return recipe, label, target, plain, named


def _weak_data(base: Any) -> Any:
    """A ``WeakSet``'s own ``set`` of references, a ``WeakValueDictionary``'s ``dict``.

    Their methods are the standard library's (not traced): the detector keys
    their contents by the builtin container behind them, whose keys (for a
    ``WeakValueDictionary``) are the user's own. tqdm keeps its bars in a
    ``WeakSet`` (``tqdm._instances``), filelock its singletons in a
    ``WeakValueDictionary`` keyed by path.
    """
    try:
        data = instance_dict(base).get("data")
    except AttributeError:
        return MISSING
    return data if type(data) in (set, dict) else MISSING


_SLICE_OPS = frozenset(("slice-read", "slice-write", "slice-delete"))
#: writes of a sequence that apply no position located in it
_POSITIONLESS = frozenset(("called .append() on", "called .appendleft() on"))
_DELETE_SUBSCR = dis.opmap["DELETE_SUBSCR"]
_BISECT_FUNCTIONS = tuple(
    getattr(bisect, name) for name in sorted(POSITION_FUNCTIONS | INSORT_FUNCTIONS)
)
#: one-element writes of a sequence that move the elements after it
_SHIFTING_SLOT_WRITES = frozenset(("called .pop() on", "called .remove() on"))

_QUEUE_METHODS = frozenset(("empty", "qsize", "get", "get_nowait"))
#: an asyncio queue's and a trio memory channel's put and take: an item carries its
#: putter's clock (Detector._queue_item)
_PUTS = frozenset(("put", "put_nowait", "send", "send_nowait"))
_ITEM_HANDOFFS = _PUTS | {"get", "get_nowait", "receive", "receive_nowait"}


_FIFO_QUEUE, _MEMORY_CHANNEL, _LIFO_QUEUE, _PRIORITY_QUEUE, _LOCKED_RANKED = 1, 2, 3, 4, 5
#: class -> its _handoff_kind, at most _TYPE_CACHE_LIMIT of them
_HANDOFF_KINDS: dict[type, int] = {}


def _handoff_kind(cls: type) -> int:
    """_FIFO_QUEUE for ``asyncio.Queue`` or a subclass that keeps its order,
    _LIFO_QUEUE and _PRIORITY_QUEUE for asyncio's other two orders, _MEMORY_CHANNEL
    for trio's own memory channel ends, _LOCKED_RANKED for ``queue.LifoQueue`` and
    ``queue.PriorityQueue`` (threads), else 0.

    Only trio's own channel classes, not a subclass (whose attributes could run
    user code). A channel end exists only once ``trio._channel`` is imported, so
    an answer cached before that is never asked of a channel.
    """
    import asyncio
    import queue

    if issubclass(cls, (queue.LifoQueue, queue.PriorityQueue)):
        return _LOCKED_RANKED
    if issubclass(cls, asyncio.Queue):
        if issubclass(cls, asyncio.LifoQueue):
            return _LIFO_QUEUE
        return _PRIORITY_QUEUE if issubclass(cls, asyncio.PriorityQueue) else _FIFO_QUEUE
    channels = sys.modules.get("trio._channel")
    if channels is not None and cls in (
        getattr(channels, "MemorySendChannel", None),
        getattr(channels, "MemoryReceiveChannel", None),
    ):
        return _MEMORY_CHANNEL
    return 0


#: the methods that close a trio memory channel's end (Detector._channel_closed)
_CLOSES = frozenset(("close", "aclose"))


def _finds_closed(end: Any, state: Any, buffer: Any, put: bool) -> bool:
    """Will this send or receive on a trio memory channel end fail for a close?

    Its own end closed (``ClosedResourceError``); for a receive, nothing
    buffered and every send end closed (``EndOfChannel``); for a send, every
    receive end closed (``BrokenResourceError``). Read from trio's own fields,
    without running its code; anything unexpected reads as open.
    """
    try:
        if instance_dict(end).get("_closed") is True:
            return True
        if put:
            return getattr(state, "open_receive_channels", 1) == 0
        return not buffer and getattr(state, "open_send_channels", 1) == 0
    except (AttributeError, TypeError):
        return False


def _memory_channel(base: Any) -> tuple[Any, Any] | None:
    """A trio memory channel end's shared state (trio's slotted ``MemoryChannelState``)
    and its buffer (a deque), or None."""
    try:
        state = instance_dict(base).get("_state")
        buffer = getattr(state, "data", None)
    except (AttributeError, TypeError):
        return None
    return (state, buffer) if isinstance(buffer, deque) else None


_QUEUE_MODULES = frozenset(("queue", "asyncio.queues", "racecheck.backends.threads.primitives"))


#: an asyncio LIFO or priority queue's carried clocks: (clock, signals, the object put)
_Carried = deque[tuple[dict[int, int], dict[int, int], Any] | None]


def _ranked_buffer(queue: Any) -> list[Any] | None:
    """A LIFO queue's stack or a priority queue's heap (asyncio's or ``queue``'s), or None."""
    try:
        namespace = instance_dict(queue)
        buffer = namespace.get("_queue", namespace.get("queue"))
    except (AttributeError, TypeError):
        return None
    return buffer if isinstance(buffer, list) else None


def _line_up(carried: _Carried, buffer: list[Any], lifo: bool) -> None:
    """Forget the items taken where the detector did not see (a stack's: put there too)."""
    if lifo:
        while len(carried) > len(buffer):
            carried.pop()
        while len(carried) < len(buffer):
            carried.append(None)
    elif len(carried) > len(buffer):
        for index in reversed(_gone(carried, buffer)):
            del carried[index]


def _gone(carried: _Carried, buffer: list[Any]) -> list[int]:
    """Which carried items of a priority queue are no longer in its heap (by identity).

    The objects are kept alive by ``carried``, so an id cannot be reused meanwhile.
    """
    return _missing([_UNKNOWN if held is None else held[2] for held in carried], buffer)


#: an item whose object is unknown: in no buffer
_UNKNOWN = object()


def _missing(objects: list[Any], buffer: list[Any]) -> list[int]:
    """The indices of ``objects`` that ``buffer`` no longer holds, counted by identity."""
    counts: dict[int, int] = {}
    for queued in buffer:
        counts[id(queued)] = counts.get(id(queued), 0) + 1
    gone = []
    for index, held in enumerate(objects):
        if counts.get(id(held), 0) > 0:
            counts[id(held)] -= 1
        else:
            gone.append(index)
    return gone


def _take_object(carried: _Carried, taken: Any) -> Any:
    """The carried entry of the object a get took, removed; None unless exactly one is.

    The same object put twice (a small int, a shared tuple) leaves which entry's
    clock went with it unknown: neither carries anything then.
    """
    found = [index for index, held in enumerate(carried) if held is not None and held[2] is taken]
    if len(found) != 1:
        return None
    held = carried[found[0]]
    del carried[found[0]]
    return held


def _queue_size(queue: Any) -> int:
    """Items in a queue's buffer (``queue``, ``_queue`` or ``_items``), with no lock taken."""
    try:
        namespace = instance_dict(queue)
    except AttributeError:
        return 0
    for name in ("queue", "_queue", "_items"):
        buffer = namespace.get(name)
        if buffer is not None:
            try:
                return len(buffer)
            except TypeError:
                continue
    return 0


def _slots_changed(base: Any, kind: str, element: Any) -> tuple[Any, ...]:
    """Which locations of a container one element-wise method call writes."""
    if isinstance(base, dict):
        return (element,)
    if isinstance(base, _SEQUENCES):
        return {"append": (LAST, ("in", element)), "pop": (LAST,)}.get(kind, (("in", element),))
    return (("in", element),)


def _closure_cell(functions: list[FunctionType], index: int, current: Any) -> Any:
    """The one cell at ``index`` of these functions' closures that holds ``current``."""
    cells = {}
    for function in functions:
        closure = function.__closure__
        if closure is None or index >= len(closure):
            continue
        cell = closure[index]
        try:
            held = cell.cell_contents
        except ValueError:
            held = MISSING
        if held is current:
            cells[id(cell)] = cell
    return next(iter(cells.values())) if len(cells) == 1 else None


def _callers_functions(frame: FrameType, code: CodeType) -> list[FunctionType]:
    """Functions running ``code`` that the caller holds in a local: the cheap, usual case."""
    caller = frame.f_back
    if caller is None:
        return []
    return [
        value
        for value in list(caller.f_locals.values())
        if type(value) is FunctionType and value.__code__ is code
    ]


class _MergedCell:
    """Stands for every closure variable of one name (see Detector._variable)."""

    __slots__ = ()


_MERGED_CELLS: dict[str, _MergedCell] = {}


def _cell_names(cell: CellType) -> list[str]:
    """The closure variables ``cell`` stores, named by the functions that hold it."""
    names = []
    for holder in gc.get_referrers(cell):
        if type(holder) is tuple:
            for function in gc.get_referrers(holder):
                if type(function) is FunctionType and function.__closure__ is holder:
                    names.append(function.__code__.co_freevars[holder.index(cell)])
    return names


def _functions_running(code: CodeType) -> list[FunctionType]:
    import gc

    return [
        ref for ref in gc.get_referrers(code) if type(ref) is FunctionType and ref.__code__ is code
    ]


def _own_cell(frame: FrameType, name: str, current: Any) -> Any:
    """The cell ``frame`` made for ``name``, reached through a nested function it made."""
    nested = [
        value
        for value in list(frame.f_locals.values())
        if type(value) is FunctionType
        and value.__closure__ is not None
        and name in value.__code__.co_freevars
    ]
    by_index: list[FunctionType] = []
    for function in nested:
        index = function.__code__.co_freevars.index(name)
        cell = _closure_cell([function], index, current)
        if cell is not None:
            by_index.append(cell)
    distinct = {id(cell): cell for cell in by_index}
    return next(iter(distinct.values())) if len(distinct) == 1 else None


# type's own descriptors: a metaclass cannot intercept them
_TYPE_DICT: Callable[[type], Any] = type.__dict__["__dict__"].__get__
_TYPE_MRO: Callable[[type], tuple[type, ...]] = type.__dict__["__mro__"].__get__


def _deletes(frame: FrameType) -> bool:
    """Is the subscript ``frame`` is at a ``del container[key]``?"""
    return frame.f_code.co_code[frame.f_lasti] == _DELETE_SUBSCR


def _item_runs(frame: FrameType, op: str) -> tuple[str, ...]:
    """The one item method a subscript calls (``__missing__`` aside).

    A ``Counter`` defines ``__missing__`` and ``__delitem__`` in Python, yet
    ``c[k]`` and ``c[k] = v`` are dict's C code: skipped as a class with item
    methods of its own, a lost update on ``c[k] += 1`` was called verified.
    """
    if op == "read":
        return ("__getitem__",)
    return ("__delitem__",) if _deletes(frame) else ("__setitem__",)


_DEFAULT_MISSING = defaultdict.__missing__


def _insert_default(log: Any, base: Any, key: Any) -> None:
    """``dd[k]`` on a ``defaultdict`` without ``k``: its C ``__missing__`` inserts the
    default, a write of the key and of the size, where the subscript is a read.

    A ``__missing__`` written in Python is code that records its own accesses
    (traced, or an untraced library's call, which the step log judges).
    """
    if not isinstance(base, defaultdict) or base.default_factory is None:
        return
    if getattr(type(base), "__missing__", None) is not _DEFAULT_MISSING:
        return
    try:
        if dict.__contains__(base, key):
            return
    except TypeError:
        return  # unhashable: the subscript raises
    log.touch(base, WHOLE, True)
    log.touch(base, key, True)


#: a dict's views (the proxy is a view of a whole mapping); entry views compare values
_ENTRY_VIEWS: tuple[type, ...] = (type({}.items()), type({}.values()))
_MAPPING_VIEWS: tuple[type, ...] = (type({}.keys()), *_ENTRY_VIEWS, MappingProxyType)
#: type -> does it advance in C (see _self_iterator)
_ITERATOR_TYPES: dict[type, bool] = {}


def _self_iterator(cls: type) -> bool:
    """Is ``cls`` an iterator whose ``__next__`` is C (a list's, a generator, a file)?

    A ``__next__`` written in Python is code: traced, its own accesses are
    the real ones.
    """
    found = _ITERATOR_TYPES.get(cls)
    if found is None:
        method = next(
            (_TYPE_DICT(k)["__next__"] for k in _TYPE_MRO(cls) if "__next__" in _TYPE_DICT(k)),
            None,
        )
        found = method is not None and not isinstance(method, FunctionType)
        if len(_ITERATOR_TYPES) >= _TYPE_CACHE_LIMIT:
            _ITERATOR_TYPES.clear()  # classes made per run must not pile up
        _ITERATOR_TYPES[cls] = found
    return found


def _runs(recipe: Recipe) -> tuple[str, ...]:
    """The methods of a container that an operation other than item access calls.

    Empty (every item method counts) where that is not known. A C
    ``OrderedDict`` method on a subclass may call the subclass's own item
    methods too: those are traced and record their own accesses, so the call
    is then recorded twice (more conflicts, never fewer).
    """
    op = recipe.op
    if op == "iterate":
        return ("__iter__",)
    if op == "scan-arg":
        return ("__len__",) if recipe.name == "len" else ("__iter__",)
    if op == "contains":
        return ("__contains__",)
    if op == "truth":
        return ("__bool__", "__len__")
    if op == "call" and recipe.name is not None:
        return (recipe.name,)
    return ()


#: scanning builtins that take the whole container in one C call
_COPIES = frozenset(("list", "tuple", "sorted"))

_ITEM_METHODS = (
    "__getitem__",
    "__setitem__",
    "__delitem__",
    "__contains__",
    "__iter__",
    "__len__",
    "get",
    "pop",
    "setdefault",
    "append",
    "add",
)


#: callables whose frames are traced code: no hidden effect of their own
_TRACED_CALLABLES = (FunctionType, MethodType)
#: C routines: a builtin function or bound method, an unbound method, a slot wrapper
_C_ROUTINES = (
    BuiltinFunctionType,
    MethodDescriptorType,
    ClassMethodDescriptorType,
    WrapperDescriptorType,
    MethodWrapperType,
)
#: C routines whose call from Python code fires a profile event (``c_call``)
_PROFILED = (BuiltinFunctionType, MethodDescriptorType)


def _routine_kind(kind: type) -> type:
    """``kind``, or ``BuiltinFunctionType`` for its subclasses: 3.13 gives a C method
    defined with METH_METHOD (``asyncio.Future.set_result``) a type of its own,
    ``builtin_method``, which a profile hook reports like any builtin. Taken for an
    unknown C callable object, it made the step opaque."""
    if kind is not BuiltinFunctionType and issubclass(kind, BuiltinFunctionType):
        return BuiltinFunctionType
    return kind


_UNBOUND = (MethodDescriptorType, WrapperDescriptorType)
_ATTRIBUTE_BUILTINS = (getattr, setattr, delattr, hasattr)
#: C methods that keep what they are given without reading it (or only hash it)
_STORES_ARGUMENTS = frozenset(
    (
        "append",
        "appendleft",
        "insert",
        "add",
        "setdefault",
        "put",
        "put_nowait",
        "send",
        "send_nowait",
        "get",
        "pop",
        "remove",
        "discard",
        "index",
        "count",
        "__setitem__",
        "__contains__",
        "__getitem__",
        "__delitem__",
    )
)
#: C iterator types that read what they are given as they are consumed, maybe later
_LAZY_ITERATORS = frozenset((map, filter, zip, enumerate, reversed))


def _read_anything(log: Any, lingers: bool) -> None:
    """A read of any key on an unknown object (StepLog.unplaced_read); ``lingers``: to the
    actor's end, for a loop or a lazy C iterator that goes on reading it."""
    start = len(log.current)
    log.unplaced_read(None)
    if lingers:
        log.linger_from(start)


def _lazy_iterator(callee: Any) -> bool:
    """A C type whose objects read what they were handed as they are consumed, later."""
    return callee in _LAZY_ITERATORS or getattr(callee, "__module__", "") == "itertools"


_LRU_WRAPPER = type(lru_cache(maxsize=None)(lambda: None))
#: C callable objects that touch no shared state when called
_INERT_CALLABLES = (ReferenceType,)
#: how deep C code calling C code is followed (a partial of a partial ...)
_HIDDEN_DEPTH = 4


def _rebuild_callee(sym: Sym, frame: FrameType, f_locals: dict[str, Any]) -> Any:
    """The callable a ``callee`` recipe calls, without running user code, or MISSING.

    ``obj.name(...)``: from the instance's (or module's) dictionary, else a C
    method of its class, bound; a method written in Python is a function.
    """
    if sym is not None and sym[0] == "result":
        return _rebuild_result(sym, frame, f_locals)
    if sym is None or sym[0] != "method":
        return evaluate(sym, frame, f_locals)
    receiver = evaluate(sym[1], frame, f_locals)
    if receiver is MISSING:
        return MISSING
    if not isinstance(receiver, type):
        found = instance_attribute(receiver, sym[2])
        if found is not MISSING:
            return found
    return _c_method(receiver, sym[2])


def _rebuild_argument(sym: Sym, frame: FrameType, f_locals: dict[str, Any]) -> Any:
    """A call's argument, without running user code; ``l.append`` handed over as a value
    is the C method bound (no instance dictionary holds it)."""
    value = evaluate(sym, frame, f_locals)
    if value is MISSING and sym is not None:
        if sym[0] == "attr":
            return _rebuild_callee(("method", sym[1], sym[2]), frame, f_locals)
        if sym[0] == "result":
            return _rebuild_result(sym, frame, f_locals)
        if sym[0] == "star" or sym[0] == "starstar":
            return _Packed(sym[0], evaluate(sym[1], frame, f_locals))
    return value


def _python_method(sym: Sym, frame: FrameType, f_locals: dict[str, Any]) -> bool:
    """Is ``sym`` (``obj.name``, not rebuilt as a C callable) a method written in Python,
    found on the class (traced code, called with a profile event)?"""
    if sym is None or sym[0] != "method":
        return False
    receiver = evaluate(sym[1], frame, f_locals)
    if receiver is MISSING:
        return False
    for klass in _TYPE_MRO(receiver if isinstance(receiver, type) else type(receiver)):
        found = _TYPE_DICT(klass).get(sym[2], MISSING)
        if found is not MISSING:
            if type(found) is staticmethod or type(found) is classmethod:
                found = found.__func__
            return type(found) is FunctionType
    return False


def _rebuild_arguments(
    syms: tuple[Sym, ...], frame: FrameType, f_locals: dict[str, Any]
) -> list[Any]:
    """A call's arguments, one by one (``f(*args)``'s unpacked), MISSING where unknown."""
    arguments = [_rebuild_argument(sym, frame, f_locals) for sym in syms]
    if arguments and type(arguments[0]) is _Packed:
        return _unpacked(arguments)
    return arguments


class _Packed:
    """``*args`` / ``**kw`` of a call, rebuilt (``value``, or MISSING): see _unpacked."""

    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value: Any) -> None:
        self.kind = kind
        self.value = value


def _unpacked(arguments: list[Any]) -> list[Any]:
    """A packed call's arguments, one by one: a tuple's items, a dictionary's values;
    MISSING for a packed value that is not an exact tuple, list or dict."""
    out: list[Any] = []
    for packed in arguments:
        value = packed.value if type(packed) is _Packed else MISSING
        if type(value) is tuple or type(value) is list:
            out.extend(value)
        elif type(value) is dict:
            out.extend(value.values())
        else:
            out.append(MISSING)
    return out


#: C callables whose making runs no user code: a call's result the detector rebuilds
_SAFE_MAKERS = (partial, attrgetter, itemgetter, methodcaller)


def _rebuild_result(sym: tuple[Any, ...], frame: FrameType, f_locals: dict[str, Any]) -> Any:
    """A call's result (``("result", callable, arguments, keywords)``) when the call runs
    no user code: ``getattr(o, "f")``, ``type(o)``, ``functools.partial(setattr, o, "x")``,
    ``operator.attrgetter("x")``. Else MISSING."""
    _, callee_sym, arg_syms, keywords = sym
    if keywords:
        return MISSING
    made = _rebuild_callee(callee_sym, frame, f_locals)
    if made is getattr and len(arg_syms) == 2:
        owner = _rebuild_argument(arg_syms[0], frame, f_locals)
        name = evaluate(arg_syms[1], frame, f_locals)
        if owner is MISSING or type(name) is not str:
            return MISSING
        found = instance_attribute(owner, name)
        return found if found is not MISSING else _c_method(owner, name)
    if made is type and len(arg_syms) == 1:
        owner = _rebuild_argument(arg_syms[0], frame, f_locals)
        return type(owner) if owner is not MISSING else MISSING
    if type(made) is BuiltinFunctionType and made.__name__ == "get" and 1 <= len(arg_syms) <= 2:
        return _dict_get(made.__self__, arg_syms, frame, f_locals)
    if made in _SAFE_MAKERS and arg_syms:
        values = [_rebuild_argument(arg, frame, f_locals) for arg in arg_syms]
        if any(value is MISSING or type(value) is _Packed for value in values):
            return MISSING
        try:
            return made(*values)
        except Exception:
            return MISSING
    return MISSING


def _dict_get(owner: Any, arg_syms: tuple[Sym, ...], frame: FrameType, f_locals: Any) -> Any:
    """``d.get(k[, default])`` on a plain dict with a str or int key (no user ``__eq__``
    or ``__hash__`` runs): the stored value, or the default. A default built in place
    (``d.get(k, [])``) is new, shared by nobody: an empty tuple stands for it."""
    key = evaluate(arg_syms[0], frame, f_locals)
    if type(owner) is not dict or (type(key) is not str and type(key) is not int):
        return MISSING
    found = dict.get(owner, key, MISSING)
    if found is not MISSING or len(arg_syms) == 1:
        return None if found is MISSING else found
    if arg_syms[1] == NEW:
        return ()
    return _rebuild_argument(arg_syms[1], frame, f_locals)


#: recipes that read all of their operand
_READS_WHOLE = frozenset(("iterate", "scan-arg", "contains"))
#: C methods whose result is a view or a copy of their container (read by their own
#: recipe), never an object already stored in it
_FRESH_RESULTS = frozenset(("keys", "values", "items", "copy", "count", "index", "__len__"))
#: Python functions of a runtime that return a new container built from state racecheck
#: records as that runtime's own (asyncio's task registry): ``for t in asyncio.all_tasks():``
#: reads nothing of the program's. Taken for a read of anything, it met every write of
#: the task's later steps (a loop program's 21 traces became 80)
_FRESH_FUNCTIONS = frozenset((asyncio.all_tasks, asyncio.tasks.all_tasks))
#: module-level C functions that return an object stored elsewhere (the rest make new
#: objects or scalars: ``threading.get_ident()``, ``time.monotonic()``, ``sorted(...)``)
_STORED_RESULTS = frozenset(
    (
        "getattr",
        "next",
        "anext",
        "iter",
        "aiter",
        "min",
        "max",
        "vars",
        "globals",
        "locals",
        "getitem",
        "reduce",
        "heappop",
        "heappushpop",
        "heapreplace",
    )
)


def _may_hide_state(sym: Sym, frame: FrameType, f_locals: dict[str, Any], depth: int) -> bool:
    """May the argument ``sym``, which the detector could not rebuild, be shared state?

    The result of a call the detector cannot see into may be (``get_items()``
    returning a shared list, ``d.get(k)``); a generator's, a new object's, a
    view's is not (their reads are recorded where they run); a lazy iterator
    hides what its own arguments hide. ``*a`` made in place hides its items.
    """
    if sym is None or sym is NULL:
        return False
    tag = sym[0]
    if tag == "merged":  # ``islice(a() if c else b(), 2)``: either alternative may
        return any(
            _may_hide_state(alternative, frame, f_locals, depth + 1)
            or type(evaluate(alternative, frame, f_locals)) not in _SCALARS
            for alternative in sym[1]
        )
    if tag == "star" or tag == "starstar":
        return evaluate(sym[1], frame, f_locals) is MISSING  # ``f(*[a, b])``, ``f(*get())``
    if tag == "awaited":
        return True  # ``for v in await self.fetch()``: what the coroutine returned
    if tag == "attr" or tag == "item":
        # ``for v in self.prop``, ``sorted(o[k])`` of a custom mapping: a getter's value
        return evaluate(sym, frame, f_locals) is MISSING
    if tag != "result" or depth > _HIDDEN_DEPTH:
        return tag == "result"
    if _rebuild_result(sym, frame, f_locals) is not MISSING:
        return False  # rebuilt: read as the object it is
    made = _rebuild_callee(sym[1], frame, f_locals)
    if made is MISSING:
        return True
    if type(made) is FunctionType or type(made) is MethodType:
        if made in _FRESH_FUNCTIONS:
            return False
        return not made.__code__.co_flags & _MAKES_GENERATOR
    if isinstance(made, type):
        if _lazy_iterator(made):
            return any(
                evaluate(arg, frame, f_locals) is MISSING
                and _may_hide_state(arg, frame, f_locals, depth + 1)
                for arg in sym[2]
            )
        return False  # a new object: a C container, or one made in Python (traced)
    name = getattr(made, "__name__", "")
    owner = getattr(made, "__self__", None)
    if owner is None or isinstance(owner, ModuleType):
        return name in _STORED_RESULTS
    if isinstance(owner, (str, bytes, int, float)):
        return False  # ``flow.split("->")``: an immutable value's methods make new objects
    return name not in _FRESH_RESULTS


#: a function whose call makes a generator or coroutine: its body is traced code
_MAKES_GENERATOR = 0x20 | 0x80 | 0x100 | 0x200  # CO_GENERATOR, COROUTINE, ITERABLE_, ASYNC_GEN


def _c_method(owner: Any, name: str) -> Any:
    """``owner.name`` when its class defines it in C (bound; unbound on a class), else
    MISSING (a method written in Python, or an attribute that is not a C method)."""
    kind = owner if isinstance(owner, type) else type(owner)
    # every ``obj.method()`` of traced code asks (its callee recipe): one answer per
    # class and name, as member_slot keeps for the same walk
    key = (kind, name)
    found: Any = _CLASS_ROUTINES.get(key)
    if found is None:
        found = MISSING
        for klass in _TYPE_MRO(kind):
            found = _TYPE_DICT(klass).get(name, MISSING)
            if found is not MISSING:
                break
        if type(found) not in _C_ROUTINES:
            found = MISSING
        if len(_CLASS_ROUTINES) >= _TYPE_CACHE_LIMIT:
            _CLASS_ROUTINES.clear()  # classes made per run must not pile up
        _CLASS_ROUTINES[key] = found
    if found is MISSING:
        return MISSING
    return found if isinstance(owner, type) else found.__get__(owner, kind)


#: (class, name) -> the C routine the first class along the MRO defining ``name``
#: holds, or MISSING (see _c_method)
_CLASS_ROUTINES: dict[tuple[type, str], Any] = {}


def _methodcaller_parts(caller: Any) -> tuple[str, list[Any]]:
    """The method name and the arguments an ``operator.methodcaller`` passes."""
    made, given = caller.__reduce__()
    if made is methodcaller:
        return given[0], list(given[1:])
    return made.args[0], [*given, *made.keywords.values()]  # partial(methodcaller, name, **kw)


def _made_in_python(cls: type) -> bool:
    """Does making an instance of ``cls`` run an ``__init__`` or ``__new__`` written in
    Python? (Not a heap-type test: 3.12+ makes many C types, itertools' too, heap types.)"""
    for klass in _TYPE_MRO(cls):
        namespace = _TYPE_DICT(klass)
        for name in ("__init__", "__new__"):
            found = namespace.get(name)
            if isinstance(found, staticmethod):
                found = found.__func__
            if type(found) is FunctionType:
                return True
    return False


def _python_call(kind: type) -> bool:
    """Is calling an instance of ``kind`` running a ``__call__`` written in Python?"""
    for klass in _TYPE_MRO(kind):
        found = _TYPE_DICT(klass).get("__call__", MISSING)
        if found is not MISSING:
            return type(found) is FunctionType
    return False


def _builtin_of(base: Any) -> Any:
    """dict, list or set: the builtin a (plain) container derives from."""
    for kind in _CONTAINERS:
        if isinstance(base, kind):
            return kind
    return type(base)


def _data_descriptor(cls: type, name: str) -> bool:
    """Does ``cls`` define ``name`` as a property (or another descriptor with ``__set__``)?"""
    for klass in _TYPE_MRO(cls):
        found = _TYPE_DICT(klass).get(name, MISSING)
        if found is not MISSING:
            kind = type(found)
            return any(
                "__set__" in _TYPE_DICT(k) or "__delete__" in _TYPE_DICT(k) for k in _TYPE_MRO(kind)
            )
    return False


def _is_code(value: Any) -> bool:
    """A method, property, nested class or other descriptor: not class-level state."""
    if value is None or isinstance(value, _SCALARS):
        return False
    kind = type(value)
    if isinstance(value, type):
        return True
    return any("__get__" in _TYPE_DICT(k) for k in _TYPE_MRO(kind))


_NAMESPACE_BUILTINS = (getattr, setattr, vars, hasattr, isinstance, type)


def _is_builtin(via: Sym, frame: FrameType, f_locals: dict[str, Any]) -> bool:
    """``via`` (the callable of ``getattr(...)``/``vars(...)``) is the real builtin."""
    if via is None:
        return True  # obj.__dict__: no call involved
    value = evaluate(via, frame, f_locals)
    return any(value is builtin for builtin in _NAMESPACE_BUILTINS)


def _inserts_if_absent(act: _Site, read: _Site, racing: _Site) -> bool:
    """A sweep of the keys deciding a ``setdefault``, raced by another thread's one key.

    multimethod 1.9.1 works out an answer from ``list(self)`` and stores it with
    ``self.setdefault(types, ...)``; another thread stores its own answer under
    other types meanwhile. ``setdefault`` inserts only if the key is absent, so
    the other entry cannot be lost, whichever side of the copy it landed: the
    act is no lost update. The copy may have missed that entry, which changes
    the answer only if the answer depends on it (multimethod filters its cache
    entries out); the detector cannot know, and lets the sweep off, as the
    atomicity rule lets off a sweep before a one-key store. A count is not let
    off (``len``: numbering entries by it, or a size bound, is what another
    insert breaks), nor a membership check, nor a plain store, nor a racing
    write that changed more than one key (``clear``, ``update``).
    """
    return (
        act.slot
        and act.action == "called .setdefault() on"
        and read.action == "iterated"
        and racing.slot
        and read.frame is not None
        and _copy_only_iterated(read.frame.f_code, read.offset)
    )


#: id(code) -> (code, offset of a copy's call -> is the copy only looped over)
_COPIES_ITERATED: dict[int, tuple[CodeType, dict[int, bool]]] = {}


def _copy_only_iterated(code: CodeType, offset: int) -> bool:
    """Is the copy made by the call at ``offset`` (``list(d)``) only looped over?

    ``for k in list(d)``, a comprehension over it, or a local holding it that
    every later load loops over: then what the copy tells is which keys there
    are, one at a time. Passed to another call (``len(list(d))``) it may be a
    count, which numbering or a size bound acts on: not let off. Asked only
    where a decision would otherwise be reported; one answer per code and offset.
    """
    entry = _COPIES_ITERATED.get(id(code))
    if entry is None:
        if len(_COPIES_ITERATED) >= _TYPE_CACHE_LIMIT:
            _COPIES_ITERATED.clear()
        entry = _COPIES_ITERATED[id(code)] = (code, {})
    known = entry[1].get(offset)
    if known is None:
        listing = list(dis.get_instructions(code))
        index = bisect.bisect_right([ins.offset for ins in listing], offset) - 1
        known = entry[1][offset] = _iterated_after(listing, index)
    return known


def _iterated_after(listing: list[dis.Instruction], index: int) -> bool:
    if index < 0 or index + 1 >= len(listing) or not listing[index].opname.startswith("CALL"):
        return False
    after = listing[index + 1]
    if after.opname == "GET_ITER":
        return True
    if after.opname != "STORE_FAST":
        return False
    loads = [
        i
        for i, ins in enumerate(listing)
        if ins.opname in _LOCAL_LOADS
        and after.argval in (ins.argval if isinstance(ins.argval, tuple) else (ins.argval,))
    ]
    return bool(loads) and all(
        i + 1 < len(listing) and listing[i + 1].opname == "GET_ITER" for i in loads
    )


def _waits_in_loop(read: _Site) -> bool:
    """Is the read the condition of a ``while`` loop (a wait that re-checks)?

    ``while parent._unfinished_tasks: wait()`` (janus's ``join``) re-reads a
    counter others bring down: seeing their value, not one's own, is what the
    loop waits for. Not cross-talk, whatever one wrote to it before.
    """
    frame = read.frame
    if frame is None or _use(read) != "branch":
        return False
    return source_line(frame.f_code.co_filename, read.lineno).lstrip().startswith("while ")


def _walks_queue(check: _Site) -> bool:
    """Was the decision a ``for`` loop over the container (able to pass entries over)?"""
    frame = check.frame
    if frame is None or check.offset < 0:
        return True  # not known: keep reporting
    recipe = recipes(frame.f_code).get(check.offset)
    return recipe is None or recipe.op == "iterate"


def _join(into: dict[int, int], other: dict[int, int]) -> None:
    for actor, tick in other.items():
        if into.get(actor, 0) < tick:
            into[actor] = tick


#: methods through which a mapping is read, and written: ``cache[k]`` runs the
#: first, ``cache[k] = v`` the second, each in a frame of its own
_LOOKUPS = frozenset(("__getitem__", "__contains__", "get", "__missing__"))
_STORES = frozenset(("__setitem__", "setdefault", "__delitem__", "pop"))


def _read_in_scope(read: _Site, now: FrameType) -> bool:
    """Is the read still in scope of the write in ``now``?

    Either its frame is ``now`` or one of its callers; or the read and the
    write ran in accessors of one object, called from a frame that is still
    running: a property's getter then its setter (they share a name:
    ``v = obj.state`` ... ``obj.state = v + 1``), or a mapping's
    ``__getitem__``/``get`` then its ``__setitem__``/``setdefault``
    (``if k not in cache`` ... ``cache[k] = v``, cachetools' wrapper). The
    frame that used the accessors is found by leaving the accessor frames.
    """
    if _in_scope(read.frame, now):
        return True
    if read.caller is not None and _own_use(read) == "return":
        # ``if pool.has_room():`` ... ``pool.open_one()``: the caller decided, or the
        # frame further up that the caller returned the value to
        if _in_scope(read.caller, now):
            return True
        if read.passed is not None and _in_scope(read.passed[0], now):
            return True
    frame = read.frame
    if frame is None or read.caller is None or frame.f_code is now.f_code:
        return False
    reader, writer = frame.f_code.co_name, now.f_code.co_name
    if reader == writer:
        accessors = frozenset((reader,))
    elif reader in _LOOKUPS and writer in _STORES:
        accessors = _LOOKUPS | _STORES
    else:
        return False
    user: FrameType | None = read.caller
    depth = 0
    while user is not None and user.f_code.co_name in accessors and depth < 8:
        user = user.f_back  # LRUCache.__getitem__ -> Cache.__getitem__: one lookup
        depth += 1
    if user is None:
        return False
    mine: FrameType | None = now.f_back
    depth = 0
    while mine is not None and mine.f_code.co_name in accessors and depth < 8:
        mine = mine.f_back
        depth += 1
    return mine is not None and _in_scope(user, mine)


def _in_scope(earlier: FrameType | None, now: FrameType) -> bool:
    """Is ``earlier`` (still running) the frame of ``now`` or one of its callers?"""
    frame: FrameType | None = now
    depth = 0
    while frame is not None and depth < 64:
        if frame is earlier:
            return True
        frame = frame.f_back
        depth += 1
    return False


_BRANCHES = frozenset(("JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP", "TO_BOOL", "FOR_ITER"))
_SHARED_STORES = frozenset(
    ("STORE_ATTR", "STORE_SUBSCR", "STORE_GLOBAL", "STORE_DEREF", "STORE_SLICE", "DELETE_SUBSCR")
)
_LOCAL_STORES = frozenset(
    ("STORE_FAST", "STORE_NAME", "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST")
)
_LOCAL_LOADS = frozenset(
    (
        "LOAD_FAST",
        "LOAD_FAST_CHECK",
        "LOAD_FAST_AND_CLEAR",
        "LOAD_FAST_LOAD_FAST",
        "STORE_FAST_LOAD_FAST",
        "LOAD_NAME",
    )
)
_OPAQUE = frozenset(("YIELD_VALUE", "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP", "RAISE_VARARGS"))
#: id(code) -> (code, offset -> use). Keyed by identity: a code object hashes
#: its bytecode, constants and names again at every lookup (about 1 us on
#: 3.12+), and a use is asked at most reads. Each entry keeps its code object
#: alive, so its id is not reused meanwhile.
_uses: dict[int, tuple[CodeType, dict[int, str]]] = {}


def _use(site: _Site) -> str:
    """What the value a read loaded is for: "branch", "flow" (into a store), or "".

    "" is a value that is only displayed or passed along and dropped
    (``log.debug("%s", self.x)``): a load that decides nothing. A returned
    value is for what its caller does with the call's result, read where the
    caller was when the read ran: ``while not box.answered():`` makes ``with
    self._lock: return self._answered`` a branch, and ``log.debug("%s",
    self.current())`` a display. A caller that returns it on hands it to its
    own caller, followed up to _RETURN_LEVELS calls above the read
    (``done()`` returning ``self._is_set()``). Yielded values, values returned
    on further, and anything not worked out count as "flow", so an unknown use
    keeps being reported.
    """
    # _own_use and _use_at written out for a use already known (a read's every
    # time but its first): this runs at most reads (see _touch)
    if site.action == "checked":
        return "branch"
    frame = site.frame
    offset = site.offset
    if frame is None or offset < 0:
        return "flow"
    entry = _uses.get(id(frame.f_code))
    found = entry[1].get(offset) if entry is not None else None
    if found is None:
        found = _use_at(frame.f_code, offset)
    if found != "return":
        return found
    caller = site.caller
    if caller is None or site.call_offset < 0:
        return "flow"
    use = _use_at(caller.f_code, site.call_offset)
    if use == "return":
        passed = site.passed
        if passed is None:
            return "flow"  # returned on past what was followed: somebody unknown
        use = _use_at(passed[0].f_code, passed[1])
    return "flow" if use == "return" else use


#: how many calls above a read its returned value is followed (see _passed_on): a
#: safety bound, not a cost one. The walk stops at the first caller that uses the
#: value, so it costs one cached look-up per frame the value is really relayed
#: through; four (detect16's) left a flag relayed by five helpers unknown.
_RETURN_LEVELS = 32


def _passed_on(caller: FrameType) -> tuple[FrameType, int] | None:
    """Where a value the reading frame returns to ``caller`` is used, if further up.

    Asked at the read, and only of a read its own frame returns: each caller's
    position is its call of the frame below only while that call runs. None
    when ``caller`` itself uses the value (the one level every read keeps in
    its site), or when it is still returned on at _RETURN_LEVELS calls up. Each
    question is one cached answer per code and offset (_use_at).
    """
    if _use_at(caller.f_code, caller.f_lasti) != "return":
        return None
    frame = caller.f_back
    for _ in range(_RETURN_LEVELS - 1):
        if frame is None:
            return None
        offset = frame.f_lasti
        if _use_at(frame.f_code, offset) != "return":
            return frame, offset
        frame = frame.f_back
    return None


def _own_use(site: _Site) -> str:
    """What the reading frame itself does with the value: as _use, or "return"."""
    if site.action == "checked":
        return "branch"
    frame = site.frame
    if frame is None or site.offset < 0:
        return "flow"
    return _use_at(frame.f_code, site.offset)


def _use_at(code: CodeType, offset: int) -> str:
    entry = _uses.get(id(code))
    if entry is None:
        entry = _uses[id(code)] = (code, {})
    known = entry[1]
    found = known.get(offset)
    if found is None:
        # The listing is made again for each new offset, not kept: kept for the
        # exploration (an Instruction and its Positions per instruction of every
        # code that read something), it was most of what the collector walked
        # after every detected run. The answers are kept; each offset asks once.
        listing = list(dis.get_instructions(code))
        # a caller's f_lasti may point into its CALL's inline caches (3.11): the
        # instruction is the last one starting at or before it
        index = bisect.bisect_right([ins.offset for ins in listing], offset) - 1
        found = known[offset] = "flow" if index < 0 else _use_after(listing, index, True)
    return found


def _use_after(listing: list[dis.Instruction], index: int, follow: bool) -> str:
    """Follow the value pushed at ``listing[index]`` to what consumes it (a short scan).

    "return" when it is returned: what it is for is then the caller's business.
    """
    if _stored_by_call(listing, index):
        return "flow"
    line = _line(listing[index])
    start = index + 1
    if listing[index].opname == "SEND":
        # an awaiting caller (``if await pool.has_room():``): the awaited coroutine's
        # return value is pushed where the SEND loop ends, not at its yield
        start = _send_end(listing, index)
    scan = listing[start : start + 48]
    for i, ins in enumerate(scan):
        name = ins.opname
        if name.startswith("POP_JUMP") or name in _BRANCHES:
            return "branch"
        if name in _SHARED_STORES or name in _OPAQUE:
            return "flow"
        if name == "RETURN_VALUE":
            return "return"
        if name in _LOCAL_STORES:
            return _local_use(listing, ins, follow) if follow else "flow"
        if name == "POP_TOP":
            if i + 1 < len(scan) and scan[i + 1].opname == "RETURN_VALUE" and _line(ins) != line:
                # ``with lock: return self.x`` (and try/finally): the exit's own
                # result, on the ``with``'s line, is popped; the read is returned
                return "return"
            return ""
    return "flow"


def _line_at(code: CodeType, offset: int) -> int:
    """The line of the instruction at ``offset``, as a frame's ``f_lineno`` gives it there."""
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line  # type: ignore[return-value]  # None: no line, as f_lineno
    return -1


def _send_end(listing: list[dis.Instruction], index: int) -> int:
    """The index of the instruction a SEND jumps to when the awaited call returns."""
    target = listing[index].argval
    for i in range(index + 1, min(len(listing), index + 8)):
        if listing[i].offset == target:
            return i
    return index + 1  # not the shape known: the yield after it makes it "flow"


def _line(ins: dis.Instruction) -> int | None:
    positions = ins.positions
    return positions.lineno if positions is not None else None


#: methods that store their argument somewhere (a container, a queue, a future)
_STORING_METHODS = frozenset(
    (
        "append",
        "appendleft",
        "extend",
        "extendleft",
        "insert",
        "add",
        "update",
        "setdefault",
        "put",
        "put_nowait",
        "set_result",
        "send",
    )
)
_STATEMENT_ENDS = frozenset(("POP_TOP", "STORE_FAST", "STORE_ATTR", "STORE_SUBSCR", "RESUME"))


def _stored_by_call(listing: list[dis.Instruction], index: int) -> bool:
    """Is the value an argument of ``x.append(...)``-like call of its statement?

    The method is loaded before its arguments: look back to the statement's start.
    """
    for ins in reversed(listing[max(0, index - 24) : index]):
        if ins.opname in _STATEMENT_ENDS or ins.opname.startswith(("POP_JUMP", "JUMP")):
            return False
        if ins.opname in ("LOAD_METHOD", "LOAD_ATTR") and ins.argval in _STORING_METHODS:
            return True
    return False


def _local_use(listing: list[dis.Instruction], store: dis.Instruction, follow: bool) -> str:
    """A read kept in a local decides what that local's later loads decide."""
    # 3.13 fuses stores with the next store or load: (stored, loaded) pairs
    stored = store.argval if isinstance(store.argval, tuple) else (store.argval,)
    if store.opname == "STORE_FAST_LOAD_FAST":
        stored = stored[:1]
    best = ""
    for i, ins in enumerate(listing):
        if ins.offset <= store.offset or ins.opname not in _LOCAL_LOADS:
            continue
        names = ins.argval if isinstance(ins.argval, tuple) else (ins.argval,)
        if any(name in names for name in stored):
            use = _use_after(listing, i, False)
            if use == "branch":
                return use
            best = best or use
    return best


#: values equal by content that nothing can change, compared in C without user code
_EQUAL_BY_VALUE = frozenset((int, float, complex, str, bytes, bool, type(None)))
#: how many values one comparison looks at before it gives up (and the read is reported)
_SAME_BUDGET = 64
#: tuple classes whose instances compare as tuples and carry nothing else (named tuples)
_PLAIN_TUPLES: dict[type, bool] = {tuple: True}


def _same(a: Any, b: Any) -> bool:
    """Whether a reader that wrote ``b`` and reads ``a`` cannot tell it got another's value.

    The same object; or two immutable values equal by content: numbers, strings,
    bytes, and tuples, named tuples and frozensets of them (to any depth). A
    mutable value is never the same as another object, however equal now: the
    reader holds the other's object, and what either changes the other sees. No
    user code runs: a tuple class with an ``__eq__`` of its own, or a tuple
    holding user objects that are not identical, is not the same.
    """
    if a is b:
        return True
    budget = [_SAME_BUDGET]
    return _same_content(a, b, budget)


def _same_content(a: Any, b: Any, budget: list[int]) -> bool:
    budget[0] -= 1
    if budget[0] < 0:
        return False
    kind = type(a)
    if type(b) is not kind:
        return False
    if kind in _EQUAL_BY_VALUE:
        return bool(a == b)
    if kind is frozenset:
        # a frozenset's equality hashes and compares its elements: only C's own ones
        if len(a) != len(b) or len(a) > budget[0]:
            return False
        budget[0] -= len(a)
        return all(type(e) in _EQUAL_BY_VALUE for e in a) and bool(a == b)
    if isinstance(a, tuple) and _plain_tuple(kind):
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):
            if x is not y and not _same_content(x, y, budget):
                return False
        return True
    return False


def _plain_tuple(kind: type) -> bool:
    """A tuple class that compares as a tuple and keeps no attributes of its own."""
    plain = _PLAIN_TUPLES.get(kind)
    if plain is None:
        plain = _PLAIN_TUPLES[kind] = (
            type(kind) is type  # no metaclass of its own to answer the look-ups below
            and kind.__eq__ is tuple.__eq__
            and kind.__ne__ is tuple.__ne__
            and kind.__dictoffset__ == 0  # no __dict__: a named tuple's __slots__ = ()
        )
    return plain


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 30 else text[:27] + "..."


def render(sym: Sym) -> str:
    """``("attr", ("local", "self"), "d")`` -> ``self.d``."""
    if sym is None or sym is NULL:
        return "<expr>"
    tag = sym[0]
    if tag in ("local", "global", "deref"):
        return str(sym[1])
    if tag == "const":
        return repr(sym[1])
    if tag == "attr":
        return f"{render(sym[1])}.{sym[2]}"
    if tag == "item":
        return f"{render(sym[1])}[{render(sym[2])}]"
    return "<expr>"
