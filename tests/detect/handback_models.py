"""A position located in a worker and handed back, on threads and trio (issue 14).

The shape of limits 5.2.0's expiry pass beyond asyncio: the trimming actor
hands ``lst.index``/``bisect`` to a worker (a ``ThreadPoolExecutor``, a
``threading.Thread`` it joins, ``trio.to_thread.run_sync``), then, under the
list's lock, deletes from the position the worker found. Another actor
inserting at the front under the same lock in between shifts every index:
the delete drops a live entry. Every access holds the lock, so nothing here
is a data race; only the stale-index rule can see it. The fixed variants
locate the position while holding the lock the act is made under (limits
5.3.0's fix: the lock is taken before the hand-off).

Lines that the detector must name carry a ``# <- marker``.
"""

from __future__ import annotations

import bisect
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

ITEMS = [9.0, 5.0, 3.0, 1.0]  # newest first; everything below 2.0 has expired


def _cut(items: list[float]) -> int:
    # the list is newest first (descending): search it negated
    return bisect.bisect_left(items, -2.0, key=lambda x: -x)  # <- measure


def _cut_locked(items: list[float], lock: Any) -> int:
    with lock:
        return _cut(items)


# -- threads: a thread pool ---------------------------------------------------------------


def _run(*targets: Any) -> None:
    workers = [threading.Thread(target=t) for t in targets]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def pool_buggy() -> None:
    items = list(ITEMS)
    lock = threading.Lock()
    with ThreadPoolExecutor(max_workers=1) as pool:

        def trim() -> None:
            cut = pool.submit(_cut_locked, items, lock).result()
            with lock:
                del items[cut:]  # <- act

        def add() -> None:
            with lock:
                items[:0] = [10.0]  # <- insert

        _run(trim, add)


def pool_fixed() -> None:
    items = list(ITEMS)
    lock = threading.Lock()
    with ThreadPoolExecutor(max_workers=1) as pool:

        def trim() -> None:
            with lock:
                # the worker reads while this thread holds the lock for it
                cut = pool.submit(_cut, items).result()
                del items[cut:]

        def add() -> None:
            with lock:
                items[:0] = [10.0]

        _run(trim, add)


# -- threads: a worker thread, joined -------------------------------------------------------


def joined_buggy() -> None:
    items = list(ITEMS)
    lock = threading.Lock()

    def trim() -> None:
        out: dict[str, int] = {}

        def measure() -> None:
            out["cut"] = _cut_locked(items, lock)

        worker = threading.Thread(target=measure)
        worker.start()
        worker.join()
        with lock:
            del items[out["cut"] :]  # <- act (joined)

    def add() -> None:
        with lock:
            items[:0] = [10.0]

    _run(trim, add)


def joined_remeasured() -> None:
    """The worker's position is only a hint: the act locates it again under the lock."""
    items = list(ITEMS)
    lock = threading.Lock()

    def trim() -> None:
        out: dict[str, int] = {}

        def measure() -> None:
            out["cut"] = _cut_locked(items, lock)

        worker = threading.Thread(target=measure)
        worker.start()
        worker.join()
        with lock:
            del items[_cut(items) :]

    def add() -> None:
        with lock:
            items[:0] = [10.0]

    _run(trim, add)


# -- trio -------------------------------------------------------------------------------------


async def trio_buggy() -> None:
    import trio

    items = list(ITEMS)
    lock = trio.Lock()

    async def trim() -> None:
        cut = await trio.to_thread.run_sync(_cut, items)
        async with lock:
            del items[cut:]  # <- act (trio)

    async def add() -> None:
        await trio.sleep(0)
        async with lock:
            items[:0] = [10.0]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trim)
        nursery.start_soon(add)


async def trio_fixed() -> None:
    import trio

    items = list(ITEMS)
    lock = trio.Lock()

    async def trim() -> None:
        async with lock:
            cut = await trio.to_thread.run_sync(_cut, items)
            del items[cut:]

    async def add() -> None:
        await trio.sleep(0)
        async with lock:
            items[:0] = [10.0]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trim)
        nursery.start_soon(add)


def marked(marker: str) -> int:
    """The line carrying ``# <- marker`` in this file."""
    with open(__file__, encoding="utf-8") as source:
        for number, line in enumerate(source, 1):
            if line.rstrip().endswith(f"# <- {marker}"):
                return number
    raise LookupError(marker)


def joined_then_appended() -> None:
    """The worker's position is never used: the thread that waited for it only appends."""
    items = list(ITEMS)
    lock = threading.Lock()

    def grow() -> None:
        out: dict[str, int] = {}

        def measure() -> None:
            out["cut"] = _cut_locked(items, lock)

        worker = threading.Thread(target=measure)
        worker.start()
        worker.join()
        with lock:
            items.append(0.5)

    def add() -> None:
        with lock:
            items[:0] = [10.0]

    _run(grow, add)


# -- threads: a future already done when result() is called ---------------------------------


def _until_done(future: Any) -> None:
    """Poll the future (under its own lock) until it is done: result() never waits."""
    while not future.done():
        time.sleep(0.001)


def _pool_polled(relocate: bool) -> None:
    items = list(ITEMS)
    lock = threading.Lock()
    with ThreadPoolExecutor(max_workers=1) as pool:

        def trim() -> None:
            future = pool.submit(_cut_locked, items, lock)
            _until_done(future)
            cut = future.result()
            with lock:
                if relocate:
                    cut = _cut(items)
                del items[cut:]  # <- act (polled)

        def add() -> None:
            with lock:
                items[:0] = [10.0]

        _run(trim, add)


def pool_polled_buggy() -> None:
    _pool_polled(relocate=False)


def pool_polled_relocated() -> None:
    _pool_polled(relocate=True)


def future_answer_read_back() -> None:
    """Ask a question in a slot, let a pool worker answer into it, read the answer back.

    ``result()`` is called on a done future: the worker's answer, written
    before it finished, is the value the asker expects in the slot.
    """
    slot: dict[str, str] = {}

    def answer() -> None:
        slot["v"] = "answer"

    with ThreadPoolExecutor(max_workers=1) as pool:
        slot["v"] = "question"
        future = pool.submit(answer)
        _until_done(future)
        future.result()
        assert slot["v"] == "answer"


def future_answer_overwritten_after_it_finished() -> None:
    """A second job, never waited for, writes the slot after the first finished: a bug."""
    slot: dict[str, str] = {}

    def answer() -> None:
        slot["v"] = "answer"

    def late() -> None:
        slot["v"] = "late"  # <- late job

    with ThreadPoolExecutor(max_workers=2) as pool:
        slot["v"] = "question"  # <- asked
        future = pool.submit(answer)
        pool.submit(late)
        _until_done(future)
        future.result()
        assert slot["v"] in ("answer", "late")  # <- read back
