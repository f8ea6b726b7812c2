"""A detector finding's trace shows the access it flagged, in its thread's column.

On threads, the detector stops the run in the middle of a step: the access it
flags is not a scheduling point. That unfinished step was dropped from the
trace (the run was aborting), and the ✗ row had no location (a finding raises
in no user frame), so the report named a thread that appears nowhere in the
trace: "✗  — RaceDetected: ... Thread-3 wrote in_progress at _checkers.py:333"
with no Thread-3 step above it. Found by the seventh held-out real-code round
(icontract 2.3.0 under ``--racecheck-detect``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import pytest

import racecheck


class Box:
    def __init__(self) -> None:
        self.n = 0


def two_increments() -> None:
    box = Box()

    def increment() -> None:
        box.n = box.n + 1

    threads = [threading.Thread(target=increment) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def guarded(func: Callable[[int], int]) -> Callable[[int], int]:
    """icontract 2.3.0's shape: a recursion flag in a closure, cleared by an ExitStack."""
    in_progress = False

    def unset() -> None:
        nonlocal in_progress
        in_progress = False

    def wrapper(n: int) -> int:
        nonlocal in_progress
        with contextlib.ExitStack() as stack:
            stack.callback(unset)
            if in_progress:
                return func(n)
            in_progress = True
            return func(n)

    return wrapper


@guarded
def checked(n: int) -> int:
    return n


def two_guarded_calls() -> None:
    threads = [threading.Thread(target=checked, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _flagged(target: Callable[[], Any]) -> racecheck.RaceFound:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=50)
    assert info.value.kind == "data-race", info.value
    return info.value


@pytest.mark.parametrize("target", [two_increments, two_guarded_calls])
def test_the_flagged_access_is_in_its_threads_column(target: Callable[[], Any]) -> None:
    found = _flagged(target)
    finding = found.cause.finding  # type: ignore[union-attr]
    flagged = finding.accesses[-1]
    trace = found.trace
    assert trace is not None and trace.failure is not None
    names = {actor.id: actor.name for actor in trace.actors}
    flagged_actor = trace.failure.actor
    assert names[flagged_actor] == flagged.actor, (names, flagged)
    ran = [
        (line.filename, line.lineno)
        for step in trace.steps
        if step.actor == flagged_actor
        for line in step.lines
    ]
    assert (flagged.filename, flagged.lineno) in ran, str(found)


@pytest.mark.parametrize("target", [two_increments, two_guarded_calls])
def test_the_cross_names_the_flagged_line(target: Callable[[], Any]) -> None:
    found = _flagged(target)
    flagged = found.cause.finding.accesses[-1]  # type: ignore[union-attr]
    cross = next(line for line in str(found).splitlines() if "✗" in line)
    assert f"test_detector_trace.py:{flagged.lineno}  {flagged.line.strip()}" in cross, cross
    assert "near " not in cross, cross
