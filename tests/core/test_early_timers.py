"""A loop's timer may fire while a thread could still run (virtual time on threads).

A thread can be descheduled by the OS at any point for a while; an event
loop's ``sleep(0.01)`` then ends first. Before, racecheck's clock moved only
when every actor waited, so a bug that needs that order (janus 1.1.0's
``join``) passed silently. Now an idle loop whose next timer is within
:data:`racecheck.backends.threads.runtime.TIMER_SLACK` of the runnable
actors is offered as one more choice: its timer fires now.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any

import pytest

import racecheck
from racecheck.backends.threads.runtime import TIMER_SLACK

STRATEGIES = ("random", "pct", "exhaustive", "dpor")


def thread_beats_timer() -> None:
    """Assumes a thread started before a 10 ms sleep has run by the sleep's end."""

    async def main() -> None:
        log: list[str] = []

        def worker() -> None:
            log.append("thread")

        thread = threading.Thread(target=worker)
        thread.start()
        await asyncio.sleep(0.01)
        log.append("timer")
        thread.join()
        assert log == ["thread", "timer"], log

    asyncio.run(main())


class Tracker:
    """Counts unfinished jobs; an ``asyncio.Event`` says none is left (janus 1.1.0's shape).

    A worker thread's last ``done`` sets the event through
    ``call_soon_threadsafe``; an ``add`` on the loop clears it at once. If
    the clear runs between ``done`` and the deferred set, the event ends up set
    while a job is unfinished, and ``join`` returns early.
    """

    def __init__(self, recheck: bool) -> None:
        self.loop = asyncio.get_running_loop()
        self.lock = threading.Lock()
        self.unfinished = 0
        self.idle = asyncio.Event()
        self.idle.set()
        #: the fix: the deferred set looks again on the loop, under the lock
        self.recheck = recheck

    def add(self) -> None:
        with self.lock:
            self.unfinished += 1
            self.idle.clear()

    def done(self) -> None:
        with self.lock:
            self.unfinished -= 1
            if self.unfinished == 0:
                self.loop.call_soon_threadsafe(self._set_idle)

    def _set_idle(self) -> None:
        if self.recheck:
            with self.lock:
                if self.unfinished:
                    return
        self.idle.set()

    async def join(self) -> None:
        with self.lock:
            if self.unfinished == 0:
                return
        await self.idle.wait()


#: the tracker's worker waits for the loop: run inline on the asyncio backend
#: first, it would stall there until the watchdog moves the run to threads
#: (10 s, and an explorer left blocked), which tests/core/test_executor_work.py covers
THREADS = "threads"


def make_tracker_target(recheck: bool) -> Callable[[], Any]:
    async def tracker_join() -> None:
        tracker = Tracker(recheck)
        jobs: queue.Queue[int] = queue.Queue()

        def worker() -> None:
            for _ in range(2):
                jobs.get()
                tracker.done()

        work = asyncio.create_task(asyncio.to_thread(worker))
        tracker.add()
        jobs.put(1)
        await asyncio.sleep(0.01)  # producing the next job
        tracker.add()
        jobs.put(2)
        await tracker.join()
        assert tracker.unfinished == 0, "join returned with a job unfinished"
        await work

    return tracker_join


def long_timeout_bridge() -> None:
    """Correct: a thread hands a result to the loop; the loop waits with a 5 s timeout."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        result: asyncio.Future[int] = loop.create_future()
        total = [0]

        def worker() -> None:
            for i in range(3):
                total[0] += i
            loop.call_soon_threadsafe(result.set_result, total[0])

        thread = threading.Thread(target=worker)
        thread.start()
        assert await asyncio.wait_for(result, timeout=5) == 3
        thread.join()

    asyncio.run(main())


def polling_loop() -> None:
    """Correct: the loop polls a thread's flag every 10 ms."""

    async def main() -> None:
        finished = threading.Event()
        items: list[int] = []

        def worker() -> None:
            for i in range(3):
                items.append(i)
            finished.set()

        thread = threading.Thread(target=worker)
        thread.start()
        while not finished.is_set():
            await asyncio.sleep(0.01)
        assert items == [0, 1, 2]
        thread.join()

    asyncio.run(main())


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_timer_fires_while_a_thread_could_still_run(
    strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the trace fits the terminal: keep its notes whole
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(thread_beats_timer, strategy=strategy, schedules=200)
    assert found.value.kind == "exception"
    assert isinstance(found.value.cause, AssertionError)
    assert "['timer', 'thread']" in str(found.value.cause)
    assert "loop timer fire" in str(found.value)  # the trace tells the story
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(thread_beats_timer, found.value.schedule)
    assert str(again.value.cause) == str(found.value.cause)


@pytest.mark.parametrize("strategy", ("random", "pct"))
def test_the_janus_shape_is_found_and_replays(strategy: str) -> None:
    target = make_tracker_target(recheck=False)
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(target, strategy=strategy, schedules=300, backend=THREADS)
    assert "join returned with a job unfinished" in str(found.value.cause)
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(target, found.value.schedule, backend=THREADS)
    assert "join returned with a job unfinished" in str(again.value.cause)


# DPOR verifies the fixed shape too, but only after about 22,000 runs (4,900
# traces: the loop's timer may now fire between any two of the worker's
# steps), too long for this suite; it finds the buggy one after about 850.
@pytest.mark.parametrize("strategy", ("random", "pct", "dpor"))
def test_the_fixed_janus_shape_stays_clean(strategy: str) -> None:
    racecheck.check(
        make_tracker_target(recheck=True), strategy=strategy, schedules=200, backend=THREADS
    )


@pytest.mark.parametrize("target", (long_timeout_bridge, polling_loop))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_correct_timer_programs_stay_clean(target: Callable[[], None], strategy: str) -> None:
    racecheck.check(target, strategy=strategy, schedules=200)


@pytest.mark.parametrize("target", (long_timeout_bridge, polling_loop))
def test_dpor_verifies_correct_timer_programs(target: Callable[[], None]) -> None:
    report = racecheck.check(target, strategy="dpor", schedules=5000)
    assert report.exhausted
    assert any(note.startswith("verified") for note in report.notes), report.notes


def test_a_timeout_beyond_the_slack_never_fires_early() -> None:
    """A thread that runs its whole burst within the slack never sees a long timeout expire."""
    assert TIMER_SLACK < 5
    seen: list[str] = []

    def target() -> None:
        async def main() -> None:
            loop = asyncio.get_running_loop()
            done: asyncio.Future[None] = loop.create_future()

            def worker() -> None:
                for _ in range(5):
                    seen.append("step")
                loop.call_soon_threadsafe(done.set_result, None)

            thread = threading.Thread(target=worker)
            thread.start()
            try:
                await asyncio.wait_for(asyncio.shield(done), timeout=5)
            except TimeoutError:
                raise AssertionError("a 5 s timeout expired while the thread could run") from None
            thread.join()

        asyncio.run(main())

    racecheck.check(target, strategy="random", schedules=300)
    assert seen  # the worker ran


def test_plain_asyncio_keeps_timers_behind_ready_tasks() -> None:
    """The documented model of the asyncio backend: no thread, no early timer.

    A ready task is never descheduled in the middle of a step; a timer that
    ends before it would need the step itself to run for the timer's delay.
    """

    async def target() -> None:
        order: list[str] = []

        async def busy() -> None:
            for _ in range(3):
                order.append("busy")
                await asyncio.sleep(0)

        async def timed() -> None:
            await asyncio.sleep(0.01)
            order.append("timer")

        await asyncio.gather(busy(), timed())
        assert order == ["busy", "busy", "busy", "timer"], order

    report = racecheck.check(target, strategy="exhaustive", schedules=500)
    assert report.exhausted


def loop_and_thread_without_timers() -> None:
    """A lost update between a loop task and a thread; nothing waits on a timer."""

    async def main() -> None:
        box = {"n": 0}

        def worker() -> None:
            value = box["n"]
            box["n"] = value + 1

        thread = threading.Thread(target=worker)
        thread.start()
        value = box["n"]
        await asyncio.sleep(0)
        box["n"] = value + 1
        thread.join()
        assert box["n"] == 2, box

    asyncio.run(main())


@pytest.mark.parametrize("strategy", ("random", "pct", "exhaustive"))
def test_programs_without_timers_keep_their_schedules(
    strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no slack no timer ever fires early (the old clock): a program without
    timers finds the same token either way, and a timer program tells them apart."""
    from racecheck.backends.threads import runtime

    def token(target: Callable[[], None]) -> str | None:
        try:
            racecheck.check(target, strategy=strategy, schedules=200, seed=3)
        except racecheck.RaceFound as found:
            return found.schedule
        return None

    now = token(loop_and_thread_without_timers), token(thread_beats_timer)
    monkeypatch.setattr(runtime, "TIMER_SLACK", 0.0)
    before = token(loop_and_thread_without_timers), token(thread_beats_timer)
    assert now[0] is not None and now[0] == before[0]
    assert now[1] is not None and before[1] is None


def thread_reads_the_loop_clock() -> None:
    """Only the clock links the two: the thread's reading of the loop's time."""

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def worker() -> None:
            now = loop.time()
            assert now == 0.0, f"the thread started late: at {now}"

        thread = threading.Thread(target=worker)
        thread.start()
        await asyncio.sleep(0.01)
        thread.join()

    asyncio.run(main())


def test_dpor_orders_a_timer_against_a_read_of_the_clock() -> None:
    """Nothing but the clock is shared: DPOR must still try the timer first (and not
    claim every interleaving ran after trying one)."""
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(thread_reads_the_loop_clock, strategy="dpor", schedules=100)
    assert "the thread started late: at 0.01" in str(found.value.cause)
