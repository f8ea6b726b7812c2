"""The baton scheduler for real threads.

Every controlled thread (an *actor*) owns a gate: a raw ``_thread`` lock it
sleeps on while another actor runs. At each scheduling point the running actor
asks the engine who runs next; if it is someone else, it opens their gate and
closes its own. So exactly one actor runs at a time, and the order is the
strategy's, not the OS's.

Blocking is bookkeeping, not sleeping: an actor that must wait (a held lock, an
unset event) records a predicate and hands the baton on; it is *enabled* again
only when its predicate holds. When no actor is enabled, virtual time jumps to
the earliest deadline (sleeps, timeouts, loop timers); if there is none, that
is a deadlock, reported as a wait-for graph.

Virtual time may also move while actors could still run, for one kind of
deadline: an idle event loop's next timer. The OS may deschedule a thread
for a while at any point, and a loop's ``sleep(0.01)`` then ends first (the
order janus 1.1.0's ``join`` bug needs). So at any decision where such a
timer is within :data:`TIMER_SLACK` of the moment the runnable actors last
started running, the loop is offered once more, after every runnable actor:
chosen, the clock jumps to its timer and the loop runs. Programs without a
pending loop timer see exactly the choices they always did. Threads' own
sleeps and timeouts still end only when nobody can run (see docs/architecture.md,
"Virtual time").
"""

from __future__ import annotations

import _thread
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from racecheck.backends.threads.gate import Gate
from racecheck.engine import Controller, Failure, RunAborted
from racecheck.sources import is_user_file, source_line

if TYPE_CHECKING:
    from racecheck.recorder import Recorder

get_ident = _thread.get_ident
allocate_lock = _thread.allocate_lock
_real_sleep = time.sleep

#: Python 3.11 traces actor threads with sys.settrace (see tracer.py), which
#: slows every frame the thread runs, racecheck's own included: each call is
#: a Python-level "call" event, each bytecode goes through the tracing path.
#: The scheduler's entry points called from user code (Thread.__init__/start/
#: join, Lock.acquire/release) run nothing of the user's, so they switch the
#: thread's trace function off for their own duration and put it back before
#: they return to the user's frame, whose local trace function (its points)
#: is untouched: the same events reach user code, and racecheck's work runs
#: at full speed. Written out at each entry point (a helper would be one more
#: traced call)::
#:
#:     trace = gettrace()
#:     if trace in PLAIN_TRACES:
#:         settrace(None)
#:     try: ...
#:     finally:
#:         if trace in PLAIN_TRACES:
#:             settrace(trace)
#:
#: Only racecheck's plain trace functions are listed: a chained one (coverage)
#: keeps seeing everything. On 3.12+ (sys.monitoring) the set stays empty.
#: The one way user code runs inside them: a Thread subclass overriding
#: ``__hash__`` or the ``daemon``/``name`` properties, which ``Thread.__init__``
#: and ``start`` use; such an override now runs without scheduling points of
#: its own, like any code racecheck itself calls. A Python audit hook sees a
#: ``sys.settrace`` event at each of these calls on 3.11.
PLAIN_TRACES: set[Any] = set()
gettrace = sys.gettrace
settrace = sys.settrace


#: how far (virtual seconds) an idle event loop's next timer may run ahead of
#: the actors that could still run: within it, the timer firing now is one
#: more choice (see ThreadRuntime._early_timers)
TIMER_SLACK = 0.1


def describe_lock(resource: Any) -> str:
    """ "the lock mylib._lock (made before the run)", or its type for others."""
    where = getattr(resource, "_rc_where", None)
    if where:
        return f"the lock {where} (made before the run)"
    return f"a {type(resource).__name__}"


class VirtualClock:
    """The run's virtual time as an object: what DPOR sees advances write and reads read."""

    __slots__ = ()


class Actor:
    __slots__ = (
        "accesses",
        "choosing",
        "chosen_task",
        "daemon",
        "deadline",
        "finished",
        "gate",
        "hosting_loop",
        "id",
        "ident",
        "lines",
        "name",
        "note",
        "passthrough",
        "points",
        "resource",
        "running_task",
        "since",
        "thread",
        "touched",
        "waiting",
        "waiting_for",
    )

    def __init__(
        self, actor_id: int, name: str, thread: threading.Thread | None, daemon: bool, gate: Gate
    ):
        self.id = actor_id
        self.name = name
        self.thread = thread
        self.daemon = daemon
        self.ident: int | None = None
        #: where its thread sleeps while another actor runs (closed while it does)
        self.gate = gate
        self.finished = False
        #: while > 0, primitives used by this thread behave as the real ones
        #: (racecheck's own plumbing: Thread.start's internal handshake)
        self.passthrough = 0
        #: scheduling points this actor reached (is racecheck seeing its code?)
        self.points = 0
        self.waiting: Callable[[], bool] | None = None
        self.waiting_for = ""  # operation text while blocked
        self.resource: Any = None
        self.deadline: float | None = None
        self.lines: list[tuple[str, int]] | None = None  # recording only
        self.accesses: list[str] = []  # recording only: "w:balance", "r:items"
        self.touched: Any = None  # recording only: the last primitive this step used
        #: for a thread running an event loop: the task actor stepping now (this
        #: thread's identity in decisions until the loop's next task decision)
        self.running_task: int | None = None
        #: the loop whose running_task that is
        self.hosting_loop: Any = None
        #: virtual time when this actor last started running after a wait
        self.since = 0.0
        #: recording only: what happened inside this step that no hand-over told
        self.note = ""
        #: the loop this thread waits in at a task decision: it is offered as
        #: that loop's ready tasks, and whoever picks one sets chosen_task
        self.choosing: Any = None
        self.chosen_task: int | None = None

    def enabled(self, now: float) -> bool:
        if self.finished:
            return False
        waiting = self.waiting
        if waiting is None:
            return True
        deadline = self.deadline
        return (deadline is not None and now >= deadline) or waiting()

    def __repr__(self) -> str:
        return f"<actor {self.id} {self.name}>"


class ThreadRuntime:
    def __init__(self, controller: Controller, recorder: Recorder | None = None) -> None:
        self.controller = controller
        self.recorder = recorder
        self.actors: list[Actor] = []
        self.live: list[Actor] = []
        self.by_ident: dict[int, Actor] = {}
        self.current: Actor | None = None
        self._done_lock = allocate_lock()
        self._done_lock.acquire()
        #: the actors abort_all woke, and what makes its choice of them atomic
        self._abort_woken: set[Actor] = set()
        self._abort_lock = allocate_lock()
        self.root_finished = False
        self.next_id = 1
        self.primitive_count = 0
        #: threads made in this run, for their hash (backend._init)
        self.threads_made = 0
        #: why the run cannot go on by itself, for the watchdog's message
        self.stuck_reason: str | None = None
        #: actors idle in an event loop with a timer pending (see _early_timers)
        self.timer_loops: list[Actor] = []
        #: what DPOR sees of virtual time: advances write it, reads read it
        self.clock = VirtualClock()

    # -- actors ---------------------------------------------------------------
    def allocate_id(self) -> int:
        actor_id = self.next_id
        self.next_id += 1
        return actor_id

    def new_actor(
        self, name: str, thread: threading.Thread | None, daemon: bool, gate: Gate
    ) -> Actor:
        actor = Actor(self.allocate_id(), name, thread, daemon, gate)
        actor.since = self.controller.now
        if self.recorder is not None:
            actor.lines = []
            self.recorder.actor(actor.id, name, "thread")
        self.actors.append(actor)
        self.live.append(actor)
        return actor

    def adopt_root(self, name: str, gate: Gate) -> Actor:
        """The calling thread, which holds the baton; ``gate`` is its own, reused across runs."""
        gate.drain()  # an open left by an aborted run: the root holds the baton, closed
        root = self.new_actor(name, None, False, gate)
        root.ident = get_ident()
        self.by_ident[root.ident] = root
        self.current = root
        return root

    def me(self) -> Actor | None:
        actor = self.by_ident.get(get_ident())
        if actor is None or actor.passthrough or actor.finished:
            return None
        return actor

    # -- scheduling -----------------------------------------------------------
    #
    # A decision offers every enabled *actor*, and a thread that runs an event
    # loop stands for the loop's tasks: while it waits at the loop's task
    # decision it is offered as each ready task of that loop, and inside a
    # task step as that task. So one decision covers the threads and the
    # tasks of every loop alike, and the set it offers is the whole set of
    # actors that could run (what DPOR's record of enabled actors needs).
    def _offer(self, me: Actor | None) -> tuple[list[int], list[Actor]]:
        """The enabled actors other than ``me``: ids, and the thread behind each."""
        now = self.controller.now
        ids: list[int] = []
        owners: list[Actor] = []
        for actor in self.live:
            if actor is not me and actor.enabled(now):
                _identities(actor, ids, owners)
        return ids, owners

    @staticmethod
    def _identity(me: Actor) -> int:
        """The actor ``me`` stands for now: the task it is stepping, or the thread."""
        task = me.running_task
        if task is None:
            return me.id
        if not me.hosting_loop.is_running():  # the loop stopped: the thread goes on
            me.running_task = me.hosting_loop = None
            return me.id
        return task

    def loop_choice(self, me: Actor, loop: Any, tasks: list[int]) -> int:
        """``me``'s event loop decides which ready task steps next; other threads too.

        The index into ``tasks`` of the task to step, or -1 when another
        thread picked a task of this loop that ``tasks`` does not hold yet
        (queued from another thread while this one waited): the loop then
        scans again and :meth:`pending_task` answers without a new decision.
        """
        controller = self.controller
        if controller.aborting:
            return controller.decide(tasks)
        me.points += 1
        ids = list(tasks)
        owners = [me] * len(tasks)
        if len(self.live) > 1:
            others, behind = self._offer(me)
            ids += others
            owners += behind
        regular = len(ids)
        if self.timer_loops:
            self._early_timers(ids, owners)
        choice = controller.decide(ids)
        me.hosting_loop = loop
        if choice < len(tasks):
            me.running_task = tasks[choice]
            return choice
        chosen = owners[choice]
        operation: str | Callable[[], str] = "loop step"
        if choice >= regular:
            operation = self._then(operation, self._fire(chosen))
        if chosen.choosing is not None:
            chosen.chosen_task = ids[choice]
        me.running_task = None
        me.choosing = loop
        try:
            self._hand_over(me, chosen, operation, None, True)
        finally:
            me.choosing = None
        task = me.chosen_task
        if task is None:  # resumed by no one's choice: only an abort does that
            raise RunAborted()
        me.running_task = task
        if task in tasks:
            me.chosen_task = None
            return tasks.index(task)
        return -1

    @staticmethod
    def pending_task(me: Actor, tasks: list[int]) -> int | None:
        """The index of a task chosen for ``me``'s loop before it could be offered here."""
        task = me.chosen_task
        if task is None or task not in tasks:
            return None
        me.chosen_task = None
        return tasks.index(task)

    def point(
        self, me: Actor, operation: str | Callable[[], str] = "", resource: Any = None
    ) -> None:
        """A place where another actor may run first. ``me`` stays enabled.

        This is the hot path of the threads backend (every traced access goes
        through it), hence the inlined enabled-check.
        """
        controller = self.controller
        if controller.aborting:
            return
        me.points += 1
        live = self.live
        if len(live) == 1:
            controller.tick()
            return
        now = controller.now
        candidates = [me]
        ids = [me.id if me.running_task is None else self._identity(me)]
        for actor in live:
            if actor is me or actor.finished:
                continue
            waiting = actor.waiting
            if (
                waiting is None
                or (actor.deadline is not None and now >= actor.deadline)
                or waiting()
            ):
                if actor.choosing is None and actor.running_task is None:
                    candidates.append(actor)
                    ids.append(actor.id)
                else:
                    _identities(actor, ids, candidates)
        regular = len(ids)
        if self.timer_loops:
            self._early_timers(ids, candidates)
        elif (
            regular == 1 and controller.steplog is None and controller.steps < controller.max_steps
        ):
            # decide() of one candidate, inline (``me`` alone can run: nothing
            # is recorded, the step is counted), as the asyncio loop does
            controller.steps += 1
            controller.scheduling_steps += 1
            if resource is not None and self.recorder is not None:
                me.touched = resource
            return
        try:
            choice = controller.decide(ids)
        except RunAborted:
            if controller.teardown_steps or not controller.aborting:
                raise  # a spin that outlasted the teardown (see tracer._teardown)
            # The run was cut off here: the step bound, a strategy's error, a replay
            # leaving its token. Raised at this point, RunAborted is an exception at
            # an arbitrary bytecode: on a ``with`` line on the way out of the block,
            # past its protected range, the block's ``__exit__`` never runs and a
            # lock or semaphore made before the run stays taken. Unwind freely, as
            # after any other failure (the next blocking call ends the thread).
            return
        if choice:
            chosen = candidates[choice]
            if choice >= regular:
                operation = self._then(operation, self._fire(chosen))
            if chosen.choosing is not None:
                chosen.chosen_task = ids[choice]
            self._hand_over(me, chosen, operation, resource, True)
        if resource is not None and self.recorder is not None:
            me.touched = resource  # for hand-off arrows, even when nobody waited

    def block(
        self,
        me: Actor,
        ready: Callable[[], bool],
        deadline: float | None,
        operation: str,
        resource: Any = None,
    ) -> bool:
        """Wait until ``ready()`` (True) or the virtual ``deadline`` passes (False)."""
        controller = self.controller
        if controller.aborting:
            raise RunAborted()
        if ready():
            return True
        if me.running_task is not None:
            self._identity(me)  # what it is offered as once it is enabled again
        if deadline is not None and controller.steplog is not None:
            controller.steplog.touch(self.clock, "now", False)  # the deadline reads the time
        me.waiting, me.deadline, me.waiting_for, me.resource = ready, deadline, operation, resource
        try:
            while True:
                if ready():
                    return True
                if deadline is not None and controller.now >= deadline:
                    return ready()
                ids, owners = self._offer(me)
                if not ids:
                    self._idle()
                    if (
                        deadline is not None
                        and controller.now >= deadline
                        and not ready()
                        and self._offer(me)[0]
                    ):
                        # The time this wait gave up at woke others too (two gets whose
                        # timeouts run out at once): which goes on first is a decision.
                        # Gone on at once, the last to block always decided first, and
                        # a put by the other, before it gave up, was never tried.
                        self.point(me, operation, resource)
                    continue
                regular = len(ids)
                if self.timer_loops:
                    self._early_timers(ids, owners)
                choice = controller.decide(ids)
                chosen = owners[choice]
                step_operation: str | Callable[[], str] = operation
                if choice >= regular:
                    note = self._fire(chosen)
                    if chosen is me:
                        # this loop's own timer: it goes on, at its deadline
                        # (told with the step's end, which the trace shows)
                        if self.recorder is not None:
                            me.note = f"its loop timer fired early (t={controller.now:g} s)"
                        continue
                    step_operation = self._then(operation, note)
                if chosen.choosing is not None:
                    chosen.chosen_task = ids[choice]
                self._hand_over(me, chosen, step_operation, resource, choice != 0)
        finally:
            me.waiting, me.deadline, me.resource = None, None, None
            me.since = controller.now

    def _idle(self) -> None:
        """Nobody is enabled: advance virtual time, or the run is deadlocked."""
        deadlines = [a.deadline for a in self.live if a.deadline is not None and not a.finished]
        if deadlines:
            self._advance(min(deadlines), idle=True)
            return
        if self.controller.aborting:
            raise RunAborted()  # the run is over (interrupted, failed): stop waiting
        blocked = [a for a in self.live if not a.finished]
        for actor in blocked:
            held_elsewhere = getattr(actor.resource, "held_elsewhere", None)
            holder = held_elsewhere() if held_elsewhere is not None else None
            if holder is not None:
                # Not a deadlock: someone outside the run holds it and may let
                # go. Wait in real time; the watchdog reports it if it lasts.
                self.stuck_reason = (
                    f"{actor.name} waits for {describe_lock(actor.resource)}, which is held by"
                    f" {holder}; racecheck cannot schedule around a lock held outside the run:"
                    " release it before the run, or make the lock inside the target"
                )
                _real_sleep(0.002)
                return
        if self.root_finished and all(a.daemon or _made_by_main(a) for a in blocked):
            # Only daemon threads are left waiting: the program would exit
            # here. The run succeeded; the daemons are unwound.
            self.abort_all()
            raise RunAborted()
        self.controller.fail(Failure("deadlock", None, self.describe_deadlock()))
        self.abort_all()
        raise RunAborted()

    # -- virtual time ---------------------------------------------------------
    def _early_timers(self, ids: list[int], owners: list[Actor]) -> None:
        """Offer, after the runnable actors, each idle loop whose timer may fire now.

        The runnable actors are ``owners`` (as offered so far). A loop's timer
        may fire before them when it is due within TIMER_SLACK of the moment
        the longest-waiting of them last started running: a thread may be
        descheduled that long, not for ever (a 5 s timeout never fires while
        a thread runs its burst). Offered in the order the loops went idle,
        which the schedule fixes, so a token replays.
        """
        if not owners:
            return
        now = self.controller.now
        horizon = min(actor.since for actor in owners) + TIMER_SLACK
        for actor in self.timer_loops:
            deadline = actor.deadline
            if (
                deadline is not None
                and now < deadline <= horizon
                and not actor.finished
                and actor.waiting is not None
                and not actor.waiting()
            ):
                ids.append(actor.id)
                owners.append(actor)

    def _fire(self, loop_actor: Actor) -> str:
        """An early timer was chosen: the clock jumps to it, and its loop runs next.

        Returns what the trace says of it.
        """
        deadline = loop_actor.deadline
        assert deadline is not None
        self._advance(deadline)
        return f"{loop_actor.name}'s loop timer fires early (t={deadline:g} s)"

    def _then(self, operation: str | Callable[[], str], note: str) -> str | Callable[[], str]:
        """The trace text of a step after which an early timer fired."""
        if self.recorder is None:
            return operation
        text = operation() if callable(operation) else operation
        return f"{text}; {note}" if text else note

    def _advance(self, when: float, idle: bool = False) -> None:
        controller = self.controller
        if when > controller.now:
            controller.now = when
            if controller.steplog is not None:
                if idle:  # nobody could run: after every read of the clock (IDLE_CLOCK)
                    controller.steplog.clock_moved_idle(self.clock)
                else:
                    controller.steplog.touch(self.clock, "now", True)

    def read_clock(self) -> float:
        """The virtual time, read by an actor's step (DPOR orders it against advances)."""
        controller = self.controller
        if controller.steplog is not None:
            controller.steplog.touch(self.clock, "now", False)
        return controller.now

    def _hand_over(
        self, me: Actor, chosen: Actor, operation: Any, resource: Any, preempted: bool
    ) -> None:
        if self.recorder is not None:
            self._flush(me, operation, resource, preempted)
        self.current = chosen
        chosen.gate.open()
        me.gate.wait()
        if self.controller.aborting:
            raise RunAborted()
        if me.lines is not None:
            # Resumed mid-line: no line event will say where, so note it.
            where = _user_frame(sys._getframe(1))
            if where is not None:
                me.lines.append((where.f_code.co_filename, where.f_lineno))

    def _flush(self, me: Actor, operation: Any, resource: Any, preempted: bool) -> None:
        recorder = self.recorder
        assert recorder is not None
        text = operation() if callable(operation) else operation
        if me.note:
            text = f"{me.note}; {text}" if text else me.note
            me.note = ""
        if resource is None:
            resource = me.touched
        me.touched = None
        name = recorder.resources().name(resource) if resource is not None else None
        if name and text and name not in text:
            text = f"{text} {name}"
        lines = me.lines or []
        me.lines = []
        accesses, me.accesses = tuple(dict.fromkeys(me.accesses)), []
        recorder.add_step(me.id, lines, text, name, preempted, accesses)

    # -- the end of an actor and of the run -------------------------------------
    def exit(self, me: Actor) -> Gate | None:
        """``me`` finished: choose who runs next, and return their gate.

        The caller opens it (hands the baton on, not waiting for it back) once
        it has nothing left to run: a thread that goes on running Python after
        the open holds the GIL the woken thread needs. None: nobody is to be
        woken (the run is over, or unwinding, and every actor was woken).
        """
        if self.recorder is not None:
            failure = self.controller.failure
            if not self.controller.aborting:
                self._flush(me, "finished", None, False)
            elif me.lines and failure is not None and failure.actor == me.id:
                # The run failed in this thread between two scheduling points (the
                # detector flags an access, not a switch): the lines it ran since
                # its last step hold the failure, and the ✗ row points into them.
                self._flush(me, f"{failure.kind} found", None, False)
        if self.controller.steplog is not None and me.thread is not None:
            self.controller.steplog.ended(me.thread)  # DPOR: join and is_alive read this
        me.finished = True
        try:
            self.live.remove(me)
        except ValueError:  # unwound twice (an abort): gone already
            pass
        if not self.live:
            self._complete()
            return None
        if self.controller.aborting:
            # Whoever failed (a strategy error, the step bound) unwound only its
            # own thread: wake the others so they unwind too.
            self.abort_all()
            return None
        if self.root_finished and all(a.daemon for a in self.live):
            # The interpreter would exit now and take the daemon threads with
            # it, whatever they are doing (sleeping, polling, spinning).
            self.abort_all()
            return None
        try:
            while True:
                ids, owners = self._offer(me)
                if ids:
                    break
                self._idle()
            regular = len(ids)
            if self.timer_loops:
                self._early_timers(ids, owners)
            choice = self.controller.decide(ids)
            if choice >= regular:
                self._fire(owners[choice])
        except RunAborted:
            # The run ended here (deadlock, step bound, strategy error): this
            # thread is leaving anyway, so make sure nobody waits for its baton.
            self.abort_all()
            return None
        chosen = owners[choice]
        if chosen.choosing is not None:
            chosen.chosen_task = ids[choice]
        self.current = chosen
        return chosen.gate

    def _complete(self) -> None:
        if self._done_lock.locked():
            self._done_lock.release()

    def wait_done(self, timeout: float | None = None) -> bool:
        if self._done_lock.acquire(True, -1 if timeout is None else timeout):
            self._done_lock.release()
            return True
        return False

    def abort_all(self) -> None:
        """Wake every parked actor, once a run; each unwinds with RunAborted.

        Several threads of an aborted run call this (the one that ended it,
        each actor as it unwinds, the root's clean-up in backend._reap), and
        their calls interleave (an eventfd gate's open lets go of the GIL). A
        gate is opened at most once, and not once its actor finished: woken
        here, an actor waits on its gate once, so a second open would outlive
        the run, and its worker, parked again, would take it for the start of
        its next job, which then ran without the baton. Only an abort from
        outside the run (the watchdog) can still meet a hand-over's open;
        :meth:`Gate.drain` clears that one before the gate's next use.
        """
        self.controller.interrupt()
        with self._abort_lock:
            current = self.current
            woken = [
                actor
                for actor in list(self.live)
                if actor is not current and not actor.finished and actor not in self._abort_woken
            ]
            self._abort_woken.update(woken)
        for actor in woken:
            try:
                actor.gate.force_open()
            except RuntimeError:  # a lock gate a hand-over opened too (see above)
                pass
        self._complete()

    def fail_exception(self, me: Actor, exc: BaseException) -> None:
        if self.recorder is not None and me.lines:
            # What ran since the last scheduling point: all of the story when
            # the thread never met one (a loop run by asyncio.run in the root).
            self._flush(me, f"raised {type(exc).__name__}", None, False)
        self.controller.fail(Failure("exception", exc, f"in thread {me.name}", actor=me.id))
        self.abort_all()

    # -- reports ----------------------------------------------------------------
    def _holder(self, resource: Any) -> str:
        """ " (held by X)" for a lock whose owning actor is known."""
        owner = getattr(resource, "_owner", None)
        if isinstance(owner, Actor):
            return f" (held by {owner.name})"
        ident = getattr(resource, "_owner_ident", None)
        actor = self.by_ident.get(ident) if ident is not None else None
        return f" (held by {actor.name})" if actor is not None else ""

    def describe_deadlock(self) -> str:
        from racecheck.failure import ResourceNames

        names = self.recorder.resources() if self.recorder is not None else ResourceNames()
        frames = sys._current_frames()
        lines = ["deadlock: every live thread is blocked and no timeout is pending"]
        for actor in self.live:
            if actor.finished:
                continue
            where = _user_location(frames.get(actor.ident)) if actor.ident is not None else "?"
            what = actor.waiting_for or "blocked"
            if actor.resource is not None:
                what = f"{what} {names.name(actor.resource)}"
            holder = self._holder(actor.resource)
            lines.append(f"  {actor.name} waits: {what}{holder} at {where}")
        return "\n".join(lines)


def _identities(actor: Actor, ids: list[int], owners: list[Actor]) -> None:
    """Offer an enabled thread as the actors it stands for (see ThreadRuntime._offer)."""
    loop = actor.choosing
    if loop is not None:
        for task in loop._rc_ready_ids():
            ids.append(task)
            owners.append(actor)
        return
    task = actor.running_task
    ids.append(actor.id if task is None else task)
    owners.append(actor)


def _made_by_main(actor: Actor) -> bool:
    """A thread the target made without saying daemon= (see backend._init)."""
    return actor.thread is not None and "_racecheck_main_made" in actor.thread.__dict__


def _user_frame(frame: Any) -> Any:
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def _user_location(frame: Any) -> str:
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return "?"
    filename = frame.f_code.co_filename
    return f"{os.path.basename(filename)}:{frame.f_lineno}  {source_line(filename, frame.f_lineno)}"
