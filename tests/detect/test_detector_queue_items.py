"""An asyncio.Queue item carries its putter's clock to the task that takes it.

A consumer that takes an item already queued (no wait, so no wake-up) saw
everything the producer wrote before the put: reading that value back is the
point, not cross-talk. An item queued *before* the write, or no item at all,
hands nothing over, and those stay flagged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import queue_item_models as models

import racecheck


@pytest.mark.parametrize(
    "target",
    [models.item_already_queued, models.item_polled_for],
    ids=["await-get", "polled-get_nowait"],
)
def test_a_value_handed_over_with_a_queued_item_is_clean(target: Callable[[], Any]) -> None:
    report = racecheck.check(target, detect=True, schedules=150, seed=1, strategy="random")
    assert report.schedules_run == 150


@pytest.mark.parametrize(
    "target", [models.older_item_taken, models.no_item_taken], ids=["older-item", "no-item"]
)
def test_a_read_back_the_item_did_not_carry_stays_flagged(target: Callable[[], Any]) -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=150, seed=1)
    assert info.value.kind == "atomicity-violation"
    assert "overwritten before read on box.balance" in str(info.value.cause)


@pytest.mark.parametrize(
    "target",
    [
        models.newest_item_taken,
        models.smallest_item_taken,
        models.newest_item_taken_after_waiting,
        models.smallest_item_taken_after_waiting,
    ],
    ids=["lifo", "priority", "lifo-waited", "priority-waited"],
)
def test_the_item_a_lifo_or_priority_queue_hands_out_carries_its_clock(
    target: Callable[[], Any],
) -> None:
    """The item taken is the newest (LifoQueue) or the smallest (PriorityQueue), put
    after the write here: the reader saw the write. These queues carried nothing. A
    reader that waited is woken by the first put, yet takes the later item."""
    report = racecheck.check(target, detect=True, schedules=150, seed=1, strategy="random")
    assert report.schedules_run == 150


@pytest.mark.parametrize(
    "target",
    [models.only_item_older_than_the_write, models.smallest_item_older_than_the_write],
    ids=["lifo", "priority"],
)
def test_an_item_put_before_the_write_carries_nothing(target: Callable[[], Any]) -> None:
    """Partners: the item taken was put before the write (a later item that did carry
    it is still queued, for the priority queue), so the read back is not ordered."""
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=150, seed=1)
    assert info.value.kind == "atomicity-violation"
    assert "overwritten before read on box.balance" in str(info.value.cause)


@pytest.mark.parametrize(
    "target",
    [models.thread_newest_item_taken, models.thread_smallest_item_taken],
    ids=["lifo", "priority"],
)
def test_a_thread_taking_the_newer_or_smaller_item_after_waiting_is_clean(
    target: Callable[[], Any],
) -> None:
    """Threads: the reader waits on the empty queue, the first put's notify wakes it,
    and it takes the item put after the write. The notify's signal is the first put's;
    the item taken, settled under the queue's mutex, carries the second's."""
    report = racecheck.check(target, detect=True, schedules=200, seed=1, strategy="random")
    assert report.schedules_run == 200


@pytest.mark.parametrize(
    "target",
    [models.thread_item_older_than_the_write, models.thread_smallest_item_older_than_the_write],
    ids=["lifo", "priority"],
)
def test_a_thread_taking_an_item_put_before_the_write_stays_flagged(
    target: Callable[[], Any],
) -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=150, strategy="exhaustive")
    assert info.value.kind == "atomicity-violation"
    assert "overwritten before read on box.balance" in str(info.value.cause)
