"""Per-code-object caches, looked up by ``id(code)``.

CPython does not cache a code object's hash: ``hash(code)`` hashes its name,
its constants and names, and from 3.12 its instructions, again on every call.
A dict keyed by code objects paid that on every lookup, and racecheck's hooks
look one up at every call and C call a traced run makes: for asyncio's
``BaseEventLoop._run_once`` a lookup cost about 0.5 us on 3.11 and 2 us on 3.13,
against 0.15 us by ``id``. Under ``perf``, hashing code objects was a tenth of
a loop-in-a-thread DPOR run's CPU on 3.13.

A :class:`ByCode` keeps each code object it has an entry for, so that object
stays alive, and its ``id`` cannot name another object, while the entry lives.
"""

from __future__ import annotations

from types import CodeType
from typing import Generic, TypeVar

V = TypeVar("V")


class ByCode(dict[int, V], Generic[V]):
    """``id(code) -> value``: look up with ``get(id(code))``, fill with :meth:`put`."""

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        super().__init__()
        self._kept: list[CodeType] = []

    def put(self, code: CodeType, value: V) -> V:
        """Store ``value`` for ``code`` (a miss: called once per code object)."""
        self[id(code)] = value
        self._kept.append(code)
        return value

    def clear(self) -> None:
        super().clear()
        self._kept.clear()
