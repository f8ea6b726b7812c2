"""Reference component for cleveragents #7120: changesets shared by plan-step threads.

In CleverAgents' server mode several plan steps (or actor-graph nodes) run on
their own threads and share one ``PlanExecutionContext``. A step opens a
changeset, records the changes it makes, and closes it again::

    ctx.start_changeset()
    ctx.record_change(ChangeEntry(...))
    ctx.end_changeset()

The context keeps ``_active_changeset_ids``, a plain ``list[str]``:
``start_changeset`` appends, ``record_change`` checks that the list is not
empty and records into ``[-1]`` ("the most recent active changeset").
``end_changeset`` is our reconstruction of the matching close: it reads
``[-1]``, completes that changeset in the store and only then drops it from
the list, so that a store failure leaves the changeset active.

Three contexts, side by side; the diff between them is the whole story.

``PlanExecutionContext`` (buggy, as reported)
    No synchronisation. Two failures are reachable:

    * *Wrong changeset.* "Most recent" is a property of the shared list, not
      of the caller: step-1 starts cs-1, step-2 starts cs-2, and step-1's
      change lands in cs-2. ``end_changeset`` likewise closes the other
      step's changeset.
    * *Crash in a torn check-then-act.* Two steps ending at once both read
      ``[-1]`` (the same id), both complete it, and the second
      ``list.remove`` raises ``ValueError``.

    The report's own crash story -- ``IndexError`` in ``record_change``
    because the list is read "mid-append" -- cannot happen: ``list.append``
    is one step, and a passed ``if not ids`` guard means the list is
    non-empty. Only a *removal* can empty it between the guard and ``[-1]``,
    and while a step that has started a changeset sits in ``record_change``
    its own id is still in the list (every step removes at most as many ids
    as it added). So with balanced start/record/end the ``IndexError`` is
    unreachable; racecheck's exhaustive search (preemption bound 2) agrees for
    this workload (see the tests).

``PlanExecutionContextLocked`` (as proposed in the issue)
    A ``threading.Lock`` around the list operations of each method. The torn
    check-then-act is gone, so nothing crashes any more -- but the lock only
    makes each *method* atomic. "The most recent changeset" is still
    whichever step started last, so step-1's change still lands in step-2's
    changeset. The data is corrupted silently instead of loudly.

``PlanExecutionContextFixed`` (correct)
    A change is tied to the changeset its caller started: ``start_changeset``
    already returns the id, so ``record_change`` and ``end_changeset`` take
    it. We prefer this explicit handle to a per-thread "current changeset"
    (``threading.local``): CleverAgents hands work between threads and runs
    LangGraph nodes as asyncio tasks, several of which share one thread. A
    thread-local would attribute two tasks' changes to whichever started
    last -- the same bug one level down -- and a pooled thread would carry a
    stale id into its next job. A handle travels with the work. The lock
    stays, to keep the active list consistent for readers and to make "is
    this changeset still active, then record" atomic against its end.

The store is an in-memory stand-in with the upstream call shape
(``start(plan_id)``, ``record(id, entry)``, ``complete(id)``). It is
thread-safe on its own (every operation is a single C-level dict/list/
``itertools.count`` call) and trusts its caller, as an append-only audit log
would: corruption shows up in *which* changeset holds an entry.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "VARIANTS",
    "ChangeEntry",
    "ChangesetStore",
    "PlanError",
    "PlanExecutionContext",
    "PlanExecutionContextFixed",
    "PlanExecutionContextLocked",
    "StepOutcome",
    "handle_step",
    "implicit_step",
    "plan_steps",
]


class PlanError(Exception):
    """A plan was used wrongly (upstream raises this for a missing changeset)."""


@dataclass(frozen=True)
class ChangeEntry:
    """One change a plan step made: which resource, what it did, who did it."""

    resource: str
    action: str
    author: str


@dataclass
class Changeset:
    changeset_id: str
    plan_id: str
    entries: list[ChangeEntry] = field(default_factory=list)
    completed: bool = False


class ChangesetStore:
    """In-memory changeset store with the upstream call shape."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._changesets: dict[str, Changeset] = {}

    def start(self, plan_id: str) -> str:
        changeset_id = f"cs-{next(self._ids)}"
        self._changesets[changeset_id] = Changeset(changeset_id, plan_id)
        return changeset_id

    def record(self, changeset_id: str, entry: ChangeEntry) -> None:
        self._changesets[changeset_id].entries.append(entry)

    def complete(self, changeset_id: str) -> None:
        self._changesets[changeset_id].completed = True

    def get(self, changeset_id: str) -> Changeset:
        return self._changesets[changeset_id]

    def all(self) -> list[Changeset]:
        return list(self._changesets.values())


class PlanExecutionContext:
    """Buggy, as reported: the shared list decides which changeset a call means."""

    def __init__(self, plan_id: str, changeset_store: ChangesetStore) -> None:
        self._plan_id = plan_id
        self._changeset_store = changeset_store
        self._active_changeset_ids: list[str] = []

    def start_changeset(self) -> str:
        changeset_id = self._changeset_store.start(self._plan_id)
        self._active_changeset_ids.append(changeset_id)
        return changeset_id

    def record_change(self, entry: ChangeEntry) -> None:
        # "The most recent active changeset" is whoever started last, not the caller's.
        if not self._active_changeset_ids:
            raise PlanError("No active changeset. Call start_changeset() first.")
        changeset_id = self._active_changeset_ids[-1]
        self._changeset_store.record(changeset_id, entry)

    def end_changeset(self) -> str:
        if not self._active_changeset_ids:
            raise PlanError("No active changeset to end.")
        changeset_id = self._active_changeset_ids[-1]
        self._changeset_store.complete(changeset_id)
        # Two enders can both have read the same [-1]: the second remove() raises ValueError.
        self._active_changeset_ids.remove(changeset_id)
        return changeset_id


class PlanExecutionContextLocked:
    """As proposed in the issue: a ``threading.Lock`` around each method's list access.

    Every method is now atomic, which removes the crash. It cannot fix the
    association: the API still has no way to say *which* changeset a call is
    about, so "most recent" still means "whichever step started last".
    """

    def __init__(self, plan_id: str, changeset_store: ChangesetStore) -> None:
        self._plan_id = plan_id
        self._changeset_store = changeset_store
        self._active_changeset_ids: list[str] = []
        self._changeset_lock = threading.Lock()

    def start_changeset(self) -> str:
        changeset_id = self._changeset_store.start(self._plan_id)
        with self._changeset_lock:
            self._active_changeset_ids.append(changeset_id)
        return changeset_id

    def record_change(self, entry: ChangeEntry) -> None:
        with self._changeset_lock:
            if not self._active_changeset_ids:
                raise PlanError("No active changeset. Call start_changeset() first.")
            changeset_id = self._active_changeset_ids[-1]
        self._changeset_store.record(changeset_id, entry)

    def end_changeset(self) -> str:
        with self._changeset_lock:
            if not self._active_changeset_ids:
                raise PlanError("No active changeset to end.")
            changeset_id = self._active_changeset_ids[-1]
            self._changeset_store.complete(changeset_id)
            self._active_changeset_ids.remove(changeset_id)
        return changeset_id


class PlanExecutionContextFixed:
    """Correct: the caller names its changeset with the id ``start_changeset`` returned."""

    def __init__(self, plan_id: str, changeset_store: ChangesetStore) -> None:
        self._plan_id = plan_id
        self._changeset_store = changeset_store
        self._active_changeset_ids: list[str] = []
        self._changeset_lock = threading.Lock()

    def start_changeset(self) -> str:
        changeset_id = self._changeset_store.start(self._plan_id)
        with self._changeset_lock:
            self._active_changeset_ids.append(changeset_id)
        return changeset_id

    def record_change(self, changeset_id: str, entry: ChangeEntry) -> None:
        # Check and record under one lock: the changeset cannot end in between.
        with self._changeset_lock:
            if changeset_id not in self._active_changeset_ids:
                raise PlanError(f"Changeset {changeset_id} is not active.")
            self._changeset_store.record(changeset_id, entry)

    def end_changeset(self, changeset_id: str) -> str:
        with self._changeset_lock:
            if changeset_id not in self._active_changeset_ids:
                raise PlanError(f"Changeset {changeset_id} is not active.")
            self._changeset_store.complete(changeset_id)
            self._active_changeset_ids.remove(changeset_id)
        return changeset_id

    @property
    def active_changeset_ids(self) -> list[str]:
        with self._changeset_lock:
            return list(self._active_changeset_ids)


# --- the workload -----------------------------------------------------------------------


@dataclass
class StepOutcome:
    """What one plan step saw: the changeset it started and the one its end closed."""

    step: str
    started: str | None = None
    ended: str | None = None
    error: BaseException | None = None


def implicit_step(ctx: PlanExecutionContext | PlanExecutionContextLocked, out: StepOutcome) -> None:
    """How a step uses the upstream API: the context remembers "the current" changeset."""
    out.started = ctx.start_changeset()
    ctx.record_change(ChangeEntry(resource=f"{out.step}.txt", action="write", author=out.step))
    out.ended = ctx.end_changeset()


def handle_step(ctx: PlanExecutionContextFixed, out: StepOutcome) -> None:
    """How a step uses the fixed API: it passes the id it was given."""
    changeset_id = out.started = ctx.start_changeset()
    ctx.record_change(
        changeset_id, ChangeEntry(resource=f"{out.step}.txt", action="write", author=out.step)
    )
    out.ended = ctx.end_changeset(changeset_id)


#: variant name -> (context class, how a step calls it)
VARIANTS: dict[str, tuple[type, Callable[..., None]]] = {
    "buggy": (PlanExecutionContext, implicit_step),
    "as_proposed": (PlanExecutionContextLocked, implicit_step),
    "correct": (PlanExecutionContextFixed, handle_step),
}

#: the invariants :func:`plan_steps` asserts, in the words its failures use
INVARIANT_NO_ERROR = "no IndexError/ValueError/PlanError once a step has started its changeset"
INVARIANT_OWN_CHANGESET = (
    "every change lands in (and every end closes) the changeset started by the same thread"
)


def plan_steps(variant: str, steps: int = 2, *, check_association: bool = True) -> None:
    """Run ``steps`` plan-step threads on one shared context, then check the invariants.

    Builds everything fresh (store, context, threads) so it can be a racecheck
    target: ``racecheck.check(lambda: plan_steps("buggy"))``. Errors inside a
    step are caught and reported as a broken invariant, with the original as
    ``__cause__``. ``check_association=False`` checks only the first invariant
    (the one the issue's lock does fix).
    """
    context_cls, step = VARIANTS[variant]
    store = ChangesetStore()
    ctx = context_cls("plan-1", store)
    outcomes = [StepOutcome(step=f"step-{i + 1}") for i in range(steps)]

    def run(out: StepOutcome) -> None:
        try:
            step(ctx, out)
        except (IndexError, ValueError, PlanError) as exc:
            out.error = exc

    threads = [threading.Thread(target=run, args=(out,), name=out.step) for out in outcomes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    for out in outcomes:
        if out.error is not None:
            raise AssertionError(
                f"{INVARIANT_NO_ERROR}: {out.step} started {out.started} and got "
                f"{type(out.error).__name__}: {out.error}"
            ) from out.error
    if not check_association:
        return
    for out in outcomes:
        landed = [cs.changeset_id for cs in store.all() for e in cs.entries if e.author == out.step]
        assert landed == [out.started], (
            f"{INVARIANT_OWN_CHANGESET}: {out.step} started {out.started} but its change "
            f"landed in {', '.join(landed) or 'no changeset'}"
        )
        assert out.ended == out.started, (
            f"{INVARIANT_OWN_CHANGESET}: {out.step} started {out.started} but its "
            f"end_changeset() closed {out.ended}"
        )
