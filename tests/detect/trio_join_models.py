"""trio programs whose waits the detector must count, and their asyncio twins.

Each ``*_waits`` program has one task write a slot another task wrote
before, and that other task read it back only after it waited for the
writer (the nursery's end, an Event, a memory channel, a lock hand-off):
reading the writer's value there is the point, not an overwrite. Each
``*_no_wait`` program reads back the same slot without waiting: that one is
a real "overwritten before read" and must stay flagged.
"""

from __future__ import annotations

import asyncio

import trio


class Acct:
    def __init__(self) -> None:
        self.balance = 0


# -- the nursery's end ------------------------------------------------------------------


async def nursery_join_locked() -> None:
    """detspeed2's program: three locked deposits, checked by main after the nursery."""
    a = Acct()
    lock = trio.Lock()

    async def deposit(amount: int) -> None:
        async with lock:
            current = a.balance
            await trio.sleep(0)
            a.balance = current + amount

    async with trio.open_nursery() as nursery:
        for amount in (10, 5, 1):
            nursery.start_soon(deposit, amount)
    assert a.balance == 16


async def gather_join_locked() -> None:
    """The asyncio twin of :func:`nursery_join_locked` (clean there already)."""
    a = Acct()
    lock = asyncio.Lock()

    async def deposit(amount: int) -> None:
        async with lock:
            current = a.balance
            await asyncio.sleep(0)
            a.balance = current + amount

    await asyncio.gather(*(deposit(amount) for amount in (10, 5, 1)))
    assert a.balance == 16


async def nursery_join_unlocked_writes() -> None:
    """Each child writes its own slot once; main reads them all after the nursery.

    Only the last child to finish wakes main: the others' writes reach it
    through the nursery, not through that last wake-up.
    """
    results: dict[str, str] = {}
    for key in "abc":
        results[key] = "main"  # main's placeholders, replaced by the children it waits for

    async def fill(key: str, delay: int) -> None:
        for _ in range(delay):
            await trio.sleep(0)
        results[key] = key

    async with trio.open_nursery() as nursery:
        nursery.start_soon(fill, "a", 0)
        nursery.start_soon(fill, "b", 1)
        nursery.start_soon(fill, "c", 2)
    assert results["a"] == "a"
    assert results["b"] == "b"
    assert results["c"] == "c"


# -- Event, memory channel -----------------------------------------------------------------


async def event_waits() -> None:
    box = Acct()

    async def answer(done: trio.Event) -> None:
        await trio.sleep(0)
        box.balance = 42
        done.set()

    done = trio.Event()
    box.balance = -1  # main's own placeholder, replaced by the answer it waits for
    async with trio.open_nursery() as nursery:
        nursery.start_soon(answer, done)
        await done.wait()
        assert box.balance == 42


async def channel_waits() -> None:
    box = Acct()
    send, receive = trio.open_memory_channel[int](0)

    async def answer() -> None:
        await trio.sleep(0)
        box.balance = 42
        await send.send(1)

    box.balance = -1
    async with trio.open_nursery() as nursery:
        nursery.start_soon(answer)
        await receive.receive()
        assert box.balance == 42


# -- true overwrites: no wait between the write and the read-back --------------------------


async def overwrite_no_wait() -> None:
    box = Acct()

    async def meddle() -> None:
        box.balance = 99

    async with trio.open_nursery() as nursery:
        box.balance = 1
        nursery.start_soon(meddle)
        await trio.sleep(0)
        # main expects its own 1 back: nothing it waited for wrote 99
        print(box.balance + 1)


async def overwrite_before_join() -> None:
    """Read back inside the nursery body, before the join: the children may not be done."""
    a = Acct()
    lock = trio.Lock()

    async def deposit(amount: int) -> None:
        async with lock:
            current = a.balance
            await trio.sleep(0)
            a.balance = current + amount

    async with trio.open_nursery() as nursery:
        a.balance = 100
        for amount in (10, 5, 1):
            nursery.start_soon(deposit, amount)
        await trio.sleep(0)
        await trio.sleep(0)
        print(a.balance - 100)


async def channel_late_receiver() -> None:
    """The sender may park first: the receiver then takes the value and wakes the sender."""
    box = Acct()
    send, receive = trio.open_memory_channel[int](0)

    async def answer() -> None:
        box.balance = 42
        await send.send(1)

    box.balance = -1
    async with trio.open_nursery() as nursery:
        nursery.start_soon(answer)
        await trio.sleep(0)
        await trio.sleep(0)
        await receive.receive()
        assert box.balance == 42


async def buffered_channel_waits() -> None:
    box = Acct()
    send, receive = trio.open_memory_channel[int](1)

    async def answer() -> None:
        box.balance = 42
        send.send_nowait(1)

    box.balance = -1
    async with trio.open_nursery() as nursery:
        nursery.start_soon(answer)
        await trio.sleep(0)
        await receive.receive()
        assert box.balance == 42


async def buffered_item_older_than_the_write() -> None:
    """The sender buffers an item, then writes, then buffers another."""
    box = Acct()
    send, receive = trio.open_memory_channel[int](2)

    async def answer() -> None:
        send.send_nowait(1)
        box.balance = 42
        send.send_nowait(2)

    box.balance = -1
    async with trio.open_nursery() as nursery:
        nursery.start_soon(answer)
        await trio.sleep(0)
        await receive.receive()
        assert box.balance == 42


async def channel_write_after_send() -> None:
    """The sender writes after its send: the receiver waited for the send, not for that."""
    box = Acct()
    send, receive = trio.open_memory_channel[int](0)

    async def answer() -> None:
        await send.send(1)
        box.balance = 42

    box.balance = -1
    async with trio.open_nursery() as nursery:
        nursery.start_soon(answer)
        await trio.sleep(0)
        await receive.receive()
        await trio.sleep(0)
        print(box.balance + 1)


async def start_waits() -> None:
    """``await nursery.start(...)`` waits for the child's ``started()``."""
    box = Acct()

    async def serve(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await trio.sleep(0)
        box.balance = 42
        task_status.started()
        await trio.sleep(0)

    box.balance = -1
    async with trio.open_nursery() as nursery:
        await nursery.start(serve)
        assert box.balance == 42


async def condition_waits() -> None:
    box = Acct()
    cond = trio.Condition()

    async def answer() -> None:
        await trio.sleep(0)
        async with cond:
            box.balance = 42
            cond.notify_all()

    box.balance = -1
    async with trio.open_nursery() as nursery:
        nursery.start_soon(answer)
        async with cond:
            while box.balance != 42:
                await cond.wait()
