"""Pinned schedules: ``@pytest.mark.racecheck(replay=...)``, ``racecheck.pinned``
and ``check(replay=...)``, on buggy and fixed code (real engine, real pytest)."""

from __future__ import annotations

import asyncio
import re
import warnings

import pytest

import racecheck

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

@pytest.mark.racecheck(strategy="random", seed=SEED, schedules=200REPLAY)
async def test_deposit():
    account = Account()
    await asyncio.gather(account.deposit(10), account.deposit(5))
    assert account.balance == 15
"""

# The same scheduling points, no lost update: the buggy schedule runs on it to the end.
FIXED = BUGGY.replace(
    "current = self.balance\n        await asyncio.sleep(0)\n"
    "        self.balance = current + amount",
    "await asyncio.sleep(0)\n        self.balance += amount",
)


def _source(template: str, token: str | None = None, seed: int = 0) -> str:
    replay = "" if token is None else f", replay={token!r}"
    return template.replace("SEED", str(seed)).replace("REPLAY", replay)


def _found_token(pytester: pytest.Pytester) -> str:
    pytester.makepyfile(test_bank=_source(BUGGY))
    result = pytester.runpytest("--racecheck-db=none")
    result.assert_outcomes(failed=1)
    match = re.search(r"--racecheck-replay=(rc1:\S+)", result.stdout.str())
    assert match, result.stdout.str()
    return match.group(1)


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("RACECHECK_DB", "RACECHECK_PROFILE", "RACECHECK_SCHEDULES"):
        monkeypatch.delenv(var, raising=False)


def test_pinned_schedule_fails_buggy_code_first(pytester: pytest.Pytester) -> None:
    token = _found_token(pytester)
    # schedules=1 with another seed: only the pinned schedule can find the bug first
    pytester.makepyfile(test_bank=_source(BUGGY, token, seed=12345))
    result = pytester.runpytest("--racecheck-db=none")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "pinned schedule fails again" in out
    assert token in out


def test_pinned_schedule_passes_fixed_code(pytester: pytest.Pytester) -> None:
    token = _found_token(pytester)
    pytester.makepyfile(test_bank=_source(FIXED, token))
    result = pytester.runpytest("--racecheck-db=none", "-rA")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*pinned schedule * ran without failing*"])
    assert "does not apply" not in result.stdout.str()


def test_pinned_token_of_another_test_warns_and_explores(pytester: pytest.Pytester) -> None:
    token = _found_token(pytester)
    source = _source(BUGGY, token).replace("def test_deposit", "def test_other_name")
    pytester.makepyfile(test_bank=source.replace("balance == 15", "balance in (10, 5, 15)"))
    result = pytester.runpytest("--racecheck-db=none")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*RacecheckWarning*pinned schedule*does not apply*"])


def test_diverged_pinned_token_warns_and_exploration_still_finds_the_bug(
    pytester: pytest.Pytester,
) -> None:
    token = _found_token(pytester)
    # two extra scheduling points: the recorded decisions no longer fit
    diverged = BUGGY.replace(
        "self.balance = current + amount",
        "await asyncio.sleep(0)\n        await asyncio.sleep(0)\n"
        "        self.balance = current + amount",
    )
    pytester.makepyfile(test_bank=_source(diverged, token))
    result = pytester.runpytest("--racecheck-db=none")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "does not apply" in out
    assert "pinned schedule fails again" not in out
    assert "balance" in out  # the failure exploration found


def test_malformed_pinned_token_is_a_clear_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bank=_source(BUGGY, "rc1:garbage"))
    result = pytester.runpytest("--racecheck-db=none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*racecheck: UsageError: pinned schedule*"])


# ------------------------------------------------------------ racecheck.check


class Account:
    def __init__(self) -> None:
        self.balance = 0

    async def deposit(self, amount: int) -> None:
        current = self.balance
        await asyncio.sleep(0)
        self.balance = current + amount


async def deposits() -> None:
    account = Account()
    await asyncio.gather(account.deposit(10), account.deposit(5))
    assert account.balance == 15


def _token_for(target: object, label: str) -> str:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, strategy="random", schedules=200, label=label)  # type: ignore[arg-type]
    return info.value.schedule


def test_check_replay_option_replays_before_exploring() -> None:
    token = _token_for(deposits, "bank")
    with pytest.raises(racecheck.RaceFound) as info:
        # one exploration schedule with a seed whose first schedule passes:
        # only the pinned schedule fails
        racecheck.check(
            deposits, strategy="random", schedules=1, seed=3, label="bank", replay=token
        )
    assert info.value.schedule == token


def test_pinned_decorator_on_fixed_code_passes() -> None:
    token = _token_for(deposits, "bank")

    @racecheck.pinned(token)
    async def fixed() -> None:
        account = Account()

        async def deposit(amount: int) -> None:
            await asyncio.sleep(0)
            account.balance += amount

        await asyncio.gather(deposit(10), deposit(5))
        assert account.balance == 15

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = racecheck.check(fixed, strategy="random", schedules=20, label="bank")
    assert report.schedules_run == 20 and not report.warnings


def test_pinned_token_for_another_target_warns() -> None:
    token = _token_for(deposits, "bank")

    @racecheck.pinned(token)
    async def other() -> None:
        await asyncio.sleep(0)

    with pytest.warns(racecheck.PinnedScheduleWarning, match="does not apply"):
        report = racecheck.check(other, strategy="random", schedules=3, label="elsewhere")
    assert any("does not apply" in w for w in report.warnings)


def test_pinned_decorator_rejects_a_malformed_token() -> None:
    with pytest.raises(racecheck.UsageError, match="pinned schedule"):
        racecheck.pinned("rc1:nope")


def test_a_failing_pinned_token_is_not_copied_into_the_database(
    pytester: pytest.Pytester,
) -> None:
    token = _found_token(pytester)
    pytester.makepyfile(test_bank=_source(BUGGY, token))
    pytester.runpytest().assert_outcomes(failed=1)  # the database is on
    assert not list(pytester.path.glob(".racecheck/failures/*.json"))
