"""DPOR is systematic: a saturation window must never cut it short.

Saturation is a claim about a *sampling* strategy ("a further schedule is new
with probability below ..."). DPOR never repeats an interleaving by
construction, and stopping it early throws away the one thing it can give:
"verified". With interleaving coverage on (as ``racecheck run`` has it), many
DPOR schedules can share one per-object ordering of accesses, which once made
the saturation watch stop DPOR after its window.
"""

from __future__ import annotations

import threading

import racecheck


def _two_steps_under_one_lock() -> None:
    lock = threading.Lock()
    totals = {"a": 0, "b": 0}

    def step(key: str) -> None:
        for _ in range(3):
            with lock:
                totals[key] += 1

    threads = [threading.Thread(target=step, args=(key,)) for key in totals]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert totals == {"a": 3, "b": 3}


def test_dpor_with_coverage_is_never_stopped_by_saturation() -> None:
    report = racecheck.check(
        _two_steps_under_one_lock, strategy="dpor", coverage=True, saturation=5, schedules=2000
    )
    assert not report.saturated, report
    assert not any(note.startswith("saturated") for note in report.notes), report.notes
    assert report.verified, report
