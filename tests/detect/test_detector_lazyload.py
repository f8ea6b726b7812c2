"""A database loaded lazily on first use, shared by threads (pycountry 18.5.20's shape).

The real-library round (``tests/realcode/test_real_pycountry.py``) runs the
library itself; this is its shape without it. Each database is made at import,
so in the fixed version its lock is too: made before the run and adopted by
racecheck, not made by the code under test. The buggy load resets the indices
another thread is filling; the fix loads under the lock and checks again
under it (double-checked locking), which must stay clean.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

import racecheck


class _Database:
    def __init__(self, rows: list[dict[str, str]], locked: bool) -> None:
        self.rows = rows
        self.locked = locked
        self.loaded = False
        self.lock = threading.Lock()  # made at import, like pycountry's

    def _load(self) -> None:
        if self.locked and self.loaded:
            return
        self.index: dict[str, dict[str, str]] = {}  # <- reset
        for row in self.rows:
            self.index[row["code"]] = row
        self.loaded = True

    def get(self, code: str) -> dict[str, str]:
        if not self.loaded:
            if self.locked:
                with self.lock:
                    self._load()
            else:
                self._load()
        return self.index[code]


_ROWS = [{"code": c, "name": c.lower()} for c in ("BUMM", "CSHH", "DDDE", "SUHH")]
BUGGY = _Database(_ROWS, locked=False)
FIXED = _Database(_ROWS, locked=True)


def _look_up_from_two_threads(db: _Database) -> None:
    db.loaded = False  # each schedule starts as a fresh process would
    names: dict[str, str] = {}

    def look_up(code: str) -> None:
        names[code] = db.get(code)["name"]

    workers = [threading.Thread(target=look_up, args=(c,)) for c in ("BUMM", "SUHH")]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def test_lazy_load_without_a_lock_is_a_data_race() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(
            lambda: _look_up_from_two_threads(BUGGY),
            detect=True,
            schedules=100,
            seed=0,
            backend="threads",
        )
    finding: Any = info.value.cause.finding
    assert finding.kind == "data-race", finding
    assert {a.target for a in finding.accesses} <= {"self.index", "self.loaded"}, finding
    assert len({a.actor for a in finding.accesses}) == 2, finding


def test_lazy_load_checked_again_under_an_import_time_lock_is_clean() -> None:
    report = racecheck.check(
        lambda: _look_up_from_two_threads(FIXED),
        detect=True,
        schedules=200,
        seed=0,
        backend="threads",
    )
    assert report.schedules_run >= 1
