"""DPOR with an event loop running inside a thread (the mixed model).

While a thread waits at its loop's task decision it is offered as each ready
task of that loop, inside a task step as that task, and otherwise as the
thread: one decision covers the threads and the tasks of every loop, so the
record of who could run is complete and DPOR may reverse a race between a
task and a thread. These tests check that through the public API: a fix is
verified, a bug is found and replays.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

import racecheck

_CLASSIC = os.path.join(os.path.dirname(os.path.dirname(__file__)), "classic")
if _CLASSIC not in sys.path:
    sys.path.insert(0, _CLASSIC)

asyncio_bugs: Any = importlib.import_module("test_asyncio_bugs")
thread_bugs: Any = importlib.import_module("test_thread_bugs")

SCHEDULES = 5000


def _lost_update(fixed: bool) -> Callable[[], None]:
    """Two tasks of a loop in one thread and a plain thread bump one counter."""

    def target() -> None:
        state = {"n": 0}
        lock = threading.Lock()
        loop = asyncio.new_event_loop()

        async def bump() -> None:
            if fixed:
                with lock:
                    state["n"] += 1
                await asyncio.sleep(0)
            else:
                n = state["n"]
                await asyncio.sleep(0)
                state["n"] = n + 1

        def worker() -> None:
            with lock:
                state["n"] += 1

        async def main() -> None:
            await asyncio.gather(bump(), bump())

        runner = threading.Thread(target=loop.run_until_complete, args=(main(),))
        other = threading.Thread(target=worker)
        runner.start()
        other.start()
        runner.join()
        other.join()
        loop.close()
        assert state["n"] == 3, state

    target.__name__ = target.__qualname__ = f"loop_in_thread_lost_update_{fixed}"
    return target


def _handoff(fixed: bool) -> Callable[[], None]:
    """A thread hands work to a loop in another thread; the loop's task races it.

    The task reads ``seen`` on the loop while the worker writes it: only a
    decision that offers the worker *and* the loop's task reaches the order
    where the worker's write lands between the task's read and its write.
    """

    def target() -> None:
        state = {"seen": 0}
        lock = threading.Lock()
        loop = asyncio.new_event_loop()
        started = threading.Event()

        async def consume() -> None:
            started.set()
            if fixed:
                with lock:
                    state["seen"] += 10
            else:
                seen = state["seen"]
                await asyncio.sleep(0)
                state["seen"] = seen + 10

        def worker() -> None:
            started.wait()
            with lock:
                state["seen"] += 1
            loop.call_soon_threadsafe(lambda: None)

        runner = threading.Thread(target=loop.run_until_complete, args=(consume(),))
        helper = threading.Thread(target=worker)
        runner.start()
        helper.start()
        runner.join()
        helper.join()
        loop.close()
        assert state["seen"] == 11, state

    target.__name__ = target.__qualname__ = f"loop_in_thread_handoff_{fixed}"
    return target


@pytest.mark.parametrize("make", [_lost_update, _handoff])
def test_dpor_verifies_a_fixed_loop_in_a_thread(make: Callable[[bool], Any]) -> None:
    report = racecheck.check(make(True), strategy="dpor", schedules=SCHEDULES)
    assert report.verified, report.notes
    (note,) = [n for n in report.notes if n.startswith("verified: all ")]
    assert "event loop" not in note


@pytest.mark.parametrize("make", [_lost_update, _handoff])
def test_dpor_finds_a_race_between_a_loop_task_and_a_thread(
    make: Callable[[bool], Any],
) -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(make(False), strategy="dpor", schedules=SCHEDULES)
    assert found.value.strategy == "dpor"
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(make(False), found.value.schedule)
    assert str(again.value.cause) == str(found.value.cause)


@pytest.mark.parametrize("name", ["threadsafe_wakeup_fixed", "threadsafe_wakeup_then_race_fixed"])
def test_a_loop_waiting_for_a_controlled_thread_is_verified(name: str) -> None:
    """The asyncio backend cannot see the thread its loop waits for (never verified,
    tests/core/test_dpor.py); run by a plain ``def`` the thread is an actor, and the
    same program is verified."""
    program = getattr(asyncio_bugs, name)

    def target() -> None:
        asyncio.run(program())

    report = racecheck.check(target, strategy="dpor", schedules=SCHEDULES)
    assert report.verified, report.notes


def test_a_loop_waiting_for_a_controlled_thread_finds_the_race_after_it() -> None:
    def target() -> None:
        asyncio.run(asyncio_bugs.threadsafe_wakeup_then_race())

    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(target, strategy="dpor", schedules=SCHEDULES)
    with pytest.raises(racecheck.RaceFound):
        racecheck.replay(target, found.value.schedule)


# -- which ready task runs first: reversed where the turns conflict, not everywhere -------


def _independent_tasks(turns: int) -> Callable[[], None]:
    """A loop in a thread runs two tasks for ``turns`` turns each; a thread writes alone.

    Each task appends to its own list, so every order of the turns reaches
    the same state.
    """

    def target() -> None:
        lists: dict[str, list[int]] = {"a": [], "b": []}
        other: list[int] = []

        async def worker(name: str) -> None:
            mine = lists[name]
            for turn in range(turns):
                mine.append(turn)
                await asyncio.sleep(0)

        async def main() -> None:
            await asyncio.gather(worker("a"), worker("b"))

        runner = threading.Thread(target=asyncio.run, args=(main(),))
        alone = threading.Thread(target=other.append, args=(1,))
        runner.start()
        alone.start()
        runner.join()
        alone.join()
        assert lists == {"a": [0, 1, 2][:turns], "b": [0, 1, 2][:turns]}, lists

    return target


def _traces(report: racecheck.Report) -> int:
    (note,) = [n for n in report.notes if n.startswith("verified: all ")]
    return int(note.split()[2])


def test_independent_tasks_of_a_loop_in_a_thread_are_not_reordered() -> None:
    """Their turns touch nothing in common: one order stands for all of them.

    A task step holds its loop's thread (``StepLog.loop_turn``). Tried first
    wherever a turn began, every ready task cost every order of the turns,
    times where the thread's one step fell: 140 traces on 4005887 (now 2). A
    turn's start is now where a race inside the turn with a task it held off
    is reversed (``DPORChooser._reverse``), and the hold itself orders nothing.
    """
    report = racecheck.check(_independent_tasks(3), strategy="dpor", schedules=400)
    assert report.verified, report.notes
    assert _traces(report) <= 4, report.notes


def test_conflicting_turns_of_two_tasks_are_all_reordered() -> None:
    """The partner: when both tasks append to one list, every order of their turns is
    an outcome of its own, and DPOR still reaches each of them (C(4, 2) = 6)."""
    orders: set[tuple[int, ...]] = set()

    def target() -> None:
        shared: list[int] = []

        async def worker(name: int) -> None:
            for _ in range(2):
                shared.append(name)
                await asyncio.sleep(0)

        async def main() -> None:
            await asyncio.gather(worker(0), worker(1))

        runner = threading.Thread(target=asyncio.run, args=(main(),))
        runner.start()
        runner.join()
        orders.add(tuple(shared))

    report = racecheck.check(target, strategy="dpor", schedules=400)
    assert report.verified, report.notes
    assert len(orders) == 6, sorted(orders)


def test_dpor_finds_a_thread_adding_to_the_set_a_task_iterates() -> None:
    """``bridge_set_iteration``: the loop's task iterates a set across ``await``\\ s while a
    worker thread adds to it ("Set changed size during iteration").

    tests/core/test_dpor.py still lists it as out of DPOR's reach (``_THREAD_BUGS_OUT``,
    "the loop's decisions offer its tasks only"), which stopped being true when
    one decision began to offer the threads and the loop's tasks: DPOR finds it
    at schedule 81, on 4005887 as now. Nothing checked that; this does.
    """
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(thread_bugs.bridge_set_iteration, strategy="dpor", schedules=1000)
    assert found.value.kind == "exception"
    assert isinstance(found.value.cause, RuntimeError), found.value.cause
    assert "changed size during iteration" in str(found.value.cause)
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(thread_bugs.bridge_set_iteration, found.value.schedule)
    assert "changed size during iteration" in str(again.value.cause)


def _sleepers(shared: bool) -> tuple[Callable[[], None], set[tuple[str, ...]]]:
    """A loop in a thread: two tasks sleep on timers, then append (to one list if ``shared``).

    Also the set of the orders the appends were made in, filled as it runs.
    """
    orders: set[tuple[str, ...]] = set()

    def target() -> None:
        lists: dict[str, list[str]] = {"a": [], "b": []}

        async def worker(name: str) -> None:
            await asyncio.sleep(0.001)
            lists["a" if shared else name].append(name)
            await asyncio.sleep(0.001)

        async def main() -> None:
            await asyncio.gather(worker("a"), worker("b"))

        runner = threading.Thread(target=asyncio.run, args=(main(),))
        runner.start()
        runner.join()
        orders.add(tuple(lists["a"]))

    return target, orders


def test_tasks_woken_by_an_idle_clock_are_not_reordered_for_it() -> None:
    """The clock moves when nobody can run, and wakes both sleepers: each sleeper's last
    step came before that move (it had blocked), an order, not a race.

    Left a race once a turn's hold stopped ordering the tasks (see above), its
    reversal went to the turn's start: every order of the sleepers' turns again
    (4 traces; 1 now).
    """
    target, _ = _sleepers(shared=False)
    report = racecheck.check(target, strategy="dpor", schedules=400)
    assert report.verified, report.notes
    assert _traces(report) == 1, report.notes


def test_sleepers_appending_to_one_list_are_still_reordered() -> None:
    """The partner: woken together, either sleeper may append first; DPOR reaches both."""
    target, orders = _sleepers(shared=True)
    report = racecheck.check(target, strategy="dpor", schedules=400)
    assert report.verified, report.notes
    assert orders == {("a", "b"), ("b", "a")}, orders
