"""``threading.local`` namespaces as a real program's threads would have them.

CPython keeps a thread-local's namespaces per OS thread, and racecheck's
threads are not the program's: a controlled ``Thread`` runs on a pooled worker
that ran other schedules' threads before, and the target's root runs on the
explorer thread, not on the thread that called ``check``. So, without this
module, a new thread found what an earlier schedule's thread had left in its
thread-locals (a per-thread connection made already: the racy setup never ran
again), and the root did not see what its caller had set (a library's
thread-local filled at import, in the main thread).

Two operations put that right:

- :func:`mark` / :func:`forget_since`: a pooled worker marks its thread-locals
  when it starts (racecheck's own) and, when a job ends, drops the entries of
  every other thread-local, exactly as CPython does when a thread ends; the
  next thread it runs starts empty (a ``threading.local`` subclass runs its
  ``__init__`` again).
- :func:`entries_of_this_thread` / :func:`share` / :func:`unshare`: the
  explorer thread uses the caller's namespaces themselves (the same dicts), so
  what the root reads and writes is what the caller's thread would.

Nothing here is public API of CPython: the namespaces are reached through the
interpreter's own bookkeeping, which changed in 3.13.

- 3.11 and 3.12: a thread's state dict (``PyThreadState_GetDict``, reached
  through ctypes) maps ``"thread.local.<address>"`` to a ``_localdummy`` that
  holds that thread's namespace.
- 3.13 and later: each local keeps a dict from a per-thread key to the
  namespace, and a set of weak references to per-thread sentinels whose
  callback (``clear_locals``, bound to ``(weakref to the local, key)``) drops
  that thread's entry when the thread ends.

Where neither shape is found (another interpreter, a future change), every
operation does nothing: racecheck behaves as it did before this module.
"""

from __future__ import annotations

import _thread
import gc
import sys
import weakref
from collections.abc import Iterable
from typing import Any

#: touched in every thread that marks or shares: finds that thread's key
_PROBE = _thread._local()
_DUMMY: type | None = None
_STATE_DICT: Any = None  # ctypes' PyThreadState_GetDict, on 3.11 and 3.12
_KEY_PREFIX = "thread.local."

#: Where event-loop runners keep their per-thread state (module, attribute). That is
#: the runner's, not the program's: racecheck runs its own loop or trio run on the
#: explorer thread, so a caller's running trio run (or sniffio's answer, anyio's
#: token) must not show there; shared, a check() called inside ``trio.run`` failed
#: with "Attempted to call run() from inside a run()".
_RUNNER_STATE = (
    ("trio._core._run_context", "GLOBAL_RUN_CONTEXT"),
    ("sniffio._impl", "thread_local"),
    ("asyncio.events", "_running_loop"),
    ("anyio._core._eventloop", "threadlocals"),
)


def _setup() -> str:
    """Which shape this interpreter keeps thread-locals in: "state-dict", "sentinels" or ""."""
    global _DUMMY, _STATE_DICT
    _PROBE.here = True
    try:
        import ctypes

        # A borrowed reference: restype py_object would take it as a new one and
        # drop a reference the thread state owns on every call.
        get_dict = ctypes.pythonapi.PyThreadState_GetDict
        get_dict.restype = ctypes.c_void_p
        get_dict.argtypes = []

        def state_dict() -> Any:
            return ctypes.cast(get_dict(), ctypes.py_object).value

        held = state_dict()
    except (ImportError, AttributeError, ValueError, TypeError):
        held = None
    if isinstance(held, dict):
        for key, value in held.items():
            if isinstance(key, str) and key.startswith(_KEY_PREFIX) and _key_names(key, _PROBE):
                _DUMMY = type(value)
                _STATE_DICT = state_dict
                return "state-dict"
    if _this_threads_key() is not None and _this_threads_sentinel() is not None:
        return "sentinels"
    return ""


def _key_names(key: str, local: object) -> bool:
    """``"thread.local.%p"`` names ``local`` (``%p`` is 0x-prefixed hex, or bare on Windows)."""
    try:
        return int(key[len(_KEY_PREFIX) :], 16) == id(local)
    except ValueError:
        return False


# -- 3.13+: per-local dicts keyed by a per-thread key -----------------------------


def _namespaces(local: object, key: object) -> dict[Any, Any] | None:
    """``local``'s dict from thread keys to namespaces, found by one of its keys."""
    for referent in gc.get_referents(local):
        if type(referent) is dict and key in referent:
            return referent
    return None


def _this_threads_key() -> object | None:
    """The calling thread's key in every local's namespace dict (3.13+)."""
    mine = _PROBE.__dict__
    for referent in gc.get_referents(_PROBE):
        if type(referent) is dict:
            for key, namespace in referent.items():
                if namespace is mine:
                    return key
    return None


def _this_threads_sentinel() -> object | None:
    """The object whose death tells every local the calling thread ended (3.13+)."""
    key = _this_threads_key()
    for referent in gc.get_referents(_PROBE):
        if type(referent) is set:
            for watchdog in referent:
                if _clearing(watchdog)[1] is key:
                    return watchdog()
    return None


def _clearing(watchdog: Any) -> tuple[object | None, object | None]:
    """(the local, the thread key) a sentinel's weak reference clears when it dies."""
    try:
        bound = watchdog.__callback__.__self__
        return bound[0](), bound[1]
    except (AttributeError, TypeError, IndexError):
        return None, None


def _locals_of(sentinel: object) -> list[tuple[Any, object]]:
    """(watchdog, local) for every thread-local the sentinel's thread has an entry in."""
    found = []
    for watchdog in weakref.getweakrefs(sentinel):
        local, _key = _clearing(watchdog)
        if local is not None:
            found.append((watchdog, local))
    return found


# -- the operations ------------------------------------------------------------------


class Mark:
    """The thread-locals a thread held at one point: never dropped by :func:`forget_since`."""

    __slots__ = ("keys", "locals", "sentinel", "state", "watchdog_ids", "watchdogs")

    def __init__(self) -> None:
        self.keys: frozenset[str] = frozenset()
        self.locals: tuple[object, ...] = ()
        self.sentinel: weakref.ref[Any] | None = None
        #: the thread's state dict (3.11/3.12): one object for the thread's life
        self.state: dict[str, Any] | None = None
        #: the weak references to the sentinel (3.13+), kept alive so that their
        #: ids stay theirs, and those ids
        self.watchdogs: tuple[Any, ...] = ()
        self.watchdog_ids: frozenset[int] = frozenset()


def mark() -> Mark:
    """What the calling thread's thread-locals hold now (a pooled worker, as it starts).

    Only the calling thread may give the mark to :func:`forget_since`.
    """
    held = Mark()
    _PROBE.here = True
    if _SHAPE == "state-dict":
        held.state = _STATE_DICT()
        held.keys = frozenset(held.state)
    elif _SHAPE == "sentinels":
        sentinel = _this_threads_sentinel()
        if sentinel is not None:
            # weakly: a strong reference would keep the thread's entries past its end
            held.sentinel = weakref.ref(sentinel)
            held.locals = tuple(local for _watchdog, local in _locals_of(sentinel))
            held.watchdogs = tuple(weakref.getweakrefs(sentinel))
            held.watchdog_ids = frozenset(map(id, held.watchdogs))
    return held


def forget_since(held: Mark) -> None:
    """Drop the calling thread's entries in every thread-local not in ``held``.

    What CPython does when a thread ends: the namespaces go (their values may be
    finalised here), and the next use in this OS thread starts a fresh one.

    Called at the end of every job of a pooled worker (twice a schedule of two
    threads), so the usual case, no thread-local touched beyond the marked
    ones, is told at C speed: the state dict holds the marked keys alone
    (3.11/3.12), or the sentinel has the marked weak references alone (3.13+:
    every thread-local given an entry for this thread holds one more, with a
    callback, so a distinct object; the marked ones are kept alive by the
    mark, so no new one can have one of their ids).
    """
    if _SHAPE == "state-dict":
        state = held.state if held.state is not None else _STATE_DICT()
        if state.keys() == held.keys:
            return
        for key in [key for key in state if key not in held.keys]:
            if type(state[key]) is _DUMMY:
                del state[key]
    elif _SHAPE == "sentinels" and held.sentinel is not None:
        sentinel = held.sentinel()
        if sentinel is None:
            return
        refs = weakref.getweakrefs(sentinel)
        if len(refs) == len(held.watchdog_ids) and set(map(id, refs)) == held.watchdog_ids:
            return
        for watchdog, local in _locals_of(sentinel):
            if not any(local is kept for kept in held.locals):
                watchdog.__callback__(watchdog)


def _runner_state() -> list[object]:
    """The event-loop runners' thread-locals that exist in this process."""
    found: list[object] = []
    for module_name, attribute in _RUNNER_STATE:
        value = getattr(sys.modules.get(module_name), attribute, None)
        if value is not None:
            found.append(value)
    # asyncio's policy keeps the loop set for each thread in its own thread-local
    policy = getattr(sys.modules.get("asyncio.events"), "_event_loop_policy", None)
    policy_local = getattr(policy, "_local", None)
    if policy_local is not None:
        found.append(policy_local)
    return found


def entries_of_this_thread(excluding: Iterable[object]) -> list[tuple[Any, Any, Any]]:
    """The calling thread's namespaces, to :func:`share` with another thread.

    ``excluding``: thread-locals that must stay per thread (racecheck's own); the
    event-loop runners' are never shared either.
    """
    # the probe finds each thread's own key: never shared
    skip = (*excluding, _PROBE, *_runner_state())
    entries: list[tuple[Any, Any, Any]] = []
    if _SHAPE == "state-dict":
        for key, dummy in _STATE_DICT().items():
            if type(dummy) is _DUMMY and not any(_key_names(key, local) for local in skip):
                entries.append((None, key, dummy))
    elif _SHAPE == "sentinels":
        key = _this_threads_key()
        sentinel = _this_threads_sentinel()
        if sentinel is not None:
            for _watchdog, local in _locals_of(sentinel):
                if any(local is kept for kept in skip):
                    continue
                namespaces = _namespaces(local, key)
                if namespaces is not None:
                    entries.append((namespaces, key, namespaces[key]))
    return entries


def share(entries: list[tuple[Any, Any, Any]]) -> list[tuple[Any, Any, Any]]:
    """Let the calling thread use the namespaces of ``entries`` (the same objects).

    Returns what :func:`unshare` takes back. A thread-local the calling thread
    already has a namespace of is left as it is.
    """
    shared: list[tuple[Any, Any, Any]] = []
    if _SHAPE == "state-dict":
        state = _STATE_DICT()
        for _none, key, dummy in entries:
            if key not in state:
                state[key] = dummy
                shared.append((state, key, dummy))
    elif _SHAPE == "sentinels":
        _PROBE.here = True
        mine = _this_threads_key()
        if mine is None:
            return shared
        for namespaces, _key, namespace in entries:
            if mine not in namespaces:
                namespaces[mine] = namespace
                shared.append((namespaces, mine, namespace))
    return shared


def unshare(shared: list[tuple[Any, Any, Any]]) -> None:
    """Undo :func:`share`: the namespaces stay the other thread's alone."""
    for holder, key, value in shared:
        if holder.get(key) is value:
            del holder[key]


_SHAPE = _setup()
