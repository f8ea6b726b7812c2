"""A cache kept in a container subclass whose item methods call the builtin's (issue 14).

async-cache 1.1.1's shape: an ``OrderedDict`` subclass redefines
``__getitem__``/``__setitem__``/``__contains__`` in Python (an LRU), and each
reaches the storage through ``super().__setitem__(key, value)``,
``super().__getitem__(key)`` and ``key in self.keys()``. The detector skips
item access on such a class (its own methods are traced instead), so those
calls are where its state is read and written.

The decorator checks ``key in cache``, awaits the computation, then stores:
two tasks missing one key both compute and both store (the thundering herd
async-cache 2.0.0 closed with one pending future per key, the fixed shape).

Lines that the detector must name carry a ``# <- marker``.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any


class LRU(OrderedDict[Any, Any]):
    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        super().__init__()

    def __contains__(self, key: object) -> bool:
        if key not in self.keys():  # <- check
            return False
        return True

    def __getitem__(self, key: Any) -> Any:
        value = super().__getitem__(key)
        self.move_to_end(key)
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)  # <- store
        if len(self) > self.maxsize:
            oldest = next(iter(self))
            del self[oldest]


Loader = Callable[[int], Awaitable[int]]


def cached_buggy(func: Loader) -> Loader:
    cache = LRU(8)

    async def wrapper(n: int) -> int:
        if n in cache:
            return int(cache[n])
        cache[n] = await func(n)
        return int(cache[n])

    return wrapper


def cached_fixed(func: Loader) -> Loader:
    """One computation per key: the others await its future."""
    cache = LRU(8)
    pending: dict[int, asyncio.Future[int]] = {}

    async def wrapper(n: int) -> int:
        if n in cache:
            return int(cache[n])
        running = pending.get(n)
        if running is not None:
            return await running
        future = pending[n] = asyncio.get_running_loop().create_future()
        try:
            value = await func(n)
            cache[n] = value
            future.set_result(value)
            return value
        finally:
            del pending[n]

    return wrapper


async def _slow_square(n: int) -> int:
    await asyncio.sleep(0)
    return n * n


async def stampede_buggy() -> None:
    square = cached_buggy(_slow_square)
    await asyncio.gather(square(3), square(3))


async def stampede_fixed() -> None:
    square = cached_fixed(_slow_square)
    await asyncio.gather(square(3), square(3), square(4))
    assert await square(3) == 9


async def hits_only() -> None:
    """Reads of a filled cache from two tasks: nothing to report."""
    square = cached_buggy(_slow_square)
    await square(3)
    await asyncio.gather(square(3), square(3))


def marked(marker: str) -> int:
    """The line carrying ``# <- marker`` in this file."""
    with open(__file__, encoding="utf-8") as source:
        for number, line in enumerate(source, 1):
            if line.rstrip().endswith(f"# <- {marker}"):
                return number
    raise LookupError(marker)


async def keys_view_check_buggy() -> None:
    """``k not in d.keys()`` on a plain dict is the same check as ``k not in d``."""
    registry: dict[str, int] = {}

    async def register(name: str, value: int) -> None:
        if name not in registry.keys():  # <- keys check
            await asyncio.sleep(0)
            registry[name] = value  # <- keys store

    await asyncio.gather(register("db", 1), register("db", 2))
