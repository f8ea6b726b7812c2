"""The failure database (``.racecheck/``): saved by a failing run, replayed
first by the next, dropped after clean runs, off with ``--racecheck-db=none``
(real pytest runs, real engine, real CLI)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from racecheck.cli import main
from racecheck.faildb import KEEP_CLEAN_RUNS

BUGGY = """
import asyncio
import pytest

class Account:
    def __init__(self):
        self.balance = 0

    async def deposit(self, amount):
        current = self.balance
        await asyncio.sleep(0)
        self.balance = current + amount

@pytest.mark.racecheck(strategy="random", schedules=200)
async def test_deposit():
    account = Account()
    await asyncio.gather(account.deposit(10), account.deposit(5))
    assert account.balance == 15
"""

FIXED = BUGGY.replace(
    "current = self.balance\n        await asyncio.sleep(0)\n"
    "        self.balance = current + amount",
    "await asyncio.sleep(0)\n        self.balance += amount",
)


@pytest.fixture(autouse=True)
def _database_on(monkeypatch: pytest.MonkeyPatch) -> None:
    # racecheck's own suite turns the database off (tests/conftest.py)
    for var in ("RACECHECK_DB", "RACECHECK_PROFILE", "RACECHECK_SCHEDULES", "RACECHECK_SEED"):
        monkeypatch.delenv(var, raising=False)


def _saved(root: Path) -> dict[str, list[dict[str, object]]]:
    files = sorted((root / ".racecheck" / "failures").glob("*"))
    out = {}
    for f in files:
        assert f.suffix == ".json" and not f.name.startswith(".tmp"), f  # nothing half-written
        data = json.loads(f.read_text())
        out[data["key"]] = data["tokens"]
    return out


def test_a_failure_is_saved_under_the_node_id(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bank=BUGGY)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    saved = _saved(pytester.path)
    assert list(saved) == ["test_bank.py::test_deposit"]
    (entry,) = saved["test_bank.py::test_deposit"]
    assert isinstance(entry["token"], str) and entry["token"] in result.stdout.str()


def test_saved_failure_is_replayed_first_whatever_the_seed_and_budget(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_bank=BUGGY)
    pytester.runpytest().assert_outcomes(failed=1)
    (entry,) = _saved(pytester.path)["test_bank.py::test_deposit"]
    result = pytester.runpytest("--racecheck-seed=4242", "--racecheck-schedules=1")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "saved failing schedule fails again" in out
    assert str(entry["token"]) in out


def test_db_none_writes_and_reads_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bank=BUGGY)
    pytester.runpytest("--racecheck-db=none").assert_outcomes(failed=1)
    assert not (pytester.path / ".racecheck").exists()
    pytester.runpytest().assert_outcomes(failed=1)
    assert (pytester.path / ".racecheck").is_dir()
    result = pytester.runpytest("--racecheck-db=none")
    assert "saved failing schedule" not in result.stdout.str()


def test_db_off_from_ini_and_environment(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_bank=BUGGY)
    pytester.makeini("[pytest]\nracecheck_db = none\n")
    pytester.runpytest().assert_outcomes(failed=1)
    assert not (pytester.path / ".racecheck").exists()
    pytester.makeini("[pytest]\n")
    monkeypatch.setenv("RACECHECK_DB", "none")
    pytester.runpytest().assert_outcomes(failed=1)
    assert not (pytester.path / ".racecheck").exists()


def test_db_elsewhere(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bank=BUGGY)
    pytester.runpytest("--racecheck-db=build/rcdb").assert_outcomes(failed=1)
    assert list((pytester.path / "build" / "rcdb" / "failures").glob("*.json"))
    assert not (pytester.path / ".racecheck").exists()


def test_a_fixed_failure_is_dropped_after_clean_runs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bank=BUGGY)
    pytester.runpytest().assert_outcomes(failed=1)
    pytester.makepyfile(test_bank=FIXED)
    for run in range(1, KEEP_CLEAN_RUNS + 1):
        pytester.runpytest("--racecheck-schedules=5").assert_outcomes(passed=1)
        saved = _saved(pytester.path)
        if run < KEEP_CLEAN_RUNS:
            (entry,) = saved["test_bank.py::test_deposit"]
            assert entry["clean_runs"] == run
    assert _saved(pytester.path) == {}


def test_the_repo_suite_writes_no_database(pytester: pytest.Pytester) -> None:
    """racecheck's own pyproject turns the database off for its own marked tests."""
    root = Path(__file__).resolve().parents[1]
    assert 'racecheck_db = "none"' in (root / "pyproject.toml").read_text()


# --------------------------------------------------------------------- CLI

SCENARIO = textwrap.dedent(
    """
    import asyncio
    import racecheck

    async def lost_update():
        box = {"n": 0}

        async def add():
            n = box["n"]
            await asyncio.sleep(0)
            box["n"] = n + 1

        await asyncio.gather(add(), add())
        assert box["n"] == 2

    SCEN = racecheck.Scenario(
        name="counter",
        variants={"buggy": racecheck.Variant(lost_update, expect="race")},
        options={"strategy": "random"},
    )
    """
)


def _cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code = main(["run", "scen.py", "--json", "--no-report", *args])
    out = capsys.readouterr().out
    assert code == 0, out
    (record,) = json.loads(out)
    return dict(record)


def test_cli_saves_by_scenario_label_and_replays_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scen.py").write_text(SCENARIO)
    first = _cli_json(capsys, "--schedules", "200")
    saved = _saved(tmp_path)
    assert [e["token"] for e in saved["counter[buggy]"]] == [first["schedule"]]
    again = _cli_json(capsys, "--seed", "999", "--schedules", "1")
    assert again["schedule"] == first["schedule"] and again["schedules_run"] == 1


def test_cli_db_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scen.py").write_text(SCENARIO)
    _cli_json(capsys, "--db", "none")
    assert not (tmp_path / ".racecheck").exists()


def test_an_unwritable_database_does_not_change_the_verdict(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bank=BUGGY)
    (pytester.path / "blocker").write_text("a file where the database directory should be")
    result = pytester.runpytest("--racecheck-db=blocker/db")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "NotADirectoryError" not in out and "OSError" not in out
    assert "race found" in out
