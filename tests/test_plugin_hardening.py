"""The pytest plugin refuses bad options at configure time, in one line.

An unknown ``--racecheck-strategy`` and a report directory that cannot be
written are usage errors before any test runs, not a failure per test or a
traceback after the whole session explored.
"""

from __future__ import annotations

import os
import textwrap

import pytest

MARKED = textwrap.dedent(
    """
    import pathlib
    import pytest

    @pytest.mark.racecheck(schedules=2)
    def test_marked():
        pathlib.Path("explored").write_text("yes")
    """
)


def test_an_unknown_strategy_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_marked=MARKED)
    result = pytester.runpytest_inprocess("--racecheck-strategy=nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--racecheck-strategy" in result.stderr.str() and "nope" in result.stderr.str()
    assert not (pytester.path / "explored").exists()


def test_a_known_strategy_is_accepted(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_marked=MARKED)
    result = pytester.runpytest_inprocess("--racecheck-strategy=random")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("kind", ["file", "under-a-file", "empty"])
def test_report_dir_problems_are_usage_errors_before_running(
    pytester: pytest.Pytester, kind: str
) -> None:
    pytester.makepyfile(test_marked=MARKED)
    (pytester.path / "afile").write_text("x")
    where = {"file": "afile", "under-a-file": "afile/out", "empty": ""}[kind]
    result = pytester.runpytest_inprocess(f"--racecheck-report-dir={where}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert "report" in result.stderr.str()
    assert not (pytester.path / "explored").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_report_dir_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_marked=MARKED)
    locked = pytester.path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        result = pytester.runpytest_inprocess("--racecheck-report-dir=locked/out")
    finally:
        locked.chmod(0o755)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (pytester.path / "explored").exists()


def test_report_dir_relative_to_the_invocation_dir_is_checked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_marked=MARKED)
    result = pytester.runpytest_inprocess("--racecheck-report-dir=out/deep")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "out" / "deep" / "racecheck.json").is_file()


def test_the_replay_command_keeps_a_pinned_hash_seed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_racy=textwrap.dedent(
            """
            import threading
            import pytest

            @pytest.mark.racecheck(schedules=100)
            def test_racy():
                box = [0]

                def bump():
                    v = box[0]
                    box[0] = v + 1

                t = threading.Thread(target=bump)
                t.start()
                bump()
                t.join()
                assert box[0] == 2
            """
        )
    )
    monkeypatch.setenv("PYTHONHASHSEED", "123")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*replay: PYTHONHASHSEED=123 pytest *--racecheck-replay=*"])


def test_a_report_dir_broken_during_the_session_is_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_breaks=textwrap.dedent(
            """
            import pathlib
            import pytest

            @pytest.mark.racecheck(schedules=2)
            def test_marked():
                pass

            def test_breaks_the_report_dir():
                pathlib.Path("out").write_text("now a file")
            """
        )
    )
    result = pytester.runpytest_inprocess("--racecheck-report-dir=out/deep", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text
    result.stdout.fnmatch_lines(["racecheck: error: cannot write reports to out/deep*"])


def test_a_target_that_never_repeats_itself_under_dpor_is_one_line(
    pytester: pytest.Pytester,
) -> None:
    """A systematic strategy on a program whose path changes with every run stops:
    that is the target's problem, said in one line, not a traceback out of DPOR."""
    pytester.makepyfile(
        test_drifts=textwrap.dedent(
            """
            import threading
            import pytest

            calls = [0]

            @pytest.mark.racecheck(strategy="dpor", schedules=50)
            def test_drifts():
                calls[0] += 1
                extra = calls[0]
                box = {"n": 0}

                def work():
                    for _ in range(extra % 3):
                        box["n"] += 0
                    box["n"] += 1

                workers = [threading.Thread(target=work) for _ in range(2)]
                for w in workers:
                    w.start()
                for w in workers:
                    w.join()
            """
        )
    )
    result = pytester.runpytest_inprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "Traceback" not in text and "dpor.py" not in text, text
    result.stdout.fnmatch_lines(["*racecheck: NondeterminismError: step *"])
