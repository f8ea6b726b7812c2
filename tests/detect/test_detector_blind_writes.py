"""A stop flag both tasks clear is no lost update (trio-websocket 0.10.2's _reader_running).

The reader loops ``while conn.reading``; ``aclose`` stores ``False`` without
reading the flag, and the reader, finding its stream closed, stores ``False``
too. The reader's loop test read ``True`` before the closer's store, so the
detector saw read, another's write, own write: a "lost update". But nothing is
lost: the closer's write is blind (it read nothing to decide it) and equal to
the reader's, so running it after the reader's store instead gives the same
flag, and the reader's read the same ``True``: the interleaving is equivalent
to one where the reader ran first.

The partners stay reported: a claim where both tasks check the flag before
storing the same ``True`` (each starts the worker), a remote write of another
value, and a third task's different value stored between the two equal ones.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import trio

import racecheck


class Conn:
    def __init__(self) -> None:
        self.reading: Any = True
        self.closed = False
        self.started = False
        self.workers = 0


def _stop_flag(closer_stores: Any, third: Any = None) -> Any:
    async def target() -> None:
        conn = Conn()

        async def reader() -> None:
            while conn.reading:
                await asyncio.sleep(0)
                if conn.closed:
                    conn.reading = False  # the stream is gone: stop reading
                    break

        async def closer() -> None:
            conn.reading = closer_stores
            conn.closed = True

        async def meddler() -> None:
            conn.reading = third

        tasks = [reader(), closer()] + ([meddler()] if third is not None else [])
        await asyncio.gather(*tasks)

    return target


def test_a_stop_flag_cleared_by_two_tasks_is_clean() -> None:
    report = racecheck.check(_stop_flag(False), detect=True, schedules=100)
    assert report.schedules_run == 100 or report.exhausted


def test_a_stop_flag_cleared_by_two_trio_tasks_is_clean() -> None:
    async def target() -> None:
        conn = Conn()

        async def reader() -> None:
            while conn.reading:
                await trio.sleep(0)
                if conn.closed:
                    conn.reading = False
                    break

        async def closer() -> None:
            conn.reading = False
            conn.closed = True

        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            nursery.start_soon(closer)

    report = racecheck.check(target, backend="trio", detect=True, schedules=100)
    assert report.schedules_run == 100 or report.exhausted


def _finding(target: Any) -> Any:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=100)
    return info.value.cause.finding


def test_a_flag_another_task_set_to_another_value_is_still_reported() -> None:
    finding = _finding(_stop_flag("closing"))
    assert finding.pattern in ("lost update", "stale check"), finding


def test_a_different_value_stored_between_the_equal_ones_is_still_reported() -> None:
    finding = _finding(_stop_flag(False, third="paused"))
    assert finding.pattern in ("lost update", "stale check"), finding


def test_a_claim_both_tasks_check_before_storing_true_is_still_reported() -> None:
    """Both find ``started`` unset and both store ``True``: two workers start."""

    async def target() -> None:
        conn = Conn()

        async def start() -> None:
            if not conn.started:
                await asyncio.sleep(0)
                conn.started = True
                conn.workers = conn.workers + 1

        await asyncio.gather(start(), start())

    finding = _finding(target)
    assert finding.pattern in ("lost update", "stale check"), finding
    assert "conn.started" in str(finding.message()), finding
