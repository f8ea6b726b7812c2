"""Correct FIFO locks whose woken waiter takes itself off the queue (issue 14).

The design of CPython's own ``asyncio.Lock``: ``release()`` only wakes the
first waiter and leaves its entry queued; the woken waiter removes its entry
when it runs again, then takes the lock. A newcomer arriving in between sees
the queue is not empty (the woken entry is done, not cancelled) and lines up
behind it, so nobody jumps the queue; a cancelled waiter is passed over by the
newcomer's check and wakes the next waiter itself. Nothing is stale here:
the woken waiter removes *its own* entry, which a newcomer's append leaves
where it was, and it decides nothing about the queue it did not see itself.

Written for asyncio, trio and threads, with no assertion; the users check
mutual exclusion themselves (``inside`` never holds two names) so that the
engine would also fail a broken lock.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque

import trio

# -- asyncio ------------------------------------------------------------------------------


class AsyncSelfDequeueLock:
    def __init__(self) -> None:
        self._locked = False
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        if not self._locked and all(w.cancelled() for w in self._waiters):
            self._locked = True
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            try:
                await fut
            finally:
                self._waiters.remove(fut)  # the woken waiter leaves the queue itself
        except asyncio.CancelledError:
            if not self._locked:
                self._wake_up_first()
            raise
        self._locked = True

    def release(self) -> None:
        self._locked = False
        self._wake_up_first()

    def _wake_up_first(self) -> None:
        if not self._waiters:
            return
        fut = self._waiters[0]
        if not fut.done():
            fut.set_result(None)


class AsyncIterFirstLock(AsyncSelfDequeueLock):
    """CPython's own spelling of the wake-up: ``next(iter(self._waiters))``."""

    def _wake_up_first(self) -> None:
        if not self._waiters:
            return
        fut = next(iter(self._waiters))
        if not fut.done():
            fut.set_result(None)


async def async_users(lock: AsyncSelfDequeueLock) -> None:
    inside: list[str] = []

    async def user(name: str, delay: int) -> None:
        for _ in range(delay):
            await asyncio.sleep(0)
        await lock.acquire()
        inside.append(name)
        if len(inside) > 1:
            raise RuntimeError(f"two users inside: {inside}")
        await asyncio.sleep(0)
        inside.remove(name)
        lock.release()

    await asyncio.gather(user("a", 0), user("b", 0), user("c", 1), user("d", 2))


async def async_correct() -> None:
    await async_users(AsyncSelfDequeueLock())


async def async_iter_first() -> None:
    await async_users(AsyncIterFirstLock())


async def async_with_timeouts() -> None:
    """Waiters that give up (cancelled while queued) must not wedge or double-enter."""
    lock = AsyncSelfDequeueLock()
    inside: list[str] = []

    async def user(name: str, patience: float | None) -> None:
        try:
            async with asyncio.timeout(patience):
                await lock.acquire()
        except TimeoutError:
            return
        inside.append(name)
        if len(inside) > 1:
            raise RuntimeError(f"two users inside: {inside}")
        await asyncio.sleep(1)
        inside.remove(name)
        lock.release()

    await asyncio.gather(user("a", None), user("b", 0.5), user("c", None), user("d", None))


# -- trio ---------------------------------------------------------------------------------


class TrioSelfDequeueLock:
    def __init__(self) -> None:
        self._locked = False
        self._waiters: deque[trio.Event] = deque()

    async def acquire(self) -> None:
        if not self._locked and not self._waiters:
            self._locked = True
            return
        event = trio.Event()
        self._waiters.append(event)
        try:
            await event.wait()
        finally:
            self._waiters.remove(event)  # the woken waiter leaves the queue itself
        self._locked = True

    def release(self) -> None:
        self._locked = False
        if self._waiters:
            self._waiters[0].set()


async def trio_correct() -> None:
    lock = TrioSelfDequeueLock()
    inside: list[str] = []

    async def user(name: str, delay: int) -> None:
        for _ in range(delay):
            await trio.sleep(0)
        await lock.acquire()
        inside.append(name)
        if len(inside) > 1:
            raise RuntimeError(f"two users inside: {inside}")
        await trio.sleep(0)
        inside.remove(name)
        lock.release()

    async with trio.open_nursery() as nursery:
        for name, delay in (("a", 0), ("b", 0), ("c", 1), ("d", 2)):
            nursery.start_soon(user, name, delay)


# -- threads ------------------------------------------------------------------------------


class ThreadSelfDequeueLock:
    """The queue and the flag under an internal lock; waiters sleep on their own Event."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._locked = False
        self._waiters: deque[threading.Event] = deque()

    def acquire(self) -> None:
        with self._mutex:
            if not self._locked and not self._waiters:
                self._locked = True
                return
            event = threading.Event()
            self._waiters.append(event)
        event.wait()
        with self._mutex:
            self._waiters.remove(event)  # the woken waiter leaves the queue itself
            self._locked = True

    def release(self) -> None:
        with self._mutex:
            self._locked = False
            if self._waiters:
                self._waiters[0].set()


def thread_correct() -> None:
    lock = ThreadSelfDequeueLock()
    inside: list[str] = []
    errors: list[str] = []

    def user(name: str) -> None:
        lock.acquire()
        inside.append(name)
        if len(inside) > 1:
            errors.append(f"two users inside: {inside}")
        inside.remove(name)
        lock.release()

    workers = [threading.Thread(target=user, args=(n,)) for n in "abc"]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise RuntimeError(errors[0])
