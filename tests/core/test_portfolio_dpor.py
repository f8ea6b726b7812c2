"""DPOR inside the portfolio (``strategy="auto"``): its turns alone pay for the access feed,
it ends the exploration with "verified" only when it covered every trace and saw every
conflict, and its failing schedules replay like any member's.

The classic programs are the ones of tests/classic, through the public API where it
can say what is checked; the per-schedule switch is checked on the exploration's own
session, with a real asyncio backend, because only there is "this schedule recorded
its accesses" visible.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import pytest

import racecheck
from racecheck.session import Session, make_settings
from racecheck.strategies.dpor import DPORChooser
from racecheck.strategies.portfolio import MEMBERS, MemberDPOR, PortfolioChooser

_CLASSIC = os.path.join(os.path.dirname(os.path.dirname(__file__)), "classic")
if _CLASSIC not in sys.path:
    sys.path.insert(0, _CLASSIC)

asyncio_bugs: Any = importlib.import_module("test_asyncio_bugs")
thread_bugs: Any = importlib.import_module("test_thread_bugs")


async def guarded_counters() -> None:
    """Three tasks bump a shared counter under a lock: correct, with a few dozen traces."""
    lock = asyncio.Lock()
    state = {"n": 0}

    async def bump() -> None:
        for _ in range(2):
            async with lock:
                value = state["n"]
                await asyncio.sleep(0)
                state["n"] = value + 1

    await asyncio.gather(bump(), bump(), bump())
    assert state["n"] == 6


def test_only_dpors_schedules_record_accesses() -> None:
    """Schedule 1 (DPOR watches it) and DPOR's turns record; every other member runs plain."""
    session = Session(make_settings(guarded_counters, {}))
    portfolio = PortfolioChooser(seed=0)
    recorded: list[tuple[str, bool]] = []
    session.settings.backend.install()
    try:
        for run in range(1, 40):
            controller = session.run(portfolio, run)
            assert controller.failure is None
            recorded.append((portfolio.member, controller.steplog is not None))
            portfolio.end(tuple(controller.decisions), False, controller.scheduling_steps)
            if not portfolio.has_more():
                break
    finally:
        session.settings.backend.uninstall()
    assert recorded[0] == ("exhaustive", True)  # the natural order, watched by DPOR
    for member, logged in recorded[1:]:
        assert logged == (member == "dpor"), recorded
    assert sum(member == "dpor" for member, _ in recorded) >= 8
    assert sum(not logged for _, logged in recorded) >= 20


def test_dpor_takes_two_turns_a_round_and_schedule_1_is_the_natural_order() -> None:
    portfolio = PortfolioChooser(seed=3)
    names = [portfolio.members[i][0] for i in portfolio.round]
    assert names[0] == "exhaustive"  # schedule 1: the systematic member's natural order
    assert names.count("dpor") == 2
    assert sorted(set(names)) == sorted(name for name, _ in MEMBERS)
    # its two turns are spread over the round, not back to back
    first, second = (i for i, name in enumerate(names) if name == "dpor")
    assert second - first >= 3
    # sharding keeps every systematic turn in shard 1
    assert [portfolio.slot_sequential(k) for k in range(1, len(names) + 1)] == [
        name in ("exhaustive", "dpor") for name in names
    ]


def _verified_note(notes: list[str]) -> str:
    (note,) = [n for n in notes if n.startswith("verified: all ")]
    return note


@pytest.mark.parametrize(
    "target",
    [
        pytest.param(guarded_counters, id="asyncio-guarded_counters"),
        pytest.param(asyncio_bugs.abba_three_way_fixed, id="asyncio-abba_three_way_fixed"),
        pytest.param(
            thread_bugs.lost_increment_method_fixed, id="threads-lost_increment_method_fixed"
        ),
    ],
)
def test_auto_stops_verified_with_dpors_own_note(target: Callable[[], Any]) -> None:
    alone = racecheck.check(target, strategy="dpor", schedules=5000)
    assert alone.verified
    report = racecheck.check(target, schedules=5000, seed=1)  # the default strategy
    assert report.strategy == "auto"
    assert report.verified and report.exhausted
    assert report.schedules_run < 5000
    # the same traces as DPOR alone: it ran the same schedules, the others' turns aside
    assert _verified_note(report.notes) == _verified_note(alone.notes)
    assert "auto: dpor covered every schedule; the exploration stopped there" in report.notes
    assert "verified" in str(report)


def test_auto_on_threads_keeps_dpor_and_its_pool_tokens_replay() -> None:
    """DPOR's recorded runs decide as plain ones do: auto keeps it on threads, and a
    failure in a ThreadPoolExecutor program replays plainly whichever member found it."""
    for seed in (0, 1, 2):
        with pytest.raises(racecheck.RaceFound) as found:
            racecheck.check(thread_bugs.lost_increment_thread_pool, schedules=2000, seed=seed)
        assert found.value.strategy.startswith("auto")
        with pytest.raises(racecheck.RaceFound) as again:
            racecheck.replay(thread_bugs.lost_increment_thread_pool, found.value.schedule)
        assert again.value.kind == found.value.kind
    report = racecheck.check(thread_bugs.lost_increment_thread_pool_fixed, schedules=90, seed=0)
    (counts,) = [n for n in report.notes if n.startswith("auto: schedules per member:")]
    dpor_runs = re.search(r"\bdpor (\d+)", counts)
    assert dpor_runs is not None and int(dpor_runs.group(1)) >= 15, counts


def test_a_budget_too_small_for_dpor_says_how_far_it_got_and_never_verified() -> None:
    report = racecheck.check(asyncio_bugs.abba_three_way_fixed, schedules=30, seed=0)
    assert not report.verified and not report.exhausted
    assert not any(note.startswith("verified") for note in report.notes), report.notes
    assert any(
        note.startswith("dpor: the budget ran out after ") and "not verified" in note
        for note in report.notes
    ), report.notes


async def shared_sorted_list() -> None:
    """Two tasks add to a structure whose code racecheck does not trace."""
    from sortedcontainers import SortedList  # a test framework's dependency: never traced

    items = SortedList()

    async def add(value: int) -> None:
        items.add(value)
        await asyncio.sleep(0)
        items.add(value + 10)

    await asyncio.gather(add(1), add(2))
    assert len(items) == 4


def test_dpor_that_could_not_see_everything_never_verifies_in_auto() -> None:
    alone = racecheck.check(shared_sorted_list, strategy="dpor", schedules=2000)
    assert not alone.verified  # the premise: DPOR alone refuses too
    report = racecheck.check(shared_sorted_list, schedules=2000, seed=0)
    assert not report.verified
    assert not any(note.startswith("verified") for note in report.notes), report.notes


async def late_lost_update() -> None:
    """The second deposit starts three awaits late: a lost update needing 3 delays."""
    balance = [0]

    async def deposit(delay: int) -> None:
        for _ in range(delay):
            await asyncio.sleep(0)
        seen = balance[0]
        await asyncio.sleep(0)
        balance[0] = seen + 1

    await asyncio.gather(deposit(0), deposit(3))
    assert balance[0] == 2, balance


def test_a_failure_found_by_the_dpor_member_replays_exactly() -> None:
    """Only the two systematic members, so DPOR is the finder; its token replays alone."""
    portfolio = PortfolioChooser(
        seed=0,
        members=[("exhaustive", MEMBERS[0][1]), ("dpor", lambda seed: MemberDPOR())],
    )
    session = Session(make_settings(late_lost_update, {}))
    session.settings.backend.install()
    try:
        for run in range(1, 200):
            controller = session.run(portfolio, run)
            failed = controller.failure is not None
            portfolio.end(tuple(controller.decisions), failed, controller.scheduling_steps)
            if failed:
                break
        else:
            pytest.fail("no member found the lost update in 200 schedules")
    finally:
        session.settings.backend.uninstall()
    assert portfolio.found_by is not None and portfolio.found_by.startswith("dpor, "), (
        portfolio.found_by
    )
    token = session.schedule(tuple(controller.decisions)).encode()
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(late_lost_update, token)
    assert again.value.kind == "exception"
    assert isinstance(again.value.cause, AssertionError)


def test_the_dpor_member_is_dpor() -> None:
    """The member is plain DPOR: systematic (no saturation), watching schedule 1."""
    member = MemberDPOR()
    assert isinstance(member, DPORChooser)
    assert member.samples is False and member.profiles_natural_order is True
    assert member.observes_accesses
