"""Threads the target starts and never joins still run, and are explored.

The target runs as the program's main thread. A real main thread is not a
daemon, so a thread it makes is not one either unless told, and the program
waits for it at exit. racecheck runs the target on its own (daemon) explorer
thread: a thread made there must not inherit that, or every thread the target
leaves running looks like a daemon when the target returns, is unwound at
once, and its code never runs: a silent pass.
"""

from __future__ import annotations

import threading

import pytest

import racecheck


class Box:
    def __init__(self) -> None:
        self.value = 0


def fire_and_forget_lost_update() -> None:
    """Two threads bump a counter without a lock; each checks its own bump."""
    box = Box()

    def bump() -> None:
        seen = box.value
        box.value = seen + 1
        assert box.value == seen + 1, (seen, box.value)

    for _ in range(2):
        threading.Thread(target=bump).start()


def test_a_race_between_threads_never_joined_is_found() -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(fire_and_forget_lost_update, strategy="random", schedules=500)
    assert found.value.kind == "exception"
    with pytest.raises(racecheck.RaceFound):
        racecheck.replay(fire_and_forget_lost_update, found.value.schedule)


def test_dpor_sees_the_threads_never_joined() -> None:
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(fire_and_forget_lost_update, strategy="dpor", schedules=500)


def test_threads_made_by_the_target_are_daemons_only_when_told() -> None:
    seen: list[tuple[str, bool]] = []

    def target() -> None:
        plain = threading.Thread(target=lambda: None)
        told = threading.Thread(target=lambda: None, daemon=True)
        seen.extend([("plain", plain.daemon), ("told", told.daemon)])

        def nested() -> None:
            seen.append(("made by a thread", threading.Thread(target=lambda: None).daemon))

        worker = threading.Thread(target=nested)
        worker.start()
        worker.join()

    racecheck.check(target, strategy="random", schedules=1)
    assert seen == [("plain", False), ("told", True), ("made by a thread", False)]
