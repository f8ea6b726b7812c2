"""A readers-writer lock whose release walks the writers' queue (aiorwlock 1.5's shape).

Our own model, no assertions. The releaser walks the waiting writers, wakes
the first live one and counts it in (the state is handed over with the
wake-up); the woken writer removes its own queue entry when it runs again, in
a ``finally``. A writer arriving in between decides on the handed-over state,
not on the queue, and lines up behind the woken writer's entry: nothing goes
wrong. The detector's queue case of the stale hand-off rule cannot tell this
from anyio 4.13's lock (see docs/detect.md, Limits) and reports it.
"""

from __future__ import annotations

import asyncio
from collections import deque


class WalkingRWLock:
    __slots__ = ("_r_state", "_w_state", "_write_waiters")

    def __init__(self) -> None:
        self._r_state = 0
        self._w_state = 0
        self._write_waiters: deque[asyncio.Future[None]] = deque()

    async def acquire_write(self) -> None:
        if self._r_state == 0 and self._w_state == 0:
            self._w_state += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._write_waiters.append(fut)
        try:
            await fut  # the releaser counted this writer in
        finally:
            self._write_waiters.remove(fut)

    def release_write(self) -> None:
        self._w_state -= 1
        if self._r_state == 0 and self._w_state == 0:
            for fut in self._write_waiters:
                if not fut.done():
                    self._w_state += 1
                    fut.set_result(None)
                    return


async def writers() -> None:
    lock = WalkingRWLock()

    async def write(delay: int) -> None:
        for _ in range(delay):
            await asyncio.sleep(0)
        await lock.acquire_write()
        await asyncio.sleep(0)
        lock.release_write()

    await asyncio.gather(write(0), write(0), write(1))
