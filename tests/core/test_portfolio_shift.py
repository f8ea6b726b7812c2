"""The portfolio moves its budget to DPOR when sampling has converged and DPOR can finish.

Issue 11: "The five reference scenarios' correct variants are verified [...] and
`racecheck run` shows it." cleveragents-7120-changeset's fix needs 595 DPOR runs;
with DPOR's fixed share (2 turns in 9) the default 1,000 schedules gave it 222, and
`racecheck run` said only "safe". Now, once the sampling members' schedules show
hardly anything new (Good-Turing estimate, racecheck.saturation) and DPOR's own
estimate says its search is finite, DPOR takes 8 turns in 9 and the run ends
verified; the notes say when the budget moved and where it went.

What must not change: a bug the portfolio found before is found at the same
schedule, by the same member (the shift cannot happen before 150 sampled
schedules, about schedule 225; every classic bug and every reference bug is found
before that, see the measurements in the portfolio's docstring).

Real programs throughout: the reference scenario's own variants, the CLI in a
subprocess, the classic thread programs of tests/classic.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
import re
import subprocess
import sys
from typing import Any

import pytest

import racecheck
from racecheck.session import Session, make_settings
from racecheck.strategies.portfolio import SETTLE_GROWTH, PortfolioChooser

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
_CHANGESET = os.path.join(_ROOT, "scenarios", "cleveragents_7120_changeset.py")
_CLASSIC = os.path.join(_ROOT, "tests", "classic")
if _CLASSIC not in sys.path:
    sys.path.insert(0, _CLASSIC)


def _changeset() -> racecheck.Scenario:
    spec = importlib.util.spec_from_file_location("portfolio_shift_changeset", _CHANGESET)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    scenario: racecheck.Scenario = module.SCENARIO
    return scenario


def test_racecheck_run_shows_the_changeset_fix_verified_at_the_default_budget(
    tmp_path: Any,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "racecheck", "run", _CHANGESET, "--no-report", "--db", "none"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, RACECHECK_DB="none"),
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if re.search(r"\scorrect\s", line))
    assert re.search(r"\bsafe\s+✓\s+\d+ verified\b", row), done.stdout
    assert "3 variants: 3 met" in done.stdout


def test_the_shift_to_dpor_is_reported_in_the_notes() -> None:
    target = _changeset().variants["correct"].target
    report = racecheck.check(target, coverage=True)  # as racecheck run: coverage on
    assert report.verified, report.notes
    shift = [n for n in report.notes if n.startswith("auto: sampling saturated after ")]
    assert len(shift) == 1, report.notes
    after, rest, moved, others = map(
        int,
        re.fullmatch(
            r"auto: sampling saturated after (\d+) schedules; of the remaining (\d+),"
            r" (\d+) went to dpor and (\d+) to the other members; dpor covered every"
            rf" schedule at schedule {report.schedules_run}",
            shift[0],
        ).groups(),  # type: ignore[union-attr]
    )
    assert after + rest == report.schedules_run
    assert moved + others == rest and moved > 7 * others  # 8 turns in 9
    assert "auto: dpor covered every schedule; the exploration stopped there" in report.notes
    why = [n for n in report.notes if n.startswith("saturated: the sampling members' ")]
    assert len(why) == 1 and "Good-Turing" in why[0] and "looked finite" in why[0], why


def test_saturation_off_keeps_the_fixed_split() -> None:
    """``saturation=0`` turns saturation off, and with it the shift: DPOR keeps 2 turns in 9."""
    target = _changeset().variants["correct"].target
    report = racecheck.check(target, coverage=True, saturation=0, schedules=450)
    assert not report.verified
    assert not any("sampling saturated" in n for n in report.notes), report.notes
    counts = next(n for n in report.notes if n.startswith("auto: schedules per member: "))
    assert "dpor 100," in counts, counts  # 2/9 of 450


thread_bugs: Any = importlib.import_module("test_thread_bugs")
asyncio_bugs: Any = importlib.import_module("test_asyncio_bugs")

#: (module, target, seed) -> (schedule, member), measured with coverage on (so the
#: sampling fingerprints are orderings, as in racecheck run): the latest finds of the
#: classic suites (the latest asyncio one too). First measured before the shift existed;
#: re-measured when pct, pos and surw moved to racecheck.strategies.stream's bits (their
#: schedules changed; the sum of the classic finds under seeds 0-2 went 1,177 -> 1,015).
#: All come before any shift can (150 sampled schedules, about schedule 225).
BEFORE = {
    ("threads", "condition_if_explicit_lock", 1): (111, "random, its schedule 13"),
    ("threads", "lost_increment_thread_pool", 0): (85, "pos, its schedule 10"),
    ("threads", "condition_if_explicit_lock", 0): (72, "pct depth 1-5, its schedule 8"),
    ("threads", "daemon_worker_lost_update", 2): (47, "dpor, its schedule 11"),
    ("asyncio", "starved_observer", 1): (34, "pct depth 2, its schedule 4"),
}


@pytest.mark.parametrize(
    ("backend", "name", "seed"), sorted(BEFORE), ids=lambda v: str(v).replace(" ", "")
)
def test_bugs_are_found_at_the_same_schedule_as_before(backend: str, name: str, seed: int) -> None:
    module = thread_bugs if backend == "threads" else asyncio_bugs
    target = getattr(module, name)
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(target, schedules=2000, seed=seed, coverage=True, minimize=False)
    at, member = BEFORE[(backend, name, seed)]
    assert (found.value.schedules_run, found.value.strategy) == (at, f"auto: {member}")
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(target, found.value.schedule)
    assert again.value.kind == found.value.kind


# -- the guard: DPOR must look able to finish ---------------------------------------------


def _counters(tasks: int, bumps: int) -> Any:
    async def target() -> None:
        lock = asyncio.Lock()
        state = {"n": 0}

        async def bump() -> None:
            for _ in range(bumps):
                async with lock:
                    value = state["n"]
                    await asyncio.sleep(0)
                    state["n"] = value + 1

        await asyncio.gather(*(bump() for _ in range(tasks)))
        assert state["n"] == tasks * bumps

    return target


def _portfolio_after(target: Any, schedules: int) -> PortfolioChooser:
    """A real portfolio after ``schedules`` schedules of ``target`` (budget 1,000)."""
    session = Session(make_settings(target, {}))
    portfolio = PortfolioChooser(seed=0)
    portfolio.plan_budget(1000)
    session.settings.backend.install()
    try:
        for run in range(1, schedules + 1):
            controller = session.run(portfolio, run)
            assert controller.failure is None
            portfolio.end(tuple(controller.decisions), False, controller.scheduling_steps)
    finally:
        session.settings.backend.uninstall()
    return portfolio


@pytest.mark.parametrize("converged", [True, False])
def test_no_shift_when_dpors_search_cannot_finish_in_the_budget(converged: bool) -> None:
    """Five tasks bumping under one lock, four times each: far more traces than 1,000 runs."""
    portfolio = _portfolio_after(_counters(5, 4), 300)
    before = list(portfolio.active)
    assert portfolio.after_sampling(150, converged, "claim") is None
    assert portfolio.shifted is None and portfolio.active == before
    # its estimate kept growing with its runs: no size yet
    assert (
        portfolio.estimates[-1]
        > SETTLE_GROWTH * portfolio.estimates[len(portfolio.estimates) // 2 - 1]
    )


@pytest.mark.parametrize(
    ("converged", "why"),
    [(True, "saturated: claim; dpor's search looked finite"), (False, "within reach")],
)
def test_shift_when_dpors_search_looks_finite(converged: bool, why: str) -> None:
    """Three tasks, two bumps each: about 100 DPOR runs, settled after 64."""
    portfolio = _portfolio_after(_counters(3, 2), 300)
    note = portfolio.after_sampling(150, converged, "claim")
    assert note is not None and why in note and note.endswith("it took 8 turns in 9"), note
    dpor = [name for name, _ in portfolio.members].index("dpor")
    assert portfolio.active.count(dpor) == 8 * (len(set(portfolio.active)) - 1)
