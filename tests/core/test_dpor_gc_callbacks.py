"""A tool's gc callback cannot run inside a traced step and withhold a proof.

hypothesis (and profilers) append a function to ``gc.callbacks``. Were the
collector to run inside a traced step, that function would look like library
code called from traced code, a blind spot: once hypothesis had run in a
pytest process, DPOR would verify nothing that makes garbage mid-step. An
exploration keeps automatic collection off while schedules run
(``session.quiet_gc``) and collects between them, so it never does; a test
that drives a ``Session`` by hand must do the same (tests/core/test_dpor_order.py
did not, and failed after a hypothesis test in the same process).
"""

from __future__ import annotations

import asyncio
import gc

import pytest

import racecheck

gc_hooks = pytest.importorskip("hypothesis.internal.conjecture.junkdrawer")


async def allocating_counters() -> None:
    state = {"x": 0}

    async def bump() -> None:
        lock_free_garbage = [[] for _ in range(3000)]  # crosses the young threshold
        value = state["x"]
        await asyncio.sleep(0)
        state["x"] = value + len(lock_free_garbage) - 2999

    await asyncio.gather(bump(), bump())


def test_a_gc_callback_from_a_tool_is_no_blind_spot() -> None:
    gc_hooks.gc_cumulative_time()  # installs hypothesis's gc callback, as its runs do
    assert any(getattr(hook, "__module__", "").startswith("hypothesis") for hook in gc.callbacks)
    report = racecheck.check(allocating_counters, strategy="dpor", schedules=200)
    assert report.verified, report.notes
    assert not any("untraced code ran" in note for note in report.notes), report.notes
