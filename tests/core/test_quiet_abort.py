"""An aborted run unwinds its pool threads without logging an error of its own.

racecheck ends a run that hit its step limit (or found a failure while work
was still running) by raising its abort signal in every actor. Inside a
``ThreadPoolExecutor`` worker, ``concurrent.futures`` catches it and logs
"Exception in worker" at CRITICAL level with a traceback: noise in the user's
output about racecheck's own plumbing, which reads like a crash.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

import racecheck


class _Flag:
    stop = False


async def _spins_in_a_worker() -> None:
    flag = _Flag()

    def work() -> None:
        while not flag.stop:
            pass

    await asyncio.to_thread(work)


def _has_our_filter(logger: logging.Logger) -> bool:
    return any(type(f).__module__.startswith("racecheck") for f in logger.filters)


def test_a_step_limit_in_pool_work_logs_nothing_and_leaves_no_filter(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # backend="threads": inline on asyncio, the spinning work would stall the
    # loop's thread until the watchdog moved the run to threads
    futures_logger = logging.getLogger("concurrent.futures")
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(racecheck.RaceFound) as info:
            racecheck.check(
                _spins_in_a_worker, schedules=3, seed=0, max_steps=500, backend="threads"
            )
    assert info.value.kind == "step-limit"
    assert [r.getMessage() for r in caplog.records if r.name == "concurrent.futures"] == []
    assert not _has_our_filter(futures_logger)
