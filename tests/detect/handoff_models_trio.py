"""Stale hand-offs beyond asyncio: a readers-writer lock on trio, and one on threads.

Our own models, no assertions (the detector alone has to see the race). The
buggy locks decide in ``_wake_up()`` that the lock is free and wake a waiting
writer, which counts itself in (``self._w_state += 1``) only when it runs
again; a writer arriving in between takes the fast path: two writers inside.
The fixed locks count the woken writer in before waking it, so the wake-up
carries the state.

On trio the waiters sleep on ``trio.Event``s; on threads, on
``threading.Event``s, with the lock's state under an internal
``threading.Lock`` (every access is ordered, so only the hand-off rule can
see the bug).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

import trio

# -- trio ---------------------------------------------------------------------------------


class TrioRWLock:
    def __init__(self) -> None:
        self._r_state = 0
        self._w_state = 0
        self._read_waiters: deque[trio.Event] = deque()
        self._write_waiters: deque[trio.Event] = deque()

    async def acquire_read(self) -> None:
        if not self._write_waiters and self._w_state == 0:
            self._r_state += 1
            return
        event = trio.Event()
        self._read_waiters.append(event)
        await event.wait()
        self._r_state += 1  # counted in after the wake-up: the decision is stale by now

    async def acquire_write(self) -> None:
        if self._r_state == 0 and self._w_state == 0:
            self._w_state += 1
            return
        event = trio.Event()
        self._write_waiters.append(event)
        await event.wait()
        self._w_state += 1  # counted in after the wake-up: the decision is stale by now

    def release_read(self) -> None:
        self._r_state -= 1
        self._wake_up()

    def release_write(self) -> None:
        self._w_state -= 1
        self._wake_up()

    def _wake_up(self) -> None:
        if self._r_state == 0 and self._w_state == 0:
            if self._write_waiters:
                self._write_waiters.popleft().set()
                return
            while self._read_waiters:
                self._read_waiters.popleft().set()


class TrioRWLockFixed(TrioRWLock):
    async def acquire_read(self) -> None:
        if not self._write_waiters and self._w_state == 0:
            self._r_state += 1
            return
        event = trio.Event()
        self._read_waiters.append(event)
        await event.wait()  # _wake_up counted this reader in

    async def acquire_write(self) -> None:
        if self._r_state == 0 and self._w_state == 0:
            self._w_state += 1
            return
        event = trio.Event()
        self._write_waiters.append(event)
        await event.wait()  # _wake_up counted this writer in

    def _wake_up(self) -> None:
        if self._r_state == 0 and self._w_state == 0:
            if self._write_waiters:
                self._w_state += 1  # the hand-off carries the state
                self._write_waiters.popleft().set()
                return
            while self._read_waiters:
                self._r_state += 1
                self._read_waiters.popleft().set()


async def trio_rw_users(lock: TrioRWLock) -> None:
    inside: list[str] = []

    async def writer(name: str, delay: int) -> None:
        for _ in range(delay):
            await trio.sleep(0)
        await lock.acquire_write()
        inside.append(name)  # two names here at once is the bug; nothing asserts it
        await trio.sleep(0)
        inside.remove(name)
        lock.release_write()

    async def reader(delay: int) -> None:
        for _ in range(delay):
            await trio.sleep(0)
        await lock.acquire_read()
        await trio.sleep(0)
        lock.release_read()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer, "a", 0)
        nursery.start_soon(writer, "b", 0)
        nursery.start_soon(writer, "c", 2)
        nursery.start_soon(reader, 1)


async def trio_rw_buggy() -> None:
    await trio_rw_users(TrioRWLock())


async def trio_rw_fixed() -> None:
    await trio_rw_users(TrioRWLockFixed())


async def trio_condition_users(recheck: bool) -> None:
    cond = trio.Condition()
    state = {"free": 1}

    async def user() -> None:
        async with cond:
            if recheck:
                while state["free"] == 0:
                    await cond.wait()
            elif state["free"] == 0:
                await cond.wait()  # woken, it takes the slot without checking again
            state["free"] -= 1
        await trio.sleep(0)
        async with cond:
            state["free"] += 1
            cond.notify()

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(user)


async def trio_condition_if() -> None:
    await trio_condition_users(recheck=False)


async def trio_condition_recheck() -> None:
    """The correct trio idiom: a woken waiter checks again (``while``), then acts."""
    await trio_condition_users(recheck=True)


# -- threads ------------------------------------------------------------------------------


class ThreadRWLock:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._w_state = 0
        self._write_waiters: deque[threading.Event] = deque()

    def acquire_write(self) -> None:
        with self._lock:
            if self._w_state == 0:
                self._w_state += 1
                return
            event = threading.Event()
            self._write_waiters.append(event)
        event.wait()
        with self._lock:
            self._w_state += 1  # counted in after the wake-up: the decision is stale by now

    def release_write(self) -> None:
        with self._lock:
            self._w_state -= 1
            self._wake_up()

    def _wake_up(self) -> None:
        if self._w_state == 0 and self._write_waiters:
            self._write_waiters.popleft().set()


class ThreadRWLockFixed(ThreadRWLock):
    def acquire_write(self) -> None:
        with self._lock:
            if self._w_state == 0:
                self._w_state += 1
                return
            event = threading.Event()
            self._write_waiters.append(event)
        event.wait()  # _wake_up counted this writer in

    def _wake_up(self) -> None:
        if self._w_state == 0 and self._write_waiters:
            self._w_state += 1  # the hand-off carries the state
            self._write_waiters.popleft().set()


def thread_rw_users(lock: ThreadRWLock) -> None:
    inside: list[str] = []
    gate = threading.Lock()

    def writer(name: str) -> None:
        lock.acquire_write()
        with gate:
            inside.append(name)  # two names here at once is the bug; nothing asserts it
        with gate:
            inside.remove(name)
        lock.release_write()

    threads = [threading.Thread(target=writer, args=(n,)) for n in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def thread_rw_buggy() -> None:
    thread_rw_users(ThreadRWLock())


def thread_rw_fixed() -> None:
    thread_rw_users(ThreadRWLockFixed())


def thread_event_recheck() -> None:
    """A woken thread that checks the state again under the lock before acting is clean."""
    lock = threading.Lock()
    state: dict[str, Any] = {"free": True}
    ready = threading.Event()

    def waiter() -> None:
        ready.wait()
        with lock:
            if state["free"]:
                state["free"] = False

    def waker() -> None:
        with lock:
            if state["free"]:
                state["seen"] = True
            ready.set()  # decided with the check above, in the same critical section

    def other() -> None:
        with lock:
            if state["free"]:
                state["free"] = False

    threads = [threading.Thread(target=f) for f in (waiter, waker, other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


class ThreadFifoLock:
    """anyio 4.13's Lock shape on threads, without its cancelled waiters: the woken waiter
    leaves the queue only later. It always wakes the head of the queue, so newcomers only
    line up behind it: correct, and clean under the detector."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: str | None = None
        self._waiters: deque[tuple[str, threading.Event]] = deque()

    def acquire(self, me: str) -> None:
        with self._lock:
            if self._owner is None and not self._waiters:
                self._owner = me
                return
            item = (me, threading.Event())
            self._waiters.append(item)
        item[1].wait()
        with self._lock:
            self._waiters.remove(item)  # the woken waiter leaves the queue only now

    def release(self) -> None:
        with self._lock:
            for name, event in self._waiters:
                self._owner = name
                event.set()
                return
            self._owner = None


class ThreadFifoLockFixed(ThreadFifoLock):
    def acquire(self, me: str) -> None:
        with self._lock:
            if self._owner is None and not self._waiters:
                self._owner = me
                return
            item = (me, threading.Event())
            self._waiters.append(item)
        item[1].wait()  # release() took the entry out

    def release(self) -> None:
        with self._lock:
            if self._waiters:
                name, event = self._waiters.popleft()  # the hand-off takes the entry out
                self._owner = name
                event.set()
                return
            self._owner = None


def thread_fifo_users(lock: ThreadFifoLock) -> None:
    def user(name: str) -> None:
        lock.acquire(name)
        lock.release()

    threads = [threading.Thread(target=user, args=(n,)) for n in "abcd"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def thread_fifo_buggy() -> None:
    thread_fifo_users(ThreadFifoLock())


def thread_fifo_fixed() -> None:
    thread_fifo_users(ThreadFifoLockFixed())
