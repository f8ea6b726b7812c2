"""What each step touched: the record partial-order reduction is built on.

A *step* is what one actor runs between two scheduling decisions. DPOR
(:mod:`racecheck.strategies.dpor`) may swap two adjacent steps of different
actors only when they are independent, so the engine hands the strategy, after
every step, the list of :data:`Access` records the step made. Every access is
``(object, key, write)``:

* ``object`` is an *ordinal*: objects are numbered in the order a run first
  touches them, so a run's records compare exactly within the run. Across
  runs (sleep sets compare a step of one run with a step of another) the
  numbers name the same objects only where both runs made the same accesses
  up to the sleeper's state, and only for the objects those accesses touched
  (``DPORChooser._wakes``); every other object is compared by type name: two
  objects of one type may be taken for one (more conflicts, never fewer).
  Numbering by first touch does not carry across runs in general: racecheck's
  own machinery (a thread pool made on first use) touches objects in the
  first run that later runs do not.
* ``key`` is an attribute name, a container item or :data:`ANY` (the whole
  object: iteration, ``len``, a C method that may change anything in it).
  Keys that are objects are reduced to their type, which merges keys but never
  separates equal ones.
* three pseudo-objects: :data:`OPAQUE` (the step did something racecheck
  cannot place, so it conflicts with every step), :data:`ACTOR` (an actor's
  own state, with the actor id as key: whether it is enabled).

Where the records come from, for every backend alike:

* the race detector's feed (:mod:`racecheck.detect`): attribute, global,
  closure and container accesses in traced code, and the hand-offs of
  racecheck's thread primitives (lock, event, queue, semaphore, start/join);
* :class:`StepLog.watching`, a profile hook on each thread that runs actors:
  the operations of asyncio's and trio's primitives (lock, event, condition,
  semaphore, queue, channel), called from anywhere; racecheck's own thread
  primitives, each in the step where it takes effect (see :func:`_own_mode`:
  an operation that starts with a scheduling point is recorded when it
  returns); and every C call made *from traced code* (``deque.append``,
  ``dict.update``, ``random.random``), which counts as a write to the object
  it is bound to unless it is known to only read;
* the engine: a step that changes whether another actor is enabled (wakes,
  starts or blocks it) writes that actor's :data:`ACTOR` key, and every step
  of an actor reads its own.

What cannot be observed is not guessed: untraced library code called from
traced code, module-level C functions whose effect on their arguments is
unknown, and the backend's own blind spots are collected in
:attr:`StepLog.blind` (the run is then never reported as verified), or make
the step :data:`OPAQUE` (sound, only slower). See docs/architecture.md, "DPOR
and what verified means".
"""

from __future__ import annotations

import builtins
import concurrent.futures._base as _futures_base
import dataclasses
import dis
import functools
import logging
import opcode as _opcode_module
import os
import queue
import sys
import threading
from collections import ChainMap
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from types import (
    BuiltinFunctionType,
    CoroutineType,
    FrameType,
    FunctionType,
    MethodType,
    ModuleType,
)
from typing import Any, NamedTuple, Protocol

from racecheck.codekeys import ByCode
from racecheck.detect.operands import MISSING, RETURNS_READ, buffer_exporter, evaluate, recipes
from racecheck.sources import is_third_party_file, is_user_file

#: (object ordinal, key, write, the object's type name)
Access = tuple[int, Hashable, bool, str]
#: a wake's callback chain, hop by hop: the step that queued the callback, and its
#: reads of the task steps queued ahead of it (StepLog.scheduled)
_Hops = tuple[tuple[int, tuple[Access, ...]], ...]

#: the whole object: conflicts with every key of it
ANY: Hashable = ("<any>",)
#: a container's shape (its size, its set of keys, what iteration yields): the
#: detector's whole-container location. Item stores write it, ``len`` and
#: iteration read it; unlike ANY it leaves the other keys alone (a store to
#: ``d["a"]`` does not touch ``d["b"]``). Mutating methods are C calls, which
#: write ANY.
SHAPE: Hashable = ("<shape>",)
#: the detector's names for the whole container and for its emptiness
_WHOLE = "*"
_NONEMPTY = ("nonempty",)


@functools.cache
def _cache_entries(opcode: int) -> int:
    """How many inline cache entries follow an instruction (3.11+ specialisation)."""
    entries = getattr(_opcode_module, "_inline_cache_entries", ())
    if isinstance(entries, dict):
        return int(entries.get(dis.opname[opcode], 0))
    return int(entries[opcode]) if opcode < len(entries) else 0


def _holds(container: Any, key: Any) -> bool:
    """Does a store to ``container[key]`` leave its shape alone (an existing slot)?"""
    try:
        if isinstance(container, dict):
            return bool(dict.__contains__(container, key))
        return isinstance(container, list) and isinstance(key, int)  # lists never grow so
    except Exception:
        return False


#: pseudo-object: the step did something that cannot be placed
OPAQUE = -1
#: pseudo-object: an actor's own state (key: the actor id)
ACTOR = -2
#: the sync key of a primitive (lock, event, queue ...)
SYNC: Hashable = ("<sync>",)
#: a lock's availability: written by whatever takes it (an acquire), read by an
#: acquire that found it taken and blocked. A release leaves it alone: see STUTTER.
TAKEN: Hashable = ("<taken>",)
#: a thread's end, as a ``join`` that returned because the thread had ended
#: reads it: an order, never a race. That join cannot have returned before the
#: end; run first, it would have blocked (a STUTTER), so DPOR never tries to
#: reverse the two (strategies.dpor, ORDER_ONLY).
ENDED: Hashable = ("<ended>",)
#: a ``queue.Queue``'s mutex taken by one of its methods (read only: it orders
#: nothing by itself). The step may still disable a waiter that the last
#: release woke, which is what strategies.dpor's ``_takes`` looks for.
HELD: Hashable = ("<held>",)
#: a loop's thread taken by a task's step (a loop inside a controlled thread): read
#: only, so two turns never conflict by it; the step that reads it holds the loop's
#: other ready tasks off until the turn ends (see StepLog.loop_turn, and
#: strategies.dpor, which reverses a race inside the turn with a task it held off
#: at the turn's start)
TURN: Hashable = ("<turn>",)
#: a loop's hand-offs from other threads (``call_soon_threadsafe``): each writes it,
#: so they are ordered among themselves (see StepLog.handed_off)
HANDOFFS: Hashable = ("<handoffs>",)


class TaskRegistry:
    """asyncio's task registry, which ``all_tasks()`` reads: one object per run.

    ``Task.__init__`` adds a task to the process's registry and ``all_tasks()``
    leaves a done task out, so a task's birth and its end change what a look
    at ``all_tasks()`` returns (StepLog.task_born, task_ended, tasks_listed).
    Each actor writes its own key: births and ends by different actors
    commute (they change different tasks' entries), a look reads them all.
    All loops share it, which only adds conflicts.
    """


#: keys whose conflicts order steps without being races
ORDER_ONLY = frozenset({ENDED})
#: pseudo-object: the step ended blocked in an operation whose wait is a mere
#: stutter (an acquire of a held lock, a join of a running thread). Whoever
#: ends the wait (the release, the thread's end) and the blocked attempt are
#: left unordered: with the end first, the attempt would simply have
#: succeeded, which is the waiter's next step anyway. Its own enabled state
#: is then not read (strategies.dpor), only what made it wait (TAKEN).
STUTTER = -3
#: pseudo-object: the step is the first of an actor since a wake that a
#: callback chain carried from an earlier step (key: that step's index in the
#: run). In asyncio a step that resolves a future often does not make the
#: waiter runnable itself: a done-callback does, which the loop runs later,
#: inside whichever step comes next. The waiter's step is ordered after the
#: step that started the chain: an order, never a race (it could not have
#: run before it), like ENDED (see :meth:`StepLog.scheduled`).
WAKE = -4
#: pseudo-object: the step moved the virtual clock because no actor could
#: run (key: the clock's ordinal). Every earlier read of the clock was made
#: by an actor that has blocked since, so those reads are ordered before the
#: move without racing it: run first, the move could not have happened (its
#: reader was still enabled). The same holds for the actors the move wakes (a
#: timer come due): each blocked after its last step, which is ordered before
#: the move's change of its enabled state without racing it (strategies.dpor).
#: Only the move and what follows it in the step are so ordered: what the step
#: did before it (recorded before this marker) races as usual. Other
#: conflicts of the two steps still race.
IDLE_CLOCK = -5
#: pseudo-object: an object the detector could not rebuild without running code
#: (a call's result, a property's value: ``get().counter``), read with the key it
#: was read at (or ANY). It stands for every object: the read conflicts with every
#: write of that key on any object, and with every whole-object write
#: (strategies.dpor). A write through such an object is OPAQUE instead.
SOMEWHERE = -6
#: pseudo-object: an earlier step of the run read something after all, which this
#: step found out (key: (that step's index in the run, the object's ordinal, the
#: key read)). strategies.dpor adds the read to that step; never an access of
#: this step itself. Two kinds of step learn it late: an asyncio wait that
#: cancellation ended (its look races the operation that would have ended it,
#: see _ENDED_BY), and a step that queued a callback whose chain went on to wake
#: a task (it read the task steps queued ahead of it, see StepLog.scheduled).
LATE_READ = -7
#: the key of a task's next step appended to its loop's ready queue:
#: (QUEUED, the actor whose step appended it, how many it had appended by then).
#: The append writes it, and so does the task's step that runs from it; a
#: callback queued behind it reads it once its chain wakes a task (StepLog.scheduled)
QUEUED = "<queued>"


class Observer(Protocol):
    """Whoever is told about each finished step (a chooser: strategies.base)."""

    def observe(
        self, step: int, actor: int, accesses: Sequence[Access], enabled: Sequence[int]
    ) -> None: ...


_SCALARS = (str, int, float, bool, bytes, type(None), complex)
_IMMUTABLE = (str, bytes, int, float, bool, complex, tuple, frozenset, range, type(None))

#: C methods that only read the object they are bound to
_READ_ONLY = frozenset(
    {
        "get",
        "keys",
        "values",
        "items",
        "copy",
        "count",
        "index",
        "__contains__",
        "__len__",
        "__getitem__",
        "__iter__",
        "__reversed__",
        "__repr__",
        "__str__",
        "__format__",
        "__hash__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__sizeof__",
        "__reduce_ex__",
        "issubset",
        "issuperset",
        "isdisjoint",
        "union",
        "intersection",
        "difference",
        "symmetric_difference",
        "done",
        "cancelled",
        "result",
        "exception",
        "get_name",
        "get_coro",
        "get_loop",
        "get_context",
        "cancelling",
        "is_set",
        "locked",
        "qsize",
        "empty",
        "full",
        "fileno",
    }
)

#: module-level C functions that touch no object they are given in a way
#: another actor could see (they read it, or build something new)
_PURE_FUNCTIONS = frozenset(
    {
        "abs",
        "all",
        "any",
        "ascii",
        "bin",
        "callable",
        "chr",
        "divmod",
        "format",
        "getattr",
        "hasattr",
        "hash",
        "hex",
        "id",
        "isinstance",
        "issubclass",
        "iter",
        "len",
        "max",
        "min",
        "oct",
        "ord",
        "pow",
        "print",
        "repr",
        "round",
        "sorted",
        "sum",
        "vars",
        "dir",
        "locals",
        "globals",
        "__build_class__",
        "__import__",
        # asyncio's C helpers that only read the running loop's state
        "current_task",
        "get_running_loop",
        "get_event_loop",
        "_get_running_loop",
        "_enter_task",
        "_leave_task",
        "_register_task",
        "_unregister_task",
        "_swap_current_task",
        # math, time (virtual), operator: pure
        "sqrt",
        "floor",
        "ceil",
        "monotonic",
        "perf_counter",
        "time",
        "itemgetter",
        "attrgetter",
        "dumps",
        "loads",
        "getpid",
        "get_ident",
        "_getframe",
        "exc_info",
        "exception",
    }
)

#: stdlib modules whose Python code, called from traced code, only reads what
#: it is given or builds new objects (or does I/O racecheck does not model)
_QUIET_STDLIB = frozenset(
    {
        "abc",
        "asyncio",  # its primitives are recorded as sync operations, see _SYNC_TYPES
        "collections",
        "contextlib",
        "contextvars",
        "copy",
        "dataclasses",
        "enum",
        "functools",
        "inspect",
        "json",
        "linecache",
        "logging",
        "operator",
        "re",
        "reprlib",
        "string",
        "textwrap",
        "threading",  # under the threads backend its primitives are racecheck's
        "queue",
        "traceback",
        "types",
        "typing",
        "uuid",
        "warnings",
        "weakref",
        "_weakrefset",
        "dis",
        "tokenize",
        "posixpath",
        "genericpath",
        "os",
        "codecs",
        "encodings",
        "datetime",
        "_collections_abc",
        "_py_abc",
        "sre_compile",
        "sre_parse",
        "concurrent",
        "selectors",
        "heapq",
        "bisect",
        "numbers",
        "decimal",
        "fractions",
        "statistics",
        "pprint",
    }
)

#: stdlib code (qualname -> a part of its file's name) that calls a callable the traced
#: code handed it, on its behalf: an actor's entry point, a pool's work item, an exit
#: callback, a dataclass's default factories. Its C calls are recorded as the traced
#: code's would be, and quiet library code it calls as if the traced code called it:
#: ``Thread(target=d.update, args=(...,))`` changes ``d`` as surely as ``d.update(...)``.
_HANDS_OVER: dict[str, str] = {
    "Thread.run": os.sep + "threading.py",
    "_WorkItem.run": os.path.join("concurrent", "futures", "thread.py"),
    "_BaseExitStack._create_cb_wrapper.<locals>._exit_wrapper": os.sep + "contextlib.py",
    "__create_fn__.<locals>.__init__": "<string>",
}

#: how a call of a code object is watched (StepLog._kind): untraced third-party code,
#: and stdlib code that calls what the traced code handed it (_HANDS_OVER)
_FOREIGN_CODE, _HANDS_OVER_CODE = 1, 2
#: the profile hook's one question per code object (StepLog._role): its _kind, and
#: these flags: traced code, a runtime's own code (_RUNTIME_DIRS)
_USER_ROLE, _RUNTIME_ROLE = 4, 8
#: asyncio's code that cancels a task on its own (a deadline scope's expiry): its
#: ``cancel()`` is recorded as traced code's is (see StepLog._c_call)
_CANCELS_ROLE = 16
_CANCELLING_CODE = frozenset(("Timeout._on_timeout",))


class _Operation(NamedTuple):
    """An instruction (or a library function's frame) of a frame, running: what it
    recorded may go on over several steps if it calls traced code back
    (StepLog.operation_starts)."""

    #: the instruction's offset; None: the whole of a library function's frame
    offset: int | None
    #: where its records start in the step's, and that step
    start: int
    step: int
    #: a C call is running for it (over at its c_return)
    in_c: bool
    #: its records, once a callback took them (later callbacks come in later steps)
    records: tuple[Access, ...] | None


class _Span(NamedTuple):
    """An operation whose callback may pass scheduling points: its actor, the step
    it began in, how it ends, and what it recorded (StepLog._called_back)."""

    actor: int
    step: int
    ends_in_c: bool
    records: tuple[Access, ...]


def _runs_python(function: Any) -> bool:
    """Does calling ``function`` start a Python frame (a ``call`` the profile hook sees)?"""
    if isinstance(function, (FunctionType, MethodType, type)):
        return True
    # a callable object's __call__, looked up without running its class's code
    for klass in type(function).__mro__:
        if "__call__" in klass.__dict__:
            return isinstance(klass.__dict__["__call__"], FunctionType)
    return False


_RACECHECK_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _runtime_dirs() -> tuple[str, ...]:
    import asyncio

    dirs = [os.path.dirname(os.path.abspath(asyncio.__file__)) + os.sep]
    try:
        import importlib.util

        spec = importlib.util.find_spec("trio")
        if spec is not None and spec.origin:
            dirs.append(os.path.dirname(os.path.abspath(spec.origin)) + os.sep)
    except (ImportError, ValueError):
        pass
    return tuple(dirs)


#: where the runtimes' primitives live (asyncio, trio): their methods' calls are sync operations
_RUNTIME_DIRS = _runtime_dirs()
_ASYNCIO_DIR = _RUNTIME_DIRS[0]
#: asyncio.tasks, whose ``all_tasks`` reads the task registry (TaskRegistry)
_TASKS_FILE = _ASYNCIO_DIR + "tasks.py"
_THREADS_DIR = os.path.join(_RACECHECK_DIR, "backends", "threads") + os.sep
#: racecheck's controlled thread primitives: every method call on one is a sync operation
_OWN_PRIMITIVES = (_THREADS_DIR + "primitives.py", _THREADS_DIR + "adopt.py")
#: threading.Thread's methods as the threads backend patches them
_THREAD_METHODS = frozenset(("_start", "_join", "_is_alive"))
#: how a call is recorded: not a primitive; asyncio/trio (a write if the type is
#: one of theirs); racecheck's own, as a write when called, a read when called,
#: not at all, or when it returns (see _own_mode)
_FOREIGN, _OWN, _OWN_READ, _OWN_SKIP, _OWN_AFTER, _OWN_AROUND, _BLOCK = 1, 2, 3, 4, 5, 6, 7
#: an asyncio primitive's operation that may wait (see _ATTEMPTS)
_ATTEMPT = -1
#: asyncio's deadline scope (``asyncio.timeout``; ``wait_for`` on 3.12+) sets or
#: clears its deadline: see StepLog._deadline
_DEADLINE = -2
_DEADLINE_CODE = frozenset(("Timeout.reschedule", "Timeout.__aexit__"))

#: racecheck's own primitives' methods that only look at the primitive
_OWN_READS = frozenset(
    {
        "locked",
        "_is_owned",
        "is_set",
        "isSet",
        "empty",
        "qsize",
        "parties",
        "n_waiting",
        "broken",
        "held_elsewhere",
        "_free",
        "_reentered",
        "_holder",
        "__repr__",
        "_is_alive",
    }
)
#: methods that touch no state of their own: they make a primitive nobody else
#: holds yet, or only call another primitive method (which records itself)
_OWN_SKIPS = frozenset(
    {
        "__init__",
        "Lock.__exit__",
        "RLock.__exit__",
        "Condition.__enter__",
        "Condition.__exit__",
        "Condition._release_save",
        "Condition._acquire_restore",
        "Condition.wait_for",
        "Condition.notify_all",
        "Semaphore.__exit__",
        "_Adopted.release",
        "_Adopted.__exit__",
        "SimpleQueue.get_nowait",
    }
)
#: methods whose first act is a scheduling point: what they do to the
#: primitive happens in the step after it, so that is where it is recorded (at
#: the return). Recorded when called, it would sit in the step before the
#: point, which does nothing to the primitive, and make that step conflict with
#: every other operation on it for nothing.
_OWN_AFTERS = frozenset(
    {
        "Lock.acquire",
        "RLock.acquire",
        "RLock._acquire_restore",
        "Condition.notify",
        "Semaphore.acquire",
        "Event.wait",
        "Barrier.wait",
        "SimpleQueue.put",
        "SimpleQueue.get",
        "_Adopted.acquire",
        "_Adopted._acquire_controlled",
        "AdoptedSemLock.acquire",
        "AdoptedRLock._acquire_restore",
        "_join",
    }
)
#: the modes recorded (again) when the call returns
_AT_RETURN = (_OWN_AFTER, _OWN_AROUND)
#: methods that change the primitive both before they block and after
_OWN_AROUNDS = frozenset({"Condition.wait"})
#: an ``acquire`` that returned False changed nothing: it only looked
_ACQUIRES = frozenset({"acquire", "_acquire_controlled"})
#: operations that take a lock (or a semaphore's unit) when they return
_TAKES = frozenset({"acquire", "_acquire_controlled", "_acquire_restore"})
#: where a wait is a stutter: blocked on a lock or a semaphore, whose
#: availability only an acquire takes away
_STUTTER_ACQUIRES = frozenset(
    {
        "Lock.acquire",
        "RLock.acquire",
        "Semaphore.acquire",
        "_Adopted._acquire_controlled",
        "AdoptedRLock._acquire_restore",
    }
)


#: a queue's room, like TAKEN for its items: written by whatever fills it (a
#: put), read by a put that found it full and waited
FILLED: Hashable = ("<filled>",)
#: an event's unset state: written by ``clear``, read by a wait that found it unset
CLEARED: Hashable = ("<cleared>",)
#: a primitive's queue of waiters: an operation that waits joins it (a write),
#: so two waiters' places in it are ordered, and which one a release wakes is
#: explored; the release itself leaves it alone (its wake is a WAKE)
WAITERS: Hashable = ("<waiters>",)

#: an item of an ``asyncio.Queue``, numbered in the order of the puts: the
#: k-th put writes ("<item>", k), the k-th get reads it (FIFO). A get that
#: found its item cannot have run before the put of it (run first, it would
#: have waited: a stutter), so that read is an order, never a race (like
#: ENDED); puts are ordered among themselves (FILLED), gets too (TAKEN), and a
#: put and a get of different items are independent.
ITEM = "<item>"


def order_only(key: Hashable) -> bool:
    """Does a read of ``key`` follow its write without racing it (ORDER_ONLY, ITEM)?"""
    return key in ORDER_ONLY or (type(key) is tuple and len(key) == 2 and key[0] == ITEM)


#: asyncio's operations that may wait, and what one that waits found (its key).
#: Recorded when they return or suspend (a profile ``return`` either way), not
#: when called: one that waited looked (it reads the key and joins the
#: waiters); one that went on writes the key and the primitive.
_ATTEMPTS: dict[str, Hashable] = {
    "Lock.acquire": TAKEN,
    "Semaphore.acquire": TAKEN,
    "Queue.get": TAKEN,
    "Queue.put": FILLED,
    "Event.wait": CLEARED,
}
#: what the operation that ends an _ATTEMPTS wait writes (a release's, a set's
#: SYNC; a put's FILLED; a get's TAKEN). A wait that its wake ends does not
#: race that operation, as a thread's blocked acquire does not race its release
#: (STUTTER): with the operation first it would simply have gone on, which its
#: woken step does anyway. But an asyncio wait can end without its wake: a
#: deadline (``asyncio.timeout``, ``wait_for``), a TaskGroup's abort or another
#: task's ``cancel()`` lands before the woken step runs, or before anyone wakes
#: it, and the task goes on with CancelledError where, run after that
#: operation, it would have had the lock, the item, the event. So in a run where
#: the wait ends by cancellation, its look reads this key after all
#: (LATE_READ), and DPOR runs the other order. As a stutter in every run,
#: DPOR called such programs verified with a reachable state left out
#: (tests/core/test_dpor_cancelled_waits.py); as a read in every run, it ran
#: 1,024 traces of agent-framework #6776's fix instead of 64, to tell apart waits
#: that all ended by their wake.
_ENDED_BY: dict[str, Hashable] = {
    "Lock.acquire": SYNC,
    "Semaphore.acquire": SYNC,
    "Queue.get": FILLED,
    "Queue.put": TAKEN,
    "Event.wait": SYNC,
}
#: operations that change what an _ATTEMPTS key says (besides a completed attempt)
_ATTEMPT_WRITES: dict[str, Hashable] = {"Event.clear": CLEARED}


def _cancel_requests() -> int:
    """How many times the running asyncio task was asked to cancel, not yet withdrawn."""
    import asyncio

    try:
        task = asyncio.current_task()
    except RuntimeError:
        return 0
    return task.cancelling() if task is not None else 0


def _own_mode(code: Any) -> int:
    """How a call of racecheck's own primitive code is recorded.

    Why not every call as a write, when it starts: a step is what runs between
    two scheduling points, and most operations start with one. The step
    before the point only *calls* the operation; the lock is taken (or the
    item got) after it. A record there is in the wrong step: the calling step
    would conflict with every other operation on the primitive for nothing.
    An attempt that blocks has no return in its step: the runtime's ``block``
    records it as a read of the primitive (it saw the lock held), so it
    conflicts with the acquire that made it wait, and DPOR tries the order
    where it got there first.
    """
    name = code.co_name
    qualname = getattr(code, "co_qualname", name)
    if name in _OWN_READS:
        return _OWN_READ
    if name in _OWN_SKIPS or qualname in _OWN_SKIPS:
        return _OWN_SKIP
    if qualname in _OWN_AFTERS:
        return _OWN_AFTER
    if qualname in _OWN_AROUNDS:
        return _OWN_AROUND
    return _OWN


def _runtime_kind(code: Any) -> int:
    """0: not a primitive's code; _FOREIGN: asyncio/trio (check the type); else _own_mode."""
    if not code.co_argcount:
        return 0
    filename = code.co_filename
    if filename in _OWN_PRIMITIVES:
        return _own_mode(code)
    if filename == _THREADS_DIR + "backend.py" and code.co_name in _THREAD_METHODS:
        return _own_mode(code)
    if filename == _THREADS_DIR + "runtime.py" and code.co_name == "block":
        return _BLOCK
    if filename.startswith(_RUNTIME_DIRS):
        if filename.startswith(_ASYNCIO_DIR):
            qualname = getattr(code, "co_qualname", "")
            if qualname in _ATTEMPTS:
                return _ATTEMPT
            if qualname in _DEADLINE_CODE:
                return _DEADLINE
        return _FOREIGN
    return 0


#: queue.py, whose ``Queue`` methods are recorded as one operation on the queue
_QUEUE_FILE = queue.__file__
#: what a ``queue.Queue`` method does to the queue, by method: (part, written?)
#: for its items (``_ITEMS``: the container in ``q.queue``) and its count of
#: unfinished tasks (``_TASKS``: the attribute ``unfinished_tasks``). The keys
#: are the ones traced code touching those parts directly records. ``put``
#: reads ``is_shutdown`` (3.13's ``shutdown``, an unlisted method, writes the
#: whole queue). A method not listed writes everything.
_ITEMS, _TASKS, _SHUT = "items", "unfinished_tasks", "is_shutdown"
#: a queue's items as a ``get`` that waits for one sees them: taken by gets,
#: never given back by a put (see StepLog._queue_op, how=_QUEUE_EMPTY)
_TOOK: Hashable = ("items", "taken")
#: the count of unfinished tasks by its units (see StepLog._count_take): the puts
#: so far, written by every put; the task_done so far, written by every one that
#: took a unit; the k-th put's unit, written by it and read by the k-th task_done
_ADDED: Hashable = ("unfinished_tasks", "added")
_DONE: Hashable = ("unfinished_tasks", "done")
_UNIT = "<unit>"
_QUEUE_OPS: dict[str, tuple[tuple[Hashable, bool], ...]] = {
    "put": ((_ITEMS, True), (_TASKS, True), (_SHUT, False)),
    "get": ((_ITEMS, True), (_TOOK, True), (_SHUT, False)),
    "task_done": ((_TASKS, True),),
    "join": ((_TASKS, False),),
    "qsize": ((_ITEMS, False),),
    "empty": ((_ITEMS, False),),
    "full": ((_ITEMS, False),),
}
#: the methods traced code calls: each records itself under the queue's mutex
#: (an argument is an item, stored by reference, or a flag)
_QUEUE_CALLS = frozenset({*_QUEUE_OPS, "put_nowait", "get_nowait"})
#: A gap: traced code waiting on or notifying one of a queue's own conditions
#: (``q.not_empty.wait()``), whose wakes the queue's methods do not record as such.
#: Made OPAQUE, and no proof. Traced code taking the queue's mutex (``with q.mutex:``)
#: is an ordinary lock operation, ordered against the queue's methods by TAKEN (see
#: StepLog._in_queue). A queue's parts are known once one of its methods ran, or traced
#: code read one of them off the queue (StepLog._know_queue).
_QUEUE_MUTEX_GAP = (
    "traced code used a queue.Queue's own condition; DPOR does not model such a"
    " section against the queue's methods (a known gap)"
)
#: a queue.Queue's primitives, by attribute: the mutex first
_QUEUE_PART_NAMES = ("mutex", "not_empty", "not_full", "all_tasks_done")
#: the type name every access to a queue.Queue's mutex made in the run is recorded
#: under (StepLog.close), whoever makes it: its methods' takes read the mutex's TAKEN,
#: and across runs (sleep sets) steps are compared by type name where the numbers
#: cannot be trusted (DPORChooser._wakes), so under "Lock" a
#: queue operation woke a thread asleep on any Lock acquire (bounded_queue_under_lock
#: _fixed: 210 -> 784 schedules). A name per object, given where the mutex is made,
#: is the same for all its accesses, traced code's ``with q.mutex:`` included.
_QUEUE_MUTEX = "Queue.mutex"
#: the attributes whose read by traced code makes a queue known (StepLog._know_queue)
_QUEUE_ATTRS = frozenset({*_QUEUE_PART_NAMES, "queue"})
#: the operations that count tasks (see StepLog._count_take)
_COUNTING = frozenset({"put", "task_done", "join"})
#: a look at the whole count of unfinished tasks (see StepLog._count_take)
_WHOLE_COUNT_READ: tuple[tuple[Hashable, bool], ...] = ((_ADDED, False), (_DONE, False))
#: how a step meets a queue's operation (StepLog._queue_op)
_QUEUE_TAKES, _QUEUE_WAITS, _QUEUE_EMPTY = 1, 2, 3
#: what a queue's method waiting on its condition for as long as it takes read
#: when it found it had to wait: its wait is a stutter (StepLog._blocking)
_STUTTER_WAITS: dict[str, Hashable] = {"get": _TOOK, "join": _ADDED}
#: the twin of a queue's part that a blocked operation reads (StepLog._queue_op)
_QUEUE_WAIT = "<waits for>"
#: racecheck's thread primitives a ``queue.Queue`` is built of (its mutex, its conditions)
_QUEUE_PARTS = frozenset({"Lock", "Condition"})
#: how many frames of racecheck's primitives may lie between a queue method and
#: the primitive operation it runs (``Lock.acquire`` <- ``Condition.__enter__``
#: <- ``Queue.put``; ``Lock.release`` <- ``Lock.__exit__`` <- ``Condition.__exit__``)
_QUEUE_DEPTH = 4
#: the two ends of a FIFO ``queue.Queue``'s items (keys of the deque in ``q.queue``):
#: a put that cannot wait writes its tail, a get that takes an item its head (see
#: StepLog._fifo_take). A look at the items (``qsize``, a get that finds none, traced
#: code reading ``q.queue``) reads the whole deque, which meets both ends.
_TAIL: Hashable = ("items", "tail")
_HEAD: Hashable = ("items", "head")
#: the k-th put's item: written by the k-th put, read by the k-th get, as a race (not
#: an order like an asyncio.Queue's ITEM: see StepLog._fifo_take)
_SLOT = "<slot>"
#: the threads backend's ``SimpleQueue`` methods recorded as one operation each
#: (StepLog._simple_take), and those that only look at its size
_SIMPLE_OPS = frozenset({"put", "get"})
_SIMPLE_LOOKS = frozenset({"empty", "qsize"})


def _queue_method(frame: FrameType | None) -> tuple[Any, str, FrameType] | None:
    """The ``queue.Queue`` and its method that run the primitive operation in ``frame``.

    Only a queue built during the run (its mutex is racecheck's ``Lock``), and
    only when nothing but racecheck's primitives lies between: the same lock
    taken by traced code (``with q.mutex``) is an ordinary lock operation.
    """
    here = _stdlib_caller(frame, _QUEUE_FILE, _QUEUE_DEPTH)
    if here is None:
        return None
    owner = here.f_locals.get("self")
    if isinstance(owner, queue.Queue) and _is_own_lock(getattr(owner, "mutex", None)):
        return owner, here.f_code.co_name, here
    return None


def _stdlib_caller(frame: FrameType | None, filename: str, depth: int) -> FrameType | None:
    """The frame of ``filename`` (queue.py, concurrent.futures) that runs the primitive
    operation in ``frame``, when nothing but racecheck's primitives lies between."""
    here = frame.f_back if frame is not None else None
    for _ in range(depth):
        if here is None:
            return None
        found = here.f_code.co_filename
        if found == filename:
            return here
        if found not in _OWN_PRIMITIVES:
            return None
        here = here.f_back
    return None


def _waits_for_item(method: str, frame: FrameType) -> bool:
    """Is this a ``get`` that waits for an item for as long as it takes (no timeout)?

    One with a timeout or ``block=False`` raises ``queue.Empty`` when it finds
    none: another outcome, not a stutter.
    """
    if method != "get":
        return False
    local = frame.f_locals
    return bool(local.get("block", True)) and local.get("timeout") is None


def _empty(owner: Any) -> bool:
    """The queue holds no item (read off its buffer; a subclass's own _qsize is not run)."""
    try:
        return len(owner.queue) == 0
    except Exception:
        return False


def _plain_fifo(owner: Any) -> bool:
    """Does the queue keep its items in ``queue.Queue``'s own deque, first in, first out?

    Not a ``LifoQueue``/``PriorityQueue`` nor a subclass with its own ``_put``/``_get``:
    which item a get takes is then not the one its number says (see StepLog._fifo_take).
    """
    kind = type(owner)
    base = queue.Queue
    return (
        kind._get is base._get
        and kind._put is base._put
        and kind._qsize is base._qsize
        and kind._init is base._init
    )


def _primitive_frame(parts: frozenset[str] = _QUEUE_PARTS) -> FrameType | None:
    """The frame of the thread primitive's method that is handing a sync to the log.

    The race detector's hand-offs (``Lock.acquire`` -> ``_lock_acquired`` ->
    the detector -> :meth:`StepLog.sync`) come a few frames below it.
    """
    here: FrameType | None = sys._getframe(2)
    for _ in range(6):
        if here is None:
            return None
        if here.f_code.co_filename in _OWN_PRIMITIVES and "self" in here.f_code.co_varnames:
            owner = here.f_locals.get("self")
            if type(owner).__qualname__ in parts:
                return here
        here = here.f_back
    return None


def _is_own_lock(lock: Any) -> bool:
    kind = type(lock)
    return kind.__qualname__ == "Lock" and kind.__module__.endswith("backends.threads.primitives")


def _is_own_simple_queue(obj: Any) -> bool:
    """Is ``obj`` the threads backend's ``queue.SimpleQueue`` (see StepLog._simple_take)?"""
    kind = type(obj)
    return kind.__qualname__ == "SimpleQueue" and kind.__module__.endswith(
        "backends.threads.primitives"
    )


# -- concurrent.futures.Future: a method is one operation on the future -----------------

#: the module whose ``Future`` methods are recorded as one operation on the future
_FUTURE_FILE = _futures_base.__file__
#: a future's state (pending, running, cancelled, finished, with its result): written
#: by the methods that change it, read by those that look at it
_FUTURE_STATE: Hashable = ("future", "state")
#: a pending future's done callbacks: added to by ``add_done_callback``, run by the
#: method that finishes it (the order of two adds is the order they run in)
_FUTURE_CALLBACKS: Hashable = ("future", "callbacks")
#: the twin of a key a method changed, read by a method blocked on the future's lock
_FUTURE_WAIT = "<waits for future>"
#: the ``Future`` methods that take its condition (each is one operation)
_FUTURE_METHODS = frozenset(
    {
        "cancel",
        "cancelled",
        "running",
        "done",
        "add_done_callback",
        "result",
        "exception",
        "set_running_or_notify_cancel",
        "set_result",
        "set_exception",
        "__repr__",
    }
)
#: a concurrent future's attributes its methods keep (traced code touching them is OPAQUE)
_FUTURE_SLOTS = frozenset({"_state", "_result", "_exception", "_done_callbacks", "_waiters"})
#: racecheck's primitives a future's condition is built of
_FUTURE_PARTS = frozenset({"RLock", "Condition"})
#: how many frames of racecheck's primitives may lie between a future's method and the
#: primitive operation it runs (``RLock.acquire`` <- ``RLock._acquire_restore`` <-
#: ``Condition._acquire_restore`` <- ``Condition.wait`` <- ``Future.result``)
_FUTURE_DEPTH = 5
_FUTURE_DONE = frozenset(
    {_futures_base.CANCELLED, _futures_base.CANCELLED_AND_NOTIFIED, _futures_base.FINISHED}
)


def _is_own_rlock(lock: Any) -> bool:
    kind = type(lock)
    return kind.__qualname__ == "RLock" and kind.__module__.endswith("backends.threads.primitives")


def _future_method(frame: FrameType | None) -> tuple[Any, str, FrameType] | None:
    """The ``concurrent.futures.Future`` and its method that run the primitive operation in
    ``frame``, as :func:`_queue_method` finds a queue's.

    Only a future built during the run (its condition's lock is racecheck's
    ``RLock``), and only when nothing but racecheck's primitives lies between:
    traced code taking the future's condition itself is recorded as usual.
    """
    here = _stdlib_caller(frame, _FUTURE_FILE, _FUTURE_DEPTH)
    if here is None or here.f_code.co_name not in _FUTURE_METHODS:
        return None
    owner = here.f_locals.get("self")
    if isinstance(owner, _futures_base.Future) and _own_condition(owner):
        return owner, here.f_code.co_name, here
    return None


def _in_futures_module(frame: FrameType | None) -> bool:
    """Is the primitive operation in ``frame`` run by other code of concurrent.futures?

    ``wait`` and ``as_completed`` take the futures' locks themselves and read
    their state in untraced code: such a step is OPAQUE (its reads are not
    the methods' record, which they must still conflict with).
    """
    return _stdlib_caller(frame, _FUTURE_FILE, _FUTURE_DEPTH) is not None


def _own_condition(future: Any) -> bool:
    return _is_own_rlock(getattr(getattr(future, "_condition", None), "_lock", None))


def _future_effects(
    future: Any, method: str, frame: FrameType
) -> tuple[tuple[Hashable, bool], ...]:
    """What ``method`` reads and changes of ``future``, holding its lock: (key, written?).

    Decided on the state found under the lock. Empty for a ``result()`` or
    ``exception()`` with no timeout that will wait: a stutter, like a join
    of a running thread (with the set first it would simply have returned,
    its woken step anyway). One that finds the future done reads ENDED, an
    order after the set or cancel that ended it, never a race: run first, it
    would have waited for it. With a timeout the wait can end otherwise
    (TimeoutError): it reads the state.
    """
    state = getattr(future, "_state", None)
    done = state in _FUTURE_DONE
    pending = state == _futures_base.PENDING
    if (method in ("set_result", "set_exception") and not done) or (method == "cancel" and pending):
        return ((_FUTURE_STATE, True), (ENDED, True), (_FUTURE_CALLBACKS, False))
    if method == "set_running_or_notify_cancel":
        return ((_FUTURE_STATE, pending or state == _futures_base.CANCELLED),)
    if method == "add_done_callback" and not done:
        return ((_FUTURE_STATE, False), (_FUTURE_CALLBACKS, True))
    if method in ("result", "exception") and frame.f_locals.get("timeout") is None:
        return ((ENDED, False),) if done else ()
    return ((_FUTURE_STATE, False),)


def _sync_types() -> tuple[type, ...]:
    """The primitives whose every operation is a sync access on the object."""
    import asyncio

    kinds: list[type] = [
        asyncio.Lock,
        asyncio.Event,
        asyncio.Condition,
        asyncio.Semaphore,
        asyncio.Queue,
        asyncio.Barrier if sys.version_info >= (3, 11) else asyncio.Lock,
    ]
    trio = sys.modules.get("trio")
    if trio is not None:
        for name in (
            "Lock",
            "StrictFIFOLock",
            "Event",
            "Semaphore",
            "Condition",
            "CapacityLimiter",
            "MemorySendChannel",
            "MemoryReceiveChannel",
        ):
            kind = getattr(trio, name, None)
            if isinstance(kind, type):
                kinds.append(kind)
        lowlevel = getattr(trio, "lowlevel", None)
        parking = getattr(lowlevel, "ParkingLot", None)
        if isinstance(parking, type):
            kinds.append(parking)
    return tuple(kinds)


#: where the import system's own frames come from (``<frozen importlib._bootstrap>``)
_IMPORT_SYSTEM = "<frozen importlib"


class CodeAnswers:
    """What a :class:`StepLog` asks of each code object, kept for every run of one
    exploration: the answers depend only on the code and the exploration's traced
    files, and a StepLog of its own per run filled its caches again in every run."""

    __slots__ = ("kinds", "roles", "runtime", "user", "verdict")

    def __init__(self) -> None:
        # by id(code): a code object's hash is not cached (racecheck.codekeys)
        self.user: ByCode[bool] = ByCode()
        self.runtime: ByCode[int] = ByCode()
        self.verdict: ByCode[str | None] = ByCode()
        self.kinds: ByCode[int] = ByCode()
        self.roles: ByCode[int] = ByCode()


#: the key under which an exploration's per-code cache keeps its CodeAnswers
_ANSWERS: Any = object()


def code_answers(cache: dict[Any, Any]) -> CodeAnswers:
    """The CodeAnswers kept in ``cache``, an exploration's per-code cache (made if new)."""
    answers = cache.get(_ANSWERS)
    if answers is None:
        answers = cache[_ANSWERS] = CodeAnswers()
    return answers


#: the opcodes a frame leaves by with a value (a yield or an exception leaves no value)
_RETURNS = frozenset(
    dis.opmap[name] for name in ("RETURN_VALUE", "RETURN_CONST") if name in dis.opmap
)
#: instructions whose Python callee is the instruction's own call, not a callback
#: from C code in the middle of an operation (see StepLog._called_back)
_DIRECT_CALLS = frozenset(
    dis.opmap[name]
    for name in ("CALL", "CALL_KW", "CALL_FUNCTION_EX", "PRECALL", "SEND")
    if name in dis.opmap
)


class StepLog:
    """The accesses of the step in progress, and of the run so far, for one run.

    The engine opens a step at every decision (:meth:`begin`) and closes it
    (:meth:`close`), handing the records to the chooser's ``observe``.
    """

    def __init__(self, answers: CodeAnswers | None = None) -> None:
        self.ordinals: dict[int, int] = {}
        self._keep: list[Any] = []  # objects stay alive, so ids are never reused
        self.current: list[Access] = []
        #: why this run may hold steps whose conflicts were not seen (never verified then)
        self.blind: dict[str, None] = {}
        self.actor: int | None = None
        self.enabled: tuple[int, ...] = ()
        self.step = 0
        #: actor -> containers it started iterating (each later step of it reads them)
        self.iterating: dict[int, dict[Access, None]] = {}
        #: ``for`` loops over an iterator that advances in C (see loop_over):
        #: (frame, offset of the loop's GET_ITER) -> the iterator
        self.advancing: dict[tuple[Any, int], Any] = {}
        #: a whole-container write waiting for the item store that follows it
        self._shape: Access | None = None
        self._sync = _sync_types()
        if answers is None:
            answers = CodeAnswers()
        self._user = answers.user
        self._runtime_code = answers.runtime
        self._verdict = answers.verdict
        self._kinds = answers.kinds
        self._roles = answers.roles
        self._observer: Observer | None = None
        #: what the chooser raised at a step boundary made inside the target (_boundary_alone)
        self._deferred: BaseException | None = None
        #: frames of running point-first operations -> the step that called them
        self._called_in: dict[Any, int] = {}
        #: asyncio operations that may wait, running: frame -> where their records start
        self._attempts: dict[Any, int] = {}
        #: asyncio operations that waited, until they return: frame -> (the step that
        #: waited, the primitive's ordinal, the key that ends the wait, its type name,
        #: the task's cancel requests then) until it runs again (see _ENDED_BY,
        #: _resumed), None after that or if it waited before the first decision
        self._waits: dict[Any, tuple[int, int, Hashable, str, int] | None] = {}
        #: id(task) -> the deadline scopes it is in with a deadline set, by id
        self._deadlines: dict[int, dict[int, Any]] = {}
        import asyncio

        self._queue_type: type = asyncio.Queue
        self._future_type: type = asyncio.Future
        self._task_type: type = asyncio.Task
        self._timer_type: type = asyncio.TimerHandle
        #: asyncio queues (ordinal): puts and gets so far; looks waiting to be kept
        self._queue_counts: dict[int, list[int]] = {}
        self._queue_looks: dict[int, str] = {}
        #: wakes carried by callbacks (see scheduled): id(handle) -> the handle (kept:
        #: its id is not reused by a handle queued some other way), the steps that
        #: started its chain and its hops; the chain and hops of the callback running
        #: now; and, per task (its id), (step in progress when its next step was
        #: queued, those steps)
        self._chains: dict[int, tuple[Any, tuple[int, ...], _Hops]] = {}
        self._chain: tuple[int, ...] | None = None
        self._hops: _Hops = ()
        self._woken: dict[int, tuple[int, tuple[int, ...]]] = {}
        #: the ready queue's order (see queued): task steps appended so far per actor;
        #: id(handle) -> (the handle, its append's access) for a task step queued
        #: while it waits in the queue; id(task) -> id of that handle
        self._appends: dict[int, int] = {}
        self._queued: dict[int, tuple[Any, Access]] = {}
        self._pending: dict[int, int] = {}
        #: the backend's own notes for the run (asyncio: where tasks ended, what
        #: a suspended task waits for), dropped with the run's objects
        self.notes: dict[Any, Any] = {}
        #: cross-thread hand-offs onto loops (see handed_off): the thread whose
        #: call_soon_threadsafe is under way, per loop ordinal the hand-offs so
        #: far, and id(handle) -> its number and the handle (kept: its id is not reused)
        self._threadsafe: tuple[int, int] | None = None
        self._handoff_counts: dict[int, int] = {}
        self._handoffs: dict[int, tuple[int, Any]] = {}
        #: id of a queue.Queue's mutex or condition -> the queue (see _queue_op)
        self._queue_parts: dict[int, Any] = {}
        #: ids of queues' mutexes a queue method holds now (see _blocking)
        self._queue_held: set[int] = set()
        #: FIFO queue.Queues (ordinal): puts and gets so far (see _fifo_take); the id
        #: of each one's deque -> its ordinal; those whose deque traced code changed
        self._fifo_counts: dict[int, list[int]] = {}
        self._fifo_items: dict[int, int] = {}
        self._fifo_raw: set[int] = set()
        #: the threads backend's SimpleQueues (ordinal): puts and gets so far, None
        #: once astray (see _simple_take); ids of their own condition and its lock
        self._simple_counts: dict[int, list[int] | None] = {}
        self._simple_parts: set[int] = set()
        #: queue.Queues (ordinal): puts and task_done so far (see _count_take); None
        #: for a queue whose count went astray
        self._count_units: dict[int, list[int] | None] = {}
        #: ordinals of the mutexes queue.Queues made in the run (see _QUEUE_MUTEX)
        self._queue_mutexes: set[int] = set()
        #: id of a concurrent future's lock or condition -> the future (see _in_future),
        #: and the ids of those locks a future's method holds now
        self._future_parts: dict[int, Any] = {}
        self._future_held: set[int] = set()
        #: the run's task registry (see TaskRegistry), and the tasks born so far (by id)
        self._registry: TaskRegistry | None = None
        self._born: dict[int, Any] = {}
        #: id of an object's ``__dict__`` -> the object (see alias)
        self._namespaces: dict[int, Any] = {}
        #: calls of callables the detector could not rebuild, waiting for their event
        #: (see expect_call): the calling frame, the call's offset, what a builtin does
        self._expected: list[tuple[FrameType, int, int, Callable[[Any], None]]] = []
        #: (frame, offset) -> what Python code returned there (an awaited coroutine, a
        #: property's getter), for a value a recipe reads (see returned_value)
        self._kept_returns: dict[tuple[FrameType, int], Any] = {}
        #: per frame, the operation it runs now, which may call traced code back
        #: (see operation_starts), and the operations whose callback did (_called_back)
        self._operations: dict[FrameType, _Operation] = {}
        self._spans: dict[FrameType, _Span] = {}

    # -- the feeds -------------------------------------------------------------------
    def ordinal(self, obj: Any) -> int:
        key = id(obj)
        found = self.ordinals.get(key)
        if found is None:
            found = self.ordinals[key] = len(self.ordinals)
            self._keep.append(obj)
        return found

    def release(self) -> None:
        """Let go of the run's objects once the chooser has seen the last step.

        Kept past the run, an object made in it outlives it: a weak cache's
        entry would still be there in the next run, which would then take
        another path than a fresh run (and a replay) does.
        """
        self._keep.clear()
        self._called_in.clear()
        self._queue_parts.clear()
        self._queue_held.clear()
        self._fifo_counts.clear()
        self._fifo_items.clear()
        self._fifo_raw.clear()
        self._count_units.clear()
        self._simple_counts.clear()
        self._simple_parts.clear()
        self._queue_mutexes.clear()
        self._future_parts.clear()
        self._future_held.clear()
        self._shape = None
        self._attempts.clear()
        self._waits.clear()
        self._deadlines.clear()
        self._queue_counts.clear()
        self._queue_looks.clear()
        self._chains.clear()
        self._chain = None
        self._hops = ()
        self._woken.clear()
        self._appends.clear()
        self._queued.clear()
        self._pending.clear()
        self.notes.clear()
        self._threadsafe = None
        self._handoff_counts.clear()
        self._handoffs.clear()
        self._registry = None
        self._born.clear()
        self._namespaces.clear()
        self.advancing.clear()
        # frames a run left mid-operation (a task never resumed) hold its objects
        self._operations.clear()
        self._spans.clear()
        self._kept_returns.clear()

    # -- wakes carried by callbacks (asyncio: backends.asyncio_waits) -----------------
    def scheduled(self, handle: Any, task: int | None, ahead: tuple[Access, ...] = ()) -> None:
        """``handle`` was queued: by the step in progress, or by the running callback.

        ``task``: the key (``id``) of the task whose next step the handle is
        (its step or wake-up), None for a plain callback. A plain callback
        carries the steps that started its chain; a callback it queues
        carries them on. A task's step carries them into its first accesses
        (:meth:`woken`, :data:`WAKE`), so DPOR orders it after the step that
        really woke it, not after the step the callback happened to run in.

        That order alone is not the whole story. The callback runs only when
        it reaches the head of the ready queue, behind the task steps queued
        before it (``ahead``, the reads of their appends, :meth:`handles_ahead`),
        so the task it wakes runs after those steps, and which steps those are
        depends on the order of the appends: a task that yields after the
        callback was queued is behind it. When the chain wakes a task, each
        hop's queueing step read the appends it was queued behind (LATE_READ),
        so DPOR tries the order where the callback was queued first. Without
        it, a ``gather``'s waiter never ran before a step of a task that had
        yielded first, and DPOR called such programs verified after one run
        (tests/core/test_dpor_wake_placement.py). Only a chain that wakes a
        task counts: a ``gather``'s callback for a child that is not the last
        wakes nobody, and where it lands changes nothing a task can see.
        """
        chain = self._chain
        hops = self._hops
        if chain is None:
            chain = (self.step,) if self.actor is not None else ()
        if task is None:
            if chain:
                if ahead:
                    hops = (*hops, (self.step, ahead))
                self._chains[id(handle)] = (handle, chain, hops)
            else:
                self._chains.pop(id(handle), None)
        elif chain:
            self._woken[task] = (self.step if self.actor is not None else -1, chain)
            if hops and self.actor is not None:
                self._read_late(hops)
        else:
            self._woken.pop(task, None)

    def _read_late(self, hops: _Hops) -> None:
        """A chain woke a task: each hop's queueing step read what was queued ahead of it."""
        now = self.step
        for step, looks in hops:
            if step == now:
                self.current += looks
            else:
                self.current += [
                    (LATE_READ, (step, obj, key), False, kind) for obj, key, _, kind in looks
                ]

    def queued(self, loop: Any, handle: Any, task: int) -> None:
        """The step in progress appended task ``task``'s next step to ``loop``'s ready queue.

        The append writes its own key (QUEUED), and so does the step that
        runs from it (:meth:`woken`): a callback queued behind the handle
        reads it (:meth:`scheduled`), which races the append (queued first,
        the callback would have been ahead) and the step (run first, the
        handle would not have been there). The keys name the appending actor
        and its count, which are the same in every run that reaches the step.
        """
        actor = self.actor
        if actor is None:
            return
        number = self._appends.get(actor, 0) + 1
        self._appends[actor] = number
        access = (self.ordinal(loop), (QUEUED, actor, number), True, type(loop).__qualname__)
        self._queued[id(handle)] = (handle, access)
        self._pending[task] = id(handle)
        self.current.append(access)

    def handles_ahead(self, loop: Any, handle: Any) -> tuple[Access, ...]:
        """Reads of the appends of the task steps queued ahead of ``handle`` (see queued)."""
        if self.actor is None:
            return ()
        queued = self._queued
        looks: list[Access] = []
        for ahead in loop._ready:
            if ahead is handle:
                break
            found = queued.get(id(ahead))
            if found is not None and found[0] is ahead and not ahead._cancelled:
                obj, key, _, kind = found[1]
                looks.append((obj, key, False, kind))
        return tuple(looks)

    def woken(self, task: int) -> None:
        """The task keyed ``task`` starts a step: it follows what queued it (WAKE)."""
        pending = self._pending.pop(task, None)
        if pending is not None:
            found = self._queued.pop(pending, None)
            if found is not None:
                self.current.append(found[1])  # its handle leaves the queue (see queued)
        woken = self._woken.pop(task, None)
        if woken is not None and woken[0] < self.step:
            self.follow(woken[1])

    def follow(self, steps: Iterable[int]) -> None:
        """The step in progress could not have run before ``steps`` (earlier ones): WAKE."""
        now = self.step
        self.current += [(WAKE, cause, False, "") for cause in steps if cause < now]

    def user_callback_queued(self, loop: Any) -> None:
        """The loop's own thread queued a plain callback that is not asyncio's machinery.

        A plain callback (``call_soon``, a done callback, a timer) runs when
        it reaches the head of the ready queue, inside whichever step comes
        next, so where it lands among the tasks' steps is settled by the
        order of this append and the other tasks' steps. A user's callback
        touches the user's state there (asyncio's own wake the waiters of
        futures, recorded as wakes, :meth:`scheduled`): the append writes the
        loop's SYNC, which every task decision reads (:meth:`task_look`), so
        those orders are explored, as a plain ``call_soon`` from another
        thread's are. Unrecorded, DPOR called a task's read and write around
        a ``call_soon``'d update verified with the update lost in every run
        (tests/core/test_dpor_callbacks.py).
        """
        if self.actor is not None:
            self.current.append((self.ordinal(loop), SYNC, True, type(loop).__qualname__))

    def callback_runs(self, handle: Any) -> None:
        """A plain callback starts: what it queues carries its chain on."""
        entry = self._chains.pop(id(handle), None)
        if entry is not None and entry[0] is handle:
            self._chain, self._hops = entry[1], entry[2]
        else:
            self._chain, self._hops = (), ()

    def callback_ended(self) -> None:
        """The callback is over: what is queued now is the step's own doing."""
        self._chain = None
        self._hops = ()

    def stable(self, key: Any) -> Hashable:
        """A key that means the same in every run: scalars as they are, objects by type."""
        if isinstance(key, _SCALARS):
            return key
        if type(key) is tuple:
            return tuple(self.stable(part) for part in key)
        return ("<key of type>", type(key).__qualname__)

    def touch(self, obj: Any, key: Any, write: bool, iterating: bool = False) -> None:
        """An attribute, item or whole-object access in traced code (the detector's feed).

        ``iterating``: a ``for`` loop started over ``obj``. The loop goes on
        reading it in the actor's later steps, where no access is reported,
        so every later step of the actor reads it too (conservatively, to the
        actor's end).
        """
        if self._namespaces:
            obj = self._namespaces.get(id(obj), obj)
        ordinal = self.ordinal(obj)
        pending = self._shape
        if pending is not None:
            self._shape = None
            if not (pending[0] == ordinal and write and _holds(obj, key)):
                self.current.append(pending)  # a store that may add a key: the shape changes
        kind = type(obj).__qualname__
        fifo = self._fifo_items
        if fifo and id(obj) in fifo:
            # a FIFO queue's deque read or changed by traced code: the whole of it,
            # which meets both ends (_HEAD, _TAIL); changed, its items' numbers no
            # longer say which put's item a get takes (_fifo_take)
            if write:
                self._fifo_raw.add(fifo[id(obj)])
            self.current.append((ordinal, ANY, write, kind))
            return
        if kind == "Future" and key in _FUTURE_SLOTS and isinstance(obj, _futures_base.Future):
            self.opaque()  # what its methods record as one operation (_in_future), read raw
        if key == _TASKS and isinstance(obj, queue.Queue) and _is_own_lock(obj.mutex):
            self.opaque()  # the exact count, which its operations treat as a counter
        if type(key) is str and key in _QUEUE_ATTRS and isinstance(obj, queue.Queue):
            if _is_own_lock(obj.mutex):
                # its condition may be used before any of its methods ran
                # (_QUEUE_MUTEX_GAP), its deque read before (touch, _fifo_take)
                self._know_queue(obj)
                if write and key == "queue":
                    self._fifo_raw.add(ordinal)
        if key == _NONEMPTY and (
            (isinstance(obj, queue.Queue) and _is_own_lock(obj.mutex)) or _is_own_simple_queue(obj)
        ):
            # the detector's emptiness test of a call to get/qsize/empty, in the
            # step that makes the call: the operation itself records what it
            # reads and changes, in the step where it does (_in_queue)
            return
        if key == _WHOLE:
            if write:
                # An item store writes the whole container first: whether it
                # changes the shape depends on the key, which comes next.
                self._shape = (ordinal, SHAPE, True, kind)
                return
            # iteration, a copy, len: they read every item, not only the shape
            access: Access = (ordinal, ANY, False, kind)
        elif key == _NONEMPTY:
            access = (ordinal, SHAPE, write, kind)
        else:
            access = (ordinal, self.stable(key), write, kind)
        self.current.append(access)
        if iterating and self.actor is not None:
            self.iterating.setdefault(self.actor, {})[(access[0], ANY, False, access[3])] = None

    def clock_moved_idle(self, clock: Any) -> None:
        """No actor could run, so the clock moved to the next deadline (IDLE_CLOCK)."""
        self.touch(clock, "now", True)
        self.current.append((IDLE_CLOCK, self.ordinal(clock), False, ""))

    def sync(self, obj: Any) -> None:
        """An operation on a synchronisation primitive: a write to it."""
        if obj is not None:
            kind = type(obj).__qualname__
            if kind in _QUEUE_PARTS and _queue_method(_primitive_frame()) is not None:
                return  # a queue's own mutex: recorded as the queue's operation (_in_queue)
            if kind in _FUTURE_PARTS and _future_method(_primitive_frame(_FUTURE_PARTS)):
                return  # a concurrent future's lock: recorded as its method (_in_future)
            if id(obj) in self._simple_parts or _is_own_simple_queue(obj):
                return  # a SimpleQueue's hand-off, or its lock: see _simple_take
            self.current.append((self.ordinal(obj), SYNC, True, kind))

    def ended(self, thread: Any) -> None:
        """A thread's last step: ``is_alive`` (SYNC) and a finished ``join`` (ENDED) read it."""
        ordinal, kind = self.ordinal(thread), type(thread).__qualname__
        self.current.append((ordinal, SYNC, True, kind))
        self.current.append((ordinal, ENDED, True, kind))

    # -- cross-thread hand-offs onto a loop (a loop inside a thread) ------------------
    def threadsafe_call(self, loop: Any, thread: int) -> None:
        """``thread`` calls ``loop.call_soon_threadsafe``: its handle wakes the loop."""
        self._threadsafe = (id(loop), thread)

    def handed_off(self, loop: Any, handle: Any, thread: int) -> None:
        """Another thread queued ``handle`` on ``loop`` (a write of the loop: SYNC).

        Queued by ``call_soon_threadsafe``, which also wakes the loop, it is a
        hand-off: numbered like an asyncio queue's items, it writes its item
        (ITEM, order-only when read), which the loop's run of it reads
        (:meth:`callback_look`), and HANDOFFS, which the loop's own appends
        read (:meth:`loop_queued`).
        """
        if self._threadsafe != (id(loop), thread):
            # a plain call_soon from another thread wakes nobody (no hand-off):
            # what an idle loop's look read (see idle_look)
            self.sync(loop)
            return
        self._threadsafe = None
        ordinal = self.ordinal(loop)
        number = self._handoff_counts.get(ordinal, 0)
        self._handoff_counts[ordinal] = number + 1
        self._handoffs[id(handle)] = (number, handle)
        kind = type(loop).__qualname__
        # hand-offs are ordered among themselves (the loop runs them in that order)
        self.current.append((ordinal, HANDOFFS, True, kind))
        self.current.append((ordinal, (ITEM, ("handoff", number)), True, kind))
        # ... and against a plain call_soon from another thread (SYNC), which lands
        # ahead of it or behind it; one that queues a task's step changes what the
        # loop's task decisions choose from (see task_look), as such a call_soon does
        self.current.append((ordinal, SYNC, _is_task_step(handle), kind))

    def loop_turn(self, loop: Any) -> None:
        """A task of ``loop``, a loop inside a controlled thread, starts a step.

        The step holds the loop's thread: until it ends (other threads may
        run meanwhile: the threads backend cuts a task step at its lines),
        the loop's other ready tasks cannot run, so the step disables them.
        Its first step reads TURN. For DPOR that hold is a critical section,
        not an order: the disabling and the re-enabling at the turn's end do
        not order the held tasks' steps after the turn, and a race between a
        step inside the turn and a held task's step is reversed at the
        turn's start, where the held task could still run
        (``DPORChooser._reverse``). Ordered by the hold, two tasks' steps
        were never a race and the loop's first choice was never reversed (a
        program called verified after one run); reversed wherever a turn
        began, as a lock's woken waiter is, every order of the ready tasks
        was explored (tests/core/test_dpor_loops.py,
        tests/core/test_dpor_loop_queue.py).
        """
        self.current.append((self.ordinal(loop), TURN, False, type(loop).__qualname__))

    def idle_look(self, loop: Any) -> None:
        """The loop's thread found nothing to run and no timer: it waits in ``select()``.

        Only a self-pipe write (a hand-off) ends that wait, and with the
        hand-off first the loop would simply have run it: a stutter, which
        does not race the hand-off. A plain ``call_soon`` from another thread
        (SYNC) wakes nobody: had it come first, the loop would not have
        waited, so the look reads it (the lost wakeup stays a race).
        """
        kind = type(loop).__qualname__
        self.current.append((self.ordinal(loop), SYNC, False, kind))
        self.current.append((STUTTER, 0, False, ""))

    # The ready queue as an append log. What a loop's thread runs next is the
    # head of its ready queue (a plain callback runs when it gets there) or
    # one of its ready tasks (a decision). Where a hand-off lands is settled
    # by the order of the appends around it, so that is what is recorded: a
    # hand-off writes HANDOFFS, the loop's own appends (a task's next step, a
    # callback, a timer come due) read it. The looks read no hand-off but
    # the one they run: a look at the whole queue raced every hand-off that
    # came after it, and the reversal only moved the hand-off ahead of
    # handles that did not depend on it (tests/core/test_dpor_loop_queue.py
    # checks every sampled state is still reached).

    def loop_queued(self, loop: Any) -> None:
        """The loop's own thread appended a handle to its ready queue (a wake, a timer due).

        Whether it lands ahead of or behind a hand-off decides which of the
        two runs first: it reads HANDOFFS, which every hand-off writes, and
        SYNC, which a plain ``call_soon`` from another thread writes. Two
        appends of the loop's own steps only read, so they stay independent.
        """
        ordinal, kind = self.ordinal(loop), type(loop).__qualname__
        self.current.append((ordinal, HANDOFFS, False, kind))
        self.current.append((ordinal, SYNC, False, kind))

    def task_look(self, loop: Any) -> None:
        """The loop's thread decides which of its ready tasks runs next.

        It chooses among the ready queue's tasks. A hand-off is a plain
        callback (one that queues a task's step writes SYNC), which runs
        when it reaches the head of the queue, and where it lands against
        the loop's own appends is recorded there (:meth:`loop_queued`). So
        the decision reads SYNC (a plain ``call_soon`` from another thread,
        library code handed the loop) and no hand-off.
        """
        self.current.append((self.ordinal(loop), SYNC, False, type(loop).__qualname__))

    def callback_look(self, loop: Any, handle: Any) -> None:
        """The loop's thread runs plain callback ``handle``, the head of its ready queue.

        A hand-off reads its own item: an order after the call that queued
        it, never a race (run first, the loop would have waited for it in
        ``select()``, a stutter, or run what was queued ahead of it, whose
        appends are ordered against the hand-off already). Like every look
        it reads SYNC.
        """
        ordinal, kind = self.ordinal(loop), type(loop).__qualname__
        found = self._handoffs.pop(id(handle), None)
        if found is not None:
            self.current.append((ordinal, (ITEM, ("handoff", found[0])), False, kind))
        self.current.append((ordinal, SYNC, False, kind))

    def loop_woken(self, loop: Any, timer_pending: bool) -> None:
        """The loop's thread waited in ``select()`` and was woken.

        With no timer pending only a hand-off could wake it: a stutter (see
        :meth:`idle_look`), which records nothing; the look that runs the
        hand-off reads its item first, so nothing of the step comes before
        that order (a read there would race the hand-off's wake of the loop
        through the step's start: ``strategies.dpor._order_only_points``).
        With a timer pending, the timer could have fired first, and its
        callback would have run ahead of the hand-off: the wake reads
        HANDOFFS, racing the hand-off that woke it.
        """
        if timer_pending:
            self.task_look(loop)
            self.loop_queued(loop)

    def timers_queued(self, loop: Any) -> None:
        """Timers the loop moved to its ready queue since its last look: its own appends."""
        seen = self.notes.setdefault(("timers queued", id(loop)), {})
        for handle in loop._ready:
            if isinstance(handle, self._timer_type) and id(handle) not in seen:
                seen[id(handle)] = handle  # kept: its id is not reused in the run
                self.loop_queued(loop)

    # -- asyncio's task registry (TaskRegistry): births, ends, looks ------------------
    def _registry_access(self, key: Hashable, write: bool) -> None:
        registry = self._registry
        if registry is None:
            registry = self._registry = TaskRegistry()
        self.current.append((self.ordinal(registry), key, write, "TaskRegistry"))

    def _registry_changed(self) -> None:
        self._registry_access(self.actor if self.actor is not None else ANY, True)

    def task_born(self, task: Any) -> None:
        """``task`` was queued on its loop: the first time, it was just made (registered).

        A task's first step is queued by ``Task.__init__``, which registers it,
        whatever made it (``create_task``, ``ensure_future``, ``Task(...)``).
        """
        if id(task) not in self._born:
            self._born[id(task)] = task  # kept: its id is not reused in the run
            self._registry_changed()

    def task_ended(self) -> None:
        """The step ended a task: ``all_tasks()`` leaves it out from now."""
        self._registry_changed()

    def tasks_listed(self) -> None:
        """Traced code called ``asyncio.all_tasks()``: it reads the whole registry."""
        self._registry_access(ANY, False)

    def finished(self, future: Any) -> None:
        """The step finished an asyncio future or task: an ``await`` of it goes on now (ENDED)."""
        self.current.append((self.ordinal(future), ENDED, True, type(future).__qualname__))

    def awaited(self, obj: Any) -> None:
        """Traced code is about to ``await obj`` (the detector's feed).

        An asyncio future (or task) that is done already does not suspend
        the await: the step goes on only because the step that finished it
        (:meth:`finished`) ran first. Run before that step, the await would
        have waited (a stutter), so the step reads the future's end as a
        finished ``join`` reads a thread's: an order, never a race
        (ORDER_ONLY). What the step did before the await still races as
        usual (strategies.dpor, _order_only_points). Without this the
        step's later conflicts with the finishing step (a loop inside a
        thread: the shutdown that follows) made a race whose reversal only
        ran the same trace again, blocked by its sleep set.
        """
        if isinstance(obj, self._future_type) and obj.done():  # type: ignore[attr-defined]
            self.current.append((self.ordinal(obj), ENDED, False, type(obj).__qualname__))

    def loop_over(self, frame: FrameType, iterator: Any, stepped: bool) -> None:
        """A loop (at its GET_ITER in ``frame``) over ``iterator``, which advances in C
        (a list's or a range's iterator, a generator): each later step of the loop
        takes an item from it (:meth:`loop_advanced`), as ``next(it)`` does.

        ``stepped``: the loop's own steps are seen (a ``for`` statement). A
        comprehension's loop runs in code of its own, whose steps name no
        iterator: it takes items now, and in every later step of the actor
        (conservatively, to the actor's end, as a loop over a container reads it).
        """
        if stepped:
            self.advancing[(frame, frame.f_lasti)] = iterator
            return
        self.advanced(iterator)
        if self.actor is not None:
            self.iterating.setdefault(self.actor, {})[self.current[-1]] = None

    def loop_advanced(self, frame: FrameType, began: int) -> None:
        """The loop that began at offset ``began`` of ``frame`` takes its next item."""
        iterator = self.advancing.get((frame, began))
        if iterator is not None:
            self.advanced(iterator)

    def advanced(self, iterator: Any) -> None:
        """``iterator`` gave an item: a write of it (another actor sharing it gets another)."""
        self.current.append((self.ordinal(iterator), ANY, True, type(iterator).__qualname__))

    def opaque(self) -> None:
        """The step did something that cannot be placed: it conflicts with everything."""
        self.current.append((OPAQUE, ANY, True, ""))

    def touch_any(self, obj: Any, write: bool) -> None:
        """An access to ``obj`` whose key the detector could not rebuild (``d[id(o)]``):
        it meets every key of ``obj``."""
        if self._namespaces:
            obj = self._namespaces.get(id(obj), obj)
        self.current.append((self.ordinal(obj), ANY, write, type(obj).__qualname__))

    def alias(self, namespace: dict[str, Any], owner: Any) -> None:
        """``owner.__dict__`` (``vars(owner)``) was taken: its items are ``owner``'s attributes.

        Kept in a variable or used through a method (``ns["x"] = 1``,
        ``o.__dict__.update(x=1)``, ``vars(o).get("x")``), the dictionary is
        recorded as ``owner`` itself (same ordinal, same type name), so they meet
        ``o.x`` elsewhere. Recorded as a dict of its own, they never did.
        """
        if id(namespace) not in self._namespaces:
            self._namespaces[id(namespace)] = owner
            self._keep.append(namespace)  # its id is not reused meanwhile

    def c_called(self, function: Any, frame: FrameType) -> None:
        """A C function or method called where no profile event fires: by C code (a
        ``functools.partial``, a ``map`` object, ``methodcaller``) or through a slot
        wrapper. Recorded as the profile hook records a C call from ``frame``."""
        self._c_call(function, frame)

    def expect_call(self, frame: FrameType, offset: int, on_builtin: Callable[[Any], None]) -> None:
        """The call at ``offset`` of ``frame`` is about to run a callable the detector could
        not rebuild (``make_setter()(v)``, ``getattr(h, name)(v)``).

        A function written in Python fires a call event, a builtin a c_call event
        (then ``on_builtin(builtin)`` records what it reads); a C callable object
        (``functools.partial``, ``operator.methodcaller``) fires none, and what it
        does cannot be told: a call still waiting when the step ends makes it opaque.
        """
        caches = _cache_entries(frame.f_code.co_code[offset])
        self._expected.append((frame, offset, offset + 2 * caches, on_builtin))

    def _call_arrived(self, caller: FrameType | None, builtin: Any) -> None:
        """A call or c_call event: the awaited call from ``caller``, if it is one, ran."""
        for index, (frame, offset, last, on_builtin) in enumerate(self._expected):
            # a builtin is called at the instruction, a Python function at its last
            # inline cache entry (3.11+: where the caller resumes from)
            if frame is caller and (caller.f_lasti == offset or caller.f_lasti == last):
                del self._expected[index]
                if builtin is not None:
                    try:
                        on_builtin(builtin)
                    except Exception:
                        self.opaque()  # what it read could not be told
                return

    def cached_call(self, wrapper: Any) -> None:
        """A call of a ``functools.lru_cache`` wrapper: its C code looks the arguments up
        in its cache and, on a miss, fills it when the wrapped function returns, maybe
        steps later (two actors that both miss compute the value twice). A write of the
        cache in this step and in every later step of the actor, to its end: when the
        call returns is not watched. ``cache_clear()`` and ``cache_info()`` are C calls
        bound to the wrapper, so they meet it."""
        access: Access = (self.ordinal(wrapper), ANY, True, type(wrapper).__qualname__)
        self.current.append(access)
        if self.actor is not None:
            self.iterating.setdefault(self.actor, {})[access] = None

    def linger_from(self, start: int) -> None:
        """What the step recorded from ``self.current[start]`` on happens again in every
        later step of the actor, to its end: a lazy C iterator (``map(l.append, xs)``)
        reads and calls what it was given whenever it is consumed, which is not watched."""
        if self.actor is not None:
            later = self.iterating.setdefault(self.actor, {})
            for access in self.current[start:]:
                later[access] = None

    def returned_value(self, frame: FrameType, offset: int) -> Any:
        """What Python code returned to ``offset`` of ``frame``, or MISSING: the coroutine
        awaited there (its SEND: ``for v in await self.fetch()``) or the property's getter
        (its attribute load: ``for v in self.pending``). A loop or C code reads that
        value, which no name reaches.

        The profile hook keeps what is returned at the offsets a recipe reads so
        (operands.RETURNS_READ); taken here, it is dropped, so it lives no longer
        than the line that reads it, and a later pass of the line never meets an
        earlier value. An awaitable written in C (a future, a task) and a plain
        attribute return nothing to Python: MISSING.
        """
        return self._kept_returns.pop((frame, offset), MISSING)

    def operation_starts(self, frame: FrameType, offset: int | None) -> None:
        """``frame`` runs the instruction at ``offset`` (None: a library function's
        frame, all of it): what the step records from now on is its doing.

        ``shared.sort(key=by_rank)``, ``x in members`` with a traced ``__eq__``,
        ``table[k]`` on a ``defaultdict`` whose factory is traced code, a
        ``cached_property``'s ``__get__``: an operation may call traced code back,
        and the callback can pass scheduling points, so the operation goes on
        over several steps of its actor (the list is empty while it is sorted;
        the scan goes on over a list that shifted; the default is stored, the
        cached value written, after the callback returns). Recorded only where
        it began, another actor's step could be ordered before it or after it,
        never inside it. See _called_back.
        """
        ongoing = self._operations.get(frame)
        if ongoing is None or ongoing.offset != offset or ongoing.step != self.step:
            self._operations[frame] = _Operation(offset, len(self.current), self.step, False, None)

    def _c_call_starts(self, frame: FrameType) -> None:
        """The C call of ``frame``'s instruction starts: a callback from now to its
        c_return is the call's (``frame`` is the callback's caller either way)."""
        offset = frame.f_lasti
        ongoing = self._operations.get(frame)
        if ongoing is None or ongoing.offset != offset or ongoing.step != self.step:
            ongoing = _Operation(offset, len(self.current), self.step, True, None)
        else:
            ongoing = ongoing._replace(in_c=True)
        self._operations[frame] = ongoing

    def _calling_back(self, callback: FrameType) -> None:
        """Traced code starts: which running operation called it, if one did. Its
        caller's, or a library function's further down (``json.dump`` reaches its
        ``default`` through its encoder's frames); the search stops at traced code
        and at the runtimes' own frames (a task step, which an event loop runs)."""
        caller = callback.f_back
        operations = self._operations
        while caller is not None:
            ongoing = operations.get(caller)
            if ongoing is not None:
                self._called_back(callback, caller, ongoing)
                return
            role = self._roles.get(id(caller.f_code))
            if role is None:
                role = self._role(caller.f_code)
            if role & (_USER_ROLE | _RUNTIME_ROLE):
                return
            caller = caller.f_back

    def _called_back(self, callback: FrameType, caller: FrameType, ongoing: _Operation) -> None:
        """Traced code starts, called by ``caller``'s running operation: the operation
        spans. What it recorded is recorded in every later step of the actor until
        it is over, and again in the step where it is (close, _span_over): a C
        call at its c_return, a library function at its return, an instruction's
        callback (a factory, an ``__eq__``: what the instruction does next happens
        before its next event) at the callback's return."""
        if ongoing.in_c or ongoing.offset is None:
            key = caller
        elif callback.f_back is not caller:
            return  # an instruction calls its callback itself, with no frame between
        elif caller.f_lasti == ongoing.offset and caller.f_code.co_code[ongoing.offset] not in (
            _DIRECT_CALLS
        ):
            key = callback
        else:
            return  # a call the instruction makes itself, or a later instruction's
        actor = self.actor
        if actor is None or key in self._spans:
            return
        records = ongoing.records
        if records is None:
            if ongoing.step != self.step:
                return  # handed over with their step before any callback: none came
            records = tuple(self.current[ongoing.start :])
            self._operations[caller] = ongoing._replace(records=records)
        if records:
            self._spans[key] = _Span(actor, self.step, ongoing.in_c, records)

    def _span_over(self, frame: FrameType, in_c: bool) -> None:
        """``frame``'s return (``in_c``: the end of its C call) ends its operation: a
        span's records are recorded once more, in the step where it ends."""
        span = self._spans.get(frame)
        if span is None or span.ends_in_c != in_c:
            return
        del self._spans[frame]
        if span.step != self.step and self.actor == span.actor:
            self.current.extend(span.records)

    def unplaced_read(self, key: Any) -> None:
        """A read of ``key`` (an attribute name, an item key, or None: any key) on an object
        the detector could not rebuild without running code: ``get().counter``,
        ``next(...)["id"]``, an attribute of a property's value.

        Which object it was is not known: the read is of :data:`SOMEWHERE`,
        which DPOR orders against every write of that key on any object. A
        write through such an object is opaque instead (:meth:`opaque`).
        """
        stable = self.stable(key) if key is not None else ANY
        self.current.append((SOMEWHERE, stable, False, ""))

    def running(self, actor: int) -> None:
        """A task step of ``actor`` starts (the detector's feed says so).

        A step is what runs between two decisions, and belongs to the actor
        chosen at the first. A backend that runs several actors between two
        decisions (trio orders a whole batch at once) breaks that: the
        accesses cannot be told apart, so nothing is verified.
        """
        if self.actor is not None and actor != self.actor:
            self.blind_spot(
                "several actors ran between two scheduling decisions (trio orders a whole"
                " batch at once), so their accesses could not be told apart"
            )

    def blind_spot(self, why: str) -> None:
        self.blind[why] = None

    # -- steps -----------------------------------------------------------------------
    def begin(self, chooser: Observer, enabled: Sequence[int]) -> None:
        """A decision: the step in progress ends here, the next one starts."""
        self._observer = chooser
        self.close(chooser)
        self.enabled = tuple(enabled)
        # Another actor may run now (a thread calling call_soon_threadsafe):
        # a chain is only carried within the step its callback began in.
        self._chain = None
        self._threadsafe = None  # a hand-off is queued in the step that offered it

    def _raise_deferred(self) -> None:
        error, self._deferred = self._deferred, None
        if error is not None:
            raise error

    def _boundary_alone(self) -> None:
        """A step boundary the runtime did not make: the actor runs alone, so it is the
        only one enabled (a decision with one candidate, which no strategy sees)."""
        actor, chooser = self.actor, self._observer
        if actor is None or chooser is None:
            return
        try:
            self.close(chooser)
        except BaseException as exc:
            # Raised here it would surface in the target's own code, as if the
            # target had failed: the engine gets it at the next decision instead.
            self._deferred = exc
        self.actor = actor
        self.enabled = (actor,)

    def close(self, chooser: Observer) -> None:
        """Hand the finished step (if any) to the chooser."""
        self._raise_deferred()
        if self._expected:
            self._expected.clear()
            self.opaque()  # a callable that fired no event: C code doing what it likes
        if self._shape is not None:
            self.current.append(self._shape)
            self._shape = None
        if self._queue_looks:
            self._looks()
        actor = self.actor
        if actor is not None:
            self.actor = None
            accesses, self.current = tuple(self.current), []
            loops = self.iterating.get(actor)
            if loops:
                accesses += tuple(loops)
            if self._spans:
                for span in self._spans.values():
                    if span.actor == actor and span.step != self.step:
                        accesses += span.records
            if self._queue_mutexes:
                mutexes = self._queue_mutexes
                accesses = tuple(
                    (a[0], a[1], a[2], _QUEUE_MUTEX) if a[0] in mutexes else a for a in accesses
                )
            chooser.observe(self.step, actor, accesses, self.enabled)
            self.step += 1
        else:
            # What ran before the first decision ran alone: nothing to reorder.
            self.current = []

    # -- the profile hook --------------------------------------------------------------
    @contextmanager
    def watching(self) -> Iterator[None]:
        """Watch the calling thread: primitives' operations and C calls from traced code."""
        previous = sys.getprofile()
        hook = self._hook(previous)
        sys.setprofile(hook)
        try:
            yield
        finally:
            if sys.getprofile() is hook:
                sys.setprofile(previous)
            else:
                self.blind_spot(
                    "the profile hook was replaced during the run (by the code under test or"
                    " a tool): C calls after that point were not seen"
                )

    def _is_user(self, code: Any) -> bool:
        found = self._user.get(id(code))
        if found is None:
            found = self._user.put(code, is_user_file(code.co_filename))
        return found

    def _kind(self, code: Any) -> int:
        """How a call of ``code`` is watched: _FOREIGN_CODE, _HANDS_OVER_CODE or 0."""
        found = self._kinds.get(id(code))
        if found is None:
            if code.co_name != "<module>" and is_third_party_file(code.co_filename):
                # untraced third-party code (an import's module body aside)
                found = 0 if self._is_user(code) else _FOREIGN_CODE
            else:
                part = _HANDS_OVER.get(code.co_qualname)
                found = _HANDS_OVER_CODE if part and part in code.co_filename else 0
            self._kinds.put(code, found)
        return found

    def _is_foreign(self, code: Any) -> bool:
        return self._kind(code) == _FOREIGN_CODE

    def _role(self, code: Any) -> int:
        """_kind(code), with _USER_ROLE and _RUNTIME_ROLE: what the hook asks, at once."""
        found = self._roles.get(id(code))
        if found is None:
            found = self._kind(code)
            if self._is_user(code):
                found |= _USER_ROLE
            if code.co_filename.startswith(_RUNTIME_DIRS):
                found |= _RUNTIME_ROLE
                if getattr(code, "co_qualname", "") in _CANCELLING_CODE:
                    found |= _CANCELS_ROLE
            self._roles.put(code, found)
        return found

    def _handing_over(self, frame: FrameType) -> None:
        """Stdlib code that calls a callable the traced code handed it starts (_HANDS_OVER).

        A Python callable's call and a builtin's are seen where they happen (the
        hook's ``call`` and ``c_call``), but the C callables that fire no profile
        event are not: a slot wrapper (``itertools.count().__next__``,
        ``d.__setitem__``) or a builtin inside a ``functools.partial``. Those are
        recorded here, as C calls of the traced code.
        """
        values = frame.f_locals
        owner = values.get("self")
        name = frame.f_code.co_name
        if name == "run":
            handed = [
                getattr(owner, "_target" if isinstance(owner, threading.Thread) else "fn", None)
            ]
        elif name == "__init__":
            handed = [
                field.default_factory
                for field in getattr(type(owner), "__dataclass_fields__", {}).values()
            ]
        else:
            handed = [values.get("callback")]
        for function in handed:
            wrapped = isinstance(function, functools.partial)
            while isinstance(function, functools.partial):
                function = function.func
            if function is None or function is dataclasses.MISSING or _runs_python(function):
                continue  # a Python frame, seen where it starts
            if wrapped or not isinstance(function, BuiltinFunctionType):
                self._c_call(function, frame)  # fires no event (a builtin's does, unwrapped)

    def _foreign_entered(self, frame: FrameType) -> None:
        """Untraced third-party code starts, called by other code than the traced code's.

        An actor's entry point (``Thread(target=lib.fn)``, a library coroutine
        handed to ``create_task``), a callback a stdlib helper or the runtime runs
        (``ExitStack.callback(lib.fn)``, a dataclass's ``default_factory``): no
        traced frame calls it, so :meth:`_entered_library` never sees it. What it
        touches is as unseen as it is there. Calls within the library are not
        entries: the one that entered it said so already.
        """
        caller = frame.f_back
        if caller is not None and self._is_foreign(caller.f_code):
            return
        if caller is not None and caller.f_code.co_filename.startswith(_IMPORT_SYSTEM):
            # An import hook an installed package put in sys.meta_path (setuptools'
            # _distutils_hack is in every venv it made): the import system calls it
            # under the import lock, for its own caches. Counted, a lazy import in
            # the target cost every run its verification.
            return
        code = frame.f_code
        where = _module_of(code.co_filename) or os.path.basename(code.co_filename)
        by = _module_of(caller.f_code.co_filename) if caller is not None else "the thread's start"
        self.blind_spot(
            f"untraced code ran ({where}.{code.co_name}, called by {by or 'generated code'}, not"
            " by traced code): what it touched was not seen, so interleavings that differ only"
            " there may not have been told apart (trace_packages= traces it)"
        )

    def _hook(self, previous: Any) -> Any:
        sync_types = self._sync
        runtime_code = self._runtime_code
        #: code -> its _role: one look-up at every c_call event (the commonest event
        #: there is), one or two at a call
        roles = self._roles
        role_of = self._role

        expected = self._expected
        kept_returns = self._kept_returns
        returns_read = RETURNS_READ
        operations = self._operations
        spans = self._spans

        def hook(frame: FrameType, event: str, arg: Any) -> None:
            if previous is not None:
                previous(frame, event, arg)
            if expected and event != "return" and event != "c_return":
                self._call_arrived(frame if event == "c_call" else frame.f_back, arg)
            if event == "c_call":
                # recorded from traced code, or a hand-over site
                role = roles.get(id(frame.f_code))
                if role is None:
                    role = role_of(frame.f_code)
                if role & (_USER_ROLE | _HANDS_OVER_CODE):
                    self._c_call_starts(frame)
                    self._c_call(arg, frame)
                elif role & _CANCELS_ROLE and getattr(arg, "__name__", "") == "cancel":
                    # A due deadline's expiry cancels its task: that changes what the
                    # task's next step does, wherever the callback ran (a callback
                    # runs inside whichever step comes next), as traced code's
                    # cancel() does (_c_call). Unrecorded, the order that runs the
                    # woken task before the step the expiry ran in was never tried
                    # (tests/core/test_dpor_cancelled_waits.py, condition program).
                    self.opaque()
            elif event == "call":
                code = frame.f_code
                runtime = runtime_code.get(id(code))
                if runtime is None:
                    runtime = runtime_code.put(code, _runtime_kind(code))
                if runtime:
                    if runtime == _ATTEMPT:
                        owner = frame.f_locals.get("self")
                        if isinstance(owner, self._queue_type) and type(owner) is not (
                            self._queue_type
                        ):
                            # a LIFO or priority queue: its items are not numbered,
                            # so a get that waits cannot tell which get emptied it
                            self.sync(owner)
                            return
                        # each (re)entry: where its own records start (see _attempt_over)
                        self._attempts[frame] = len(self.current)
                        if frame in self._waits:
                            self._resumed(frame)
                        return
                    if runtime == _DEADLINE:
                        self._deadline(frame)
                    if runtime >= _OWN:
                        if runtime == _BLOCK:
                            self._blocking(frame)
                        elif runtime == _OWN_AFTER:
                            # which step called it: the step where it returns began at
                            # its point only if that is a later one (see _point_passed)
                            self._called_in[frame] = self.step
                            if code.co_name == "_join":
                                self._join_alone(frame)
                            elif code.co_name in _SIMPLE_OPS:
                                self._simple_seen(frame.f_locals.get("self"))
                        elif runtime == _OWN_SKIP:
                            if code.co_name == "__init__":
                                self._made(frame)
                        else:
                            owner = frame.f_locals.get("self")
                            if id(owner) in self._simple_parts:
                                return  # a SimpleQueue's own lock: see _simple_take
                            if code.co_name in _SIMPLE_LOOKS and _is_own_simple_queue(owner):
                                # its size: both ends of its items
                                self.current.append(
                                    (self.ordinal(owner), ANY, False, type(owner).__qualname__)
                                )
                                return
                            if (
                                owner is not None
                                and not self._in_queue(owner, frame)
                                and not self._in_future(owner, frame)
                            ):
                                self._own(owner, runtime != _OWN_READ)
                        return
                    owner = frame.f_locals.get("self")
                    if owner is not None and type(owner) is self._queue_type:
                        self._queue_call(owner, code.co_name, frame)
                        return
                    if owner is not None and isinstance(owner, sync_types):
                        self.sync(getattr(owner, "_state", owner))  # trio channels share one
                        written = _ATTEMPT_WRITES.get(getattr(code, "co_qualname", ""))
                        if written is not None:
                            kind = type(owner).__qualname__
                            self.current.append((self.ordinal(owner), written, True, kind))
                        return
                role = roles.get(id(code))
                if role is None:
                    role = role_of(code)
                if role == _USER_ROLE:
                    if operations:
                        self._calling_back(frame)
                    return  # traced code: none of the below (its caller matters not)
                caller = frame.f_back
                called_by = 0
                if caller is not None:
                    known = roles.get(id(caller.f_code))
                    called_by = role_of(caller.f_code) if known is None else known
                if called_by & _USER_ROLE and not role & _USER_ROLE:
                    self._entered_library(frame)
                elif role & _FOREIGN_CODE:
                    self._foreign_entered(frame)
                elif called_by & _HANDS_OVER_CODE and not role & (_USER_ROLE | _RUNTIME_ROLE):
                    # the traced code's callable, called for it; a runtime's own
                    # (Thread(target=loop.run_forever)) records its operations itself
                    self._entered_library(frame)
                if role & _HANDS_OVER_CODE:
                    self._handing_over(frame)
            elif event == "return":
                if operations:
                    operations.pop(frame, None)
                    if spans:
                        self._span_over(frame, False)
                returned = runtime_code.get(id(frame.f_code))
                if returned == _ATTEMPT:
                    self._attempt_over(frame, arg)
                elif returned in _AT_RETURN:
                    self._returned(frame, arg)
                caller = frame.f_back if returns_read else None  # most programs: none
                if caller is not None:
                    kept = returns_read.get(id(caller.f_code))
                    if kept is not None and caller.f_lasti in kept:
                        if frame.f_code.co_code[frame.f_lasti] in _RETURNS:
                            kept_returns[(caller, caller.f_lasti)] = arg
                        else:
                            # a coroutine's yield, or an exception leaving: no value
                            # (a later pass that awaits C code must not meet this one)
                            kept_returns.pop((caller, caller.f_lasti), None)
            elif operations:  # a c_return or c_exception
                ongoing = operations.get(frame)
                if ongoing is not None and ongoing.in_c:
                    del operations[frame]  # the instruction's C call is over
                    if spans:
                        self._span_over(frame, True)

        return hook

    def _returned(self, frame: FrameType, arg: Any) -> None:
        """One of racecheck's primitives (or a queue's or future's method) returns."""
        owner = frame.f_locals.get("self")
        passed = self._point_passed(frame)
        self._called_in.pop(frame, None)
        if owner is not None:
            name = frame.f_code.co_name
            if name == "_join":
                self._joined(owner, frame, passed)
                return
            if id(owner) in self._simple_parts:
                return  # a SimpleQueue's own lock: see _simple_take
            if name in _SIMPLE_OPS and _is_own_simple_queue(owner):
                self._simple_take(owner, name)
                return
            if self._in_queue(owner, frame, True, arg):
                return
            if self._in_future(owner, frame, True, arg, passed):
                return
            looked = arg is False and name in _ACQUIRES
            self._own(owner, not looked)
            if not looked and name in _TAKES:
                kind = type(owner).__qualname__
                self.current.append((self.ordinal(owner), TAKEN, True, kind))

    def _made(self, frame: FrameType) -> None:
        """One of racecheck's primitives is made: a queue.Queue's mutex is told apart."""
        caller = frame.f_back
        if caller is None or caller.f_code.co_filename != _QUEUE_FILE:
            return
        owner = frame.f_locals.get("self")
        if caller.f_code.co_name == "__init__" and _is_own_lock(owner):
            self._queue_mutexes.add(self.ordinal(owner))

    def _queue_call(self, queue: Any, name: str, frame: FrameType) -> None:
        """A method of an ``asyncio.Queue`` (exactly: FIFO) is called: see ITEM.

        Only what changes or shows its items is recorded: ``_put`` and
        ``_get`` (where every put and get takes effect), and a look at its
        size. A look made by the queue's own operation (``get`` checks
        ``empty()``) is kept only if no item moved after it in the step: a
        get that went on is ordered by its item, one that waits by
        _attempt_over, one that raised QueueEmpty did look.
        """
        ordinal, kind = self.ordinal(queue), type(queue).__qualname__
        if name == "_put" or name == "_get":
            counts = self._queue_counts.setdefault(ordinal, [0, 0])
            side = 0 if name == "_put" else 1
            number = counts[side]
            counts[side] = number + 1
            self._queue_looks.pop(ordinal, None)
            self.current.append((ordinal, FILLED if side == 0 else TAKEN, True, kind))
            self.current.append((ordinal, (ITEM, number), side == 0, kind))
        elif name in ("empty", "full", "qsize"):
            caller = frame.f_back
            if caller is not None and caller.f_code.co_filename.startswith(_ASYNCIO_DIR):
                self._queue_looks[ordinal] = kind
            else:
                self.current.append((ordinal, TAKEN, False, kind))
                self.current.append((ordinal, FILLED, False, kind))
        elif name in ("task_done", "join", "shutdown", "__init__"):
            self.current.append((ordinal, SYNC, True, kind))
        # put_nowait, get_nowait, _wakeup_next, ...: their effects are the calls above

    def _looks(self) -> None:
        """The queue looks its own operations made and kept (see _queue_call)."""
        for ordinal, kind in self._queue_looks.items():
            self.current.append((ordinal, TAKEN, False, kind))
            self.current.append((ordinal, FILLED, False, kind))
        self._queue_looks.clear()

    def _deadline(self, frame: FrameType) -> None:
        """An ``asyncio.timeout`` scope sets, moves or clears its deadline, or ends."""
        scope = frame.f_locals.get("self")
        task = getattr(scope, "_task", None)
        if task is None:
            return
        scopes = self._deadlines.setdefault(id(task), {})
        if frame.f_code.co_name == "reschedule" and frame.f_locals.get("when") is not None:
            scopes[id(scope)] = scope
        else:
            scopes.pop(id(scope), None)

    def _under_deadline(self) -> bool:
        """Would a deadline already due cancel the running task if it waited now?

        Only a due one can: had the task waited here, the operation that let it go
        on (a put, say) was enabled, and the virtual clock moves only when nobody
        can run, so a later deadline falls due after that operation and the wake
        it gives (test_dpor_cancelled_waits.py, the ``wait_for`` program). Due: an
        ``asyncio.timeout`` scope around the task (``wait_for`` on 3.12+) whose
        deadline is now or past (``timeout(0)``), or 3.11's ``wait_for``, which
        runs the awaitable as a task of its own and cancels it once the timer
        that releases the outer task (``tasks._release_waiter``) has fired.
        """
        import asyncio

        try:
            task = asyncio.current_task()
        except RuntimeError:
            return False
        if task is None:
            return False
        loop = task.get_loop()
        now = loop.time()
        for scope in self._deadlines.get(id(task), {}).values():
            when = getattr(scope, "_when", None)
            if when is not None and when <= now:
                return True
        release = getattr(asyncio.tasks, "_release_waiter", None)
        if release is None:
            return False
        for callback, *_ in getattr(task, "_callbacks", None) or ():
            if getattr(callback, "func", None) is not release:
                continue
            waiter = callback.args[0] if callback.args else None
            if waiter is None or waiter.done():
                return True
            for handle in (*getattr(loop, "_scheduled", ()), *getattr(loop, "_ready", ())):
                if (
                    getattr(handle, "_callback", None) is release
                    and handle._args == (waiter,)
                    and getattr(handle, "_when", now) <= now
                ):
                    return True
        return False

    def _resumed(self, frame: FrameType) -> None:
        """An asyncio operation that waited runs again: did its wait end by cancellation?

        Then the step that waited looked after all (see _ENDED_BY): say so in this
        step, for DPOR to add the read to that step. A cancel request made while it
        waited (``Task.cancel``: a deadline's, a TaskGroup's, another task's) is
        what throws CancelledError into it, whether or not its wake came first.
        """
        waited = self._waits[frame]
        if waited is None:
            return
        self._waits[frame] = None
        step, ordinal, ended_by, kind, before = waited
        if _cancel_requests() > before:
            self.current.append((LATE_READ, (step, ordinal, ended_by), False, kind))

    def _attempt_over(self, frame: FrameType, arg: Any) -> None:
        """An asyncio operation that may wait returns, or suspends to wait (_ATTEMPTS)."""
        start = self._attempts.pop(frame, None)
        owner = frame.f_locals.get("self")
        if owner is None or not isinstance(owner, self._sync):
            return
        ordinal, kind = self.ordinal(owner), type(owner).__qualname__
        qualname = frame.f_code.co_qualname
        key = _ATTEMPTS[qualname]
        queue = type(owner) is self._queue_type
        if start is not None and getattr(arg, "_asyncio_future_blocking", False) is True:
            # It waits: what it did to the primitive in this step was looking
            # (its own calls, such as ``empty()``), and joining the waiters.
            self.current[start:] = [a for a in self.current[start:] if a[0] != ordinal]
            self._queue_looks.pop(ordinal, None)
            self.current.append((ordinal, key, False, kind))
            self.current.append((ordinal, WAITERS, True, kind))
            self._waits[frame] = (
                (self.step, ordinal, _ENDED_BY[qualname], kind, _cancel_requests())
                if self.actor is not None
                else None
            )
        elif queue and start is not None:
            # What it did is its _put or _get (see _queue_call), whose item read
            # follows the put of it without racing it: run first, the get would
            # have waited for that put, a stutter. Unless a deadline could have
            # ended that wait first (_ENDED_BY): then the other order is another
            # outcome, and the operation races what let it go on (a get: every put,
            # its item read no longer an order; a put: every get).
            if frame in self._waits:
                del self._waits[frame]
            elif self._under_deadline():
                ended_by = _ENDED_BY[qualname]
                self.current[start:] = [
                    (ordinal, ended_by, False, kind)
                    if a[0] == ordinal and not a[2] and order_only(a[1])
                    else a
                    for a in self.current[start:]
                ]
                self.current.append((ordinal, ended_by, False, kind))
        else:
            self._waits.pop(frame, None)
            self.current.append((ordinal, SYNC, True, kind))
            if key is not CLEARED:  # a wait that went on took nothing
                self.current.append((ordinal, key, True, kind))

    def _join_alone(self, frame: FrameType) -> None:
        """A join by the last live actor: its point is no decision, so make it a boundary.

        Otherwise the join would return in a step that holds what the actor
        ran before it, which the joined thread's steps do race with, and the
        join could only be recorded as a race with the thread's end: a
        reversal that merely blocks the join first (one more trace each).
        """
        runtime = getattr(frame.f_locals.get("self"), "__dict__", {}).get("_racecheck_runtime")
        live = getattr(runtime, "live", None)
        if live is not None and len(live) == 1:
            self._boundary_alone()

    def _point_passed(self, frame: FrameType | None) -> bool:
        """Did the operation running in ``frame`` pass its scheduling point as a step boundary?

        Only then does the current step begin at the operation: with one
        actor left, a point is no decision and the step holds whatever the
        actor ran before it, which another order could have run earlier. The
        rules that say "this step could not have run before" (ENDED,
        STUTTER) hold only for a step that begins at the operation.
        """
        called = self._called_in.get(frame) if frame is not None else None
        return called is not None and called != self.step

    def _joined(self, thread: Any, frame: FrameType, passed: bool) -> None:
        """A ``join`` returns: the thread ended (ENDED), or its timeout ran out (a read)."""
        target = frame.f_locals.get("target")
        kind = type(thread).__qualname__
        if passed and target is not None and getattr(target, "finished", False):
            self.current.append((self.ordinal(thread), ENDED, False, kind))
        else:
            self.current.append((self.ordinal(thread), SYNC, False, kind))

    def _blocking(self, frame: FrameType) -> None:
        """The runtime's ``block``: the step is about to wait (or to find it need not)."""
        caller = frame.f_back
        waits_in = getattr(caller.f_code, "co_qualname", "") if caller is not None else ""
        resource = frame.f_locals.get("resource")
        passed = self._point_passed(caller)
        if resource is not None and self._future_waits(resource, caller, waits_in, passed):
            return
        if waits_in == "SimpleQueue.get" and _is_own_simple_queue(resource):
            self._simple_waits(resource, caller, passed)
            return
        if resource is not None and type(resource).__qualname__ in _QUEUE_PARTS:
            found = _queue_method(caller)
            if found is not None:
                owner, method, where = found
                stutter = _STUTTER_WAITS.get(method) if waits_in == "Condition.wait" else None
                if stutter is not None and (method == "join" or _waits_for_item(method, where)):
                    # a get waiting for an item, a join for the count to reach 0:
                    # a stutter, like an acquire of a held lock (see _QUEUE_EMPTY
                    # and _count_take)
                    kind = type(owner).__qualname__
                    self.current.append((self.ordinal(owner), stutter, False, kind))
                    if passed:
                        self.current.append((STUTTER, 0, False, ""))
                    return
                # what it waits for is what its operation would read or change
                self._queue_op(owner, method, how=_QUEUE_WAITS)
                if waits_in in _STUTTER_ACQUIRES:
                    if id(resource) not in self._queue_held:
                        # held by traced code (``with q.mutex``), which wrote TAKEN
                        kind = type(resource).__qualname__
                        self.current.append((self.ordinal(resource), TAKEN, False, kind))
                    if passed:
                        self.current.append((STUTTER, 0, False, ""))
                return
            if id(resource) in self._queue_held or self._queue_condition(resource):
                # traced code waiting for the mutex a queue method holds past a
                # point (task_done's notify_all): that method only read TAKEN
                self.opaque()
        if waits_in in _STUTTER_ACQUIRES and resource is not None:
            # it saw the lock taken: ordered against whoever took it
            kind = type(resource).__qualname__
            self.current.append((self.ordinal(resource), TAKEN, False, kind))
            if passed:
                self.current.append((STUTTER, 0, False, ""))
            else:
                self._own(resource, False)
        elif waits_in == "_join":
            if passed:
                self.current.append((STUTTER, 0, False, ""))  # a thread never runs again
        elif resource is not None:
            self._own(resource, False)  # it saw the primitive unavailable

    def _in_queue(
        self, owner: Any, frame: FrameType, at_return: bool = False, returned: Any = None
    ) -> bool:
        """A mutex or condition operation run by a ``queue.Queue`` method: recorded here.

        A queue's methods each take its mutex and wait on or notify its
        conditions, and several of those are scheduling points. Recorded as
        lock and condition operations, the order of any two critical sections
        of one queue was a difference of traces, also between operations that
        commute (a ``get`` and another thread's ``task_done``). Instead the step
        where the mutex is taken (where the operation reads and changes the
        queue: nothing else touches the queue while it is held) records what
        the operation does to the queue (:data:`_QUEUE_OPS`); the release,
        the waits and the notifies record nothing of their own (whom a notify
        wakes is an enabled-set change the engine records), also where a
        notify is a scheduling point inside the critical section (see
        :meth:`_queue_op`). Taking the mutex reads its TAKEN: another
        operation's take leaves it alone (they commute, as their effects
        say), but traced code's acquire of the same mutex writes it, and
        that acquire disables the operation. Without it a thread that
        slept on such an acquire (sleep sets) stayed asleep through the
        operation, and ``with q.mutex: len(q.queue)`` was never run
        between another thread's put and get (_MISSED_MUTEX_READ).
        The same mutex used by traced code (``with q.mutex``) is recorded as
        any lock: its acquire writes TAKEN, and a queue's operation blocked
        by such a holder reads it. Traced code waiting for the mutex while a
        queue's method holds it past a point is OPAQUE (that method wrote
        nothing it could read). A queue's conditions used by traced code are
        OPAQUE and a blind spot (_QUEUE_MUTEX_GAP). A blocked attempt is
        recorded in :meth:`_blocking`.

        Returns False when the operation is to be recorded as usual.
        """
        if type(owner).__qualname__ not in _QUEUE_PARTS:
            return False
        found = _queue_method(frame)
        if found is None:
            if self._queue_condition(owner):
                self.opaque()
            return False
        if at_return:  # see _AT_RETURN
            name = frame.f_code.co_name
            if name == "acquire" and returned is True:
                owner_q, method, where = found
                empty = method == "get" and _waits_for_item(method, where) and _empty(owner_q)
                self._queue_op(owner_q, method, _QUEUE_EMPTY if empty else _QUEUE_TAKES)
                self._queue_held.add(id(owner))
                kind = type(owner).__qualname__
                ordinal = self.ordinal(owner)
                self.current.append((ordinal, HELD, False, kind))
                self.current.append((ordinal, TAKEN, False, kind))
        elif frame.f_code.co_name == "release":
            self._queue_held.discard(id(owner))
        return True

    def _in_future(
        self,
        owner: Any,
        frame: FrameType,
        at_return: bool = False,
        returned: Any = None,
        passed: bool = False,
    ) -> bool:
        """A lock or condition operation run by a ``concurrent.futures.Future`` method.

        A future's methods each take its condition (an ``RLock``), and
        ``set_result``/``cancel`` notify it: several scheduling points. As lock
        operations, any two critical sections of one future were ordered
        (two ``done()`` too) and a release raced the next acquire, whose
        reversal only blocked. As with a queue (:meth:`_in_queue`), the step
        where the lock is taken records what the method does to the future
        (:func:`_future_effects`, nothing else touches it while the lock is
        held), with twins of what it changed for a method blocked on the
        lock; the release, the waits and the notifies record nothing (whom a
        notify wakes is an enabled-set change the engine records). The lock
        or condition used by traced code is recorded as usual, and OPAQUE once
        the future is known. racecheck's own wrappers of the future's methods
        (``primitives.future_patches``) record nothing either.

        Returns False when the operation is to be recorded as usual.
        """
        kind = type(owner).__qualname__
        if kind not in _FUTURE_PARTS:
            if isinstance(owner, _futures_base.Future):
                return frame.f_code.co_name.startswith("patched_") and _own_condition(owner)
            return False
        found = _future_method(frame)
        if found is None:
            if id(owner) in self._future_parts or _in_futures_module(frame):
                self.opaque()
            return False
        if at_return:
            name = frame.f_code.co_name
            # a fresh take (count 1), not a re-entry of a lock the method holds already
            if name == "acquire" and returned is True and getattr(owner, "_count", 1) == 1:
                future, method, where = found
                effects = _future_effects(future, method, where)
                ordinal = self.ordinal(future)  # keeps the future, so its parts' ids, alive
                condition = future._condition
                self._future_parts[id(owner)] = self._future_parts[id(condition)] = future
                kinds = type(future).__qualname__
                for key, write in effects:
                    self.current.append((ordinal, key, write, kinds))
                    if write:
                        self.current.append((ordinal, (_FUTURE_WAIT, key), True, kinds))
                self._future_held.add(id(owner))
                self.current.append((self.ordinal(owner), HELD, False, kind))
                if not effects and passed:
                    self.current.append((STUTTER, 0, False, ""))  # it waits for the set
        elif kind == "RLock" and (
            frame.f_code.co_name == "_release_save"
            or (frame.f_code.co_name == "release" and getattr(owner, "_count", 1) <= 1)
        ):
            self._future_held.discard(id(owner))
        return True

    def _future_waits(
        self, resource: Any, caller: FrameType | None, waits_in: str, passed: bool
    ) -> bool:
        """A future's method blocks: on its lock (held), or in ``result()`` for the set.

        Blocked on the lock, it reads the twins of what its method would
        change or look at, which the step that took the lock wrote if it
        changed them: a stutter, like an acquire of a held lock. Waiting in
        ``Condition.wait`` it was recorded where it took the lock.
        """
        if type(resource).__qualname__ not in _FUTURE_PARTS:
            return False
        found = _future_method(caller)
        if found is None:
            return False
        if waits_in in _STUTTER_ACQUIRES:
            future, method, where = found
            ordinal, kind = self.ordinal(future), type(future).__qualname__
            for key, _ in _future_effects(future, method, where):
                if not order_only(key):
                    self.current.append((ordinal, (_FUTURE_WAIT, key), False, kind))
            if id(resource) not in self._future_held:
                # held by traced code (``with future._condition``), which wrote TAKEN
                kind = type(resource).__qualname__
                self.current.append((self.ordinal(resource), TAKEN, False, kind))
            if passed:
                self.current.append((STUTTER, 0, False, ""))
        return True

    def _queue_op(self, owner: Any, method: str, how: int = _QUEUE_TAKES) -> None:
        """What the ``queue.Queue`` method ``method`` reads and changes of the queue.

        ``how``: the step took the mutex (_QUEUE_TAKES: the parts, and their
        :data:`_QUEUE_WAIT` twins), or waits to take it or for its condition
        (_QUEUE_WAITS: the twins, read). The twins order a blocked attempt
        against the step that took the mutex. A FIFO queue's put and get
        write one end of its items each (:meth:`_fifo_take`).

        The whole operation is recorded in the step that takes the mutex,
        also where its critical section goes on past a scheduling point
        (``task_done``'s ``notify_all``, ``put``'s ``notify``): nothing can
        look at the queue before the mutex is released, so the operation
        takes effect at once there. Its count used to be written again in
        ``task_done``'s notify step; a race with that write put the
        reversal *inside* the critical section, where the other thread's
        operation only blocks on the mutex, and a blocked ``get`` (whose
        twins do not meet ``task_done``'s) never moved it back to the
        acquire: with three threads the order where one thread's
        ``task_done`` raises after another's was never run
        (tests/core/test_dpor_queue.py, _MISSED_WITH_THREE_THREADS).
        """
        if how == _QUEUE_EMPTY:
            # A get that finds no item and will wait for one. Like an acquire
            # that finds the lock taken, what it saw is only ordered against
            # the get that took the last item (_TOOK), not against the put
            # that will wake it: with that put first, it would simply have
            # taken the item, which is its woken step anyway.
            kind = type(owner).__qualname__
            self.current.append((self.ordinal(owner), _TOOK, False, kind))
            return
        reads_only = how == _QUEUE_WAITS
        kind = type(owner).__qualname__
        ordinal = self._know_queue(owner)
        effects = _QUEUE_OPS.get(method)
        if effects is None:
            self._fifo_raw.add(ordinal)  # shutdown(immediate=True) drains the items
            self.current.append((ordinal, ANY, not reads_only, kind))
            effects = ((_ITEMS, True),)
        ends = how == _QUEUE_TAKES and self._fifo_take(owner, ordinal, method)
        for part_name, write in effects:
            keys: tuple[tuple[Hashable, bool], ...]
            if part_name == _ITEMS and ends:
                continue
            if part_name == _ITEMS and reads_only:
                # blocked on the mutex: ordered against a take of either end too
                for end in (_HEAD, _TAIL):
                    self.current.append((ordinal, (_QUEUE_WAIT, end), False, kind))
            if part_name != _TASKS:
                keys = ((part_name, write),)
            elif method not in _COUNTING:
                keys = ((_ADDED, write), (_DONE, write))
            else:
                # blocked on the mutex (reads_only), the twins of what it would touch
                keys = self._count_take(owner, ordinal, method, taken=not reads_only)
            for key, write in keys:
                write = write and not reads_only
                self.current.append((ordinal, (_QUEUE_WAIT, key), write, kind))
                if how == _QUEUE_WAITS:
                    continue
                if key == _ITEMS:
                    items = getattr(owner, "queue", owner)
                    self.current.append((self.ordinal(items), ANY, write, type(items).__qualname__))
                else:
                    self.current.append((ordinal, key, write, kind))

    def _count_take(
        self, owner: Any, ordinal: int, method: str, taken: bool = True
    ) -> tuple[tuple[Hashable, bool], ...]:
        """What a ``put``/``task_done``/``join`` reads and changes of the count of
        unfinished tasks, by its units.

        The k-th put adds the count's k-th unit (``(_UNIT, k)``, written), the
        k-th ``task_done`` that goes through takes it (read, as a race): the
        count is the puts so far less the ``task_done`` so far, so the k-th
        ``task_done`` finds it above 0 exactly when the k-th put came before
        it, and raises when not (it then reads the unit and changes nothing).
        Puts are ordered among themselves (``_ADDED``), ``task_done`` too
        (``_DONE``), so each one's number, and what it reads and writes, is
        the same in every run where the same ones came before it: no swap of
        a put with a ``task_done`` of another unit changes it. Those commute
        in every state where both can run, which the counter reading this
        replaces did not give (a put from 1 and a ``task_done`` from 2
        commuted; swapped, the ``task_done`` reached 0 and the put came from
        0, and the next ``task_done``'s raise was in a run DPOR took for
        equivalent: ``(put, get, put) | (task_done, task_done)`` was called
        verified, tests/core/test_dpor_queue.py, _PUTS_AROUND_TWO_DONE). It
        is the numbering of a FIFO queue's items (:meth:`_fifo_take`) for
        units nobody tells apart.

        A ``join`` that finds the count at 0 returns: it reads both counts,
        and so races every put and ``task_done``. One that finds it above 0
        waits, a stutter like an acquire of a held lock: it reads the puts
        (one came after the ``task_done`` so far), not the ``task_done``
        that ends the wait (with that one first, it would simply have
        returned, its woken step anyway). A count that is not the puts less
        the ``task_done`` the run saw (units put where no step saw it are
        numbered first; traced code writing ``unfinished_tasks``, which is
        OPAQUE anyway, or ``shutdown(immediate=True)`` breaks it) is
        recorded whole from then on: every put and ``task_done`` writes
        both counts.

        Traced code that reads the count itself sees its exact value: that is
        made OPAQUE (:meth:`touch`). ``taken`` False: the operation waits for
        the mutex, what it would touch is counted for nothing.
        """
        count = getattr(owner, _TASKS, None)
        units = self._count_units
        if ordinal not in units and isinstance(count, int):
            # units already there were put where no step saw it: numbered first
            units[ordinal] = [count, 0]
        counts = units.get(ordinal)
        if counts is None or count != counts[0] - counts[1]:
            units[ordinal] = None  # astray: whole from now on
            if method == "join":
                return _WHOLE_COUNT_READ
            return ((_ADDED, True), (_DONE, True))
        if method == "join":
            return _WHOLE_COUNT_READ if count == 0 or not taken else ((_ADDED, False),)
        if method == "put":
            number = counts[0]
            counts[0] = number + taken
            return ((_ADDED, True), ((_UNIT, number), True))
        number = counts[1]
        if count <= 0 and taken:
            return ((_DONE, False), ((_UNIT, number), False))  # it raises ValueError
        counts[1] = number + taken
        return ((_DONE, True), ((_UNIT, number), False))

    def _fifo_take(self, owner: Any, ordinal: int, method: str) -> bool:
        """A FIFO queue's put or get takes effect: record it by one end of the items.

        Returns False where the whole items are to be recorded as before.

        The k-th put's item is the k-th item a get takes (the deque is first
        in, first out, and nothing else changes it: a queue whose deque traced
        code changed, or that ``shutdown`` drained, is recorded whole from then
        on). So a put writes the items' tail and its item ``(_SLOT, k)``, a get
        writes their head and reads its item: puts are ordered among
        themselves, gets too (which put's item each gets), a get follows the
        put of its item, but a put and a get of another item commute, in every
        state where both can run: the get's item was put before either, and
        the put's goes behind it. This is no reading of the number of items
        (which a swap of neighbours would change: see _count_take):
        which item a get takes is fixed by the order of the gets alone.

        The get's read of its item is a race with the put, not an order
        (ITEM), also for a get that would wait for it: an order read hides,
        behind the put, the earlier gets of the same thread as that put, and
        so the races of the get with those. A take woken by the first put
        could still take the first item before the putter's own get_nowait,
        but with its item read as an order (it took the second item, behind
        the second put) that order was never tried and a program was called
        verified with one of its four states (tests/core/test_dpor_queue.py,
        _WOKEN_TAKE_VS_A_GET). A get that finds no item only looks: one that
        waits for as long as it takes reads _TOOK (_QUEUE_EMPTY), any other
        the whole items. A put on a bounded queue looks at their number (full
        or not), so it writes the whole items, as before.
        """
        if method not in ("put", "get") or not _plain_fifo(owner):
            return False
        items = getattr(owner, "queue", None)
        if items is None:
            return False
        counts = self._fifo_counts.get(ordinal)
        if counts is None:
            # items already there were put where no step saw it: never numbered
            counts = self._fifo_counts[ordinal] = [len(items), 0]
        if (
            ordinal in self._fifo_raw
            or self._fifo_items.get(id(items)) != ordinal  # q.queue replaced
            or len(items) != counts[0] - counts[1]
        ):
            self._fifo_raw.add(ordinal)
            return False
        kind = type(owner).__qualname__
        if method == "put":
            if getattr(owner, "is_shutdown", False):
                return False  # it raises ShutDown (3.13)
            bounded = getattr(owner, "maxsize", 0) > 0
            if bounded and len(items) >= owner.maxsize:
                return False  # full: it waits (recorded again when it takes the mutex back)
            number = counts[0]
            counts[0] = number + 1
            self.current.append((ordinal, (_SLOT, number), True, kind))
            if bounded:
                return False  # it looked at the number of items
            end = _TAIL
        else:
            if not items:
                return False  # it finds none: raises Empty, or waits with a timeout
            number = counts[1]
            counts[1] = number + 1
            self.current.append((ordinal, (_SLOT, number), False, kind))
            end = _HEAD
        self.current.append((ordinal, (_QUEUE_WAIT, end), True, kind))
        self.current.append((self.ordinal(items), end, True, type(items).__qualname__))
        return True

    def _simple_seen(self, owner: Any) -> None:
        """A put or get of the threads backend's ``SimpleQueue`` is called (see
        _simple_take): its own condition and lock are told apart, and its items
        numbered from here (those already there were put where no step saw it)."""
        if not _is_own_simple_queue(owner):
            return
        ordinal = self.ordinal(owner)
        if ordinal not in self._simple_counts:
            self._simple_counts[ordinal] = [len(owner._items), 0]
            cond = owner._cond
            self._simple_parts.update((id(cond), id(cond._lock)))

    def _simple_take(self, owner: Any, method: str) -> None:
        """A put or get of the threads backend's ``queue.SimpleQueue`` returns.

        Numbered like a FIFO ``queue.Queue``'s items (:meth:`_fifo_take`, the
        same keys, on the SimpleQueue itself): the k-th put writes the tail and
        its item ``(_SLOT, k)``, the k-th get that takes an item writes the head
        and reads that item (a race, not an order), so a put and a get of
        another item commute. A get that took an item also writes TAKEN: it
        may disable a get that a put woke and that has not run yet, and
        DPOR tries that waiter first where it could (dpor._takes,
        DPORChooser._reverse_disabled). Without it the woken get never took
        the first put's item before the putter's own get_nowait, and
        _WOKEN_TAKE_VS_A_GET on a SimpleQueue was called verified with one
        of its four states (tests/core/test_dpor_queue.py). Its lock and
        condition (used only inside put, and by threads racecheck does not
        control) record nothing, nor do its hand-offs to the race detector.
        A get that found none and raised ``queue.Empty`` read the whole items;
        a queue whose size is not the puts less the gets seen (astray) writes
        them whole from then on. Until now every put and get wrote the whole
        queue, and asyncio's default executor's work queue ordered every
        submit against every worker's take (tests/core/test_dpor.py,
        _EXECUTOR_THREADS).
        """
        ordinal, kind = self.ordinal(owner), type(owner).__qualname__
        counts = self._simple_counts.get(ordinal)
        left = len(owner._items)
        if counts is not None:
            puts, gets = counts
            if method == "put" and left == puts + 1 - gets:
                counts[0] = puts + 1
                self.current.append((ordinal, (_SLOT, puts), True, kind))
                self.current.append((ordinal, _TAIL, True, kind))
                return
            if method == "get" and left == puts - gets - 1:
                counts[1] = gets + 1
                self.current.append((ordinal, (_SLOT, gets), False, kind))
                self.current.append((ordinal, _HEAD, True, kind))
                self.current.append((ordinal, TAKEN, True, kind))
                return
            if method == "get" and left == puts - gets:
                self.current.append((ordinal, ANY, False, kind))  # found none: Empty
                return
            self._simple_counts[ordinal] = None
        self.current.append((ordinal, ANY, True, kind))
        if method == "get":
            self.current.append((ordinal, TAKEN, True, kind))

    def _simple_waits(self, owner: Any, frame: FrameType | None, passed: bool) -> None:
        """A get of the threads backend's ``SimpleQueue`` finds no item and waits.

        One that waits for as long as it takes is a stutter, like a blocked
        ``queue.Queue.get`` (_QUEUE_EMPTY): what it saw is ordered against
        the get that took the last item (the head), not against the put that
        wakes it (with that put first, it would simply have taken the item,
        its woken step anyway). One with a timeout may raise ``queue.Empty``
        instead, another outcome: it read the whole items.
        """
        ordinal, kind = self.ordinal(owner), type(owner).__qualname__
        local = frame.f_locals if frame is not None else {}
        if self._simple_counts.get(ordinal) is None or local.get("timeout") is not None:
            self.current.append((ordinal, ANY, False, kind))
            return
        self.current.append((ordinal, _HEAD, False, kind))
        if passed:
            self.current.append((STUTTER, 0, False, ""))

    def _know_queue(self, owner: Any) -> int:
        """Remember the queue's mutex and conditions (see _in_queue); its ordinal."""
        ordinal = self.ordinal(owner)  # keeps the queue, and so its parts' ids, alive
        parts = self._queue_parts
        if id(getattr(owner, "mutex", None)) not in parts:
            for name in _QUEUE_PART_NAMES:
                part = getattr(owner, name, None)
                if part is not None:
                    parts[id(part)] = owner
            items = getattr(owner, "queue", None)
            if items is not None and _plain_fifo(owner):
                # traced code's accesses to it are to the whole of it (touch)
                self._fifo_items[id(items)] = ordinal
        return ordinal

    def _queue_condition(self, obj: Any) -> bool:
        """Is ``obj`` one of a known queue's conditions (not its mutex)?"""
        owner = self._queue_parts.get(id(obj))
        return owner is not None and getattr(owner, "mutex", None) is not obj

    def _own(self, obj: Any, write: bool) -> None:
        """An operation on one of racecheck's thread primitives (or a Thread): a sync access."""
        if self._queue_condition(obj):
            # traced code using a queue's own condition (``q.not_empty.wait()``)
            self.blind_spot(_QUEUE_MUTEX_GAP)
        self.current.append((self.ordinal(obj), SYNC, write, type(obj).__qualname__))

    def _c_call(self, function: Any, frame: FrameType) -> None:
        owner = getattr(function, "__self__", None)
        name = getattr(function, "__name__", "")
        if owner is None or isinstance(owner, ModuleType):
            if name == "all_tasks":
                self.tasks_listed()
                return
            if name in _PURE_FUNCTIONS:
                return
            if name in _ADVANCING and owner is builtins:
                advanced = _argument_of(frame, name)
                if advanced is not MISSING:
                    if not isinstance(advanced, _IMMUTABLE):
                        kind = type(advanced).__qualname__
                        self.current.append((self.ordinal(advanced), ANY, True, kind))
                    return
            # A module-level C function may change what it is given
            # (heapq.heappush, bisect.insort): nothing says what, so
            # the step conflicts with everything.
            self.opaque()
            return
        if isinstance(owner, type) or isinstance(owner, _IMMUTABLE):
            return
        if name == "cancel":
            self.opaque()  # changes what another actor's next step does
            return
        if (
            name in _FINISHES
            and isinstance(owner, self._future_type)
            and not isinstance(owner, self._task_type)
            and not owner.done()  # type: ignore[attr-defined]
        ):
            # An await of it goes on from now (see awaited). Its other readers
            # (done(), result()) read the whole future, which conflicts with this.
            self.finished(owner)
            return
        write = name not in _READ_ONLY
        if self._namespaces:
            owner = self._namespaces.get(id(owner), owner)
        if type(owner) is memoryview:
            owner = buffer_exporter(owner)  # its items are the exporter's (a bytearray's)
        if write and self._fifo_items and id(owner) in self._fifo_items:
            self._fifo_raw.add(self._fifo_items[id(owner)])  # see touch
        self.current.append((self.ordinal(owner), ANY, write, type(owner).__qualname__))

    def _entered_library(self, frame: FrameType) -> None:
        code = frame.f_code
        if id(code) in self._verdict:
            verdict = self._verdict[id(code)]
        else:
            verdict = self._verdict.put(code, _library_verdict(code.co_filename, code.co_name))
        if verdict is not None:
            self.blind_spot(verdict)
            return
        if code.co_filename.startswith(_RACECHECK_DIR):
            return  # racecheck's own patches: their effects are recorded where they happen
        hidden = _hidden_state(code.co_filename, code.co_qualname)
        if hidden:
            self._quiet_state(hidden, frame)
        if code.co_name == "all_tasks" and code.co_filename == _TASKS_FILE:
            self.tasks_listed()  # it changes nothing, not even the loop it is given
            return
        if code.co_filename == _FUTURE_FILE and code.co_name in _FUTURE_METHODS:
            owner = frame.f_locals.get("self")
            if isinstance(owner, _futures_base.Future) and _own_condition(owner):
                return  # recorded where it takes the future's lock (_in_future)
        if code.co_filename == _QUEUE_FILE and code.co_name in _QUEUE_CALLS:
            owner = frame.f_locals.get("self")
            if isinstance(owner, queue.Queue) and _is_own_lock(getattr(owner, "mutex", None)):
                return  # recorded where it takes the queue's mutex (_in_queue)
        if _writes_nothing(code):
            return
        # it may call traced code back and write after (a cached_property's function)
        self.operation_starts(frame, None)
        self._library_writes(frame, code)

    def _library_writes(self, frame: FrameType, code: Any) -> None:
        """Quiet stdlib code may still change what it is handed (Counter.update, a
        cached_property filling an instance): each argument is written."""
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if not names:
            return
        values = frame.f_locals
        narrowed = _NARROW_WRITES.get(code.co_qualname)
        if (
            narrowed is not None
            and code.co_filename.endswith(narrowed[0])
            and _hands_off(code.co_qualname, values)
        ):
            # Known code that changes only one part of what it is handed: the
            # rest of the arguments are read, or only stored by reference.
            first = values.get(names[0])
            if first is not None and not isinstance(first, _PASSIVE):
                key = ANY if narrowed[1] is None else narrowed[1]
                kind = type(first).__qualname__
                self.current.append((self.ordinal(first), key, True, kind))
            return
        for name in names:
            value = values.get(name)
            if value is None or isinstance(value, _PASSIVE):
                continue
            self.current.append((self.ordinal(value), ANY, True, type(value).__qualname__))
            if type(value) is ChainMap:
                self._chained(value)

    def _chained(self, chain: ChainMap[Any, Any]) -> None:
        """A ``ChainMap``'s methods read and change the dicts it chains, not itself:
        each is written (``chain["x"]`` meets another thread's ``defaults["x"] = 1``)."""
        for mapping in chain.maps:
            if not isinstance(mapping, _IMMUTABLE):
                kind = type(mapping).__qualname__
                self.current.append((self.ordinal(mapping), ANY, True, kind))

    def _quiet_state(self, hidden: int, frame: FrameType) -> None:
        """Quiet stdlib code that reads or changes process-wide state nobody hands it
        (see _hidden_state): the state it uses is recorded, as a whole."""
        if hidden == _READS_ENVIRON:
            self.touch_any(os.environ, False)
        elif hidden in (_READS_REGISTRIES, _WRITES_REGISTRIES):
            self.touch_any(_TYPE_REGISTRIES, hidden == _WRITES_REGISTRIES)
        else:
            self.touch_any(logging.Logger.manager, hidden == _CONFIGURES_LOGGING)
            # a logger's effective level, handlers and propagation are its ancestors' too
            owner = frame.f_locals.get("self")
            if isinstance(owner, logging.LoggerAdapter):
                owner = owner.logger
            logger: logging.Logger | None = (
                owner if isinstance(owner, logging.Logger) else logging.root
            )
            while logger is not None:
                self.touch_any(logger, False)
                logger = logger.parent


class TypeRegistries:
    """The process's class registrations, one object for all of them: ``ABCMeta.register``
    and a ``functools.singledispatch`` function's ``register`` change them, and a
    ``singledispatch`` call's dispatch reads them (its cache follows ABC registrations).
    Quiet code does both without being handed them."""


_TYPE_REGISTRIES = TypeRegistries()

#: how quiet stdlib code uses state nobody hands it (_hidden_state)
_READS_ENVIRON = 1
_READS_REGISTRIES = 2
_WRITES_REGISTRIES = 3
_USES_LOGGING = 4
_CONFIGURES_LOGGING = 5
#: functions (module, qualname) that read ``os.environ`` without being handed it
_ENVIRON_READERS = frozenset(
    {
        ("os", "getenv"),
        ("os", "getenvb"),
        ("os", "get_exec_path"),
        ("posixpath", "expanduser"),
        ("posixpath", "expandvars"),
        ("ntpath", "expanduser"),
        ("ntpath", "expandvars"),
    }
)
#: logging's functions that change every logger's behaviour (``logging.disable``'s level,
#: the level names, the record factory, the root's handlers)
_LOGGING_CONFIGURERS = frozenset(
    {
        "disable",
        "basicConfig",
        "addLevelName",
        "setLoggerClass",
        "setLogRecordFactory",
        "captureWarnings",
        "shutdown",
    }
)


#: ABCMeta's methods that change what ``isinstance`` says
_ABC_REGISTERS = frozenset({"ABCMeta.register", "ABCMeta._abc_registry_clear"})
_STDLIB_DIR = os.path.dirname(os.path.abspath(functools.__file__)) + os.sep


@functools.lru_cache(maxsize=4096)
def _hidden_state(filename: str, qualname: str) -> int:
    """What process-wide state quiet stdlib code in ``filename`` uses unhanded (0: none).

    The quiet list (_QUIET_STDLIB) takes such code to change only what it is
    handed. These do more: ``os.getenv`` reads ``os.environ``; a logger's level
    is its ancestors' levels and the process-wide ``logging.disable``'s; a
    ``singledispatch`` function dispatches by a registry its ``register`` fills.
    """
    module = os.path.basename(filename.removeprefix("<frozen ").removesuffix(">"))
    module = module.removesuffix(".py")
    if (module, qualname) in _ENVIRON_READERS:
        return _READS_ENVIRON
    if qualname.startswith("singledispatch") and module == "functools":
        return _WRITES_REGISTRIES if "register" in qualname else _READS_REGISTRIES
    if module == "abc" and qualname.startswith("ABCMeta."):
        return _WRITES_REGISTRIES if qualname in _ABC_REGISTERS else _READS_REGISTRIES
    folder = os.path.basename(os.path.dirname(filename))
    if folder == "logging" and filename.startswith(_STDLIB_DIR):
        if module == "config" or qualname in _LOGGING_CONFIGURERS:
            return _CONFIGURES_LOGGING
        return _USES_LOGGING
    return 0


def _is_task_step(handle: Any) -> bool:
    """Does ``handle`` run an asyncio task's step (rather than a plain callback)?"""
    import asyncio

    callback = getattr(handle, "_callback", None)
    return isinstance(getattr(callback, "__self__", None), asyncio.Task)


#: a plain asyncio future's methods that finish it (called on one not done yet)
_FINISHES = frozenset({"set_result", "set_exception"})


#: library functions (by qualified name, with the end of their file name) that
#: write only their first argument, and only the key given (None: all of it).
#: A dataclass's generated ``__init__`` stores its other arguments by reference
#: (a default factory or ``__post_init__`` is traced code, recorded where it
#: runs); the loop's first-iteration hook for async generators adds the
#: generator to the loop's ``_asyncgens`` set, which only the loop's shutdown
#: reads. Written as the whole object, they made every step that builds a
#: dataclass around a shared object (or starts an async generator) conflict
#: with every other step that touches it.
#: quiet library functions that change nothing they are handed (qualname -> the end of
#: their file's path): ``typing.cast`` returns its value as it is, a note for type
#: checkers (the bridge's done callbacks cast the task they discard)
_WRITES_NOTHING: dict[str, str] = {"cast": os.sep + "typing.py"}


def _writes_nothing(code: Any) -> bool:
    """Is ``code`` a library function known to change none of its arguments?"""
    ending = _WRITES_NOTHING.get(code.co_qualname)
    return ending is not None and code.co_filename.endswith(ending)


_NARROW_WRITES: dict[str, tuple[str, Hashable]] = {
    "__create_fn__.<locals>.__init__": ("<string>", None),
    "BaseEventLoop._asyncgen_firstiter_hook": ("base_events.py", "_asyncgens"),
    # its one change to the loop is its call_soon_threadsafe, a hand-off recorded
    # where it is queued (StepLog.handed_off), when the loop is racecheck's: see
    # _hands_off
    "run_coroutine_threadsafe": ("tasks.py", None),
}


def _hands_off(qualname: str, values: dict[str, Any]) -> bool:
    """May a narrow write's other arguments go unwritten? Yes, but for
    ``run_coroutine_threadsafe`` only onto a loop whose hand-offs racecheck records."""
    if qualname != "run_coroutine_threadsafe":
        return True
    method = getattr(type(values.get("loop")), "call_soon_threadsafe", None)
    return str(getattr(method, "__module__", "")).startswith("racecheck.")


#: builtins that change the one object they are handed (an iterator they
#: advance): a write to it, when the call's operand can be rebuilt
_ADVANCING = frozenset({"next"})


def _argument_of(frame: FrameType, name: str) -> Any:
    """The first argument of the builtin ``name`` that ``frame`` is calling, or MISSING.

    A profile hook sees the function of a C call, not its arguments; the
    detector's operand recipes rebuild them from the instructions that pushed
    them (plain loads only, never running user code). Anything else is MISSING
    and the caller stays conservative.
    """
    recipe = recipes(frame.f_code).get(frame.f_lasti)
    if recipe is None or recipe.op != "scan-arg" or recipe.name != name:
        return MISSING
    return evaluate(recipe.base, frame)


#: arguments a call cannot change (or whose change is no shared state)
_PASSIVE = (
    *_IMMUTABLE,
    type,
    ModuleType,
    FunctionType,
    MethodType,
    CoroutineType,
    BuiltinFunctionType,
    # the markers a dataclass's generated __init__ takes as defaults: stateless,
    # shared by every instance, so "written" by every construction
    type(dataclasses.MISSING),
    type(getattr(dataclasses, "_HAS_DEFAULT_FACTORY", dataclasses.MISSING)),
)


@functools.lru_cache(maxsize=4096)  # a StepLog lives one run; the verdict does not change
def _library_verdict(filename: str, function: str) -> str | None:
    """None when code in ``filename`` is known to touch nothing shared unseen; else why not."""
    if filename.startswith(_RACECHECK_DIR) or filename.startswith("<"):
        return None  # racecheck's own primitives, generated code (dataclass __init__)
    module = _module_of(filename)
    top = module.split(".", 1)[0]
    if top in _QUIET_STDLIB or top in ("trio", "_pytest", "pytest", "pluggy"):
        return None
    where = module or os.path.basename(filename)
    return (
        f"untraced code ran from traced code ({where}.{function}): what it touched was not"
        " seen, so interleavings that differ only there may not have been told apart"
        " (trace_packages= traces it)"
    )


def _module_of(filename: str) -> str:
    """The dotted module name of ``filename`` as sys.path would import it (best effort)."""
    best = ""
    path = os.path.abspath(filename)
    for entry in sys.path:
        root = os.path.abspath(entry or ".") + os.sep
        if path.startswith(root) and len(root) > len(best):
            best = root
    rest = path[len(best) :] if best else os.path.basename(path)
    rest = rest[: -len(".py")] if rest.endswith(".py") else rest
    parts = [p for p in rest.split(os.sep) if p and p != "__init__"]
    return ".".join(parts)
