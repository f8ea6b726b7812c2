"""An own write overwritten by an equal value, then read back (aws-lambda-powertools 3.31.1).

"Overwritten before read" claims that the reader got another actor's value instead
of its own. When the other actor stored a value equal to the reader's and nothing
can tell the two apart (an immutable value: numbers, strings, and tuples or named
tuples of them), the read returns what it would have returned with no other actor
at all: the claim is false. 3.31.1's persistence layer stores each circuit's
settings (a ``NamedTuple``) under its lock at every call and reads them back in a
later critical section; two threads calling one circuit store equal settings.

The partners stay reported: settings that differ between the threads, equal but
mutable values (the reader now holds the other's list, and what it changes the
other sees), a named tuple holding a list, a tuple class with an ``__eq__`` of its
own (the detector never runs it), and a lost update whose two writes are equal.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

import racecheck


class Settings(NamedTuple):
    max_age: int
    name: str


class Nested(NamedTuple):
    settings: Settings
    tags: frozenset[str]
    limits: tuple[int, float]


class Holding(NamedTuple):
    max_age: int
    hooks: list[str]


USER_EQ_CALLS = [0]  # the user's __eq__ below counts here: the detector must never run it


class LooseTuple(tuple):  # type: ignore[type-arg]
    """Says every two instances are equal: the detector must not believe it (nor run it)."""

    def __eq__(self, other: object) -> bool:
        USER_EQ_CALLS[0] += 1
        return True

    __hash__ = tuple.__hash__


class Opaque:
    def __init__(self, n: int) -> None:
        self.n = n

    def __eq__(self, other: object) -> bool:
        USER_EQ_CALLS[0] += 1
        return isinstance(other, Opaque) and other.n == self.n

    __hash__ = object.__hash__


class Store:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._settings: dict[str, Any] = {}

    def configure(self, name: str, value: Any) -> None:
        with self._lock:
            self._settings[name] = value

    def settings_for(self, name: str) -> Any:
        with self._lock:
            return self._settings.get(name)


def configure_from_two_threads(make: Callable[[int], Any]) -> Callable[[], None]:
    """Each thread stores ``make(i)`` for one circuit, then reads it back and uses it."""

    def target() -> None:
        store = Store()
        seen: dict[int, Any] = {}

        def call(i: int) -> None:
            store.configure("payments", make(i))
            settings = store.settings_for("payments")
            if settings is not None:  # the value decides what the call does next
                seen[i] = settings

        workers = [threading.Thread(target=call, args=(i,)) for i in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    return target


EQUAL_IMMUTABLE: dict[str, Callable[[int], Any]] = {
    "named-tuple": lambda i: Settings(5, "pay"),
    "nested-immutable": lambda i: Nested(Settings(5, "pay"), frozenset({"a", "b"}), (3, 0.5)),
    "plain-tuple": lambda i: (5, "pay"),
    "string-built-per-call": lambda i: "-".join(["pay", "ments"]),
    "big-int-per-call": lambda i: 10**30 + 0 * i,
}

STILL_REPORTED: dict[str, Callable[[int], Any]] = {
    "unequal-settings": lambda i: Settings(5 + i, "pay"),
    "equal-lists": lambda i: [5, "pay"],
    "named-tuple-holding-a-list": lambda i: Holding(5, ["log"]),
    "tuple-with-its-own-eq": lambda i: LooseTuple((i,)),
    "tuple-of-user-objects": lambda i: (Opaque(5),),
}


@pytest.mark.parametrize("make", EQUAL_IMMUTABLE.values(), ids=EQUAL_IMMUTABLE.keys())
def test_an_equal_immutable_value_stored_over_ones_own_is_clean(
    make: Callable[[int], Any],
) -> None:
    report = racecheck.check(
        configure_from_two_threads(make), detect=True, schedules=150, backend="threads"
    )
    assert report.schedules_run == 150 or report.exhausted


@pytest.mark.parametrize("make", STILL_REPORTED.values(), ids=STILL_REPORTED.keys())
def test_a_different_or_mutable_value_stored_over_ones_own_is_reported(
    make: Callable[[int], Any],
) -> None:
    USER_EQ_CALLS[0] = 0
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(
            configure_from_two_threads(make), detect=True, schedules=150, backend="threads"
        )
    finding: Any = info.value.cause.finding  # type: ignore[union-attr]
    assert finding.pattern == "overwritten before read", finding
    first, middle, last = finding.accesses
    assert (first.action, middle.action, last.action) == ("wrote", "wrote", "read")
    assert first.actor == last.actor != middle.actor
    assert USER_EQ_CALLS[0] == 0


class Box:
    def __init__(self) -> None:
        self.settings: Any = None
        self.count = 0


def tasks_store_then_read(make: Callable[[int], Any]) -> Callable[[], Any]:
    async def target() -> None:
        box = Box()

        async def call(i: int) -> None:
            box.settings = make(i)
            await asyncio.sleep(0)
            if box.settings is None:
                raise AssertionError("unset")

        await asyncio.gather(call(0), call(1))

    return target


def test_asyncio_equal_settings_read_back_after_an_await_are_clean() -> None:
    report = racecheck.check(
        tasks_store_then_read(lambda i: Settings(5, "pay")), detect=True, schedules=50
    )
    assert report.schedules_run == 50 or report.exhausted


def test_asyncio_unequal_settings_read_back_after_an_await_are_reported() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(
            tasks_store_then_read(lambda i: Settings(5 + i, "pay")), detect=True, schedules=50
        )
    finding: Any = info.value.cause.finding  # type: ignore[union-attr]
    assert finding.pattern == "overwritten before read", finding


def test_a_lost_update_whose_two_writes_are_equal_is_still_reported() -> None:
    """Both tasks read 0 and both store 1: equal writes, one increment lost."""

    async def target() -> None:
        box = Box()

        async def bump() -> None:
            seen = box.count
            await asyncio.sleep(0)
            box.count = seen + 1

        await asyncio.gather(bump(), bump())

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=50)
    finding: Any = info.value.cause.finding  # type: ignore[union-attr]
    assert finding.pattern == "lost update", finding
