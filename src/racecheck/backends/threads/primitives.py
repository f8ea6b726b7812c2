"""Controlled replacements for ``threading``'s primitives, ``queue`` and ``time.sleep``.

Each primitive keeps its state in plain fields and never blocks in C while
controlled: "wait for X" becomes a predicate handed to the runtime, which only
lets the actor run again once X holds. Operations are scheduling points, so the
strategy decides who gets the lock, who sees the event first, who wakes.

Threads that are not actors of the current run (and racecheck's own plumbing,
marked *passthrough*) get the real behaviour, built from raw ``_thread`` locks
saved before anything was patched.
"""

from __future__ import annotations

import _thread
import collections
import queue as _queue_module
import threading
import time as _time_module
from typing import Any

from racecheck.backends.threads.runtime import (
    PLAIN_TRACES,
    Actor,
    ThreadRuntime,
    get_ident,
    gettrace,
    settrace,
)
from racecheck.engine import RunAborted

_allocate_lock = _thread.allocate_lock
_real_sleep = _time_module.sleep
_real_monotonic = _time_module.monotonic

#: the originals, as modules see them before any patch (for rebinding names
#: that modules captured with ``from threading import ...``)
REAL: dict[str, Any] = {
    "Lock": threading.Lock,
    "RLock": threading.RLock,
    "Condition": threading.Condition,
    "Semaphore": threading.Semaphore,
    "BoundedSemaphore": threading.BoundedSemaphore,
    "Event": threading.Event,
    "Barrier": threading.Barrier,
    "sleep": _time_module.sleep,
}


class _State:
    runtime: ThreadRuntime | None = None


STATE = _State()


def _context() -> tuple[ThreadRuntime | None, Actor | None]:
    runtime = STATE.runtime
    if runtime is None:
        return None, None
    actor = runtime.by_ident.get(get_ident())
    if actor is None or actor.passthrough or actor.finished:
        return runtime, None
    return runtime, actor


def _serial(primitive: Any, runtime: ThreadRuntime) -> str:
    """A name for a lock that is stable across runs: its creation order in the run."""
    serial = getattr(primitive, "_rc_serial", None)
    if serial is None or serial[0] is not runtime:
        runtime.primitive_count += 1
        serial = primitive._rc_serial = (runtime, f"Lock#{runtime.primitive_count}")
    return str(serial[1])


def _deadline(runtime: ThreadRuntime, timeout: float | None) -> float | None:
    if timeout is None or timeout < 0:
        return None
    return runtime.controller.now + timeout


def _released(runtime: ThreadRuntime | None, me: Actor | None, obj: Any) -> None:
    """A hand-off point (Event.set, a put, a barrier arrival): for the race detector."""
    if me is not None and runtime is not None:
        detector = runtime.controller.detector
        if detector is not None:
            detector.release(me.id, obj)


def _acquired(runtime: ThreadRuntime | None, me: Actor | None, obj: Any) -> None:
    """The other side of a hand-off: everything released before is now ordered before."""
    if me is not None and runtime is not None:
        detector = runtime.controller.detector
        if detector is not None:
            detector.acquire(me.id, obj)


def _condition_detector(runtime: ThreadRuntime | None, me: Actor | None) -> Any:
    """The detector to tell of a ``Condition`` hand-off, or ``None``: see Condition.notify."""
    if me is None or runtime is None:
        return None
    detector = runtime.controller.detector
    if detector is None or detector.record_only:
        # DPOR's record alone: the condition's lock already orders both sides, and a
        # sync record per waiter would only add dependencies to explore (with the
        # detector on, the edge is kept out of the record the same way)
        return None
    return detector


def _lock_acquired(runtime: ThreadRuntime | None, me: Actor | None, lock: Any) -> None:
    """A lock taken: ordered after its last release, and held (for race reports)."""
    if me is not None and runtime is not None:
        detector = runtime.controller.detector
        if detector is not None:
            detector.lock_acquired(me.id, lock, _serial(lock, runtime))


def _lock_released(runtime: ThreadRuntime | None, me: Actor | None, lock: Any) -> None:
    if me is not None and runtime is not None:
        detector = runtime.controller.detector
        if detector is not None:
            detector.lock_released(me.id, lock, _serial(lock, runtime))


def virtual_monotonic() -> float:
    """``queue``'s clock during a run: virtual for actors, real for everyone else."""
    runtime, me = _context()
    if me is None or runtime is None:
        return _real_monotonic()
    return runtime.read_clock()


class Lock:
    """``threading.Lock`` under racecheck's control."""

    def __init__(self) -> None:
        self._real = _allocate_lock()
        self._owner: Actor | None = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        trace = gettrace()  # 3.11: racecheck's own work runs untraced (see runtime.PLAIN_TRACES)
        if trace in PLAIN_TRACES:
            settrace(None)
        try:
            runtime, me = _context()
            if me is None or runtime is None:
                return self._real.acquire(blocking, timeout)
            runtime.point(me, "acquire", self)
            real = self._real
            if not real.acquire(False):
                if not blocking:
                    return False
                ok = runtime.block(
                    me, lambda: not real.locked(), _deadline(runtime, timeout), "acquire", self
                )
                if not ok or not real.acquire(False):
                    return False
            self._owner = me
            log = runtime.controller.accesses
            if log is not None:
                log.append((me.id, f"lock:{_serial(self, runtime)}"))
            _lock_acquired(runtime, me, self)
            return True
        finally:
            if trace in PLAIN_TRACES:
                settrace(trace)

    def release(self) -> None:
        trace = gettrace()  # 3.11: racecheck's own work runs untraced (see runtime.PLAIN_TRACES)
        if trace in PLAIN_TRACES:
            settrace(None)
        try:
            runtime, me = _context()
            _lock_released(runtime, me, self)
            self._real.release()
            self._owner = None
            if me is not None and runtime is not None:
                runtime.point(me, "released", self)
        finally:
            if trace in PLAIN_TRACES:
                settrace(trace)

    def locked(self) -> bool:
        return self._real.locked()

    def _is_owned(self) -> bool:
        return self._real.locked()

    def _at_fork_reinit(self) -> None:
        self._real = _allocate_lock()
        self._owner = None

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        trace = gettrace()  # 3.11: racecheck's own work runs untraced (see runtime.PLAIN_TRACES)
        if trace in PLAIN_TRACES:
            settrace(None)
        try:
            self.release()
        finally:
            if trace in PLAIN_TRACES:
                settrace(trace)

    def __repr__(self) -> str:
        return f"<racecheck Lock {'locked' if self.locked() else 'unlocked'}>"


class RLock:
    """``threading.RLock`` under racecheck's control (owner is the OS thread)."""

    def __init__(self) -> None:
        self._real = _allocate_lock()
        self._owner_ident: int | None = None
        self._count = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        ident = get_ident()
        if self._owner_ident == ident:
            self._count += 1
            return True
        runtime, me = _context()
        real = self._real
        if me is None or runtime is None:
            if not real.acquire(blocking, timeout):
                return False
        else:
            runtime.point(me, "acquire", self)
            if not real.acquire(False):
                if not blocking:
                    return False
                ok = runtime.block(
                    me, lambda: not real.locked(), _deadline(runtime, timeout), "acquire", self
                )
                if not ok or not real.acquire(False):
                    return False
            _lock_acquired(runtime, me, self)
        self._owner_ident = ident
        self._count = 1
        return True

    def release(self) -> None:
        if self._owner_ident != get_ident():
            raise RuntimeError("cannot release un-acquired lock")
        self._count -= 1
        if self._count:
            return
        self._owner_ident = None
        runtime, me = _context()
        _lock_released(runtime, me, self)
        self._real.release()
        if me is not None and runtime is not None:
            runtime.point(me, "released", self)

    def _is_owned(self) -> bool:
        return self._owner_ident == get_ident()

    def _release_save(self) -> tuple[int, int | None]:
        runtime, me = _context()
        _lock_released(runtime, me, self)
        state = (self._count, self._owner_ident)
        self._count = 0
        self._owner_ident = None
        self._real.release()
        return state

    def _acquire_restore(self, state: tuple[int, int | None]) -> None:
        self.acquire()
        self._count, self._owner_ident = state

    def _at_fork_reinit(self) -> None:
        self.__init__()  # type: ignore[misc]

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()

    def locked(self) -> bool:
        return self._real.locked()

    def __repr__(self) -> str:
        return f"<racecheck RLock owner={self._owner_ident} count={self._count}>"


class _Waiter:
    __slots__ = ("notified", "real")

    def __init__(self, real: Any = None) -> None:
        self.notified = False
        self.real = real


class Condition:
    """``threading.Condition``: waiters are notified in FIFO order, like CPython's."""

    def __init__(self, lock: Any = None) -> None:
        if lock is None:
            lock = RLock()
        self._lock = lock
        self.acquire = lock.acquire
        self.release = lock.release
        self._waiters: collections.deque[_Waiter] = collections.deque()

    def __enter__(self) -> bool:
        return bool(self._lock.__enter__())

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)

    def _is_owned(self) -> bool:
        owned = getattr(self._lock, "_is_owned", None)
        if owned is not None:
            return bool(owned())
        if self._lock.acquire(False):
            self._lock.release()
            return False
        return True

    def _release_save(self) -> Any:
        save = getattr(self._lock, "_release_save", None)
        if save is not None:
            return save()
        self._lock.release()
        return None

    def _acquire_restore(self, state: Any) -> None:
        restore = getattr(self._lock, "_acquire_restore", None)
        if restore is not None:
            restore(state)
        else:
            self._lock.acquire()

    def wait(self, timeout: float | None = None) -> bool:
        if not self._is_owned():
            raise RuntimeError("cannot wait on un-acquired lock")
        runtime, me = _context()
        if me is None or runtime is None:
            real = _allocate_lock()
            real.acquire()
            waiter = _Waiter(real)
            self._waiters.append(waiter)
            saved = self._release_save()
            try:
                got = real.acquire(True, -1 if timeout is None else timeout)
            finally:
                self._acquire_restore(saved)
                if not got:
                    _discard(self._waiters, waiter)
            return got
        waiter = _Waiter()
        self._waiters.append(waiter)
        saved = self._release_save()
        try:
            notified = runtime.block(
                me, lambda: waiter.notified, _deadline(runtime, timeout), "wait", self
            )
        except RunAborted:
            _discard(self._waiters, waiter)
            raise
        if not notified:
            _discard(self._waiters, waiter)
        else:
            detector = _condition_detector(runtime, me)
            if detector is not None:
                # Before the lock is taken back: the critical section the wait returns
                # into is the woken thread's first one (the stale hand-off rule's step).
                detector.acquire(me.id, waiter, record=False)
        self._acquire_restore(saved)
        return notified

    def wait_for(self, predicate: Any, timeout: float | None = None) -> Any:
        runtime, me = _context()
        clock = (lambda: runtime.controller.now) if me is not None and runtime else _real_monotonic
        endtime = None if timeout is None else clock() + timeout
        result = predicate()
        while not result:
            waittime = None
            if endtime is not None:
                waittime = endtime - clock()
                if waittime <= 0:
                    break
            self.wait(waittime)
            result = predicate()
        return result

    def notify(self, n: int = 1) -> None:
        if not self._is_owned():
            raise RuntimeError("cannot notify on un-acquired lock")
        runtime, me = _context()
        if me is not None and runtime is not None:
            runtime.point(me, "notify", self)
        detector = _condition_detector(runtime, me)
        waiters = self._waiters
        while waiters and n > 0:
            waiter = waiters.popleft()
            if detector is not None and me is not None:
                # A waiter woken by this notify waited for the notifier: a signal
                # edge, like Event.set -> wait (a future's result is handed back so).
                # Per waiter, so a thread that starts waiting later learns nothing.
                detector.release(me.id, waiter, record=False)
            waiter.notified = True
            if waiter.real is not None:
                waiter.real.release()
            n -= 1

    def notify_all(self) -> None:
        self.notify(len(self._waiters))

    notifyAll = notify_all

    def __repr__(self) -> str:
        return f"<racecheck Condition({self._lock!r}, {len(self._waiters)} waiting)>"


def future_patches() -> list[tuple[Any, str, Any]]:
    """``concurrent.futures.Future``'s hand-back as a signal, also when ``result()`` never waits.

    A future's result passes through its ``Condition``: when ``result()``
    waits, the notify that ends the wait is the signal. When the future is
    already done (polled with ``done()``, or simply finished first), nothing
    waits and only the Condition's lock orders the two threads, which says
    nothing about whether the caller expected the worker's writes. But
    ``result()`` returning (or raising the stored exception) *is* reading the
    very slot ``set_result``/``set_exception`` filled under that lock: the
    caller takes the worker's answer, so what the worker did before it is the
    caller's to see (a position it located, a slot it answered into). The
    edge is per future, from the setter at the set to the caller at the take;
    another job of the same pool is not ordered by it. Kept out of DPOR's
    record: the Condition's lock already records the dependency.

    Returned as patches for the backend's install list (undone with the rest).
    """
    from concurrent.futures import Future
    from concurrent.futures._base import CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED

    done_states = (CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED)
    set_result, set_exception = Future.set_result, Future.set_exception
    result, exception = Future.result, Future.exception

    def _signal(future: Any, take: bool) -> None:
        runtime, me = _context()
        detector = _condition_detector(runtime, me)
        if detector is None or me is None:
            return
        if take:
            detector.acquire(me.id, future, record=False)
        else:
            detector.release(me.id, future, record=False)

    # The signal goes out before the set: the set releases the future's lock, a
    # scheduling point, and the caller may take the result before the setter
    # runs again. A set that will raise (the future is done already) sends none.
    def patched_set_result(self: Any, value: Any) -> None:
        if self._state not in done_states:
            _signal(self, take=False)
        set_result(self, value)

    def patched_set_exception(self: Any, error: BaseException | None) -> None:
        if self._state not in done_states:
            _signal(self, take=False)
        set_exception(self, error)

    def patched_result(self: Any, timeout: float | None = None) -> Any:
        try:
            value = result(self, timeout)
        except BaseException as error:
            if error is self._exception:  # the job's own exception, handed back
                _signal(self, take=True)
            raise
        _signal(self, take=True)
        return value

    def patched_exception(self: Any, timeout: float | None = None) -> BaseException | None:
        error = exception(self, timeout)
        _signal(self, take=True)
        return error

    return [
        (Future, "set_result", patched_set_result),
        (Future, "set_exception", patched_set_exception),
        (Future, "result", patched_result),
        (Future, "exception", patched_exception),
    ]


def _discard(waiters: collections.deque[_Waiter], waiter: _Waiter) -> None:
    try:
        waiters.remove(waiter)
    except ValueError:
        pass


class Semaphore:
    def __init__(self, value: int = 1) -> None:
        if value < 0:
            raise ValueError("semaphore initial value must be >= 0")
        self._value = value
        self._cond = Condition(Lock())

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        runtime, me = _context()
        if me is None or runtime is None:
            with self._cond:
                if not blocking and self._value == 0:
                    return False
                if not self._cond.wait_for(lambda: self._value > 0, timeout):
                    return False
                self._value -= 1
                return True
        runtime.point(me, "acquire", self)
        if self._value == 0:
            if not blocking:
                return False
            if not runtime.block(
                me, lambda: self._value > 0, _deadline(runtime, timeout), "acquire", self
            ):
                return False
        self._value -= 1
        return True

    __enter__ = acquire

    def release(self, n: int = 1) -> None:
        if n < 1:
            raise ValueError("n must be one or more")
        self._check_release(n)
        runtime, me = _context()
        with _passthrough(me), self._cond:
            self._value += n
            self._cond.notify(n)
        if me is not None and runtime is not None:
            runtime.point(me, "released", self)

    def _check_release(self, n: int) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        self.release()


class BoundedSemaphore(Semaphore):
    def __init__(self, value: int = 1) -> None:
        super().__init__(value)
        self._initial_value = value

    def _check_release(self, n: int) -> None:
        if self._value + n > self._initial_value:
            raise ValueError("Semaphore released too many times")


class Event:
    def __init__(self) -> None:
        self._flag = False
        self._cond = Condition(Lock())

    def is_set(self) -> bool:
        if self._flag:
            runtime, me = _context()
            _acquired(runtime, me, self)
        return self._flag

    isSet = is_set

    def set(self) -> None:
        runtime, me = _context()
        # Set and notify under the lock, like CPython: a real (passthrough)
        # waiter checks the flag under it, so a set outside it can be lost.
        _released(runtime, me, self)
        with _passthrough(me), self._cond:
            self._flag = True
            self._cond.notify_all()
        if me is not None and runtime is not None:
            runtime.point(me, "set", self)

    def clear(self) -> None:
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        runtime, me = _context()
        if me is None or runtime is None:
            with self._cond:
                if not self._flag:
                    self._cond.wait(timeout)
                return self._flag
        runtime.point(me, "wait", self)
        if not self._flag and not runtime.block(
            me, lambda: self._flag, _deadline(runtime, timeout), "wait", self
        ):
            return False
        _acquired(runtime, me, self)
        return True

    def _at_fork_reinit(self) -> None:
        self.__init__()  # type: ignore[misc]


class _passthrough:
    def __init__(self, me: Actor | None) -> None:
        self.me = me

    def __enter__(self) -> None:
        if self.me is not None:
            self.me.passthrough += 1

    def __exit__(self, *exc: object) -> None:
        if self.me is not None:
            self.me.passthrough -= 1


class Barrier:
    """``threading.Barrier`` with the same generation/broken semantics."""

    def __init__(self, parties: int, action: Any = None, timeout: float | None = None) -> None:
        if parties < 1:
            raise ValueError("parties must be >= 1")
        self._parties = parties
        self._action = action
        self._timeout = timeout
        self._count = 0
        self._generation = 0
        self._broken = False

    def wait(self, timeout: float | None = None) -> int:
        runtime, me = _context()
        if me is None or runtime is None:
            raise RuntimeError("racecheck's Barrier is only usable by controlled threads")
        if timeout is None:
            timeout = self._timeout
        runtime.point(me, "wait", self)
        if self._broken:
            raise threading.BrokenBarrierError
        _released(runtime, me, self)
        index = self._count
        self._count += 1
        generation = self._generation
        if self._count == self._parties:
            try:
                if self._action is not None:
                    self._action()
            except BaseException:
                self._break()
                raise
            self._count = 0
            self._generation += 1
            _acquired(runtime, me, self)
            return index
        ok = runtime.block(
            me,
            lambda: self._generation != generation or self._broken,
            _deadline(runtime, timeout),
            "wait",
            self,
        )
        if not ok:
            self._break()
        if self._broken and self._generation == generation:
            raise threading.BrokenBarrierError
        _acquired(runtime, me, self)
        return index

    def _break(self) -> None:
        self._broken = True

    def reset(self) -> None:
        if self._count:
            self._break()
        self._broken = False
        self._count = 0

    def abort(self) -> None:
        self._break()

    @property
    def parties(self) -> int:
        return self._parties

    @property
    def n_waiting(self) -> int:
        return self._count if not self._broken else 0

    @property
    def broken(self) -> bool:
        return self._broken


class SimpleQueue:
    """``queue.SimpleQueue`` (a C type in CPython, whose ``get`` blocks in C)."""

    def __init__(self) -> None:
        self._items: collections.deque[Any] = collections.deque()
        self._cond = Condition(Lock())

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        runtime, me = _context()
        if me is not None and runtime is not None:
            runtime.point(me, "put into", self)
        _released(runtime, me, self)
        with _passthrough(me), self._cond:
            self._items.append(item)
            self._cond.notify()

    put_nowait = put

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        runtime, me = _context()
        if me is not None and runtime is not None:
            runtime.point(me, "get from", self)
            if not self._items:
                if not block:
                    raise _queue_module.Empty
                if not runtime.block(
                    me, lambda: bool(self._items), _deadline(runtime, timeout), "get from", self
                ):
                    raise _queue_module.Empty
            _acquired(runtime, me, self)
            return self._items.popleft()
        with self._cond:
            if not self._cond.wait_for(lambda: bool(self._items), timeout if block else 0):
                raise _queue_module.Empty
            return self._items.popleft()

    def get_nowait(self) -> Any:
        return self.get(False)

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)


def sleep(seconds: float) -> None:
    """``time.sleep``: virtual for actors (free), real for everyone else."""
    runtime, me = _context()
    if me is None or runtime is None:
        _real_sleep(seconds)
        return
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    if seconds == 0:
        runtime.point(me, "sleep(0)")
        return
    runtime.block(me, lambda: False, runtime.controller.now + seconds, f"sleep({seconds:g})")
