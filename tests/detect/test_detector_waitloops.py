"""A ``while`` loop re-checking a counter others bring down is a wait, not cross-talk.

janus 1.2.0's ``join()`` (the fixed release, issue 14): the loop side counts an
item in (``_unfinished_tasks += 1``), a consumer thread counts it out under the
same lock (``task_done``), and ``join`` re-reads the counter in ``while
parent._unfinished_tasks:``. Seeing the consumer's value rather than one's own
is what the loop waits for; before the fix the detector reported it as
"overwritten before read". A plain read of a value one wrote, overwritten by
another actor, stays reported (``test_detector.py``, marsys and the changeset).
"""

from __future__ import annotations

import asyncio
import threading

import pytest

import racecheck


class Tasks:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.all_done = threading.Condition(self.lock)
        self.unfinished = 0

    def put(self) -> None:
        with self.lock:
            self.unfinished += 1

    def task_done(self) -> None:
        with self.lock:
            unfinished = self.unfinished - 1
            if unfinished == 0:
                self.all_done.notify_all()
            self.unfinished = unfinished

    def join(self) -> None:
        with self.lock:
            while self.unfinished:
                self.all_done.wait()


def thread_join() -> None:
    tasks = Tasks()
    tasks.put()
    worker = threading.Thread(target=tasks.task_done)
    worker.start()
    tasks.join()
    worker.join()


class Flag:
    def __init__(self) -> None:
        self.state = "idle"


async def overwritten_then_used() -> None:
    """The same write, overwrite and read, where the read uses the value: cross-talk."""
    flag = Flag()
    seen: list[str] = []

    async def run(name: str) -> None:
        flag.state = name
        await asyncio.sleep(0)
        seen.append(flag.state)

    await asyncio.gather(run("a"), run("b"))


def test_a_wait_loop_re_reading_a_counter_is_clean() -> None:
    report = racecheck.check(thread_join, detect=True, schedules=200, seed=0)
    assert report.schedules_run == 200 or report.exhausted


def test_an_overwritten_value_read_back_is_still_reported() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(overwritten_then_used, detect=True, schedules=50, seed=0)
    finding = info.value.cause.finding  # type: ignore[union-attr]
    assert finding.pattern == "overwritten before read", finding
