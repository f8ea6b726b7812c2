"""Correct FIFO locks whose woken waiter takes itself off the queue are not races (issue 14).

The releaser wakes the first waiter and leaves its entry; the waiter removes
it when it runs and takes the lock (CPython's ``asyncio.Lock``). The waiter's
check before it waited (``if self._locked``) and its act after the wake-up
(``self._locked = True``) have only the waker's release in between, or
writes of earlier holders the lock passed through while it waited; newcomers
line up behind its entry. Before issue 14's fix all four models were reported
(a lost update, then a stale check on ``self._locked``, and a stale hand-off
on ``self._waiters`` for the ``next(iter(...))`` wake-up). The real finds stay:
``test_detector_flow`` (anyio 4.13's lock, the RW lock's two writers) and
``test_detector_handoffs`` (trio and threads).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trio")

import racecheck

sys.path.insert(0, str(Path(__file__).parent))
import selfdequeue_models as models

CASES = [
    pytest.param(models.async_correct, {}, id="asyncio-first-waiter"),
    pytest.param(models.async_iter_first, {}, id="asyncio-next-iter"),
    pytest.param(models.async_with_timeouts, {}, id="asyncio-cancelled-waiters"),
    pytest.param(models.trio_correct, {"backend": "trio"}, id="trio"),
    pytest.param(models.thread_correct, {}, id="threads"),
]


@pytest.mark.parametrize(("target", "options"), CASES)
def test_the_lock_is_correct_without_the_detector(
    target: Callable[[], Any], options: dict[str, Any]
) -> None:
    """The users raise when two of them are inside: the engine vouches for the lock."""
    report = racecheck.check(target, schedules=150, seed=0, **options)
    assert report.schedules_run >= 1


@pytest.mark.parametrize(("target", "options"), CASES)
def test_self_dequeuing_waiters_are_not_flagged(
    target: Callable[[], Any], options: dict[str, Any]
) -> None:
    report = racecheck.check(target, detect=True, schedules=300, seed=0, **options)
    assert report.schedules_run == 300 or report.exhausted
