"""asyncio.Queue hand-offs the detector must see: an item carries what its putter wrote.

"Overwritten before read" reports a task that wrote a slot, finds another
task's value there when it reads it back, and never waited for that task. A
``get`` that finds the item already queued never suspends, so no wake-up
carries the putter's clock: the item itself must.
"""

from __future__ import annotations

import asyncio
import queue as queue_module
import threading
from typing import Any


class Box:
    def __init__(self) -> None:
        self.balance = 0


async def item_already_queued() -> None:
    """The answer is queued before the reader asks: its get never waits."""
    box = Box()
    queue: asyncio.Queue[int] = asyncio.Queue()

    async def answer() -> None:
        box.balance = 42
        queue.put_nowait(1)

    box.balance = -1
    task = asyncio.ensure_future(answer())
    await asyncio.sleep(0)
    await queue.get()
    assert box.balance == 42
    await task


async def item_polled_for() -> None:
    """The reader polls (no wait on the queue), then takes the item with get_nowait."""
    box = Box()
    queue: asyncio.Queue[int] = asyncio.Queue()

    async def answer() -> None:
        box.balance = 42
        await queue.put(1)

    box.balance = -1
    task = asyncio.ensure_future(answer())
    while queue.empty():
        await asyncio.sleep(0)
    queue.get_nowait()
    assert box.balance == 42
    await task


async def older_item_taken() -> None:
    """The item taken was queued before the write: the reader did not wait for it."""
    box = Box()
    queue: asyncio.Queue[int] = asyncio.Queue()

    async def answer() -> None:
        queue.put_nowait(1)
        box.balance = 42
        queue.put_nowait(2)

    box.balance = -1
    task = asyncio.ensure_future(answer())
    await asyncio.sleep(0)
    await queue.get()
    assert box.balance == 42
    await task


async def no_item_taken() -> None:
    """The reader never takes the item: nothing was waited for."""
    box = Box()
    queue: asyncio.Queue[int] = asyncio.Queue()

    async def answer() -> None:
        box.balance = 42
        queue.put_nowait(1)

    box.balance = -1
    task = asyncio.ensure_future(answer())
    await asyncio.sleep(0)
    assert box.balance == 42
    await task


# LifoQueue and PriorityQueue: the item taken is the newest, or the smallest.


async def newest_item_taken() -> None:
    """A LifoQueue hands out the newest item: the one put after the write."""
    box = Box()
    queue: asyncio.LifoQueue[int] = asyncio.LifoQueue()

    async def answer() -> None:
        queue.put_nowait(1)
        box.balance = 42
        queue.put_nowait(2)

    box.balance = -1
    task = asyncio.ensure_future(answer())
    await asyncio.sleep(0)
    await queue.get()
    assert box.balance == 42
    await task


async def only_item_older_than_the_write() -> None:
    """The LifoQueue's one item was put before the write: taking it waited for nothing."""
    box = Box()
    queue: asyncio.LifoQueue[int] = asyncio.LifoQueue()

    async def answer() -> None:
        queue.put_nowait(1)
        box.balance = 42

    box.balance = -1
    task = asyncio.ensure_future(answer())
    await asyncio.sleep(0)
    await queue.get()
    assert box.balance == 42
    await task


async def smallest_item_taken() -> None:
    """A PriorityQueue hands out the smallest item: here the one put after the write."""
    box = Box()
    queue: asyncio.PriorityQueue[tuple[int, str]] = asyncio.PriorityQueue()
    late = (1, "late")

    async def answer() -> None:
        queue.put_nowait((5, "early"))
        box.balance = 42
        queue.put_nowait(late)

    box.balance = -1
    task = asyncio.ensure_future(answer())
    await asyncio.sleep(0)
    await queue.get()
    assert box.balance == 42
    await task


async def smallest_item_older_than_the_write() -> None:
    """The smallest item was put before the write; the one after it is still queued."""
    box = Box()
    queue: asyncio.PriorityQueue[tuple[int, str]] = asyncio.PriorityQueue()
    early = (1, "early")

    async def answer() -> None:
        queue.put_nowait(early)
        box.balance = 42
        queue.put_nowait((5, "late"))

    box.balance = -1
    task = asyncio.ensure_future(answer())
    await asyncio.sleep(0)
    await queue.get()
    assert box.balance == 42
    await task


async def newest_item_taken_after_waiting() -> None:
    """The reader waits on the empty LifoQueue; the first put wakes it, but by the time
    it runs a newer item, put after the write, is the one it takes."""
    box = Box()
    queue: asyncio.LifoQueue[int] = asyncio.LifoQueue()

    async def answer() -> None:
        await asyncio.sleep(0)  # the reader is waiting by now
        queue.put_nowait(1)
        box.balance = 42
        queue.put_nowait(2)

    box.balance = -1
    task = asyncio.ensure_future(answer())
    await queue.get()
    assert box.balance == 42
    await task


async def smallest_item_taken_after_waiting() -> None:
    """As newest_item_taken_after_waiting, on a PriorityQueue: the smaller item wins."""
    box = Box()
    queue: asyncio.PriorityQueue[tuple[int, str]] = asyncio.PriorityQueue()
    late = (1, "late")

    async def answer() -> None:
        await asyncio.sleep(0)  # the reader is waiting by now
        queue.put_nowait((5, "early"))
        box.balance = 42
        queue.put_nowait(late)

    box.balance = -1
    task = asyncio.ensure_future(answer())
    await queue.get()
    assert box.balance == 42
    await task


# The same on threads: queue.LifoQueue and queue.PriorityQueue. The reader reads
# the value back only when the item it took is the one put after the write (clean)
# or the one put before it (a partner: the value may be either).


def _thread_handover(queue: Any, first: Any, second: Any, want: Any) -> None:
    box = Box()

    def answer() -> None:
        queue.put(first)
        box.balance = 42
        queue.put(second)

    box.balance = -1
    worker = threading.Thread(target=answer)
    worker.start()
    if queue.get() is want:
        assert box.balance == 42
    worker.join()


def thread_newest_item_taken() -> None:
    newest = (2, "newest")
    _thread_handover(queue_module.LifoQueue(), (1, "oldest"), newest, newest)


def thread_smallest_item_taken() -> None:
    smallest = (1, "late")
    _thread_handover(queue_module.PriorityQueue(), (5, "early"), smallest, smallest)


def thread_item_older_than_the_write() -> None:
    oldest = (1, "oldest")
    _thread_handover(queue_module.LifoQueue(), oldest, (2, "newest"), oldest)


def thread_smallest_item_older_than_the_write() -> None:
    smallest = (1, "early")
    _thread_handover(queue_module.PriorityQueue(), smallest, (5, "late"), smallest)
