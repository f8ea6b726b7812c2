"""Attributes stored in ``__slots__`` are state like any other (issue 14).

Found on real code: aiorwlock 1.5.1 gave its lock ``__slots__``, and the
detector, reading instance state through ``__dict__``, saw none of its
accesses (a slotted instance has no ``__dict__``; a slot is a data
descriptor, which the detector took for a property's setter). Any library
that declares ``__slots__`` for speed was invisible.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

import racecheck

DETECTOR_KINDS = ("atomicity-violation", "data-race")


def detect(target: Callable[[], Any], schedules: int = 150, **options: Any) -> Any:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=schedules, seed=0, **options)
    assert info.value.kind in DETECTOR_KINDS, info.value
    return info.value.cause.finding  # type: ignore[union-attr]


def clean(target: Callable[[], Any], schedules: int = 100, **options: Any) -> None:
    # no RaceFound is the verdict; the run must have explored
    report = racecheck.check(target, detect=True, schedules=schedules, seed=0, **options)
    assert report.schedules_run >= 1


class Counter:
    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


class Mixed(Counter):
    """A subclass without ``__slots__``: it has a ``__dict__``, ``n`` is still a slot."""

    def __init__(self) -> None:
        super().__init__()
        self.label = "mixed"


def _threads(*targets: Callable[[], None]) -> None:
    workers = [threading.Thread(target=t) for t in targets]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def _increments(make: Callable[[], Counter], lock: threading.Lock | None) -> Callable[[], None]:
    def target() -> None:
        counter = make()

        def bump() -> None:
            if lock is None:
                counter.n += 1
            else:
                with lock:
                    counter.n += 1

        _threads(bump, bump)

    return target


@pytest.mark.parametrize("make", [Counter, Mixed], ids=["slots", "slots-and-dict"])
def test_unlocked_increment_of_a_slot_between_threads_is_a_data_race(
    make: Callable[[], Counter],
) -> None:
    finding = detect(_increments(make, None), backend="threads")
    assert finding.kind == "data-race", finding
    assert all(a.target == "counter.n" for a in finding.accesses), finding


@pytest.mark.parametrize("make", [Counter, Mixed], ids=["slots", "slots-and-dict"])
def test_locked_increment_of_a_slot_is_clean(make: Callable[[], Counter]) -> None:
    clean(_increments(make, threading.Lock()), backend="threads")


class Pool:
    __slots__ = ("conn", "opened")

    def __init__(self) -> None:
        self.conn: object | None = None
        self.opened = 0

    async def connect(self) -> object:
        if self.conn is None:
            await asyncio.sleep(0)  # the connection handshake
            self.opened += 1
            self.conn = object()
        return self.conn


async def _lazy_connect() -> None:
    pool = Pool()
    await asyncio.gather(pool.connect(), pool.connect())


def test_check_then_act_on_a_slot_across_an_await_is_flagged() -> None:
    finding = detect(_lazy_connect)
    assert finding.kind == "atomicity-violation", finding
    assert finding.accesses[-1].target.startswith("self."), finding


async def _connect_under_a_lock() -> None:
    pool = Pool()
    lock = asyncio.Lock()

    async def connect() -> None:
        async with lock:
            await pool.connect()

    await asyncio.gather(connect(), connect())


def test_check_then_act_on_a_slot_under_a_lock_is_clean() -> None:
    clean(_connect_under_a_lock)


def _unset_slot_read() -> None:
    """Reading a slot never set raises AttributeError: nothing to record, no crash."""
    counter = Counter.__new__(Counter)

    def peek() -> None:
        try:
            counter.n  # noqa: B018
        except AttributeError:
            pass

    _threads(peek, peek)


def test_reading_an_unset_slot_is_clean() -> None:
    clean(_unset_slot_read, backend="threads")


class Registry:
    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[int] = [1, 2]


def _iterate_against_append() -> None:
    registry = Registry()
    seen: list[int] = []

    def scan() -> None:
        for x in registry.items:
            seen.append(x)

    def add() -> None:
        registry.items.append(3)

    _threads(scan, add)


def test_a_container_reached_through_a_slot_is_watched() -> None:
    # the operand ``registry.items`` is read through the slot to find the list
    finding = detect(_iterate_against_append, backend="threads")
    assert finding.kind == "data-race", finding
    actions = sorted(a.action for a in finding.accesses)
    assert actions == ["called .append() on", "iterated"], finding
