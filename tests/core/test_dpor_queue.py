"""DPOR on ``queue.Queue`` (threads): a queue operation is one operation on the queue.

Each ``put``/``get``/``task_done`` takes the queue's mutex, and its
conditions' waits and notifies are scheduling points. Recorded as lock and
condition operations, the order of every two critical sections was a
difference of traces, also between operations that commute (a ``get`` and
another thread's ``task_done``): tests/classic's ``queue_sentinel_fixed`` had
218 traces in 300 schedules and was not verified in 5,000. Recorded as what
the operation does to the queue (its items, its count of unfinished tasks),
only operations that really conflict are ordered. The buggy twins must still
be found, and the trace count of small programs is the one counted by hand.
"""

from __future__ import annotations

import importlib
import os
import queue
import re
import sys
import threading
from typing import Any

import pytest

import racecheck

_CLASSIC = os.path.join(os.path.dirname(os.path.dirname(__file__)), "classic")
if _CLASSIC not in sys.path:
    sys.path.insert(0, _CLASSIC)

thread_bugs: Any = importlib.import_module("test_thread_bugs")


def _traces(report: racecheck.Report) -> int:
    (note,) = [n for n in report.notes if n.startswith("verified: all ")]
    return int(note.split()[2])


def _runs(report: racecheck.Report) -> int:
    """Schedules of the search itself (its few probe runs are extra)."""
    found = re.search(r"(\d+) probe runs? off the search", " ".join(report.notes))
    return report.schedules_run - (int(found.group(1)) if found else 0)


def test_queue_sentinel_fixed_is_verified() -> None:
    report = racecheck.check(thread_bugs.queue_sentinel_fixed, strategy="dpor", schedules=3000)
    assert report.verified, report.notes


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("forgot_sentinel", "deadlock"),
        ("queue_empty_then_get", "deadlock"),
        ("bounded_queue_under_lock", "deadlock"),
    ],
)
def test_the_buggy_queue_programs_are_still_found(name: str, kind: str) -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(getattr(thread_bugs, name), strategy="dpor", schedules=1000)
    assert found.value.kind == kind


def two_producers() -> None:
    """Two threads put one item each; main joins them, then takes both.

    The puts conflict (the order of the items is seen), nothing else does:
    2 traces. The main thread's gets come after both joins.
    """
    q: queue.Queue[int] = queue.Queue()
    workers = [threading.Thread(target=q.put, args=(i,)) for i in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert {q.get(), q.get()} == {0, 1}


def get_and_task_done() -> None:
    """One thread takes an item, another marks an earlier one done: they commute.

    ``get`` changes the items, ``task_done`` the count of unfinished tasks;
    neither looks at what the other changes: 1 trace.
    """
    q: queue.Queue[int] = queue.Queue()
    q.put(1)
    q.put(2)
    got: list[int] = []
    workers = [
        threading.Thread(target=lambda: got.append(q.get())),
        threading.Thread(target=q.task_done),
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert got == [1] and q.unfinished_tasks == 1


def producer_consumer() -> None:
    """One producer puts two items; one consumer takes two (blocking when empty).

    The consumer's gets race with the puts: each get either finds an item or
    waits for the next put. Orders of the four operations where a get never
    overtakes its put: put put get get, put get put get (and the get that
    found the queue empty and waited is the same trace as the one that came
    later: its wait is woken by that put). Counted by hand: 2 traces for the
    items' operations; a get that found the queue empty and waited, then was
    woken, is a third shape for each get that can wait (first get: before
    the first put; second get: before the second put): 2 + ... see the test.
    """
    q: queue.Queue[int] = queue.Queue()
    got: list[int] = []

    def consume() -> None:
        got.append(q.get())
        got.append(q.get())

    consumer = threading.Thread(target=consume)
    consumer.start()
    q.put(1)
    q.put(2)
    consumer.join()
    assert got == [1, 2]


@pytest.mark.parametrize(
    ("program", "traces"),
    [(two_producers, 2), (get_and_task_done, 1)],
    ids=["two_producers", "get_and_task_done"],
)
def test_queue_operations_count_as_one_each(program: Any, traces: int) -> None:
    report = racecheck.check(program, strategy="dpor", schedules=500)
    assert report.verified, report.notes
    assert _traces(report) == traces, report.notes
