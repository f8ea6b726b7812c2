"""Locks made before the run: found, scheduled, and put back afterwards.

Patching ``threading.Lock`` only controls the locks made *during* a run. Real
code is full of locks made earlier: a module-level ``_lock = Lock()``, a
``from threading import Lock`` bound at import time, a lock built in a pytest
fixture, a class-level registry lock, CPython's own ``cached_property`` RLock,
``logging``'s handler locks, a ``queue.Queue`` made outside the target. If a
controlled thread holds such a lock across a scheduling point, the next
thread to take it blocks in C, where no scheduler can see it, and the run
stalls.

So at ``install`` racecheck *adopts* them: it walks the objects reachable from
the target and from every module, and replaces each raw ``_thread`` lock it
finds with a proxy that wraps that same lock. The proxy is the real lock as far
as anyone can tell: outside a controlled thread every call goes straight to
the wrapped lock, so uncontrolled threads, and references racecheck could not
reach (a local variable, a tuple), still share one lock with the proxy. Inside
a controlled thread, "wait for the lock" becomes a predicate for the scheduler,
so the real acquire never blocks. ``uninstall`` puts every original back where
it was found.

The walk also rebinds *factories* that modules captured by name (``from
threading import Lock, Condition``; ``from time import sleep``) to racecheck's,
so locks those modules make during the run are controlled too. Python-level
primitives made earlier (``threading.Condition``, ``Semaphore``, ``Event``,
``Barrier``, ``queue.Queue``) need nothing of their own: they are built from
raw locks, which the walk adopts, and their waits allocate through
``threading._allocate_lock``, which is rebound for the run.

Adopted locks take a scheduling point only when user (traced) code calls them;
from library code they are modelled but add no point of their own. That keeps
the schedule space of programs that merely pass through ``logging`` or
``asyncio``'s policy lock the same as before, while contention on them is still
scheduled rather than blocking in C.

Locks are found in dicts (subclasses too: an ``OrderedDict`` lock table), lists,
objects' attributes and slots, classes, functions' closures, defaults and
attributes (``f.lock = Lock()``), a ``partial``'s arguments, a
``WeakValueDictionary``'s weak references, and tuples (copied around the
proxies where they are kept: striped locks, a NamedTuple of locks); factories
(``threading.RLock`` is a Python function, ``threading.Lock`` a class on 3.13)
in those places too.

What cannot be adopted: locks held only in locals, sets or C structures, and
locks held by threads racecheck does not run. Those are reported by the
watchdog, with the object named where it can be.
"""

from __future__ import annotations

import _thread
import functools
import sys
import threading
import types
import weakref
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from racecheck.backends.threads import primitives
from racecheck.backends.threads.primitives import (
    _context,
    _deadline,
    _lock_acquired,
    _lock_released,
)
from racecheck.instance_state import instance_dict
from racecheck.sources import is_user_file

RAW_LOCK = type(_thread.allocate_lock())
RAW_RLOCK = type(_thread.RLock())
try:  # multiprocessing's locks (tqdm keeps one next to its thread lock)
    from _multiprocessing import SemLock as RAW_SEMLOCK
except ImportError:  # pragma: no cover - platforms without sem_open
    RAW_SEMLOCK = RAW_LOCK
_ADOPTABLE = (RAW_LOCK, RAW_RLOCK, RAW_SEMLOCK)
#: weak references the walk rewrites when their referent is a lock: a
#: ``WeakValueDictionary`` keeps its values as KeyedRefs in a plain dict
_WEAK_REFS = (weakref.ref, weakref.KeyedRef)
_REPLACEABLE = frozenset((*_ADOPTABLE, types.BuiltinMethodType, *_WEAK_REFS))

#: the walk stops after this many objects; large processes keep a bounded cost
WALK_BUDGET = 400_000

#: modules whose objects are never rewritten: racecheck's engine, the
#: threading machinery itself, the import system, and tools that run their own
#: uncontrolled threads next to the run (test runners, coverage, debuggers)
_SKIPPED_MODULES = (
    "racecheck",
    "threading",
    "_thread",
    "importlib",
    "_frozen_importlib",
    "_frozen_importlib_external",
    "sys",
    "builtins",
    "gc",
    "_pytest",
    "pytest",
    "pluggy",
    "xdist",
    "execnet",
    "pytest_timeout",
    "coverage",
    "pytest_cov",
    "_pydevd_bundle",
    "pydevd",
    "debugpy",
    "faulthandler",
    "hypothesis",
    "_hypothesis_pytestplugin",
    "_hypothesis_globals",
    "_multiprocessing",
    "multiprocessing.resource_tracker",
)
#: racecheck's modules that model users' programs, which it adopts like any
_USER_PACKAGES = ("racecheck.reference", "racecheck.bench")


def _module_name(cls: Any) -> str:
    """A class's module, or "" where a library made ``__module__`` something else (a property)."""
    module = getattr(cls, "__module__", "")
    return module if isinstance(module, str) else ""


@functools.lru_cache(maxsize=8192)
def _skipped(module_name: str) -> bool:
    if module_name.startswith(_USER_PACKAGES):
        return False
    for prefix in _SKIPPED_MODULES:
        if module_name == prefix or module_name.startswith(prefix + "."):
            return True
    return False


def _called_from_user_code() -> bool:
    """Is the code that called the lock method (the caller's caller) traced user code?"""
    return is_user_file(sys._getframe(2).f_code.co_filename)


def _rlock_free(real: Any) -> bool:
    # A C RLock has no locked() before 3.14; its repr says whether it is held.
    return repr(real).startswith("<unlocked")


class _Adopted:
    """What every adopted lock shares; subclasses say when it is free and re-entered.

    Outside a controlled thread every call goes straight to the wrapped lock.
    Inside one, a contended acquire waits in the scheduler until :meth:`_free`,
    so the real acquire never blocks in C.
    """

    __slots__ = ("__weakref__", "_owner", "_rc_serial", "_rc_where", "_real")

    def __init__(self, real: Any, where: str) -> None:
        self._real = real
        self._owner: Any = None
        self._rc_where = where

    def _free(self) -> bool:
        """Could a thread take it now? (Called from any thread: no side effects.)"""
        raise NotImplementedError

    def _reentered(self) -> bool:
        """Does the calling thread hold it already (a recursive lock)?"""
        return False

    def _holder(self) -> str:
        """Who holds it, when no controlled thread took it through this proxy."""
        return "a thread racecheck does not run, or code that took it through another reference"

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        runtime, me = _context()
        if me is None or runtime is None:
            return bool(self._real.acquire(blocking, timeout))
        return self._acquire_controlled(runtime, me, blocking, timeout, _called_from_user_code())

    # an alias, not a wrapper: acquire's caller must be the ``with`` statement
    __enter__ = acquire

    def _acquire_controlled(
        self, runtime: Any, me: Any, blocking: bool, timeout: float, from_user_code: bool
    ) -> bool:
        real = self._real
        if self._reentered():
            return bool(real.acquire(False))  # never blocks, never a point
        if from_user_code:
            runtime.point(me, "acquire", self)
        if not real.acquire(False):
            if not blocking:
                return False
            ok = runtime.block(me, self._free, _deadline(runtime, timeout), "acquire", self)
            if not ok or not real.acquire(False):
                return False
        self._owner = me
        _lock_acquired(runtime, me, self)
        return True

    def release(self) -> None:
        self._release(_called_from_user_code())

    def __exit__(self, *exc: object) -> None:
        self._release(_called_from_user_code())

    def _release(self, from_user_code: bool) -> None:
        self._real.release()
        if self._reentered():
            return  # still held (recursive)
        self._owner = None
        runtime, me = _context()
        _lock_released(runtime, me, self)
        if me is not None and runtime is not None and from_user_code:
            runtime.point(me, "released", self)

    def locked(self) -> bool:
        return not self._free()

    def held_elsewhere(self) -> str | None:
        """Who holds it, when it is held but no controlled thread took it here."""
        if self._owner is not None or self._free():
            return None
        return self._holder()

    def _at_fork_reinit(self) -> None:
        self._real._at_fork_reinit()
        self._owner = None

    def __repr__(self) -> str:
        return repr(self._real)


class AdoptedLock(_Adopted):
    """A ``_thread.lock`` made before the run."""

    __slots__ = ()

    def _free(self) -> bool:
        return not self._real.locked()


class AdoptedRLock(_Adopted):
    """A ``_thread.RLock`` made before the run; reentrancy stays the real lock's."""

    __slots__ = ()

    def _free(self) -> bool:
        return _rlock_free(self._real)

    def _reentered(self) -> bool:
        return bool(self._real._is_owned())

    def _holder(self) -> str:
        owner = repr(self._real).split("owner=", 1)[-1].split(" ", 1)[0]
        active = threading._active  # type: ignore[attr-defined]
        thread = active.get(int(owner)) if owner.isdigit() else None
        return (
            f"thread {thread.name!r}" if thread is not None else "a thread racecheck does not run"
        )

    def _is_owned(self) -> bool:
        return self._reentered()

    def _release_save(self) -> Any:
        state = self._real._release_save()
        self._owner = None
        runtime, me = _context()
        _lock_released(runtime, me, self)
        return state

    def _acquire_restore(self, state: Any) -> None:
        runtime, me = _context()
        if me is not None and runtime is not None and not self._free():
            runtime.block(me, self._free, None, "acquire", self)
        self._real._acquire_restore(state)
        if me is not None:
            self._owner = me
            _lock_acquired(runtime, me, self)


class AdoptedSemLock(_Adopted):
    """A ``multiprocessing`` lock or semaphore used by threads of one process.

    Between processes racecheck controls nothing; between the threads of the
    run it is a lock like any other, and blocking on it in C would stall.
    """

    __slots__ = ()

    # multiprocessing spells it acquire(block=True, timeout=None)
    def acquire(self, block: bool = True, timeout: float | None = None) -> bool:
        runtime, me = _context()
        if me is None or runtime is None:
            return bool(self._real.acquire(block, timeout))
        limit = -1 if timeout is None else timeout
        return self._acquire_controlled(runtime, me, block, limit, _called_from_user_code())

    __enter__ = acquire  # type: ignore[assignment]

    def _free(self) -> bool:
        return bool(self._real._get_value() > 0)

    def _reentered(self) -> bool:
        real = self._real
        return bool(real._is_mine() and real._count() > 0)

    def _holder(self) -> str:
        return "another process, or a thread racecheck does not run"

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)  # _is_mine, _count, _get_value, handle, ...


_PROXY_KINDS: dict[type, type] = {
    RAW_LOCK: AdoptedLock,
    RAW_RLOCK: AdoptedRLock,
    RAW_SEMLOCK: AdoptedSemLock,
}


def _real_factories() -> dict[int, Any]:
    """id(original factory) → racecheck's, for names modules bound at import time."""
    pairs: list[tuple[Any, Any]] = [
        (_thread.allocate_lock, primitives.Lock),
        (primitives.REAL["Lock"], primitives.Lock),
        (_thread.RLock, primitives.RLock),
        (primitives.REAL["RLock"], primitives.RLock),
        (primitives.REAL["Condition"], primitives.Condition),
        (primitives.REAL["Semaphore"], primitives.Semaphore),
        (primitives.REAL["BoundedSemaphore"], primitives.BoundedSemaphore),
        (primitives.REAL["Event"], primitives.Event),
        (primitives.REAL["Barrier"], primitives.Barrier),
        (primitives.REAL["sleep"], primitives.sleep),
    ]
    return {id(real): ours for real, ours in pairs}


#: the real factories, by id: a function keeping one (``threading.RLock`` is a
#: Python function) or a default argument holding one is worth the walk's visit
_FACTORY_IDS = frozenset(_real_factories())
#: the types of those factories (a builtin, a function, and classes: Condition,
#: and on 3.13 ``threading.Lock`` itself): values the walk may have to swap
_FACTORY_KINDS = frozenset(type(real) for real in primitives.REAL.values()) | {
    type(_thread.allocate_lock)
}


#: where an object was found, as a chain of (parent, step) built without any
#: string formatting: the walk visits tens of thousands of objects and names
#: only the few locks it adopts. A step of three, (parent, key, None), is a
#: dictionary's string key, spelled ``.key`` only if a lock is found under it.
Where = tuple[Any, str] | tuple[Any, str, None] | str


def _spell(where: Where) -> str:
    steps: list[str] = []
    while isinstance(where, tuple):
        if len(where) == 3:
            where, key, _ = where
            steps.append(f".{key}")
        else:
            where, step = where
            steps.append(step)
    steps.append(where)
    return "".join(reversed(steps))


class Adoption:
    """The rewrites of one exploration, undone in reverse by :meth:`undo`."""

    def __init__(self) -> None:
        self.proxies: dict[int, Any] = {}
        self.undo_log: list[Callable[[], None]] = []
        self.visited = 0
        self.truncated = False
        self.module_namespaces: set[int] = set()
        #: id(original factory) -> racecheck's (see our_factory)
        self.factories = _real_factories()
        #: id(original tuple) -> (it, its copy holding proxies); see rebuilt_tuple
        self.rebuilt: dict[int, tuple[Any, Any]] = {}
        #: the walk's queue, for a rebuilt tuple's other items
        self.todo: deque[tuple[Any, Where]] = deque()

    # -- proxies ------------------------------------------------------------
    def proxy_for(self, real: Any, where: Where) -> Any:
        proxy = self.proxies.get(id(real))
        if proxy is None:
            kind = _PROXY_KINDS[type(real)]
            proxy = self.proxies[id(real)] = kind(real, _spell(where))
        return proxy

    def our_factory(self, value: Any) -> Any:
        """racecheck's factory for ``value`` if it is a lock factory made before the run.

        A module's ``from threading import Lock`` (rebind_factories), and a
        factory some object kept: ``field(default_factory=threading.Lock)`` (in the
        Field, and in the cell of the dataclass's generated ``__init__``),
        ``defaultdict(threading.Lock)``, a closure over ``Lock``. Patching
        ``threading.Lock`` does not reach those references, and every lock they
        made during the run was a raw one, which a controlled thread blocks on in
        C (a StuckError after the watchdog, on correct code too;
        tests/core/test_lock_factories_made_before.py). The walk swaps them and
        puts them back afterwards. None for anything else, and for racecheck's own.
        """
        ours = self.factories.get(id(value))
        return ours if ours is not value else None

    def replacement(self, value: Any, where: Where) -> Any:
        """What ``value`` becomes, or None to leave it alone."""
        ours = self.our_factory(value)
        if ours is not None:
            return ours
        kind = type(value)
        if kind not in _REPLACEABLE:
            return self.rebuilt_tuple(value, where) if issubclass(kind, tuple) else None
        if kind in _ADOPTABLE:
            return self.proxy_for(value, where)
        if kind is types.BuiltinMethodType:
            owner = getattr(value, "__self__", None)
            if type(owner) in _ADOPTABLE:
                return getattr(self.proxy_for(owner, where), value.__name__, None)
            return None
        # a weak reference to a lock (a WeakValueDictionary's entry): one to the
        # proxy instead, kept alive by self.proxies for the run. The lock's own
        # holders keep it alive; its callback fires only once the proxy is gone,
        # after undo, when the entry is the original again and stays.
        referent = value()
        if type(referent) not in _ADOPTABLE:
            return None
        proxy = self.proxy_for(referent, where)
        if kind is weakref.KeyedRef:
            return weakref.KeyedRef(proxy, value.__callback__, value.key)
        return weakref.ref(proxy, value.__callback__)

    def rebuilt_tuple(self, value: tuple[Any, ...], where: Where) -> Any:
        """A copy of a tuple holding a lock or a factory, with racecheck's in their place.

        A tuple cannot be rewritten, but the dict, list, attribute or cell
        holding it can: striped locks (``LOCKS = tuple(Lock() for _ in range(8))``),
        a NamedTuple of locks, a ``(label, lock)`` entry. One copy per tuple, so
        every place holding it holds the same copy; the original is put back
        afterwards. None when it holds nothing to swap (most tuples: strings and
        numbers), and for a tuple subclass with state of its own beside its items.
        """
        if _holds_nothing(map(type, value)):
            return None
        known = self.rebuilt.get(id(value))
        if known is not None:
            return known[1]
        kinds = set(map(type, value))
        if (
            _REPLACEABLE.isdisjoint(kinds)
            and tuple not in kinds
            and _FACTORY_IDS.isdisjoint(map(id, value))
        ):
            return None
        items = list(value)
        changed = False
        for index, item in enumerate(value):
            kind = type(item)
            if (
                kind in _REPLACEABLE
                or id(item) in _FACTORY_IDS
                or (kind is tuple and not _holds_nothing(map(type, item)))
            ):
                new = self.replacement(item, (where, f"[{index}]"))
                if new is not None:
                    items[index] = new
                    changed = True
        if not changed:
            return None
        kind = type(value)
        if kind is not tuple:
            try:
                if instance_dict(value):
                    return None  # its own attributes would not follow a copy
            except AttributeError:
                pass  # a NamedTuple: its items are all it has
        copy = tuple.__new__(kind, items)
        self.rebuilt[id(value)] = (value, copy)
        self.todo.append((copy, where))  # its other items are entered as the original's were
        return copy

    # -- rewriting ----------------------------------------------------------
    def _set_item(self, container: Any, key: Any, old: Any, new: Any) -> None:
        if issubclass(type(container), dict):
            # dict's own methods: a subclass's __setitem__ is the user's code
            # (and an OrderedDict keeps its order: the key is already there)
            dict.__setitem__(container, key, new)

            def undo_entry() -> None:
                if dict.get(container, key) is new:
                    dict.__setitem__(container, key, old)

            self.undo_log.append(undo_entry)
            return
        container[key] = new

        def undo() -> None:
            try:
                if container[key] is new:
                    container[key] = old
            except (KeyError, IndexError, TypeError):
                pass

        self.undo_log.append(undo)

    def _set_attr(self, owner: Any, name: str, old: Any, new: Any) -> bool:
        try:
            setattr(owner, name, new)
        except (AttributeError, TypeError):
            return False

        def undo() -> None:
            try:
                if getattr(owner, name) is new:
                    setattr(owner, name, old)
            except (AttributeError, TypeError):
                pass

        self.undo_log.append(undo)
        return True

    def undo(self) -> None:
        while self.undo_log:
            self.undo_log.pop()()
        self.proxies.clear()
        self.rebuilt.clear()

    def free_locks_of_cut_off_threads(self) -> None:
        """Unlock every adopted lock a thread of the run that just ended still holds.

        Called after an aborted run, once its threads are done. A run is cut off
        by raising ``RunAborted`` at a scheduling point, and one of those is the
        ``with`` line on the way out of the block: its ``__exit__`` call lies past
        the block's protected range, so it never runs. The lock was made before the
        run and outlives it: left held, the next run, and the caller's own code
        after ``check()`` returns, would wait on it forever. No thread of a finished
        run holds anything, so each such lock goes back to unlocked, as it was when
        adopted. A lock held by a thread racecheck does not run is left alone.
        """
        for proxy in self.proxies.values():
            if proxy._owner is None:
                continue
            proxy._owner = None
            real = proxy._real
            if type(real) is RAW_LOCK:
                if real.locked():
                    real.release()  # a plain lock may be released by any thread
            elif type(real) is RAW_RLOCK:
                real._at_fork_reinit()  # type: ignore[attr-defined]  # its owner is gone

    # -- the walk -------------------------------------------------------------
    def rebind_factories(self, modules: Iterable[types.ModuleType]) -> None:
        """``from threading import Lock`` made ``Lock`` a module global: rebind it."""
        factories = self.factories
        for module in modules:
            name = getattr(module, "__name__", "")
            if not isinstance(name, str) or _skipped(name):
                continue
            namespace = _module_namespace(module)
            if namespace is None:
                continue
            # Most modules bound no factory: say so at C speed, then look closer
            if factories.keys().isdisjoint(map(id, list(namespace.values()))):
                continue
            for key, value in list(namespace.items()):
                ours = self.our_factory(value)
                if ours is not None:
                    self._set_item(namespace, key, value, ours)

    def walk(self, roots: Iterable[tuple[Any, Where]], modules: Iterable[types.ModuleType]) -> None:
        """Adopt every raw lock reachable from ``roots`` and the modules' globals."""
        seen: set[int] = set()
        todo = self.todo
        for obj, where in roots:
            todo.append((obj, where))
        for module in modules:
            name = getattr(module, "__name__", "")
            if isinstance(name, str) and not _skipped(name):
                namespace = _module_namespace(module)
                if namespace is not None:
                    self.module_namespaces.add(id(namespace))
                    todo.append((namespace, name))
        budget = WALK_BUDGET
        # What the walk does with a value of each type, decided once per type
        # and walk (see _sort): one lookup instead of three tests per value.
        # Per walk, so a class made and dropped between explorations is not kept.
        sorts: dict[type, int] = {}
        popleft = todo.popleft
        add = seen.add
        visit = self._visit
        while todo:
            if budget <= 0:
                self.truncated = True
                break
            obj, where = popleft()
            key = id(obj)
            if key in seen:
                continue
            add(key)
            budget -= 1
            try:
                visit(obj, where, todo, sorts)
            except (RuntimeError, ReferenceError):  # changed size while walking; gone
                continue
        self.visited = WALK_BUDGET - budget
        todo.clear()  # what a truncated walk left: not kept for the run

    def _visit(
        self, obj: Any, where: Where, todo: deque[tuple[Any, Where]], sorts: dict[type, int]
    ) -> None:
        kind = type(obj)
        if kind is dict:
            self._visit_entries(obj, where, todo, sorts)
        elif kind is defaultdict:
            self._visit_lock_table(obj, where, todo, sorts)
        elif kind is list or kind is deque:
            function = types.FunctionType
            factories = self.factories
            for index, value in enumerate(list(obj)):
                kind = type(value)
                sort = sorts.get(kind)
                if sort is None:
                    sort = sorts[kind] = _sort(kind)
                if (
                    sort is _SKIP
                    or (kind is function and not _holds_something(value))
                    or (kind is tuple and _holds_nothing(map(type, value)))
                ):
                    continue
                here: Where = (where, f"[{index}]")
                if sort & _REPLACE or (sort & _FACTORY and id(value) in factories):
                    new = self.replacement(value, here)
                    if new is not None:
                        self._set_item(obj, index, value, new)
                        continue
                if sort & _ENTER:
                    todo.append((value, here))
        elif kind is tuple or kind is frozenset or kind is set:
            if _holds_nothing(map(type, obj)):
                return  # strings, numbers, descriptors (most tuples): nothing to enter
            function = types.FunctionType
            for value in obj:
                kind = type(value)
                sort = sorts.get(kind)
                if sort is None:
                    sort = sorts[kind] = _sort(kind)
                if not sort & _ENTER:
                    continue
                if kind is function:
                    if not _holds_something(value):
                        continue
                elif kind is tuple and _holds_nothing(map(type, value)):
                    continue
                todo.append((value, where))
        elif kind is types.CellType:
            try:
                value = obj.cell_contents
            except ValueError:
                return
            new = self.replacement(value, where)
            if new is not None:
                self._set_attr(obj, "cell_contents", value, new)
            elif _worth_visiting(value):
                todo.append((value, where))
        elif kind is types.FunctionType:
            name = getattr(obj, "__qualname__", "function")
            for cell in obj.__closure__ or ():
                todo.append((cell, f"{name} closure"))
            if obj.__defaults__:
                self._visit_defaults(obj, name)
            if obj.__kwdefaults__:
                todo.append((obj.__kwdefaults__, f"{name} defaults"))
            if obj.__dict__:  # its attributes (``synchronized.meta_lock = Lock()``)
                todo.append((obj.__dict__, name))
        elif kind is types.MethodType:
            todo.append((obj.__func__, where))
            todo.append((obj.__self__, where))
        elif kind is partial:
            self._visit_partial(obj, where)
            todo.append((obj.func, where))
            todo.append((obj.args, where))
            todo.append((obj.keywords, where))
        elif isinstance(obj, type):
            module = _module_name(obj)
            if _skipped(module) or module == "builtins":
                return
            function = types.FunctionType
            factories = self.factories
            qualname: str | None = None  # read only if needed, as before
            for key, value in list(vars(obj).items()):
                kind = type(value)
                sort = sorts.get(kind)
                if sort is None:
                    sort = sorts[kind] = _sort(kind)
                if (
                    sort is _SKIP
                    or (kind is function and not _holds_something(value))
                    or (kind is tuple and _holds_nothing(map(type, value)))
                ):
                    continue
                if qualname is None:
                    qualname = obj.__qualname__
                here = (qualname, key, None)
                if sort & _REPLACE or (sort & _FACTORY and id(value) in factories):
                    new = self.replacement(value, here)
                    if new is not None:
                        self._set_attr(obj, key, value, new)
                        continue
                if sort & _ENTER:
                    todo.append((value, here))
        else:
            self._visit_instance(obj, where, todo, sorts)

    def _visit_entries(
        self,
        obj: dict[Any, Any],
        where: Where,
        todo: deque[tuple[Any, Where]],
        sorts: dict[type, int],
    ) -> None:
        """A dictionary's values, read and rewritten through dict's own methods.

        A subclass's ``items`` or ``__setitem__`` is the user's code; an
        OrderedDict, a defaultdict subclass or any dict subclass used as a lock
        table keeps its entries in the dict all the same.
        """
        module_namespace = id(obj) in self.module_namespaces
        function = types.FunctionType
        factories = self.factories
        push = todo.append
        for key, value in list(dict.items(obj)):
            kind = type(value)
            sort = sorts.get(kind)
            if sort is None:
                sort = sorts[kind] = _sort(kind)
            if (
                sort is _SKIP
                or (kind is function and not _holds_something(value))
                or (kind is tuple and _holds_nothing(map(type, value)))
            ):
                continue
            if module_namespace and isinstance(key, str) and key.startswith("__"):
                continue  # __spec__, __loader__, __builtins__: the import system's
            here: Where = (where, key, None) if isinstance(key, str) else (where, "[...]")
            if sort & _REPLACE or (sort & _FACTORY and id(value) in factories):
                new = self.replacement(value, here)
                if new is not None:
                    self._set_item(obj, key, value, new)
                    continue
            if sort & _ENTER:
                push((value, here))

    def _visit_lock_table(
        self,
        obj: defaultdict[Any, Any],
        where: Where,
        todo: deque[tuple[Any, Where]],
        sorts: dict[type, int],
    ) -> None:
        """A defaultdict (or a subclass): its factory, then its values as a dict's.

        A lock table (``defaultdict(threading.Lock)``): its factory made before
        the run makes raw locks during it. Set through the C member, never a
        subclass's ``__setattr__``.
        """
        member: Any = defaultdict.__dict__["default_factory"]
        factory = member.__get__(obj)
        ours = self.our_factory(factory)
        if ours is not None:
            member.__set__(obj, ours)

            def undo() -> None:
                if member.__get__(obj) is ours:
                    member.__set__(obj, factory)

            self.undo_log.append(undo)
        self._visit_entries(obj, where, todo, sorts)

    def _visit_partial(self, obj: Any, where: Where) -> None:
        """``partial(f, lock)`` or ``partial(threading.RLock)``: rebuilt around racecheck's.

        Its function and positional arguments are read-only attributes, and
        the arguments a tuple; ``__setstate__`` (what pickle uses) sets both,
        keeping the keywords dict, which the walk enters as any dict.
        """
        func, args, keywords, namespace = obj.__reduce__()[2]
        new_func = self.replacement(func, (where, ".func")) or func
        new_args = tuple(
            self.replacement(arg, (where, f".args[{index}]")) or arg
            for index, arg in enumerate(args)
        )
        if new_func is func and all(a is b for a, b in zip(new_args, args, strict=True)):
            return
        obj.__setstate__((new_func, new_args, keywords, namespace))

        def undo() -> None:
            if obj.func is new_func and obj.args is new_args:
                obj.__setstate__((func, args, obj.keywords, obj.__dict__ or None))

        self.undo_log.append(undo)

    def _visit_defaults(self, func: types.FunctionType, name: str) -> None:
        defaults = func.__defaults__ or ()
        if not _lock_among_defaults(func):
            return  # replacement() would leave every one alone
        new = tuple(self.replacement(v, f"{name} default") or v for v in defaults)
        if any(a is not b for a, b in zip(new, defaults, strict=True)):
            self._set_attr(func, "__defaults__", defaults, new)

    def _visit_instance(
        self, obj: Any, where: Where, todo: deque[tuple[Any, Where]], sorts: dict[type, int]
    ) -> None:
        cls = type(obj)
        module = _module_name(cls)
        # threading's own Condition/Semaphore/Event/Barrier made earlier are
        # walked: their raw locks are what a controlled thread would block on
        if module == "builtins" or (_skipped(module) and module != "threading"):
            return
        if issubclass(cls, dict):  # an OrderedDict, a dict subclass: its entries too
            if issubclass(cls, defaultdict):
                self._visit_lock_table(obj, where, todo, sorts)
            else:
                self._visit_entries(obj, where, todo, sorts)
        is_thread = issubclass(cls, threading.Thread)
        label: Where = (where, f" ({cls.__qualname__})") if where else cls.__qualname__
        try:
            # not getattr(): that could run a class's __getattr__, nor a
            # __dict__ property (racecheck.instance_state)
            namespace = instance_dict(obj)
        except (AttributeError, TypeError):
            namespace = None
        if type(namespace) is dict:
            function = types.FunctionType
            factories = self.factories
            for key, value in list(namespace.items()):
                kind = type(value)
                sort = sorts.get(kind)
                if sort is None:
                    sort = sorts[kind] = _sort(kind)
                if (
                    sort is _SKIP
                    or (kind is function and not _holds_something(value))
                    or (kind is tuple and _holds_nothing(map(type, value)))
                    or (is_thread and key in _THREAD_INTERNALS)
                ):
                    continue
                here = (label, key, None)
                if sort & _REPLACE or (sort & _FACTORY and id(value) in factories):
                    new = self.replacement(value, here)
                    if new is not None:
                        self._set_item(namespace, key, value, new)
                        continue
                if sort & _ENTER:
                    todo.append((value, here))
        for name in _slot_names(cls):
            try:
                value = object.__getattribute__(obj, name)
            except AttributeError:
                continue
            new = self.replacement(value, (label, f".{name}"))
            if new is not None:
                self._set_attr(obj, name, value, new)
            elif _worth_visiting(value):
                todo.append((value, (label, f".{name}")))


_ATOMIC = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    bytearray,
    types.ModuleType,
    types.CodeType,
    types.BuiltinFunctionType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
    types.FrameType,
    types.TracebackType,
    range,
    slice,
    property,
    memoryview,
)


_ATOMIC_TYPES = frozenset(_ATOMIC)


def _holds_something(function: types.FunctionType) -> bool:
    """Does the walk have anything to do in ``function``?

    Most functions hold nothing of their own: only a closure, keyword
    defaults, or a lock among the positional defaults can.
    """
    return bool(
        function.__closure__
        or function.__kwdefaults__
        or (function.__defaults__ and _lock_among_defaults(function))
        or id(function) in _FACTORY_IDS  # threading.RLock itself: swapped where kept
        or function.__dict__  # its attributes: ``f.lock = Lock()``
    )


def _lock_among_defaults(function: Any) -> bool:
    """Is a positional default a lock, a lock's method or a factory, all the walk rewrites there?

    Asked at C speed over the defaults' types. A function whose closure and
    keyword defaults are empty and whose defaults hold no lock leaves the walk
    nothing to do: it is not queued.
    """
    defaults = function.__defaults__ or ()
    return not (
        _REPLACEABLE.isdisjoint(map(type, defaults)) and _FACTORY_IDS.isdisjoint(map(id, defaults))
    )


def _worth_visiting(value: Any) -> bool:
    # type(), not isinstance(): an object's __class__ can be a property with effects
    kind = type(value)
    if kind is types.FunctionType:
        return _holds_something(value)
    return kind not in _ATOMIC_TYPES and not issubclass(kind, _ATOMIC)


#: types the walk neither rewrites nor enters: atomic, and not a lock or a lock's method
_PASSED_OVER = _ATOMIC_TYPES - _REPLACEABLE

#: do these types (of a container's values) leave the walk nothing to rewrite or enter?
#: Asked of tuples, at C speed, before they are queued: most hold strings and numbers
_holds_nothing = _PASSED_OVER.issuperset

#: what the walk does with a dictionary's value, by its type (see _sort); bits
_SKIP = 0
_REPLACE = 1  # replacement() may rewrite it
_ENTER = 2  # worth visiting (a function: only with a closure or defaults)
_FACTORY = 4  # a function or a class: replacement() if it is a real factory (by id)


def _sort(kind: type) -> int:
    """What the walk does with a value of type ``kind``: its type alone decides.

    Skipped: atomic values (ints, strings, descriptors, modules...), not a
    lock or a lock's method. Rewritten: a raw lock, a builtin method
    (``replacement`` looks at its owner), a weak reference (at its referent), a
    tuple (at its items); a function or a class only when it is a real lock
    factory, known by id (_FACTORY, asked inline: no call per value). Entered:
    anything else that is neither atomic nor a subclass of an atomic type.
    Taken once per type and walk: the walk meets tens of thousands of values
    of a few hundred types, and sorting each from scratch was most of its
    cost. A function's own closure and defaults are still looked at per value
    (``_worth_visiting``). Checked first, before a step's name is built: most
    values are skipped.
    """
    if kind is types.FunctionType:
        return _ENTER | _FACTORY  # it may be a factory (threading.RLock)
    if kind in _PASSED_OVER:
        return _SKIP
    # a tuple holding a lock is copied (Adoption.rebuilt_tuple)
    sort = _REPLACE if kind in _REPLACEABLE or issubclass(kind, tuple) else _SKIP
    if kind in _FACTORY_KINDS and not sort & _REPLACE:
        sort |= _FACTORY  # a class: threading.Condition, threading.Lock on 3.13
    if kind not in _ATOMIC_TYPES and not issubclass(kind, _ATOMIC):
        sort |= _ENTER
    return sort


#: a Thread's own bookkeeping (its tstate lock, its started Event): never rewritten
_THREAD_INTERNALS = frozenset(vars(threading.Thread()))

_slots_cache: dict[type, tuple[str, ...]] = {}


def _module_namespace(module: types.ModuleType) -> dict[str, Any] | None:
    """A module's globals, never through a ``__dict__`` property (apipkg's lazy modules)."""
    try:
        namespace = instance_dict(module)
    except AttributeError:
        return None
    return namespace if type(namespace) is dict else None


def _slot_names(cls: type) -> tuple[str, ...]:
    names = _slots_cache.get(cls)
    if names is None:
        found: list[str] = []
        for klass in cls.__mro__:
            slots = klass.__dict__.get("__slots__", ())
            if isinstance(slots, str):
                slots = (slots,)
            for slot in slots:
                if slot in ("__dict__", "__weakref__"):
                    continue
                if slot.startswith("__") and not slot.endswith("__"):
                    slot = f"_{klass.__name__.lstrip('_')}{slot}"
                found.append(slot)
        names = _slots_cache[cls] = tuple(found)
    return names


def adopt(target: Any) -> Adoption:
    """Adopt the locks the run can reach, and rebind captured factories."""
    adoption = Adoption()
    modules = [m for m in list(sys.modules.values()) if isinstance(m, types.ModuleType)]
    adoption.rebind_factories(modules)
    adoption.walk([(target, "the target")], modules)
    # Real Condition.wait allocates its waiter through this module global.
    adoption._set_attr(threading, "_allocate_lock", threading._allocate_lock, primitives.Lock)  # type: ignore[attr-defined]
    _adopt_new_semlocks(adoption)
    return adoption


def _adopt_new_semlocks(adoption: Adoption) -> None:
    """multiprocessing locks made during the run (tqdm makes its own lazily) are adopted too."""
    try:
        # Imported here, not left to the first mp.RLock() inside the run (tqdm
        # makes its lock lazily): a lock made after the import would escape the
        # patch below. A stdlib import, once per process.
        import multiprocessing.synchronize as synchronize
    except ImportError:  # pragma: no cover - no sem_open on this platform
        return
    semlock_class = synchronize.SemLock
    original = semlock_class.__dict__.get("_make_methods")
    if original is None:
        return

    def make_methods(self: Any) -> None:
        proxy = adoption.proxy_for(self._semlock, type(self).__name__)
        self._semlock = proxy
        self.acquire = proxy.acquire
        self.release = proxy.release

    adoption._set_attr(semlock_class, "_make_methods", original, make_methods)
