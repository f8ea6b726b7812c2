"""Targets of the wrong shape, bad option values, and replay hints that replay.

* A target that needs arguments is refused before exploring (``UsageError``),
  not reported as a race on every schedule.
* ``progress`` must be callable.
* The printed ``racecheck.replay(...)`` line carries every option that changes
  the schedule, so pasting it reproduces the failure; a token replayed with
  another granularity is refused.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

import racecheck
from racecheck.errors import TokenError, UsageError


def needs_two(a: int, b: int) -> None:
    raise AssertionError("never called with arguments")


async def async_needs_one(a: int) -> None:
    raise AssertionError("never called with arguments")


class NeedsArgs:
    def __call__(self, x: int) -> None:
        raise AssertionError("never")


@pytest.mark.parametrize(
    "target",
    [needs_two, async_needs_one, NeedsArgs(), functools.partial(needs_two, 1)],
    ids=["plain", "async", "callable-object", "partial-missing-one"],
)
def test_a_target_that_needs_arguments_is_a_usage_error(target: Any) -> None:
    with pytest.raises(UsageError, match="argument"):
        racecheck.check(target, schedules=3)
    with pytest.raises(UsageError, match="argument"):
        racecheck.replay(target, "rc1:threads:access:py311:abcd:eNpjZGIEAAALAAU")


def _ok(a: int = 1, *rest: int, **extra: int) -> None:
    pass


def _wrapper_of(func: Any) -> Any:
    # A decorator that supplies the argument: functools.wraps points
    # __wrapped__ at a function that takes one; the wrapper itself takes none.
    @functools.wraps(func)
    def wrapper() -> Any:
        return func(1)

    return wrapper


@pytest.mark.parametrize(
    "target",
    [_ok, functools.partial(_ok, 1, 2), _wrapper_of(lambda a: None)],
    ids=["defaults", "partial-complete", "wraps"],
)
def test_targets_callable_without_arguments_are_accepted(target: Any) -> None:
    report = racecheck.check(target, schedules=2)
    assert report.schedules_run >= 1


def test_progress_must_be_callable() -> None:
    with pytest.raises(UsageError, match="progress"):
        racecheck.check(_ok, schedules=2, progress=42)


def test_a_broken_race_scenario_does_not_pass_in_the_cli(tmp_path: Path) -> None:
    (tmp_path / "scen.py").write_text(
        textwrap.dedent(
            """
            import racecheck

            def target(account):
                account.deposit(1)

            SCEN = racecheck.Scenario(
                name="s", variants={"v": racecheck.Variant(target, expect="race")}
            )
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "racecheck", "run", "scen.py", "--no-report"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONHASHSEED="0"),
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "argument" in proc.stderr and "Traceback" not in proc.stderr


def test_marker_progress_42_is_a_one_line_failure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_progress=textwrap.dedent(
            """
            import pytest

            @pytest.mark.racecheck(schedules=3, progress=42)
            def test_one():
                pass
            """
        )
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*racecheck: UsageError: progress must be*"])
    assert "Traceback" not in result.stdout.str()


# ------------------------------------------------------------- replay hints


def lost_update_threads() -> None:
    box = [0]

    def bump() -> None:
        v = box[0]
        box[0] = v + 1

    t = threading.Thread(target=bump)
    t.start()
    bump()
    t.join()
    assert box[0] == 2, box


def test_the_printed_hint_replays_with_every_schedule_option() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(
            lost_update_threads,
            schedules=200,
            granularity="line",
            max_steps=5000,
            label="custom-label",
            backend="threads",
        )
    hint = info.value.replay_hint or ""
    assert "granularity='line'" in hint
    assert "max_steps=5000" in hint
    assert "label='custom-label'" in hint
    namespace = {"racecheck": racecheck, "lost_update_threads": lost_update_threads}
    with pytest.raises(racecheck.RaceFound) as again:
        eval(hint, namespace)
    assert again.value.schedule == info.value.schedule


def test_the_hint_stays_short_with_default_options() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(lost_update_threads, schedules=200)
    assert info.value.replay_hint == (
        f'racecheck.replay(lost_update_threads, "{info.value.schedule}")'
    )


def test_a_token_replayed_at_another_granularity_is_refused() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(lost_update_threads, schedules=200, granularity="line")
    with pytest.raises(TokenError, match="granularity='line'"):
        racecheck.replay(lost_update_threads, info.value.schedule)
