"""Shared steps of the real-library suite (tests/realcode).

Each test module there holds a *user's* test: a pytest module that imports a
real PyPI library at the top and marks a test ``@pytest.mark.racecheck``, as
someone who uses the library would write it. The suite runs that module in a
fresh pytest process (``pytester.runpytest_subprocess``), against the library
installed from the index, non-editable, at the pin the venv was built with
(``nox -s realcode``, which sets ``RACECHECK_REALCODE_PIN=buggy|fixed``).

A fresh process per run matters: a token is only worth something if it
replays where nothing from the exploration is left (no warmed caches, no
adopted locks, no imported state).

Outside that session the modules skip: the library is missing, or installed at
a version this suite was not written for.

Every library's module is the same checks over its own user test, so the checks
live here once, as mixins of ``RealBugSuite``: a module says what its library's
bug looks like (``FailsItsUserTest``: the symptom its assertion prints;
``FlaggedByTheDetector``: the finding the detector alone must report) and adds
only what is peculiar to that library.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

PINS: dict[str, dict[str, str]] = json.loads(
    (Path(__file__).parent / "pins.json").read_text(encoding="utf-8")
)

_FOUND = re.compile(
    r"racecheck: (?:race|deadlock|step-limit) found after (\d+)(?: of \d+)? schedules? \(([^)]*)\)"
)
_TOKEN = re.compile(r"--racecheck-replay=(\S+)")


def require_pin(distribution: str, pin: str) -> str:
    """Skip unless the venv was built for ``distribution`` at ``pin``; return the version.

    A venv built for a pin but holding another version is a broken setup, not a
    reason to skip: that fails loudly.
    """
    chosen = os.environ.get("RACECHECK_REALCODE_PIN", "")
    if not chosen:
        pytest.skip("real-library tests run under `nox -s realcode` (RACECHECK_REALCODE_PIN)")
    if chosen != pin:
        pytest.skip(f"this venv holds the {chosen} release")
    try:
        installed = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{distribution} is not installed")
    expected = PINS[distribution][pin]
    if installed != expected:
        pytest.fail(
            f"RACECHECK_REALCODE_PIN={pin} expects {distribution}=={expected},"
            f" this venv has {installed}",
            pytrace=False,
        )
    return installed


@dataclass
class Found:
    """What a failing user run printed: enough to judge it and to replay it."""

    schedules: int
    strategy: str
    token: str
    output: str


def pytest_args() -> list[str]:
    """Arguments of every user run: no cache, and coverage when the session asks for it."""
    args = ["-p", "no:cacheprovider", "-rA"]
    if os.environ.get("RACECHECK_REALCODE_COV"):
        args += ["-p", "pytest_cov", "--cov", "--cov-report=term"]
    return args


def run_user_test(pytester: pytest.Pytester, *extra: str) -> pytest.RunResult:
    result = pytester.runpytest_subprocess(*pytest_args(), *extra)
    output = result.stdout.str() + result.stderr.str()
    # whatever the verdict, racecheck must never blame an actor it could not control
    assert "StuckError" not in output, output
    if os.environ.get("RACECHECK_REALCODE_COV"):
        assert "TOTAL" in output, "pytest-cov did not report: the run was not under coverage"
    return result


def expect_found(pytester: pytest.Pytester, symptom: str) -> Found:
    """The user run fails with racecheck's race report showing ``symptom``."""
    result = run_user_test(pytester)
    output = result.stdout.str()
    result.assert_outcomes(failed=1)
    found = _FOUND.search(output)
    assert found, output
    assert symptom in output, output
    token = _TOKEN.search(output)
    assert token, output
    return Found(int(found.group(1)), found.group(2), token.group(1), output)


def expect_replay_fails(pytester: pytest.Pytester, found: Found, symptom: str) -> None:
    """The token fails again in a fresh process, with the same symptom and a real trace."""
    result = run_user_test(pytester, f"--racecheck-replay={found.token}")
    output = result.stdout.str()
    result.assert_outcomes(failed=1)
    assert "replayed schedule fails again" in output, output
    assert symptom in output, output
    assert "diverge" not in output.lower(), output


def expect_clean(pytester: pytest.Pytester, *extra: str) -> str:
    """The user run passes; its report neither warns of a blind run nor is empty."""
    result = run_user_test(pytester, *extra)
    output = result.stdout.str()
    result.assert_outcomes(passed=1)
    assert "racecheck" in output and "schedules" in output, output
    assert "warning:" not in output, output
    return output


def save_token(library: str, token: str) -> None:
    directory = os.environ.get("RACECHECK_REALCODE_TOKENS")
    if directory:
        Path(directory, f"{library}.token").write_text(token, encoding="utf-8")


def saved_token(library: str) -> str | None:
    directory = os.environ.get("RACECHECK_REALCODE_TOKENS")
    path = Path(directory, f"{library}.token") if directory else None
    if path is None or not path.exists():
        return None
    return path.read_text(encoding="utf-8").strip()


def expect_replay_after_fix(pytester: pytest.Pytester, library: str, symptom: str) -> str:
    """The buggy release's token, replayed on the fixed release, does not reproduce the bug.

    The fixed code may take another path than the recorded one (it takes a lock
    the buggy code did not): that is a divergence, reported as such, or "did not
    fail"; either way never the old symptom and never "fails again".
    """
    token = saved_token(library)
    if token is None:
        pytest.skip(f"no token from the buggy {library} run (run realcode({library}-buggy) first)")
    result = run_user_test(pytester, f"--racecheck-replay={token}")
    output = result.stdout.str()
    assert "fails again" not in output, output
    assert symptom not in output, output
    outcomes = result.parseoutcomes()
    if outcomes.get("passed") == 1:
        return "did not fail"
    assert outcomes.get("failed") == 1 and "diverge" in output.lower(), output
    return "diverged"


def detector_args(module: str) -> tuple[str, ...]:
    """The race detector on, with the library traced as code under test."""
    return ("--racecheck-detect", f"--racecheck-trace-packages={module}")


def without_assertions(source: str) -> str:
    """The user's test with its assertion lines taken out: the detector alone must judge.

    Every assertion of these user tests is one line; each becomes a ``pass`` at
    its indentation, so the line numbers of the module stay the same.
    """
    lines = source.splitlines()
    out = [
        line[: len(line) - len(line.lstrip())] + "pass  # assertion removed"
        if line.lstrip().startswith("assert ")
        else line
        for line in lines
    ]
    assert out != lines, "the user test has no assertion to remove"
    return "\n".join(out) + "\n"


def expect_detector_clean(pytester: pytest.Pytester, module: str) -> str:
    """The fixed release passes under the detector, its library traced (no false alarm)."""
    output = expect_clean(pytester, *detector_args(module))
    assert "atomicity-violation" not in output and "data-race" not in output, output
    return output


def expect_detector_finding(pytester: pytest.Pytester, module: str, pattern: str) -> str:
    """The buggy release, assertion removed, fails with a detector finding of ``pattern``."""
    result = run_user_test(pytester, *detector_args(module))
    output = result.stdout.str()
    result.assert_outcomes(failed=1)
    found = re.search(r"racecheck: (atomicity-violation|data-race) found after", output)
    assert found, output
    assert f"{pattern} on " in output, output
    return output


class RealBugSuite:
    """The fixed release runs clean, with and without the detector watching the library.

    A subclass names its library and its user test; the mixins below add the
    checks of the buggy release that fit the bug.
    """

    #: the distribution's name on the index, as in pins.json
    library: ClassVar[str]
    #: the import name: what the detector traces as code under test
    module: ClassVar[str]
    #: the user's pytest module, as someone who uses the library would write it
    user_test: ClassVar[str]

    def write_user_test(self, pytester: pytest.Pytester, source: str | None = None) -> None:
        name = "test_user_" + self.library.replace("-", "_")
        pytester.makepyfile(**{name: self.user_test if source is None else source})

    def test_fixed_release_runs_clean(self, pytester: pytest.Pytester) -> None:
        require_pin(self.library, "fixed")
        self.write_user_test(pytester)
        print(expect_clean(pytester))

    def test_fixed_release_is_clean_under_the_detector(self, pytester: pytest.Pytester) -> None:
        """No false alarm on the fixed release, the library traced as code under test."""
        require_pin(self.library, "fixed")
        self.write_user_test(pytester)
        expect_detector_clean(pytester, self.module)


class FailsItsUserTest(RealBugSuite):
    """The buggy release fails the user test, its token replays in a fresh process,
    and the same token, replayed on the fixed release, shows the bug no more."""

    #: what the failing run prints: the assertion's message, or the error
    symptom: ClassVar[str]
    #: why the pytest replay of a failing token is known to diverge, if it is
    replay_diverges: ClassVar[str | None] = None

    def test_buggy_release_is_found_and_replays(self, pytester: pytest.Pytester) -> None:
        require_pin(self.library, "buggy")
        self.write_user_test(pytester)
        found = expect_found(pytester, self.symptom)
        save_token(self.library, found.token)
        print(f"realcode {self.library} buggy: found after {found.schedules} ({found.strategy})")
        if self.replay_diverges is None:
            expect_replay_fails(pytester, found, self.symptom)
            return
        try:
            expect_replay_fails(pytester, found, self.symptom)
        except AssertionError:
            pytest.xfail(self.replay_diverges)

    def test_fixed_release_does_not_fail_on_the_buggy_token(
        self, pytester: pytest.Pytester
    ) -> None:
        require_pin(self.library, "fixed")
        self.write_user_test(pytester)
        after = expect_replay_after_fix(pytester, self.library, self.symptom)
        print(f"realcode {self.library} fixed, buggy token: {after}")


class FlaggedByTheDetector(RealBugSuite):
    """With the user's assertion removed and the library traced, the detector alone
    reports the race on the buggy release, at the library's own lines."""

    #: the kind of finding, as the report words it ("lost update", "stale check"...)
    finding: ClassVar[str]
    #: what the report must show: the library's lines, the expression raced on
    finding_shows: ClassVar[tuple[str, ...]]

    def test_buggy_release_is_flagged_by_the_detector_alone(
        self, pytester: pytest.Pytester
    ) -> None:
        require_pin(self.library, "buggy")
        self.write_user_test(pytester, without_assertions(self.user_test))
        output = expect_detector_finding(pytester, self.module, self.finding)
        for shown in self.finding_shows:
            assert shown in output, output
