"""DPOR on threads sees accesses only at ``granularity="access"``.

At ``"line"`` granularity the tracer turns no opcode events on, so no access
reaches DPOR's record: every step looked independent, and DPOR said
"verified: all 1 non-equivalent interleavings" of a lost update that random
search finds at once. ``auto`` stops at DPOR's verdict, so it passed too.
"""

from __future__ import annotations

import threading

import pytest

import racecheck


def lost_update() -> None:
    box = [0]

    def bump() -> None:
        value = box[0]
        box[0] = value + 1

    worker = threading.Thread(target=bump)
    worker.start()
    bump()
    worker.join()
    assert box[0] == 2, box


@pytest.mark.parametrize("granularity", ["line", "opcode"])
def test_dpor_never_verifies_what_it_could_not_see(granularity: str) -> None:
    try:
        report = racecheck.check(
            lost_update, strategy="dpor", schedules=200, granularity=granularity, backend="threads"
        )
    except racecheck.RaceFound:
        return  # found: DPOR saw the conflict
    assert not report.verified, report.notes
    assert any("granularity" in note for note in report.notes), report.notes


@pytest.mark.parametrize("granularity", ["line", "opcode"])
def test_auto_finds_the_lost_update_at_every_granularity(granularity: str) -> None:
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(lost_update, schedules=200, granularity=granularity, backend="threads")
