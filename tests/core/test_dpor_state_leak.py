"""DPOR's record of a run keeps none of the run's objects alive after it.

The record keeps each touched object alive *during* the run, so that an id
is never reused for another object. Kept beyond the run, a weak cache's entry
made in one run was still there in the next: every later run took the cached
path, the check-then-insert race never happened again, and DPOR said
"verified" on buggy code (and ``auto``, with its DPOR member, ran clean).
"""

from __future__ import annotations

import threading
import weakref
from typing import ClassVar

import pytest

import racecheck


class Handle:
    cache: ClassVar[weakref.WeakValueDictionary[str, Handle]] = weakref.WeakValueDictionary()

    @classmethod
    def open(cls, name: str) -> Handle:
        found = cls.cache.get(name)
        if found is not None:
            return found
        made = cls()
        cls.cache[name] = made
        return made


def two_openers() -> None:
    opened: list[Handle] = []

    def open_it() -> None:
        opened.append(Handle.open("db"))

    threads = [threading.Thread(target=open_it) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    same = opened[0] is opened[1]
    opened.clear()  # a failing run's frame must not keep a handle alive
    assert same, "two handles for one name"


@pytest.mark.parametrize("strategy", ["dpor", "auto"])
def test_a_weak_cache_starts_empty_in_every_run_and_the_race_is_found(strategy: str) -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(two_openers, strategy=strategy, schedules=300, seed=0)
    assert "two handles" in str(info.value.cause)
    assert not Handle.cache  # nothing of any run outlives the exploration
