"""Held-out models of two stale hand-off bugs in asyncio locking libraries.

Our own code, written to the shape of the real releases (no assertions: the
detector alone has to see the race):

* ``FifoLock`` / ``FifoLockFixed``: anyio's asyncio ``Lock`` before and after
  4.14. Before, ``release()`` picks the first live waiter and wakes it, but the
  waiter's queue entry stays until the woken task runs again and removes it
  itself, and a waiter that gave up (its future cancelled) is passed over and
  left queued until its task runs: a task that arrives in between lines up
  behind a dead entry, and with nobody left to wake the lock wedges for good
  (``fifo_lock_timeout_users``). 4.14 pops the entry in ``release()``: the
  hand-off carries the queue change. Without a waiter that gives up, the walk
  wakes the head of the queue and nothing goes wrong (``fifo_no_give_up``).
* ``RWLock`` / ``RWLockFixed``: an aiorwlock-style readers-writer lock. The
  buggy one decides in ``_wake_up()`` that the lock is free and wakes a
  waiting writer, which counts itself in (``self._w_state += 1``) only when it
  runs again; a writer arriving in between takes the fast path too: two
  writers inside. The fixed one counts the woken writer in before waking it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

# -- anyio-style FIFO lock ---------------------------------------------------------------


class FifoLock:
    def __init__(self) -> None:
        self._owner_task: asyncio.Task[Any] | None = None
        self._waiters: deque[tuple[asyncio.Task[Any], asyncio.Future[None]]] = deque()

    async def acquire(self) -> None:
        task = asyncio.current_task()
        assert task is not None
        if self._owner_task is None and not self._waiters:
            self._owner_task = task
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        item = task, fut
        self._waiters.append(item)
        try:
            await fut
        except asyncio.CancelledError:
            self._waiters.remove(item)
            if self._owner_task is task:
                self.release()
            raise
        self._waiters.remove(item)  # the woken waiter leaves the queue only now

    def release(self) -> None:
        for task, fut in self._waiters:
            if not fut.cancelled():
                self._owner_task = task
                fut.set_result(None)
                return
        self._owner_task = None


class FifoLockFixed(FifoLock):
    async def acquire(self) -> None:
        task = asyncio.current_task()
        assert task is not None
        if self._owner_task is None and not self._waiters:
            self._owner_task = task
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        item = task, fut
        self._waiters.append(item)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.cancelled():
                if item in self._waiters:
                    self._waiters.remove(item)
            elif self._owner_task is task:
                self.release()
            raise

    def release(self) -> None:
        while self._waiters:
            task, fut = self._waiters.popleft()  # the hand-off takes the entry out
            if fut.cancelled():
                continue
            self._owner_task = task
            fut.set_result(None)
            return
        self._owner_task = None


async def fifo_lock_users(lock: FifoLock) -> list[str]:
    order: list[str] = []

    async def user(name: str, delay: int) -> None:
        for _ in range(delay):
            await asyncio.sleep(0)
        await lock.acquire()
        order.append(name)
        await asyncio.sleep(0)
        lock.release()

    await asyncio.gather(user("a", 0), user("b", 0), user("c", 1), user("d", 2))
    return order


async def fifo_lock_timeout_users(lock: FifoLock) -> list[str]:
    """anyio 4.13's failing scenario: a waiter gives up as the holder releases.

    The release skips the given-up waiter's cancelled future (passes it over),
    wakes the next one, and leaves the given-up entry queued until its task
    runs again: a newcomer arriving in between lines up behind a dead entry
    (with nobody left to wake, anyio 4.13's lock wedged so). Without a waiter
    that gives up, the walk only ever wakes the head of the queue, which is
    the normal order and not a bug (see walkqueue_models.py).
    """
    order: list[str] = []

    async def holder() -> None:
        await lock.acquire()
        await asyncio.sleep(1)
        lock.release()
        order.append("holder")

    async def impatient() -> None:
        await asyncio.sleep(0)
        try:
            async with asyncio.timeout(1):
                await lock.acquire()
        except TimeoutError:
            return
        order.append("impatient")
        lock.release()

    async def patient() -> None:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        await lock.acquire()
        order.append("patient")
        lock.release()

    await asyncio.gather(holder(), impatient(), patient())
    return order


async def fifo_buggy() -> None:
    await fifo_lock_timeout_users(FifoLock())


async def fifo_fixed() -> None:
    await fifo_lock_users(FifoLockFixed())
    await fifo_lock_timeout_users(FifoLockFixed())


async def fifo_no_give_up() -> None:
    """The buggy lock where no waiter gives up: the walk wakes the head, nothing wedges."""
    await fifo_lock_users(FifoLock())


# -- aiorwlock-style readers-writer lock --------------------------------------------------


class RWLock:
    def __init__(self) -> None:
        self._r_state = 0
        self._w_state = 0
        self._read_waiters: deque[asyncio.Future[None]] = deque()
        self._write_waiters: deque[asyncio.Future[None]] = deque()

    async def acquire_read(self) -> None:
        if not self._write_waiters and self._w_state == 0:
            self._r_state += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._read_waiters.append(fut)
        await fut
        self._r_state += 1  # counted in after the wake-up: the decision is stale by now

    async def acquire_write(self) -> None:
        if self._r_state == 0 and self._w_state == 0:
            self._w_state += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._write_waiters.append(fut)
        await fut
        self._w_state += 1  # counted in after the wake-up: the decision is stale by now

    def release_read(self) -> None:
        self._r_state -= 1
        self._wake_up()

    def release_write(self) -> None:
        self._w_state -= 1
        self._wake_up()

    def _wake_up(self) -> None:
        if self._r_state == 0 and self._w_state == 0:
            while self._write_waiters:
                fut = self._write_waiters.popleft()
                if not fut.done():
                    fut.set_result(None)
                    return
            while self._read_waiters:
                fut = self._read_waiters.popleft()
                if not fut.done():
                    fut.set_result(None)


class RWLockFixed(RWLock):
    async def acquire_read(self) -> None:
        if not self._write_waiters and self._w_state == 0:
            self._r_state += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._read_waiters.append(fut)
        await fut  # _wake_up counted this reader in

    async def acquire_write(self) -> None:
        if self._r_state == 0 and self._w_state == 0:
            self._w_state += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._write_waiters.append(fut)
        await fut  # _wake_up counted this writer in

    def _wake_up(self) -> None:
        if self._r_state == 0 and self._w_state == 0:
            while self._write_waiters:
                fut = self._write_waiters.popleft()
                if not fut.done():
                    self._w_state += 1  # the hand-off carries the state
                    fut.set_result(None)
                    return
            while self._read_waiters:
                fut = self._read_waiters.popleft()
                if not fut.done():
                    self._r_state += 1
                    fut.set_result(None)


async def rw_lock_users(lock: RWLock) -> list[str]:
    inside: list[str] = []

    async def writer(name: str, delay: int) -> None:
        for _ in range(delay):
            await asyncio.sleep(0)
        await lock.acquire_write()
        inside.append(name)  # two names here at once is the bug; nothing asserts it
        await asyncio.sleep(0)
        inside.remove(name)
        lock.release_write()

    async def reader(delay: int) -> None:
        for _ in range(delay):
            await asyncio.sleep(0)
        await lock.acquire_read()
        await asyncio.sleep(0)
        lock.release_read()

    await asyncio.gather(writer("a", 0), writer("b", 0), writer("c", 2), reader(1))
    return inside


async def rw_buggy() -> None:
    await rw_lock_users(RWLock())


async def rw_fixed() -> None:
    await rw_lock_users(RWLockFixed())
