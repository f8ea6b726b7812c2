"""DPOR's search order (racecheck.strategies.dpor_order): out of order, still complete.

Depth-first DPOR (the default) explores the whole space below the natural
order's first states before it changes them, so a bug needing one actor starved
from early on (tests/classic's ``starved_consumer_overflow``) is not found in
3,000 schedules. With one *jump* (start a run from the pending alternative with
the fewest delays, then let the last actor persist) it is found in a few. Jumps
are off by default because they cost pruning (see the module docstring); these
tests hold them to the same traces as depth-first order, memory cap included.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import racecheck
from racecheck.session import Session, make_settings, quiet_gc
from racecheck.strategies.dpor import DPORChooser, _conflict
from racecheck.strategies.dpor_order import SearchOrder

_CLASSIC = os.path.join(os.path.dirname(os.path.dirname(__file__)), "classic")
if _CLASSIC not in sys.path:
    sys.path.insert(0, _CLASSIC)

asyncio_bugs: Any = importlib.import_module("test_asyncio_bugs")

#: far below the 3,000 schedules a depth-first DPOR did not find them in
BUDGET = 300


def test_one_jump_finds_the_starved_consumer_early() -> None:
    """Depth-first DPOR (the default) misses it in 3,000; one jump finds it in a few."""
    chooser = DPORChooser()
    chooser.order = SearchOrder(jumps=1, on_finished=chooser._finished)
    session = Session(make_settings(asyncio_bugs.starved_consumer_overflow, {}))
    session.settings.backend.install()
    try:
        for run in range(1, BUDGET + 1):
            controller = session.run(chooser, run)
            failed = controller.failure is not None
            chooser.end(tuple(controller.decisions), failed, controller.scheduling_steps)
            if failed:
                break
        else:
            pytest.fail(f"the starved consumer was not found in {BUDGET} schedules")
    finally:
        session.settings.backend.uninstall()
    token = session.schedule(tuple(controller.decisions)).encode()
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(asyncio_bugs.starved_consumer_overflow, token)
    assert again.value.kind == "exception"


def _trace(events: Sequence[Any]) -> frozenset[Any]:
    """A run's Mazurkiewicz trace: each step (actor, its k-th) with the steps it must follow.

    Conflicts are decided on the run's exact accesses (object and key), so two
    runs with the same trace differ only in the order of independent steps.
    """
    names: list[tuple[int, int]] = []
    count: dict[int, int] = {}
    for event in events:
        names.append((event.actor, count.get(event.actor, 0)))
        count[event.actor] = count.get(event.actor, 0) + 1
    return frozenset(
        (
            names[j],
            frozenset(
                names[i]
                for i in range(j)
                if events[i].actor != event.actor and _conflict(events[i].index, event.index)
            ),
        )
        for j, event in enumerate(events)
    )


def _dpor_on(
    target: Callable[[], Any], chooser: DPORChooser, budget: int
) -> tuple[list[int], set[frozenset[Any]]]:
    """Run ``chooser`` to its end on the asyncio backend: suspended-path counts, traces."""
    session = Session(make_settings(target, {}))
    sizes: list[int] = []
    traces: set[frozenset[Any]] = set()
    session.settings.backend.install()
    try:
        # as explore does: no collection inside a step, where a tool's gc
        # callback (hypothesis installs one) would be untraced code run from
        # traced code (tests/core/test_dpor_gc_callbacks.py)
        with quiet_gc():
            for run in range(1, budget + 1):
                controller = session.run(chooser, run)
                assert controller.failure is None
                chooser.end(tuple(controller.decisions), False, controller.scheduling_steps)
                sizes.append(len(chooser.order.suspended))
                if not chooser._blocked:  # a run cut short by sleep sets is no trace
                    traces.add(_trace(chooser.events))
                if not chooser.has_more():
                    break
    finally:
        session.settings.backend.uninstall()
    return sizes, traces


def test_a_low_memory_cap_keeps_the_search_complete() -> None:
    """Out of order, or capped at 2 suspended paths: the same traces as depth-first DPOR."""
    target = asyncio_bugs.abba_three_way_fixed
    depth_first = DPORChooser()
    depth_first.order = SearchOrder(jump_every=0, on_finished=depth_first._finished)
    _, reference = _dpor_on(target, depth_first, 5000)
    assert depth_first.verified, list(depth_first.blind)
    assert len(reference) >= 20
    plain = DPORChooser()
    plain.order = SearchOrder(jumps=8, on_finished=plain._finished)
    _, traces = _dpor_on(target, plain, 5000)
    assert plain.verified, list(plain.blind)
    assert traces == reference
    capped = DPORChooser()
    capped.order = SearchOrder(jumps=10**6, keep=2, on_finished=capped._finished)
    sizes, traces = _dpor_on(target, capped, 5000)
    assert capped.verified, list(capped.blind)
    assert traces == reference
    assert max(sizes) == 2  # the cap was reached and held


async def three_writers() -> None:
    shared = {"last": -1}

    async def write(i: int) -> None:
        shared["last"] = i
        await asyncio.sleep(0)
        shared["last"] = i

    await asyncio.gather(*(write(i) for i in range(3)))


def test_depth_first_order_needs_no_suspended_paths() -> None:
    """The default (no jumps) is plain depth-first DPOR: one path in memory, nothing suspended."""
    chooser = DPORChooser()
    sizes, _ = _dpor_on(three_writers, chooser, 5000)
    assert chooser.verified
    assert set(sizes) == {0}
