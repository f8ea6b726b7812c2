"""The portfolio: who found it and when, exact replay whatever member, early stops."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import racecheck
from racecheck.schedule import Decision
from racecheck.strategies.base import BaseChooser, Chooser
from racecheck.strategies.portfolio import MEMBERS, PortfolioChooser
from racecheck.strategies.random import RandomChooser

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "classic"))
import test_asyncio_bugs as classic_asyncio
import test_thread_bugs as classic_threads


def starved(steps: int) -> Callable[[], Any]:
    async def target() -> None:
        state = {"n": 0}

        async def counter() -> None:
            for _ in range(steps):
                state["n"] += 1
                await asyncio.sleep(0)

        async def observer() -> None:
            assert state["n"] < steps

        await asyncio.gather(counter(), observer())

    target.__name__ = target.__qualname__ = f"starved_{steps}"
    return target


TARGETS: list[tuple[Callable[[], Any], str]] = [
    (starved(30), "exception"),
    (classic_asyncio.cancel_leaks_slot, "exception"),
    (classic_asyncio.starved_consumer_overflow, "exception"),
    (classic_threads.lost_increment_thread_pool, "exception"),
    (classic_threads.condition_if_explicit_lock, "exception"),
    (classic_threads.daemon_worker_lost_update, "exception"),
    (classic_threads.barrier_reused_phase_bug, "exception"),
]


def test_the_finder_and_its_own_schedule_count_are_named() -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(starved(30), schedules=2000, seed=0)
    strategy = found.value.strategy
    assert strategy.startswith("auto: ")
    member, own = strategy[len("auto: ") :].split(", its schedule ")
    assert member in {name for name, _ in MEMBERS}
    # rounds of one schedule per member: the member's count is about total / members
    assert 1 <= int(own) <= found.value.schedules_run
    assert f"({strategy}, seed 0)" in str(found.value)


def _tokens_replay_exactly(grid: Sequence[tuple[Callable[[], Any], str, int]]) -> None:
    members: dict[str, int] = {}
    for target, kind, seed in grid:
        with pytest.raises(racecheck.RaceFound) as found:
            racecheck.check(target, schedules=2000, seed=seed)
        member = found.value.strategy.split(": ", 1)[1].split(",")[0]
        members[member] = members.get(member, 0) + 1
        with pytest.raises(racecheck.RaceFound) as again:
            racecheck.replay(target, found.value.schedule)
        assert again.value.kind == found.value.kind == kind
        assert type(again.value.cause) is type(found.value.cause)
    # the grid is chosen so that several members get to find something
    assert len(members) >= 3, members


#: one (target, seed) per finding member, picked from the full grid below (which
#: member found what at 2000 schedules: surw starved_30/0, dpor cancel_leaks_slot/0
#: (asyncio) and barrier_reused_phase_bug/0 (threads), pct lost_increment_thread_pool/1,
#: pos condition_if_explicit_lock/2, random daemon_worker_lost_update/2); a seventh of
#: the full grid's time with every member's tokens still replayed
_CI_GRID = [
    (TARGETS[0][0], TARGETS[0][1], 0),
    (TARGETS[1][0], TARGETS[1][1], 0),
    (TARGETS[6][0], TARGETS[6][1], 0),
    (TARGETS[3][0], TARGETS[3][1], 1),
    (TARGETS[4][0], TARGETS[4][1], 2),
    (TARGETS[5][0], TARGETS[5][1], 2),
]


def test_tokens_replay_exactly_whatever_member_produced_them() -> None:
    _tokens_replay_exactly(_CI_GRID)


@pytest.mark.slow
def test_tokens_replay_exactly_whatever_member_produced_them_full_grid() -> None:
    _tokens_replay_exactly([(t, kind, seed) for t, kind in TARGETS for seed in (0, 1, 2)])


def test_the_cli_says_which_member_found_it(tmp_path: Path) -> None:
    (tmp_path / "starve.py").write_text(
        textwrap.dedent(
            """
            import asyncio
            from racecheck.scenario import Scenario, Variant

            async def starved():
                state = {"n": 0}

                async def counter():
                    for _ in range(30):
                        state["n"] += 1
                        await asyncio.sleep(0)

                async def observer():
                    assert state["n"] < 30, "observer starved"

                await asyncio.gather(counter(), observer())

            SCENARIO = Scenario(name="starve", variants={"buggy": Variant(starved, expect="race")})
            """
        )
    )
    out = subprocess.run(
        [sys.executable, "-m", "racecheck", "run", "starve.py", "--db", "none"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("starve[buggy]: race after"))
    assert "(auto: " in line and ", its schedule " in line, line


class _VerifiesAfter(BaseChooser):
    """A stand-in for a reduction-based member (DPOR) that verifies after ``runs`` schedules."""

    name = "verifier"
    samples = False

    def __init__(self, runs: int) -> None:
        self.runs, self.verified = runs, False
        self.ran = 0

    def choose(self, candidates: Sequence[int], step: int) -> int:
        return 0

    def end(self, decisions: Sequence[Decision], failed: bool, steps: int) -> None:
        self.ran += 1
        self.verified = self.ran >= self.runs

    def notes(self, schedules_run: int) -> list[str]:
        return [f"verifier: verified after {self.ran}"]


def test_a_member_that_verified_the_space_ends_the_portfolio() -> None:
    members: list[tuple[str, Callable[[int], Chooser]]] = [
        ("dpor", lambda seed: _VerifiesAfter(3)),
        ("random", lambda seed: RandomChooser(seed)),
    ]
    portfolio = PortfolioChooser(seed=0, members=members)
    runs = 0
    while portfolio.has_more() and runs < 100:
        runs += 1
        portfolio.begin(runs)
        portfolio.choose([1, 2], 1)
        portfolio.end([(2, 0)], False, 2)
    assert runs == 5  # dpor, random, dpor, random, dpor (verified)
    assert portfolio.exhausted
    notes = portfolio.notes(runs)
    assert "auto: dpor covered every schedule; the exploration stopped there" in notes
    assert "verifier: verified after 3" in notes


def test_adding_a_member_is_one_entry() -> None:
    """Each member is a (name, factory) pair; the portfolio builds one chooser per entry."""
    portfolio = PortfolioChooser(seed=5)
    assert [name for name, _ in portfolio.members] == [name for name, _ in MEMBERS]
    assert portfolio.systematic is portfolio.members[0][1]
    # sampling members skip their natural-order schedule, the systematic one runs it
    assert portfolio.member_runs == [0] + [1] * (len(MEMBERS) - 1)
