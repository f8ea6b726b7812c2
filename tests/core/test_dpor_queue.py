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
from collections.abc import Callable
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


def _start_all(*bodies: Callable[[], object]) -> None:
    """Start the threads and return: the main thread adds no conflicts of its own
    (as in test_dpor_trace_count.py; a join would cut its steps differently
    in different orders, which counts apart)."""
    for body in bodies:
        threading.Thread(target=body).start()


def two_producers() -> None:
    """Two threads put one item each: the puts conflict (the items' order is seen), 2 traces."""
    q: queue.Queue[int] = queue.Queue()
    _start_all(lambda: q.put(1), lambda: q.put(2))


def three_producers() -> None:
    """Three threads put one item each: every order of the puts, 3! = 6 traces."""
    q: queue.Queue[int] = queue.Queue()
    _start_all(lambda: q.put(1), lambda: q.put(2), lambda: q.put(3))


def get_and_task_done() -> None:
    """One thread takes an item, another marks an earlier one done: they commute, 1 trace.

    ``get`` changes the items, ``task_done`` the count of unfinished tasks;
    neither looks at what the other changes.
    """
    q: queue.Queue[int] = queue.Queue()
    q.put(1)
    q.put(2)
    _start_all(q.get, q.task_done)


def put_and_qsize() -> None:
    """A put, a qsize and a task_done: 2 traces.

    The size is read before or after the put (2). The task_done commutes
    with the qsize, and with the put too: the count of unfinished tasks goes
    1 -> 2 -> 1 or 1 -> 0 -> 1, and at 0 nobody waits in ``join`` (its
    ``notify_all`` wakes nobody) and no ``task_done`` could raise.
    """
    q: queue.Queue[int] = queue.Queue()
    q.put(0)
    sizes: list[int] = []
    _start_all(lambda: q.put(1), lambda: sizes.append(q.qsize()), q.task_done)


@pytest.mark.parametrize(
    ("program", "traces"),
    [(two_producers, 2), (three_producers, 6), (get_and_task_done, 1), (put_and_qsize, 2)],
    ids=["two_producers", "three_producers", "get_and_task_done", "put_and_qsize"],
)
def test_queue_operations_count_as_one_each(program: Any, traces: int) -> None:
    report = racecheck.check(program, strategy="dpor", schedules=500)
    assert report.verified, report.notes
    assert _traces(report) == traces, report.notes
