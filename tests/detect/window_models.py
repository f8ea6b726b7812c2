"""A moving-window rate limiter's memory storage, the shape of limits 5.2.0 (asyncio).

The window of a key is a list of entries, newest first: a hit inserts at the
front with a slice store (``events[key][:0] = [entry]``). The expiry pass
finds where the expired entries begin with ``bisect`` run in a worker thread
(``await asyncio.to_thread(...)``), then slices the list at that index under
the key's lock. In the buggy storage the index is computed *before* the lock
is taken: a hit landing in between shifts every entry by one, and the slice at
the stale index drops the oldest entry that had not expired (the window then
forgets a request and admits one too many). The fixed storage computes the
index under the lock, as limits 5.3.0 does.

Lines that the detector must name carry a ``# <- marker``; the tests look them
up instead of hard-coding numbers.
"""

from __future__ import annotations

import asyncio
import bisect
from collections import defaultdict

WINDOW = 100.0  # nothing in these runs gets old enough to expire


class Entry:
    def __init__(self, now: float) -> None:
        self.atime = now
        self.expiry = now + WINDOW


def _cutoff(events: list[Entry], now: float) -> int:
    """Where the expired entries begin: the list is newest first (expiry descending)."""
    return bisect.bisect_left(events, -now, key=lambda entry: -entry.expiry)  # <- measure


class Storage:
    def __init__(self) -> None:
        self.events: dict[str, list[Entry]] = {}
        self.locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    async def hit(self, key: str, limit: int, now: float) -> bool:
        async with self.locks[key]:
            self.events.setdefault(key, [])
            window = self.events[key]
            if len(window) >= limit and window[limit - 1].atime > now - WINDOW:
                return False
            self.events[key][:0] = [Entry(now)]  # <- insert
            return True

    async def expire(self, now: float) -> None:
        for key in list(self.events.keys()):
            cutoff = await asyncio.to_thread(_cutoff, self.events[key], now)
            async with self.locks[key]:
                if self.events.get(key, []):
                    self.events[key] = self.events[key][:cutoff]  # <- act


class StorageFixed(Storage):
    async def expire(self, now: float) -> None:
        for key in list(self.events.keys()):
            async with self.locks[key]:
                cutoff = await asyncio.to_thread(_cutoff, self.events[key], now)
                if self.events.get(key, []):
                    self.events[key] = self.events[key][:cutoff]


async def _burst(storage: Storage) -> list[bool]:
    """One request already in the window, then the expiry pass and two more requests."""
    first = await storage.hit("user-1", 2, 1.0)

    async def request() -> bool:
        await asyncio.sleep(0)  # requests arrive together
        return await storage.hit("user-1", 2, 2.0)

    _, *later = await asyncio.gather(storage.expire(2.0), request(), request())
    return [first, *later]


async def buggy() -> None:
    await _burst(Storage())


async def fixed() -> None:
    await _burst(StorageFixed())


async def buggy_asserted() -> None:
    """The same run with the limit's own assertion: the engine alone sees the overrun."""
    results = await _burst(Storage())
    assert results.count(True) == 2, f"{results.count(True)} requests let through, limit 2"


async def fixed_asserted() -> None:
    results = await _burst(StorageFixed())
    assert results.count(True) == 2, f"{results.count(True)} requests let through, limit 2"


def marked(marker: str) -> int:
    """The line carrying ``# <- marker`` in this file."""
    with open(__file__, encoding="utf-8") as source:
        for number, line in enumerate(source, 1):
            if line.rstrip().endswith(f"# <- {marker}"):
                return number
    raise LookupError(marker)
