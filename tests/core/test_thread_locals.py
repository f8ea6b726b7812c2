"""Thread-local state under racecheck is what a real program's threads would see.

racecheck runs every schedule's threads on pooled OS threads and the target's
root on its explorer thread. CPython keeps ``threading.local`` namespaces per
OS thread, so without care a new ``Thread`` of schedule 2 found what a thread
of schedule 1 left in its thread-locals (a per-thread connection, a
"set up already" flag), and the root did not see what the caller's thread had
set (a module's thread-local filled at import, in the main thread).

Found by the seventh held-out real-code round: icontract keeps its "contract
check in progress" flags in a module-level ``threading.local``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

import racecheck
from racecheck.errors import StateLeakError

# ------------------------------------------ a new thread has fresh thread-locals

_PER_THREAD = threading.local()


def _two_threads(work: Callable[[], None]) -> None:
    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _counts_its_own_calls() -> None:
    seen: list[int] = []

    def work() -> None:
        _PER_THREAD.calls = getattr(_PER_THREAD, "calls", 0) + 1
        seen.append(_PER_THREAD.calls)

    _two_threads(work)
    assert seen == [1, 1], seen


@pytest.mark.parametrize("strategy", ["auto", "dpor", "random"])
def test_a_new_thread_has_none_of_the_thread_locals_an_earlier_schedule_set(
    strategy: str,
) -> None:
    """Each thread counts its own calls: every real run sees 1 in both. Before the
    fix, a pooled worker kept the count of the schedule before it, and the correct
    program was reported as leaking state between schedules."""
    report = racecheck.check(_counts_its_own_calls, strategy=strategy, schedules=50)
    assert report.schedules_run >= 1


class _Connections:
    """One connection per thread, made on the thread's first use: a lost update
    on the id counter gives two threads the same connection id."""

    def __init__(self) -> None:
        self.next_id = 0

    def connection(self) -> int:
        conn: int | None = getattr(_PER_THREAD, "conn", None)
        if conn is None:
            n = self.next_id
            self.next_id = n + 1
            conn = _PER_THREAD.conn = n
        return conn


def _two_threads_connect() -> None:
    pool = _Connections()
    ids: list[int] = []
    _two_threads(lambda: ids.append(pool.connection()))
    assert len(set(ids)) == 2, ids


@pytest.mark.parametrize("strategy", ["auto", "dpor", "random", "exhaustive"])
def test_a_race_in_per_thread_setup_is_found_after_the_first_schedule(strategy: str) -> None:
    """The natural order passes; every later schedule must run the setup again, as a
    new thread would. Before the fix the workers kept schedule 1's connections:
    auto, random and exhaustive passed 300 schedules without finding the lost
    update, and DPOR stopped with a NondeterminismError."""
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(_two_threads_connect, strategy=strategy, schedules=300)
    assert "AssertionError: [0, 0]" in str(found.value)


class _Stack(threading.local):
    def __init__(self) -> None:
        self.frames: list[str] = []


_STACK = _Stack()


def _pushes_on_a_fresh_stack() -> None:
    depths: list[int] = []

    def work() -> None:
        _STACK.frames.append("call")
        depths.append(len(_STACK.frames))

    _two_threads(work)
    assert depths == [1, 1], depths


def test_a_thread_local_subclass_is_initialised_again_in_each_new_thread() -> None:
    """A ``threading.local`` subclass runs ``__init__`` in every thread that uses it."""
    racecheck.check(_pushes_on_a_fresh_stack, schedules=50)


# ------------------------------------------ the root sees the caller's thread-locals

_SET_UP = threading.local()


def _reads_what_the_caller_set() -> None:
    assert getattr(_SET_UP, "ready", False), "the caller's thread-local is missing"


def test_the_target_sees_the_thread_locals_of_the_thread_that_called_check() -> None:
    """Run plainly, the target runs in the caller's thread and reads what it set;
    under racecheck it runs on the explorer thread. Before the fix this one-thread
    program was a "race found" on schedule 1."""
    _SET_UP.ready = True
    try:
        _reads_what_the_caller_set()
        report = racecheck.check(_reads_what_the_caller_set, schedules=5)
        assert report.schedules_run >= 1
    finally:
        del _SET_UP.ready


def test_what_the_target_writes_to_the_callers_thread_locals_stays_there() -> None:
    """As in a plain call: the root's writes land in the caller's namespace."""
    _SET_UP.runs = 0

    def counts_its_runs() -> None:
        _SET_UP.runs += 1

    try:
        report = racecheck.check(counts_its_runs, schedules=5, leak_check=False)
        assert _SET_UP.runs == report.schedules_run
    finally:
        del _SET_UP.runs


def test_the_threads_of_the_target_do_not_see_the_callers_thread_locals() -> None:
    """Only the root stands in for the caller's thread: a new thread starts empty."""
    _SET_UP.ready = True
    seen: list[bool] = []

    def a_thread_reads() -> None:
        seen.clear()
        thread = threading.Thread(target=lambda: seen.append(hasattr(_SET_UP, "ready")))
        thread.start()
        thread.join()
        assert seen == [False], seen

    try:
        racecheck.check(a_thread_reads, schedules=5)
    finally:
        del _SET_UP.ready


def test_a_leak_through_the_roots_thread_locals_is_still_a_leak() -> None:
    """The root is the same thread in every schedule, as the caller's would be: a
    count kept in its thread-locals is state left by earlier schedules."""
    _SET_UP.runs = 0

    def fails_after_the_first_run() -> None:
        _SET_UP.runs += 1
        assert _SET_UP.runs == 1, _SET_UP.runs

    try:
        with pytest.raises(StateLeakError):
            racecheck.check(fails_after_the_first_run, strategy="random", schedules=5)
    finally:
        del _SET_UP.runs


# ------------------------------------------ but not the caller's event loop or trio run


async def _trio_target() -> None:
    import trio

    await trio.sleep(0)


async def _asyncio_target() -> None:
    import asyncio

    await asyncio.sleep(0)


def test_check_called_inside_a_trio_run_runs_its_own() -> None:
    """trio keeps its run in a thread-local (as sniffio keeps the library's name):
    that is the runner's state, not the program's. Shared with the explorer, a
    check() called from inside ``trio.run`` failed: "Attempted to call run() from
    inside a run()"."""
    trio = pytest.importorskip("trio")
    ran: list[int] = []

    async def main() -> None:
        ran.append(racecheck.check(_trio_target, backend="trio", schedules=3).schedules_run)
        ran.append(racecheck.check(_asyncio_target, schedules=3).schedules_run)

    trio.run(main)
    assert len(ran) == 2 and all(ran), ran


def test_check_called_inside_an_asyncio_run_runs_its_own() -> None:
    import asyncio

    async def main() -> list[int]:
        return [
            racecheck.check(_asyncio_target, schedules=3).schedules_run,
            racecheck.check(_trio_target, backend="trio", schedules=3).schedules_run,
        ]

    ran = asyncio.run(main())
    assert all(ran), ran
