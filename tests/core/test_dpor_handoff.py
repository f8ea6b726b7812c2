"""DPOR on a loop inside a thread: a ``call_soon_threadsafe`` is a hand-off, one operation.

Another thread's ``call_soon_threadsafe`` writes the loop's ready queue, and
the loop's thread reads that queue at every look. Recorded as a write of the
whole queue and a read of it, every hand-off raced the look that ran it; the
reversal ran the loop first, which found nothing and went idle in
``select()``, a wait that only the hand-off's self-pipe write ends: the same
execution, and a run that ended with only sleeping actors enabled. The look
that runs a hand-off now reads its item, an order after the call that
queued it (``accesses.StepLog.callback_look``; the queue is an append log:
see tests/core/test_dpor_loop_queue.py).

The relaxation must keep every real order: what the callback does against
what the caller does after handing it off, in both directions, and a plain
``call_soon`` from another thread (which wakes nobody) stays a race with the
loop's look.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest

import racecheck


def blocked_runs(notes: list[str]) -> int:
    """Runs that ended with every enabled actor asleep (DPOR's note counts them)."""
    for note in notes:
        for part in note.split("; "):
            if "ended in a state whose continuations were all explored" in part:
                return int(part.split()[0])
    return 0


def traces(report: racecheck.Report) -> int:
    (note,) = [n for n in report.notes if n.startswith("verified: all ")]
    return int(note.split()[2])


class Box:
    def __init__(self) -> None:
        self.order: list[str] = []


def _hand_off(check: Callable[[list[str]], None]) -> Callable[[], None]:
    """The main thread hands a callback to a loop thread, then appends, then stops it."""

    def target() -> None:
        box = Box()
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever)
        thread.start()

        def on_loop() -> None:
            box.order.append("loop")

        loop.call_soon_threadsafe(on_loop)
        box.order.append("main")
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
        check(box.order)

    return target


def _both_ran(order: list[str]) -> None:
    assert sorted(order) == ["loop", "main"], order


def _main_first(order: list[str]) -> None:
    assert order == ["main", "loop"], "the loop ran the callback before main appended"


def _loop_first(order: list[str]) -> None:
    assert order == ["loop", "main"], "main appended before the loop ran the callback"


def test_a_hand_off_to_a_loop_thread_is_not_a_race_with_the_look_that_runs_it() -> None:
    """Two traces (the two appends in either order), no run ends blocked.

    Before: 6 runs, 3 "traces" (the look before or after each hand-off) and
    2 runs that ended with only sleeping actors enabled.
    """
    report = racecheck.check(_hand_off(_both_ran), strategy="dpor", schedules=100)
    assert report.verified, report.notes
    assert traces(report) == 2, report.notes
    assert blocked_runs(report.notes) == 0, report.notes


@pytest.mark.parametrize("check", [_main_first, _loop_first], ids=lambda c: c.__name__)
def test_what_the_callback_does_still_races_what_the_caller_does_next(
    check: Callable[[list[str]], None],
) -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(_hand_off(check), strategy="dpor", schedules=100)
    assert "before" in str(found.value.cause)


def test_a_plain_call_soon_from_another_thread_is_still_a_lost_wakeup() -> None:
    """``call_soon`` off the loop's thread wakes nobody: the idle loop never runs it.

    DPOR must still try the order where the loop went idle first: the
    callback is then never run (the main thread's wait times out).
    """

    def target() -> None:
        box = Box()
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever)
        thread.start()
        ran = threading.Event()

        def on_loop() -> None:
            box.order.append("loop")
            ran.set()

        loop.call_soon(on_loop)  # not thread-safe: no self-pipe write
        woke = ran.wait(timeout=1.0)
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
        assert woke, "the loop never ran the callback: it slept through a plain call_soon"

    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(target, strategy="dpor", schedules=200)
    assert "slept through" in str(found.value.cause)


def _submit(check: Callable[[list[str]], None]) -> Callable[[], None]:
    """As _hand_off, with a coroutine handed over by ``asyncio.run_coroutine_threadsafe``
    (main waits for its result before it stops the loop)."""

    def target() -> None:
        box = Box()
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever)
        thread.start()

        async def on_loop() -> None:
            box.order.append("loop")

        future = asyncio.run_coroutine_threadsafe(on_loop(), loop)
        box.order.append("main")
        future.result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
        check(box.order)

    return target


def test_run_coroutine_threadsafe_is_a_hand_off_too() -> None:
    """Its only change to the loop is its ``call_soon_threadsafe``: 2 traces, none blocked.

    Called from traced code, library code writes every argument it is handed,
    so the loop was written as a whole and raced every look of the loop's
    thread (accesses._NARROW_WRITES).
    """
    report = racecheck.check(_submit(_both_ran), strategy="dpor", schedules=100)
    assert report.verified, report.notes
    assert traces(report) == 2, report.notes
    assert blocked_runs(report.notes) == 0, report.notes


@pytest.mark.parametrize("check", [_main_first, _loop_first], ids=lambda c: c.__name__)
def test_what_a_submitted_coroutine_does_still_races_the_caller(
    check: Callable[[list[str]], None],
) -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(_submit(check), strategy="dpor", schedules=100)
    assert "before" in str(found.value.cause)
