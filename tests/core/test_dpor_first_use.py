"""DPOR on code whose first run fills a cache that later runs find full.

Real code parses, compiles and caches on first use (loguru's format parsing, a
module-level dict of compiled patterns): the first run of an exploration runs
lines that no later run runs. DPOR builds its search tree from the first run,
so its next directed run could not follow that tree, and ``strategy="dpor"``
stopped with a ``NondeterminismError`` traceback (loguru 0.7.2 with
``trace_packages=["loguru"]``, a held-out real-code round, 2026-11-28); under
``auto`` the DPOR member was dropped as "not deterministic". Now the search
starts again, once, from the warm state; what it proves is about the warm
state only, so a finished search is not called verified.
"""

from __future__ import annotations

import threading

import pytest

import racecheck
from racecheck.strategies.exhaustive import NondeterminismError

_parsed: dict[str, str] = {}
_calls = [0]


def _parse(fmt: str) -> str:
    # filled on first use: only the first run of a process takes this path
    if fmt not in _parsed:
        parts = []
        for ch in fmt:
            parts.append(ch)
        _parsed[fmt] = "".join(parts)
    return _parsed[fmt]


def _two_workers(work: object) -> None:
    workers = [threading.Thread(target=work) for _ in range(2)]  # type: ignore[arg-type]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def _cached_then_counted(check_count: bool) -> None:
    box = {"n": 0}

    def work() -> None:
        _parse("{message}")
        seen = box["n"]
        box["n"] = seen + 1

    _two_workers(work)
    if check_count:
        assert box["n"] == 2, "lost update"


@pytest.fixture(autouse=True)
def cold_cache() -> None:
    _parsed.clear()
    _calls[0] = 0


def test_dpor_finds_a_lost_update_after_a_first_use_cache() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(lambda: _cached_then_counted(True), strategy="dpor", schedules=200)
    assert "lost update" in str(info.value.cause)


def test_dpor_restarted_after_a_first_use_cache_is_not_verified() -> None:
    report = racecheck.check(lambda: _cached_then_counted(False), strategy="dpor", schedules=200)
    assert not report.verified
    assert not report.exhausted
    assert any("one-time initialisation" in note for note in report.notes), report.notes


def test_dpor_still_stops_on_a_program_that_never_repeats_itself() -> None:
    """A path that changes with every run is not first-use work: that still stops."""

    def target() -> None:
        _calls[0] += 1
        extra = _calls[0]
        box = {"n": 0}

        def work() -> None:
            for _ in range(extra % 3):
                box["n"] += 0
            box["n"] += 1

        _two_workers(work)

    with pytest.raises(NondeterminismError):
        racecheck.check(target, strategy="dpor", schedules=200)
