"""trio's waits are waits for the detector: "overwritten before read" must see them.

The rule reports a task that wrote a slot, finds another task's value there
when it reads it back, and never waited for that task. On asyncio every
wake-up carries the waker's clock (a scheduled handle is stamped); trio's
steps must carry theirs too, through a wake-up (``reschedule`` in the
waker's step) and through a nursery's end, which waits for every child, not
only for the last one, whose exit wakes the parent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

trio = pytest.importorskip("trio")

import trio_join_models as models  # noqa: E402

import racecheck  # noqa: E402


def _clean(target: Callable[[], Any], backend: str = "trio", schedules: int = 150) -> None:
    report = racecheck.check(
        target, backend=backend, detect=True, schedules=schedules, seed=1, strategy="random"
    )
    assert report.schedules_run == schedules


def _flagged(target: Callable[[], Any]) -> Any:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, backend="trio", detect=True, schedules=150, seed=1)
    return info.value


def test_main_checking_after_the_nursery_is_clean() -> None:
    _clean(models.nursery_join_locked)


def test_the_asyncio_twin_is_clean() -> None:
    _clean(models.gather_join_locked, backend="asyncio")


def test_every_child_reaches_main_through_the_nursery_not_only_the_last() -> None:
    _clean(models.nursery_join_unlocked_writes)


@pytest.mark.parametrize(
    "target",
    [models.event_waits, models.channel_waits, models.start_waits, models.condition_waits],
    ids=["event", "channel", "start", "condition"],
)
def test_a_value_waited_for_is_clean(target: Callable[[], Any]) -> None:
    _clean(target)


@pytest.mark.parametrize(
    "target",
    [models.overwrite_no_wait, models.overwrite_before_join, models.channel_write_after_send],
    ids=["no-wait", "before-join", "after-send"],
)
def test_a_read_back_without_a_wait_stays_flagged(target: Callable[[], Any]) -> None:
    found = _flagged(target)
    assert found.kind == "atomicity-violation"
    assert "overwritten before read on " in str(found.cause)
    assert ".balance" in str(found.cause)


def test_a_value_taken_from_a_parked_sender_is_clean() -> None:
    # the sender parks first; the receiver takes its value and wakes it: the
    # hand-off runs from the sender to the receiver, against the wake-up's way
    _clean(models.channel_late_receiver)


def test_a_value_taken_from_a_channel_buffer_is_clean() -> None:
    _clean(models.buffered_channel_waits)


def test_a_buffered_item_sent_before_the_write_stays_flagged() -> None:
    """The item taken was buffered before the write: the receiver did not wait for it."""
    found = _flagged(models.buffered_item_older_than_the_write)
    assert "overwritten before read on " in str(found.cause)
