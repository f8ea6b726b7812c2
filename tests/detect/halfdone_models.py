"""apipkg 2.0.0's shape: a lazy module whose ``__dict__`` is a property.

A lazy namespace (a ``ModuleType`` subclass, as apipkg's ``ApiModule`` is)
runs a set-up hook on the first look-up that misses: it takes the hook out
of its table, then runs it, and the hook sets the attribute. Two threads
looking the attribute up at once can both find the hook and both take it
(the second ``pop`` raises ``KeyError``), or the second finds the hook gone
and the attribute not there yet (``AttributeError``). The fix runs the
look-up under one lock, made before the run.

Its ``__dict__`` is a property that loads everything first, as apipkg's is:
reading it is running the library's code. The detector read instance state
through ``object.__getattribute__(obj, "__dict__")``, which runs that
property: it ran the hook itself, at its first look at the table, and the
race was gone from every run it watched.
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

_LOCK = threading.RLock()  # made at import, like apipkg 2.0.1's
#: every time the ``__dict__`` property ran (the program under test never reads it)
PROPERTY_READS: list[int] = []
_MODULE_DICT = ModuleType.__dict__["__dict__"]


class LazyNamespace(ModuleType):
    def __init__(self, locked: bool) -> None:
        super().__init__("lazyns")
        self.table: dict[str, Any] = {"hook": self._set_up}
        self.locked = locked

    def _set_up(self) -> None:
        self.greeting = "hello"

    def _look_up(self, name: str) -> Any:
        if "hook" in self.table:
            hook = self.table.pop("hook")
            hook()
        try:
            return ModuleType.__getattribute__(self, name)
        except AttributeError:
            raise AttributeError(name) from None

    def __getattr__(self, name: str) -> Any:
        if self.locked:
            with _LOCK:
                return self._look_up(name)
        return self._look_up(name)

    @property  # type: ignore[misc]
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        # loads everything, as apipkg's does
        PROPERTY_READS.append(1)
        self._look_up("greeting")
        return _MODULE_DICT.__get__(self)  # type: ignore[no-any-return]


def _run(locked: bool) -> None:
    space = LazyNamespace(locked)
    seen: dict[int, Any] = {}

    def use(n: int) -> None:
        try:
            seen[n] = space.greeting
        except (AttributeError, KeyError) as error:
            seen[n] = repr(error)

    workers = [threading.Thread(target=use, args=(n,)) for n in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert seen == {0: "hello", 1: "hello"}, seen


def hook_half_done() -> None:
    _run(locked=False)


def hook_under_the_lock() -> None:
    _run(locked=True)
