"""Slice stores and deletes beyond lists (issue 14): bytearray, array.array, and a slice
object handed to a subscript at run time (a user class's ``__setitem__`` passing its key on,
``lst[s]`` with ``s = slice(...)``).

A slice store or delete rewrites the sequence as a whole, whatever the sequence.
"""

from __future__ import annotations

import array
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


def _threads(*targets: Callable[[], None]) -> None:
    workers = [threading.Thread(target=t) for t in targets]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


class Buffer:
    """A user sequence that hands its key (an int or a slice) to the list behind it."""

    def __init__(self, data: list[int]) -> None:
        self._data = data

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._data[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._data[key]

    def __len__(self) -> int:
        return len(self._data)


def _make(kind: str) -> Any:
    if kind == "bytearray":
        return bytearray(b"abcd")
    if kind == "array":
        return array.array("b", b"abcd")
    return Buffer(list(b"abcd"))


def _chunk(kind: str, data: bytes) -> Any:
    if kind == "bytearray":
        return data
    if kind == "array":
        return array.array("b", data)
    return list(data)


KINDS = ["bytearray", "array", "user-class"]


def _unlocked(kind: str) -> Callable[[], None]:
    def target() -> None:
        seq = _make(kind)

        def prepend() -> None:
            seq[:0] = _chunk(kind, b"z")

        def drop_first() -> None:
            snapshot = seq[:]
            seq[:] = snapshot[1:]

        _threads(prepend, drop_first)

    return target


def _locked(kind: str) -> Callable[[], None]:
    def target() -> None:
        seq = _make(kind)
        lock = threading.Lock()

        def prepend() -> None:
            with lock:
                seq[:0] = _chunk(kind, b"z")

        def drop_first() -> None:
            with lock:
                snapshot = seq[:]
                seq[:] = snapshot[1:]

        _threads(prepend, drop_first)

    return target


@pytest.mark.parametrize("kind", KINDS)
def test_slice_copy_then_store_against_another_threads_store_is_flagged(kind: str) -> None:
    # each slice operation is one atomic C call; the copy-then-store pair is not
    finding = detect(_unlocked(kind), backend="threads")
    actions = [a.action for a in finding.accesses]
    assert "copied a slice of" in actions and "wrote a slice of" in actions, finding
    assert len({a.actor for a in finding.accesses}) == 2, finding


@pytest.mark.parametrize("kind", KINDS)
def test_slice_copy_and_store_under_one_lock_are_clean(kind: str) -> None:
    clean(_locked(kind), backend="threads")


def _copy_then_replace(kind: str) -> Callable[[], Any]:
    async def target() -> None:
        seq = _make(kind)

        async def rewrite() -> None:
            snapshot = seq[:]
            await asyncio.sleep(0)
            seq[:] = snapshot[1:]

        async def prepend() -> None:
            seq[:0] = _chunk(kind, b"z")

        await asyncio.gather(rewrite(), prepend())

    return target


@pytest.mark.parametrize("kind", KINDS)
def test_slice_copy_then_slice_store_across_an_await_is_a_lost_update(kind: str) -> None:
    finding = detect(_copy_then_replace(kind))
    assert finding.pattern == "lost update", finding
    assert [a.action for a in finding.accesses] == [
        "copied a slice of",
        "wrote a slice of",
        "wrote a slice of",
    ], finding


def _copy_then_replace_same_step(kind: str) -> Callable[[], Any]:
    async def target() -> None:
        seq = _make(kind)

        async def rewrite() -> None:
            await asyncio.sleep(0)
            snapshot = seq[:]
            seq[:] = snapshot[1:]

        async def prepend() -> None:
            seq[:0] = _chunk(kind, b"z")

        await asyncio.gather(rewrite(), prepend())

    return target


@pytest.mark.parametrize("kind", KINDS)
def test_slice_copy_and_store_in_one_step_is_clean(kind: str) -> None:
    clean(_copy_then_replace_same_step(kind))


def _slice_object_key() -> None:
    items = [1, 2, 3, 4]
    head = slice(0, 0)
    whole = slice(None)

    def prepend() -> None:
        items[head] = [0]

    def drop_first() -> None:
        snapshot = items[whole]
        del items[whole]
        items.extend(snapshot[1:])

    _threads(prepend, drop_first)


def test_a_slice_object_as_the_key_is_a_slice_access() -> None:
    finding = detect(_slice_object_key, backend="threads")
    actions = [a.action for a in finding.accesses]
    assert "copied a slice of" in actions, finding
    assert "wrote a slice of" in actions or "deleted a slice of" in actions, finding
