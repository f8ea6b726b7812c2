"""Executor work (``asyncio.to_thread``, ``run_in_executor``) is explored on real threads too.

The asyncio backend runs executor work inline on the loop's thread, as one
atomic step. Alone, that hid every race *inside* the work (a lost update
between two ``to_thread`` calls passed in every schedule, silently) and
turned a worker that waits for the loop (janus' ``sync_q.get()``) into a
stall. An ``async def`` target that uses an executor is now explored on the
threads backend as well, where the work is a thread racecheck schedules line
by line next to the loop's tasks; a stall inside inline work moves the
exploration there at once.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import racecheck


async def lost_update_between_workers() -> None:
    counter = {"n": 0}

    def bump() -> None:
        for _ in range(2):
            seen = counter["n"]
            counter["n"] = seen + 1

    await asyncio.gather(asyncio.to_thread(bump), asyncio.to_thread(bump))
    assert counter["n"] == 4, counter


async def locked_workers() -> None:
    counter = {"n": 0}
    lock = threading.Lock()

    def bump() -> None:
        for _ in range(2):
            with lock:
                seen = counter["n"]
                counter["n"] = seen + 1

    await asyncio.gather(asyncio.to_thread(bump), asyncio.to_thread(bump))
    assert counter["n"] == 4, counter


async def worker_waits_for_the_loop() -> None:
    cond = threading.Condition()
    items: list[int] = []

    def consumer() -> int:
        with cond:
            while not items:
                cond.wait()
            return items.pop()

    worker = asyncio.create_task(asyncio.to_thread(consumer))
    await asyncio.sleep(0.01)
    with cond:
        items.append(1)
        cond.notify()
    assert await worker == 1


async def executor_result_and_error() -> None:
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, sum, [1, 2]) == 3

    def boom() -> None:
        raise KeyError("from the worker")

    with pytest.raises(KeyError):
        await asyncio.to_thread(boom)


async def lost_update_around_to_thread() -> None:
    state = {"hits": 0}

    async def handle() -> None:
        hits = state["hits"]
        await asyncio.to_thread(int)
        state["hits"] = hits + 1

    await asyncio.gather(handle(), handle(), handle())
    assert state["hits"] == 3, state


def sync_target_running_a_loop() -> None:
    asyncio.run(worker_waits_for_the_loop())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_race_between_two_to_thread_workers_is_found_and_replays(seed: int) -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(lost_update_between_workers, schedules=2000, seed=seed)
    assert found.value.kind == "exception"
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(lost_update_between_workers, found.value.schedule)
    assert again.value.kind == "exception"


def test_locked_workers_are_clean() -> None:
    report = racecheck.check(locked_workers, schedules=300)
    assert report.schedules_run > 1


def test_the_asyncio_parts_refusal_says_why_in_its_own_note() -> None:
    """The inline part covers its space, and is refused: the reason was a warning that
    the merged report drops, so its note pointed "below" at nothing that said why."""
    report = racecheck.check(locked_workers, strategy="dpor", schedules=30)
    [asyncio_note] = [note for note in report.notes if note.startswith("asyncio: ")]
    assert "non-equivalent interleavings explored" in asyncio_note, report.notes
    assert asyncio_note.startswith("asyncio: not verified (executor work ran inline"), asyncio_note
    assert not report.warnings
    assert not any("see below" in note for note in report.notes), report.notes


def test_a_worker_that_waits_for_the_loop_is_no_deadlock() -> None:
    # A sync target that runs its own loop: the worker is a thread from the start.
    report = racecheck.check(sync_target_running_a_loop, schedules=100, watchdog=2)
    assert report.schedules_run > 1
    assert report.backend == "threads"


def _threads_inside(function_name: str) -> list[str]:
    """Threads whose stack is inside ``function_name`` right now."""
    import sys

    stuck = []
    for ident, frame in sys._current_frames().items():
        walk: Any = frame
        while walk is not None:
            if walk.f_code.co_name == function_name:
                stuck.append(str(ident))
                break
            walk = walk.f_back
    return stuck


def test_an_async_worker_that_waits_for_the_loop_moves_to_threads_at_once() -> None:
    """Inline work that would wait for a lock moves the exploration to threads, now.

    Nobody else can release a lock that inline work waits for: the loop it
    blocks is the only other party. It used to block the explorer thread in C
    until the watchdog fired, and that thread stayed blocked for good.
    """
    report = racecheck.check(worker_waits_for_the_loop, schedules=100, watchdog=60)
    assert report.backend == "threads"
    assert "ran on the threads backend" in report.notes[0]
    assert "waits for a lock" in report.notes[0]
    assert _threads_inside("consumer") == []


def test_named_asyncio_backend_says_the_worker_waits_for_the_loop() -> None:
    with pytest.raises(racecheck.StuckError) as stuck:
        racecheck.check(worker_waits_for_the_loop, schedules=100, watchdog=60, backend="asyncio")
    message = str(stuck.value)
    assert "\n" not in message
    assert "backend='threads'" in message
    assert _threads_inside("consumer") == []


def test_executor_results_and_errors_come_back() -> None:
    report = racecheck.check(executor_result_and_error, schedules=50)
    assert report.schedules_run > 1


def test_unwinding_a_failed_run_logs_nothing_from_the_executor(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A failed run unwinds the executor's idle workers; that is racecheck's doing, not news."""
    with caplog.at_level("DEBUG"), pytest.raises(racecheck.RaceFound):
        racecheck.check(lost_update_around_to_thread, schedules=2000, seed=0)
    assert not [r for r in caplog.records if "Exception in worker" in r.getMessage()]


@pytest.mark.parametrize("strategy", ["dpor", "random"])
def test_a_token_found_while_recording_accesses_replays_plainly(strategy: str) -> None:
    """Naming locks for the access record must not change the run it records.

    A lock is named by creation order only when someone asks (the detector,
    DPOR's record, a trace); threads hash by their own creation order, so
    that the executor's shutdown joins its workers in the same order whether
    or not anything asked.
    """
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(lost_update_around_to_thread, strategy=strategy, schedules=2000)
    for _ in range(2):
        with pytest.raises(racecheck.RaceFound) as again:
            racecheck.replay(lost_update_around_to_thread, found.value.schedule)
        assert again.value.kind == found.value.kind


def test_a_marked_async_test_with_executor_work_fails_and_its_token_replays(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_workers="""
        import asyncio
        import pytest


        @pytest.mark.racecheck(schedules=500)
        async def test_two_workers():
            counter = {"n": 0}

            def bump():
                for _ in range(2):
                    seen = counter["n"]
                    counter["n"] = seen + 1

            await asyncio.gather(asyncio.to_thread(bump), asyncio.to_thread(bump))
            assert counter["n"] == 4, counter
        """
    )
    first = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:asyncio")
    first.assert_outcomes(failed=1)
    text = first.stdout.str()
    token = next(
        word
        for word in text.replace("=", " ").replace("'", " ").split()
        if word.startswith("rc1:threads:")
    )
    again = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:asyncio", f"--racecheck-replay={token}"
    )
    again.assert_outcomes(failed=1)
    assert "counter" in again.stdout.str()
