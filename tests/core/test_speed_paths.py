"""racecheck's fast paths change how fast a schedule runs, never what it sees.

On 3.11 the scheduler's entry points (Thread.__init__/start/join,
Lock.acquire/release) switch the thread's trace function off for their own
work and put it back (see racecheck.backends.threads.runtime.PLAIN_TRACES).
These tests run real threads under real explorations: the user's code must
keep its trace function, and keep its scheduling points, after each of them.
"""

from __future__ import annotations

import sys
import threading

import pytest

import racecheck


class _Box:
    def __init__(self) -> None:
        self.value = 0
        self.lock = threading.Lock()
        self.traces: list[bool] = []


def _lost_update_after_locking() -> None:
    box = _Box()

    def worker() -> None:
        before = sys.gettrace()
        with box.lock:
            pass
        box.lock.acquire()
        box.lock.release()
        box.traces.append(sys.gettrace() is before)
        current = box.value  # unlocked read-modify-write: racecheck must still see it
        box.value = current + 1

    threads = [threading.Thread(target=worker) for _ in range(2)]
    before = sys.gettrace()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    box.traces.append(sys.gettrace() is before)
    assert all(box.traces), "a thread lost its trace function inside racecheck"
    assert box.value == 2


def test_the_race_after_lock_operations_is_still_found() -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(_lost_update_after_locking, strategy="random", schedules=200, seed=0)
    # the lost update, not a lost tracer
    assert "assert 1 == 2" in str(found.value) or "box.value == 2" in str(found.value)


def test_the_found_schedule_replays() -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(_lost_update_after_locking, strategy="random", schedules=200, seed=0)
    with pytest.raises(AssertionError):
        racecheck.replay(_lost_update_after_locking, found.value.schedule)


def test_no_trace_function_is_left_behind() -> None:
    before = sys.gettrace()
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(_lost_update_after_locking, strategy="random", schedules=200, seed=0)
    assert sys.gettrace() is before
    from racecheck.backends.threads.runtime import PLAIN_TRACES

    assert not PLAIN_TRACES, "racecheck's trace functions outlived the exploration"


class _Finalized:
    """Says when it was finalised, relative to the schedules."""

    def __init__(self, events: list[str], run: int) -> None:
        self.events = events
        self.run = run

    def __del__(self) -> None:
        self.events.append(f"freed {self.run}")


def test_a_runs_threads_are_finalised_between_schedules() -> None:
    # racecheck frees a run's threads by reference counting (they no longer
    # form cycles with its bookkeeping): whatever they hold must still be
    # finalised between schedules, as the collection between schedules
    # always guaranteed, never inside one (when a pooled worker next wakes).
    events: list[str] = []
    runs = [0]

    def target() -> None:
        runs[0] += 1
        run = runs[0]
        events.append("start")
        threads = [threading.Thread(target=lambda: None) for _ in range(2)]
        for thread in threads:
            thread.payload = _Finalized(events, run)  # type: ignore[attr-defined]
            thread.start()
        for thread in threads:
            thread.join()
        del threads, thread
        events.append("end")

    racecheck.check(target, strategy="random", schedules=6, seed=0, saturation=0)
    inside = False
    freed = 0
    for event in events:
        if event in ("start", "end"):
            inside = event == "start"
        else:
            freed += 1
            assert not inside, f"{event} inside a schedule: {events}"
    assert freed >= 2 * (runs[0] - 1), events
