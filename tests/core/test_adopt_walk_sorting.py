"""What the lock-adoption walk rewrites, and how it names each lock, place by place.

The walk decides what to do with a value by its type once per walk (skip it,
rewrite it, or enter it), and spells the path to a lock only once one is
found. These tests pin the outcome of those decisions on every kind of place
a lock made before the run can sit, so a faster walk cannot quietly adopt
less, adopt more, or name a lock differently.
"""

from __future__ import annotations

import functools
import threading
import types
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from racecheck.backends.threads.adopt import (
    AdoptedLock,
    AdoptedRLock,
    adopt,
)


class _Slotted:
    __slots__ = ("guard",)

    def __init__(self) -> None:
        self.guard = threading.Lock()


class _Held:
    class_lock = threading.Lock()

    def __init__(self) -> None:
        self.rlock = threading.RLock()
        self.items = [0, threading.Lock()]
        self.table: dict[Any, Any] = {"named": threading.Lock(), 7: threading.Lock()}
        self.nested = ({"inside_a_tuple": threading.Lock()},)
        self.slotted = _Slotted()
        # strings and numbers beside a tuple that holds a holder: only the holder is entered
        self.labelled = ("label", 3, ("inner", _Slotted()))
        self.bound_acquire = threading.Lock().acquire


class _IntWithState(int):
    """A subclass of an atomic type: the walk does not enter it (as before)."""


# locks made at definition time, as a library's defaults would be: the point of the test
def _with_defaults(a: Any = threading.Lock(), *, b: Any = threading.RLock()) -> None:  # noqa: B008
    del a, b


def _closure() -> Callable[[], Any]:
    lock = threading.Lock()

    def inner() -> Any:
        return lock

    return inner


def _adopted_names(target: Callable[[], Any]) -> dict[str, str]:
    """Run the walk from ``target`` only, undo it, and say what it adopted, by name."""
    adoption = adopt(target)
    try:
        return {proxy._rc_where: type(proxy).__name__ for proxy in adoption.proxies.values()}
    finally:
        adoption.undo()


def test_every_place_a_lock_can_sit_is_adopted_under_its_path() -> None:
    held = _Held()
    hidden = _IntWithState(3)
    hidden.lock = threading.Lock()  # type: ignore[attr-defined]
    inner = _closure()
    partial_lock = threading.Lock()
    bound = functools.partial(print, partial_lock)
    originals = {
        "rlock": held.rlock,
        "named": held.table["named"],
        "numbered": held.table[7],
        "acquire_owner": held.bound_acquire.__self__,  # type: ignore[attr-defined]
    }

    def target() -> Any:
        return held, hidden, inner, bound, _with_defaults

    names = _adopted_names(target)
    place = f"{target.__qualname__} closure (_Held)"
    assert names[f"{place}.rlock"] == AdoptedRLock.__name__
    assert names[f"{place}.items[1]"] == AdoptedLock.__name__
    assert names[f"{place}.table.named"] == AdoptedLock.__name__
    assert names[f"{place}.table[...]"] == AdoptedLock.__name__
    assert names[f"{place}.nested.inside_a_tuple"] == AdoptedLock.__name__
    assert names[f"{place}.slotted (_Slotted).guard"] == AdoptedLock.__name__
    assert names[f"{place}.labelled (_Slotted).guard"] == AdoptedLock.__name__
    assert names[f"{place}.bound_acquire"] == AdoptedLock.__name__
    assert names["_Held.class_lock"] == AdoptedLock.__name__
    assert names["_with_defaults default"] == AdoptedLock.__name__
    assert names["_with_defaults defaults.b"] == AdoptedRLock.__name__
    assert names["_closure.<locals>.inner closure"] == AdoptedLock.__name__
    # a partial's arguments are a tuple: the partial is rebuilt around the proxy
    assert names[f"{target.__qualname__} closure.args[0]"] == AdoptedLock.__name__
    # the walk does not enter a subclass of an atomic type
    assert not any(name.endswith(".lock") and "IntWithState" in name for name in names)
    # and every rewrite was undone
    assert held.rlock is originals["rlock"]
    assert held.table["named"] is originals["named"]
    assert held.table[7] is originals["numbered"]
    assert held.bound_acquire.__self__ is originals["acquire_owner"]  # type: ignore[attr-defined]
    assert type(held.bound_acquire) is types.BuiltinMethodType
    assert bound.args[0] is partial_lock


def test_a_lock_seen_twice_is_one_proxy_named_where_it_was_first_found() -> None:
    shared = threading.Lock()
    first = {"near": shared}
    second = [[shared]]

    def target() -> Any:
        return first, second

    adoption = adopt(target)
    try:
        assert first["near"] is second[0][0]
        assert isinstance(first["near"], AdoptedLock)
        assert first["near"]._rc_where == f"{target.__qualname__} closure.near"
    finally:
        adoption.undo()
    assert first["near"] is shared and second[0][0] is shared


def test_tuples_dict_subclasses_and_function_attributes_are_named() -> None:
    stripes = (threading.Lock(), threading.Lock())
    ordered = OrderedDict(k=threading.RLock())

    def keeper() -> None:
        pass

    keeper.lock = threading.Lock()  # type: ignore[attr-defined]

    def target() -> Any:
        return stripes, ordered, keeper

    names = _adopted_names(target)
    place = f"{target.__qualname__} closure"
    assert names[f"{place}[0]"] == AdoptedLock.__name__
    assert names[f"{place}[1]"] == AdoptedLock.__name__
    assert names[f"{place}.k"] == AdoptedRLock.__name__
    assert names[f"{keeper.__qualname__}.lock"] == AdoptedLock.__name__
    # and every rewrite was undone
    assert type(stripes[0]) is type(threading.Lock())
    assert type(dict.__getitem__(ordered, "k")) is type(threading.RLock())
    assert type(keeper.lock) is type(threading.Lock())  # type: ignore[attr-defined]
