"""Helpers for the classic-bug suite: find + replay, prove clean, check hygiene.

Everything here goes through the public API only (``racecheck.check``,
``racecheck.replay``, ``racecheck.RaceFound``, ``racecheck.Report`` and the
error classes), the way a third-party suite would.

Set ``RACECHECK_CLASSIC_STATS=/path/file.json`` to collect how many schedules
each bug needed (per seed); the numbers go into tests/engine_feedback/classic.md.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from classic_params import SCHEDULES

import racecheck

SEEDS = (0, 1, 2)

# -- what racecheck patches, captured before any run ---------------------------------

_ORIGINALS: dict[str, Any] = {
    "threading.Lock": threading.Lock,
    "threading.RLock": threading.RLock,
    "threading.Condition": threading.Condition,
    "threading.Semaphore": threading.Semaphore,
    "threading.BoundedSemaphore": threading.BoundedSemaphore,
    "threading.Event": threading.Event,
    "threading.Barrier": threading.Barrier,
    "threading.Thread.start": threading.Thread.start,
    "threading.Thread.join": threading.Thread.join,
    "threading.Thread.is_alive": threading.Thread.is_alive,
    "time.sleep": time.sleep,
    "time.monotonic": time.monotonic,
    "queue.SimpleQueue": queue.SimpleQueue,
    "queue.time": queue.time,
    "asyncio.new_event_loop": asyncio.new_event_loop,
    "asyncio.events.new_event_loop": asyncio.events.new_event_loop,
}


def _current() -> dict[str, Any]:
    return {
        "threading.Lock": threading.Lock,
        "threading.RLock": threading.RLock,
        "threading.Condition": threading.Condition,
        "threading.Semaphore": threading.Semaphore,
        "threading.BoundedSemaphore": threading.BoundedSemaphore,
        "threading.Event": threading.Event,
        "threading.Barrier": threading.Barrier,
        "threading.Thread.start": threading.Thread.start,
        "threading.Thread.join": threading.Thread.join,
        "threading.Thread.is_alive": threading.Thread.is_alive,
        "time.sleep": time.sleep,
        "time.monotonic": time.monotonic,
        "queue.SimpleQueue": queue.SimpleQueue,
        "queue.time": queue.time,
        "asyncio.new_event_loop": asyncio.new_event_loop,
        "asyncio.events.new_event_loop": asyncio.events.new_event_loop,
    }


def assert_pristine(trace_before: Any = None) -> None:
    """Nothing racecheck patched outlives a run."""
    now = _current()
    changed = [name for name, value in _ORIGINALS.items() if now[name] is not value]
    assert not changed, f"left patched after the run: {changed}"
    assert sys.gettrace() is trace_before, f"sys.gettrace() left as {sys.gettrace()!r}"
    if sys.version_info >= (3, 12):
        for tool in (3, 4):
            assert sys.monitoring.get_tool(tool) is None, (
                f"sys.monitoring tool {tool} still held by {sys.monitoring.get_tool(tool)!r}"
            )


# -- schedules-to-failure bookkeeping ------------------------------------------------------

_STATS: dict[str, dict[str, Any]] = {}


def _record(name: str, seed: int, value: Any) -> None:
    _STATS.setdefault(name, {})[str(seed)] = value


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = os.environ.get("RACECHECK_CLASSIC_STATS")
    if not path or not _STATS:
        return
    old: dict[str, Any] = {}
    if os.path.exists(path):
        try:
            with open(path) as fh:
                old = json.load(fh)
        except (OSError, ValueError):
            old = {}
    for name, per_seed in _STATS.items():
        old.setdefault(name, {}).update(per_seed)
    with open(path, "w") as fh:
        json.dump(old, fh, indent=1, sort_keys=True)


# -- the two assertions every classic test makes ---------------------------------------------


def find(
    target: Callable[[], Any],
    kind: str,
    seed: int,
    *,
    strategy: str = "pct",
    schedules: int = SCHEDULES,
    cause: type[BaseException] | tuple[type[BaseException], ...] | None = None,
    name: str | None = None,
    replay: bool = True,
    **options: Any,
) -> racecheck.RaceFound:
    """The bug is found with ``kind``, and its token replays to the same kind."""
    trace_before = sys.gettrace()
    label = getattr(target, "__name__", None) or type(target).__name__
    name = name or label
    try:
        report = racecheck.check(
            target, strategy=strategy, schedules=schedules, seed=seed, **options
        )
    except racecheck.RaceFound as exc:
        found = exc
    else:
        _record(name, seed, f"missed ({strategy})")
        pytest.fail(
            f"{label}: no failure in {report.schedules_run} {strategy} schedules (seed {seed})"
        )
    assert_pristine(trace_before)
    _record(name + ("" if strategy == "pct" else f"[{strategy}]"), seed, found.schedules_run)
    assert found.kind == kind, (
        f"expected kind {kind!r}, got {found.kind!r}: {found.detail or found.cause!r}"
    )
    assert isinstance(found, AssertionError)
    assert isinstance(found.schedule, str) and found.schedule.startswith("rc1:")
    assert 1 <= found.schedules_run <= schedules
    if kind == "exception":
        assert found.cause is not None
        if cause is not None:
            assert isinstance(found.cause, cause), f"cause was {found.cause!r}"
    if replay:
        assert_replays(target, found.schedule, kind, cause=cause, **_replay_opts(options))
    return found


def _replay_opts(options: dict[str, Any]) -> dict[str, Any]:
    keep = ("label", "backend", "granularity", "watchdog")
    return {k: v for k, v in options.items() if k in keep}


def assert_replays(
    target: Callable[[], Any],
    token: str,
    kind: str,
    *,
    cause: type[BaseException] | tuple[type[BaseException], ...] | None = None,
    **options: Any,
) -> racecheck.RaceFound:
    trace_before = sys.gettrace()
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.replay(target, token, **options)
    assert_pristine(trace_before)
    again = info.value
    assert again.kind == kind, f"replay gave {again.kind!r}, the run gave {kind!r}"
    if kind == "exception" and cause is not None:
        assert isinstance(again.cause, cause), f"replay cause was {again.cause!r}"
    return again


def clean(
    target: Callable[[], Any],
    seed: int = 0,
    *,
    strategy: str = "pct",
    schedules: int = SCHEDULES,
    **options: Any,
) -> racecheck.Report:
    """The fixed version is never flagged: check returns a Report."""
    trace_before = sys.gettrace()
    try:
        report = racecheck.check(
            target, strategy=strategy, schedules=schedules, seed=seed, **options
        )
    except racecheck.RaceFound as exc:
        label = getattr(target, "__name__", target)
        pytest.fail(f"fixed version {label} flagged (seed {seed}):\n{exc}")
    assert_pristine(trace_before)
    assert isinstance(report, racecheck.Report)
    assert report.schedules_run >= 1
    if strategy != "exhaustive":
        assert report.schedules_run == schedules or report.exhausted or report.saturated
    return report


class Helpers:
    """The helpers as a fixture (``rc``), so test modules need not import conftest."""

    SEEDS = SEEDS
    SCHEDULES = SCHEDULES
    find = staticmethod(find)
    clean = staticmethod(clean)
    assert_replays = staticmethod(assert_replays)
    assert_pristine = staticmethod(assert_pristine)


@pytest.fixture
def rc() -> Helpers:
    return Helpers()
