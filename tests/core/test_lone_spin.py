"""A thread that spins while it is the only actor alive ends in a step-limit.

Alone, a thread's scheduling points are no decisions, and on 3.11 the tracer
stops watching their opcodes; the steps must still be counted, or a spin loop
in a single-threaded target never reaches ``max_steps`` and the watchdog ends
the run as "blocked in C", which points the user at the wrong cause (3.12+
counted them all along).
"""

from __future__ import annotations

import pytest

import racecheck


def spins_alone() -> None:
    counter = {"n": 0}
    while True:
        counter["n"] += 1


@pytest.mark.parametrize("detect", [False, True])
def test_a_root_thread_spinning_alone_reaches_the_step_limit(detect: bool) -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(spins_alone, schedules=3, max_steps=2000, detect=detect)
    assert info.value.kind == "step-limit"
    assert "max_steps=2000" in str(info.value)
    assert "blocked in C" not in str(info.value)


def finite_work_alone() -> None:
    counter = {"n": 0}
    for _ in range(500):
        counter["n"] += 1
    assert counter["n"] == 500


def test_lone_work_under_the_bound_runs_clean() -> None:
    report = racecheck.check(finite_work_alone, schedules=3, max_steps=2000)
    assert report.schedules_run >= 1
