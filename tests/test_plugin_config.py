"""Configuration of the pytest plugin: ini options, [tool.racecheck], the
environment and profiles, with their precedence (real pytest runs via pytester).

The engine is the conftest's recording fake: these tests are about which
options reach ``racecheck.check``, not about exploring.
"""

from __future__ import annotations

from typing import Any

import pytest

TESTS = """
import pytest

@pytest.mark.racecheck
def test_defaults():
    pass

@pytest.mark.racecheck(strategy="random", schedules=40, seed=3)
def test_marker():
    pass
"""

_VARS = (
    "RACECHECK_STRATEGY",
    "RACECHECK_SCHEDULES",
    "RACECHECK_SEED",
    "RACECHECK_PROFILE",
    "RACECHECK_DB",
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in _VARS:
        monkeypatch.delenv(var, raising=False)


def _calls(fake_engine: Any) -> dict[str, dict[str, Any]]:
    return {c["label"].split("::")[1]: c for c in fake_engine.calls}


def _sss(call: dict[str, Any]) -> tuple[Any, Any, Any]:
    return call["strategy"], call["schedules"], call["seed"]


def _run(pytester: pytest.Pytester, *args: str, passed: int = 2) -> None:
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=passed)


def test_ini_options_beat_the_marker(pytester: pytest.Pytester, fake_engine: Any) -> None:
    pytester.makepyfile(test_c=TESTS)
    pytester.makeini(
        """
        [pytest]
        racecheck_strategy = pct
        racecheck_schedules = 7
        racecheck_seed = 11
        racecheck_detect = true
        """
    )
    _run(pytester)
    for call in _calls(fake_engine).values():
        assert _sss(call) == ("pct", 7, 11)
        assert call["detect"] is True


def test_dash_o_sets_an_ini_option(pytester: pytest.Pytester, fake_engine: Any) -> None:
    pytester.makepyfile(test_c=TESTS)
    _run(pytester, "-o", "racecheck_schedules=7")
    assert {c["schedules"] for c in fake_engine.calls} == {7}


def test_pyproject_tool_racecheck_is_read(pytester: pytest.Pytester, fake_engine: Any) -> None:
    pytester.makepyfile(test_c=TESTS)
    pytester.makepyprojecttoml(
        """
        [tool.racecheck]
        strategy = "exhaustive"
        schedules = 9
        seed = 4
        trace_packages = ["json"]
        """
    )
    _run(pytester)
    for call in _calls(fake_engine).values():
        assert _sss(call) == ("exhaustive", 9, 4)
        assert call["trace_packages"] == ["json"]


def test_ini_beats_pyproject_tool_racecheck(pytester: pytest.Pytester, fake_engine: Any) -> None:
    pytester.makepyfile(test_c=TESTS)
    pytester.makepyprojecttoml(
        """
        [tool.racecheck]
        schedules = 9
        seed = 4

        [tool.pytest.ini_options]
        racecheck_schedules = "5"
        """
    )
    _run(pytester)
    for call in fake_engine.calls:
        assert (call["schedules"], call["seed"]) == (5, 4)


def test_environment_beats_ini(
    pytester: pytest.Pytester, fake_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_c=TESTS)
    pytester.makeini("[pytest]\nracecheck_schedules = 7\nracecheck_seed = 2\n")
    monkeypatch.setenv("RACECHECK_SCHEDULES", "13")
    monkeypatch.setenv("RACECHECK_STRATEGY", "random")
    _run(pytester)
    for call in fake_engine.calls:
        assert _sss(call) == ("random", 13, 2)


def test_command_line_beats_environment(
    pytester: pytest.Pytester, fake_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_c=TESTS)
    monkeypatch.setenv("RACECHECK_SCHEDULES", "13")
    monkeypatch.setenv("RACECHECK_SEED", "8")
    _run(pytester, "--racecheck-schedules=3")
    for call in fake_engine.calls:
        assert (call["schedules"], call["seed"]) == (3, 8)


def test_marker_beats_defaults_when_nothing_else_is_set(
    pytester: pytest.Pytester, fake_engine: Any
) -> None:
    pytester.makepyfile(test_c=TESTS)
    _run(pytester)
    calls = _calls(fake_engine)
    assert _sss(calls["test_defaults"]) == ("auto", 1000, 0)
    assert _sss(calls["test_marker"]) == ("random", 40, 3)


@pytest.mark.parametrize(
    ("how", "expected"),
    [("ci", (10000, 400)), ("dev", (100, 4))],
)
def test_builtin_profiles_scale_every_marker_budget(
    pytester: pytest.Pytester, fake_engine: Any, how: str, expected: tuple[int, int]
) -> None:
    pytester.makepyfile(test_c=TESTS)
    result = pytester.runpytest(f"--racecheck-profile={how}")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"racecheck profile: {how}, schedules x*"])
    calls = _calls(fake_engine)
    assert (calls["test_defaults"]["schedules"], calls["test_marker"]["schedules"]) == expected


def test_dev_profile_never_goes_below_one(pytester: pytest.Pytester, fake_engine: Any) -> None:
    pytester.makepyfile(
        test_c="""
        import pytest

        @pytest.mark.racecheck(schedules=5)
        def test_small():
            pass
        """
    )
    _run(pytester, "--racecheck-profile=dev", passed=1)
    assert fake_engine.calls[0]["schedules"] == 1


def test_profile_from_environment_and_ini(
    pytester: pytest.Pytester, fake_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_c=TESTS)
    pytester.makeini("[pytest]\nracecheck_profile = dev\n")
    _run(pytester)
    assert _calls(fake_engine)["test_marker"]["schedules"] == 4
    fake_engine.calls.clear()
    monkeypatch.setenv("RACECHECK_PROFILE", "ci")  # the environment beats the ini
    _run(pytester)
    assert _calls(fake_engine)["test_marker"]["schedules"] == 400
    fake_engine.calls.clear()
    _run(pytester, "--racecheck-profile=dev")  # the command line beats the environment
    assert _calls(fake_engine)["test_marker"]["schedules"] == 4


def test_profile_scales_an_environment_or_ini_budget(
    pytester: pytest.Pytester, fake_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_c=TESTS)
    pytester.makeini("[pytest]\nracecheck_schedules = 7\n")
    _run(pytester, "--racecheck-profile=ci")
    assert {c["schedules"] for c in fake_engine.calls} == {70}
    fake_engine.calls.clear()
    monkeypatch.setenv("RACECHECK_SCHEDULES", "3")
    _run(pytester, "--racecheck-profile=ci")
    assert {c["schedules"] for c in fake_engine.calls} == {30}


def test_profile_does_not_scale_a_command_line_budget(
    pytester: pytest.Pytester, fake_engine: Any
) -> None:
    pytester.makepyfile(test_c=TESTS)
    _run(pytester, "--racecheck-profile=ci", "--racecheck-schedules=6")
    assert {c["schedules"] for c in fake_engine.calls} == {6}


def test_user_profile_from_pyproject(
    pytester: pytest.Pytester, fake_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_c=TESTS)
    pytester.makepyprojecttoml(
        """
        [tool.racecheck]
        seed = 1

        [tool.racecheck.profiles.nightly]
        schedules_multiplier = 3
        strategy = "pct"
        seed = 99
        """
    )
    _run(pytester, "--racecheck-profile=nightly")
    calls = _calls(fake_engine)
    assert _sss(calls["test_marker"]) == ("pct", 120, 99)  # the profile beats the file
    assert calls["test_defaults"]["schedules"] == 3000
    fake_engine.calls.clear()
    monkeypatch.setenv("RACECHECK_SEED", "5")  # the environment beats the profile
    _run(pytester, "--racecheck-profile=nightly")
    assert {c["seed"] for c in fake_engine.calls} == {5}


@pytest.mark.parametrize(
    ("args", "ini", "env", "words"),
    [
        (["--racecheck-profile=nope"], "", {}, ["unknown profile", "nope", "ci, dev"]),
        ([], "racecheck_schedules = many", {}, ["racecheck_schedules", "integer", "many"]),
        ([], "racecheck_schedules = 0", {}, ["racecheck_schedules", "at least 1"]),
        ([], "racecheck_strategy = quantum", {}, ["unknown strategy", "quantum"]),
        ([], "racecheck_detect = maybe", {}, ["racecheck_detect", "true or false"]),
        ([], "", {"RACECHECK_SEED": "x"}, ["RACECHECK_SEED", "integer"]),
        ([], "", {"RACECHECK_PROFILE": "huge"}, ["RACECHECK_PROFILE", "unknown profile"]),
    ],
)
def test_bad_values_are_one_line_usage_errors(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    ini: str,
    env: dict[str, str],
    words: list[str],
) -> None:
    pytester.makepyfile(test_c=TESTS)
    pytester.makeini("[pytest]\n" + ini + "\n")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if "racecheck" in line and line.strip()]
    assert len(errors) == 1, result.stderr.lines
    for word in words:
        assert word in errors[0], errors[0]
    assert "Traceback" not in result.stderr.str()


def test_bad_pyproject_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_c=TESTS)
    pytester.makepyprojecttoml('[tool.racecheck]\nschedules = "lots"\nfrobnicate = 1\n')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "pyproject.toml [tool.racecheck]" in result.stderr.str()


def test_report_dir_from_ini_is_used(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_c="""
        import pytest

        @pytest.mark.racecheck(schedules=3)
        async def test_ok():
            pass
        """
    )
    pytester.makeini("[pytest]\nracecheck_report_dir = out/rc\nracecheck_db = none\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert (pytester.path / "out" / "rc" / "racecheck.json").is_file()


def test_real_engine_runs_the_configured_budget(pytester: pytest.Pytester) -> None:
    """Without the fake: the budget the ini sets is what the engine explores."""
    pytester.makepyfile(
        test_c="""
        import asyncio
        import pytest

        @pytest.mark.racecheck(strategy="random", schedules=500)
        async def test_three_tasks():
            async def step():
                for _ in range(3):
                    await asyncio.sleep(0)

            await asyncio.gather(step(), step(), step())
        """
    )
    pytester.makepyprojecttoml(
        "[tool.racecheck]\nschedules = 4\n\n[tool.racecheck.profiles.x]\nschedules_multiplier = 2\n"
    )
    result = pytester.runpytest("-rA", "--racecheck-profile=x", "--racecheck-db=none")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*8 schedules*"])
