"""The pytest plugin, tested as real pytest runs through ``pytester``."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from typing import Any

import pytest

RACY_ASYNC = """
import asyncio
import pytest

class Account:
    def __init__(self):
        self.balance = 0

    async def deposit(self, amount):
        current = self.balance
        await asyncio.sleep(0)
        self.balance = current + amount

@pytest.mark.racecheck(schedules=200)
async def test_deposit():
    account = Account()
    await asyncio.gather(account.deposit(10), account.deposit(5))
    assert account.balance == 15

@pytest.mark.racecheck(schedules=50)
async def test_locked_deposit():
    account = Account()
    lock = asyncio.Lock()

    async def deposit(amount):
        async with lock:
            await account.deposit(amount)

    await asyncio.gather(deposit(10), deposit(5))
    assert account.balance == 15
"""

# Passes in the runtime's natural (FIFO) order, fails when the second task runs
# first: only a scheduler that explores orders can fail it.
ORDER_ASYNC = """
import asyncio
import pytest

@pytest.mark.racecheck(strategy="exhaustive", schedules=20)
async def test_order():
    order = []

    async def first():
        order.append(1)

    async def second():
        order.append(2)

    await asyncio.gather(first(), second())
    assert order == [1, 2]
"""

TOKEN = re.compile(r"--racecheck-replay=(rc1:\S+)")


def replay_token(output: str) -> str:
    m = TOKEN.search(output)
    assert m, output
    return m.group(1)


def no_internal_traceback(output: str) -> None:
    assert "Traceback" not in output
    assert "During handling of the above exception" not in output
    for internal in (
        "racecheck/explore.py",
        "racecheck/session.py",
        "racecheck/found.py",
        "racecheck/engine.py",
        "racecheck/pytest_plugin.py",
    ):
        assert internal not in output, output


# ------------------------------------------------------------ with the engine


def test_async_race_fails_with_a_replayable_report(
    pytester: pytest.Pytester, real_engine: None
) -> None:
    pytester.makepyfile(test_bank=RACY_ASYNC)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*racecheck: race found after * (auto: *, seed 0): AssertionError: assert 5 == 15*",
            "*schedule: rc1:asyncio:*",
            "*replay: pytest 'test_bank.py::test_deposit' --racecheck-replay=rc1:asyncio:*",
        ]
    )
    assert "Task-2" in out  # the trace names the actors
    no_internal_traceback(out)

    token = replay_token(out)
    again = pytester.runpytest("test_bank.py::test_deposit", f"--racecheck-replay={token}")
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(
        [
            "*racecheck: replayed schedule fails again*",
            "*AssertionError: assert 5 == 15*",
            "*racecheck: replayed schedule on test_bank.py::test_deposit: fails again*",
        ]
    )
    assert again.ret == pytest.ExitCode.TESTS_FAILED


def test_replay_command_is_copy_pasteable(pytester: pytest.Pytester, real_engine: None) -> None:
    pytester.makepyfile(test_bank=RACY_ASYNC)
    out = pytester.runpytest().stdout.str()
    # Under CI=true pytest repeats the whole message in its short summary:
    # the same line twice, never two different commands.
    (line,) = {ln for ln in out.splitlines() if "replay: pytest " in ln}
    command = line.split("replay: ", 1)[1]
    assert command.startswith("pytest 'test_bank.py::test_deposit' --racecheck-replay=rc1:")
    # run it through a real shell, exactly as printed
    proc = subprocess.run(
        command.replace("pytest ", f"{sys.executable} -m pytest -p no:cacheprovider ", 1),
        shell=True,
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "fails again" in proc.stdout


def test_replay_only_runs_the_test_the_token_belongs_to(
    pytester: pytest.Pytester, real_engine: None
) -> None:
    pytester.makepyfile(test_bank=RACY_ASYNC)
    token = replay_token(pytester.runpytest().stdout.str())
    result = pytester.runpytest(f"--racecheck-replay={token}", "-rs")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*the token was recorded for another test*"])


def test_correct_async_test_passes(pytester: pytest.Pytester, real_engine: None) -> None:
    pytester.makepyfile(test_bank=RACY_ASYNC)
    result = pytester.runpytest("-k", "locked", "-rP")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["*racecheck: * schedule* (auto, seed 0*"])


def test_sync_test_runs_on_threads(pytester: pytest.Pytester, threads_engine: None) -> None:
    pytester.makepyfile(
        test_threads="""
        import threading
        import pytest

        class Counter:
            def __init__(self):
                self.value = 0

            def bump(self):
                self.value += 1

        @pytest.mark.racecheck(schedules=300)
        def test_lost_update():
            c = Counter()
            threads = [threading.Thread(target=c.bump) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert c.value == 2

        @pytest.mark.racecheck(schedules=30)
        def test_locked():
            c = Counter()
            lock = threading.Lock()

            def bump():
                with lock:
                    c.bump()

            threads = [threading.Thread(target=bump) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert c.value == 2
        """
    )
    result = pytester.runpytest()
    out = result.stdout.str()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*replay: pytest 'test_threads.py::test_lost_update'*"])
    token = replay_token(out)
    assert token.startswith("rc1:threads:")
    again = pytester.runpytest("test_threads.py::test_lost_update", f"--racecheck-replay={token}")
    again.assert_outcomes(failed=1)


def test_fixtures_are_set_up_once_per_test(pytester: pytest.Pytester, real_engine: None) -> None:
    pytester.makepyfile(
        test_fix="""
        import asyncio
        import pytest

        SETUPS = []
        RUNS = []

        @pytest.fixture
        def resource():
            SETUPS.append(1)
            return {"n": 0}

        @pytest.mark.racecheck(strategy="random", schedules=10)
        async def test_uses_fixture(resource):
            RUNS.append(1)
            await asyncio.gather(asyncio.sleep(0), asyncio.sleep(0))

        def test_counts():
            assert SETUPS == [1]
            assert len(RUNS) > 1
        """
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)


def test_parametrized_ids_are_quoted_for_the_shell(
    pytester: pytest.Pytester, real_engine: None
) -> None:
    pytester.makepyfile(
        test_param="""
        import asyncio
        import pytest

        @pytest.mark.racecheck(strategy="exhaustive", schedules=20)
        @pytest.mark.parametrize("first", ["a b", "it's"])
        async def test_order(first):
            order = []

            async def one():
                order.append(first)

            async def two():
                order.append("z")

            await asyncio.gather(one(), two())
            assert order[0] == first
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "replay: pytest 'test_param.py::test_order[a b]' --racecheck-replay=rc1:" in out
    assert "replay: pytest 'test_param.py::test_order[it'\"'\"'s]' --racecheck-replay=" in out


def test_class_based_tests(pytester: pytest.Pytester, real_engine: None) -> None:
    pytester.makepyfile(
        test_cls="""
        import asyncio
        import pytest

        class TestOrder:
            factor = 3

            @pytest.mark.racecheck(strategy="exhaustive", schedules=20)
            async def test_method(self):
                order = []

                async def one():
                    order.append(self.factor)

                async def two():
                    order.append(0)

                await asyncio.gather(one(), two())
                assert order == [3, 0]
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*replay: pytest 'test_cls.py::TestOrder::test_method'*"])


def test_pytest_asyncio_auto_mode_leaves_marked_tests_to_racecheck(
    pytester: pytest.Pytester, real_engine: None
) -> None:
    pytest.importorskip("pytest_asyncio")
    pytester.makepyfile(test_order=ORDER_ASYNC)
    pytester.makepyfile(
        test_plain="""
        import asyncio

        async def test_unmarked_async_runs_on_pytest_asyncio():
            await asyncio.sleep(0)
        """
    )
    result = pytester.runpytest("-p", "asyncio", "--asyncio-mode=auto")
    # pytest-asyncio alone would pass test_order (FIFO order); racecheck explores it
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*racecheck: race found after * AssertionError*"])
    no_internal_traceback(result.stdout.str())


def test_pytest_trio_mode_leaves_marked_tests_to_racecheck(
    pytester: pytest.Pytester, real_engine: None
) -> None:
    pytest.importorskip("pytest_trio")
    pytester.makepyfile(
        test_order=ORDER_ASYNC.replace("schedules=20", "schedules=20, backend='asyncio'")
    )
    pytester.makeini("[pytest]\ntrio_mode = true\n")
    result = pytester.runpytest("-p", "trio")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*racecheck: race found after * AssertionError*"])


def test_same_results_under_xdist(pytester: pytest.Pytester, real_engine: None) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(test_bank=RACY_ASYNC, test_order=ORDER_ASYNC)
    pytester.makepyfile(
        test_more="""
        import asyncio
        import pytest

        @pytest.mark.racecheck(strategy="random", seed=3, schedules=100)
        async def test_three_way():
            box = []

            async def put(v):
                n = len(box)
                await asyncio.sleep(0)
                box.insert(n, v)

            await asyncio.gather(put(1), put(2), put(3))
            assert box == [1, 2, 3]
        """
    )

    def failures(result: pytest.RunResult) -> dict[str, str]:
        found = {}
        for line in result.stdout.lines:
            m = re.search(r"replay: pytest '([^']+)' --racecheck-replay=(rc1:\S+)", line)
            if m:
                found[m.group(1)] = m.group(2)
        return found

    serial = pytester.runpytest_subprocess()
    serial.assert_outcomes(passed=1, failed=3)
    parallel = pytester.runpytest_subprocess("-n", "2", "--racecheck-report-dir=out")
    parallel.assert_outcomes(passed=1, failed=3)
    assert failures(serial) == failures(parallel)
    assert len(failures(serial)) == 3
    # the controller writes one report with every worker's records
    import json

    text = json.dumps(json.loads((pytester.path / "out" / "racecheck.json").read_text()))
    for nodeid, token in failures(parallel).items():
        assert nodeid in text and token in text
    assert "test_bank.py::test_locked_deposit" in text


# ------------------------------------------------------ plugin contract (fake)


def test_marker_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.racecheck(strategy='auto', schedules=1000*"])


def test_options_in_help(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "*--racecheck-strategy=NAME*",
            "*--racecheck-schedules=N*",
            "*--racecheck-seed=N*",
            "*--racecheck-replay=TOKEN*",
            "*--racecheck-report-dir=DIR*",
        ]
    )


PRECEDENCE = """
import pytest

@pytest.mark.racecheck
def test_defaults():
    pass

@pytest.mark.racecheck(strategy="random", schedules=7, seed=3, backend="threads", max_steps=99)
def test_marker():
    pass

def test_unmarked():
    pass
"""


def test_precedence_default(pytester: pytest.Pytester, fake_engine: Any) -> None:
    pytester.makepyfile(test_p=PRECEDENCE)
    pytester.runpytest().assert_outcomes(passed=3)
    calls = {c["label"]: c for c in fake_engine.calls}
    assert set(calls) == {"test_p.py::test_defaults", "test_p.py::test_marker"}
    d = calls["test_p.py::test_defaults"]
    assert (d["strategy"], d["schedules"], d["seed"]) == ("auto", 1000, 0)
    m = calls["test_p.py::test_marker"]
    assert (m["strategy"], m["schedules"], m["seed"]) == ("random", 7, 3)
    assert m["backend"] == "threads" and m["max_steps"] == 99


def test_precedence_command_line_beats_marker(pytester: pytest.Pytester, fake_engine: Any) -> None:
    pytester.makepyfile(test_p=PRECEDENCE)
    pytester.runpytest(
        "--racecheck-strategy=exhaustive", "--racecheck-schedules=11", "--racecheck-seed=5"
    ).assert_outcomes(passed=3)
    for call in fake_engine.calls:
        assert (call["strategy"], call["schedules"], call["seed"]) == ("exhaustive", 11, 5)
    m = next(c for c in fake_engine.calls if c["label"].endswith("test_marker"))
    assert m["backend"] == "threads"  # not overridden


def test_only_one_command_line_option_overrides(
    pytester: pytest.Pytester, fake_engine: Any
) -> None:
    pytester.makepyfile(test_p=PRECEDENCE)
    pytester.runpytest("--racecheck-seed=9", "-k", "marker").assert_outcomes(passed=1, deselected=2)
    (call,) = fake_engine.calls
    assert (call["strategy"], call["schedules"], call["seed"]) == ("random", 7, 9)


def test_targets_have_the_right_shape(pytester: pytest.Pytester, fake_engine: Any) -> None:
    pytester.makepyfile(
        test_shape="""
        import inspect
        import pytest

        @pytest.fixture
        def value():
            return 41

        @pytest.mark.racecheck
        def test_sync(value):
            assert value == 41

        @pytest.mark.racecheck
        async def test_async(value):
            assert value == 41
        """
    )
    pytester.runpytest().assert_outcomes(passed=2)
    import inspect

    targets = {c["label"].split("::")[1]: c["target"] for c in fake_engine.calls}
    assert not inspect.iscoroutinefunction(targets["test_sync"])
    assert inspect.iscoroutinefunction(targets["test_async"])
    assert targets["test_async"].__name__ == "test_async"
    for target in targets.values():
        assert not inspect.signature(target).parameters  # zero-argument


def test_failure_report_is_short(pytester: pytest.Pytester, fake_engine: Any) -> None:
    pytester.makepyfile(
        test_fail="""
        import pytest

        @pytest.mark.racecheck(schedules=10)
        def test_broken():
            raise AssertionError("lost update: 1 != 2")
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*racecheck: race found after * (auto*, seed 0): AssertionError: lost update*",
            "*replay: pytest 'test_fail.py::test_broken' --racecheck-replay=rc1:*",
            "FAILED test_fail.py::test_broken*",
        ]
    )
    no_internal_traceback(out)
    assert "conftest.py" not in out  # nothing from the engine's frames


def test_engine_usage_error_is_one_line(pytester: pytest.Pytester, fake_engine: Any) -> None:
    import racecheck

    def check(target: Any, **options: Any) -> Any:
        raise racecheck.StuckError("Thread-1 blocked on a lock created at import time")

    pytester.makepyfile(test_u="import pytest\n@pytest.mark.racecheck\ndef test_x():\n    pass\n")
    mp = pytest.MonkeyPatch()
    mp.setattr(racecheck, "check", check)
    try:
        result = pytester.runpytest()
    finally:
        mp.undo()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*racecheck: StuckError: Thread-1 blocked on a lock created at import time*"]
    )
    assert "Traceback" not in result.stdout.str()


def test_positional_marker_arguments_are_rejected(
    pytester: pytest.Pytester, fake_engine: Any
) -> None:
    pytester.makepyfile(
        test_pos="import pytest\n@pytest.mark.racecheck('pct')\ndef test_x():\n    pass\n"
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*takes keyword arguments only*"])


@pytest.mark.parametrize("token", ["garbage", "rc1:asyncio:task:py311:0000:!!", "rc7:a:b:c:d:e"])
def test_malformed_replay_token_is_one_line(pytester: pytest.Pytester, token: str) -> None:
    pytester.makepyfile(test_t="import pytest\n@pytest.mark.racecheck\ndef test_x():\n    pass\n")
    result = pytester.runpytest(f"--racecheck-replay={token}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [ln for ln in result.stderr.lines if ln.strip()]
    assert line.startswith("ERROR: --racecheck-replay: ")
    assert "token" in line
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_replay_token_for_no_selected_test_is_an_error(
    pytester: pytest.Pytester, fake_engine: Any, make_token: Any
) -> None:
    pytester.makepyfile(test_t="import pytest\n@pytest.mark.racecheck\ndef test_x():\n    pass\n")
    result = pytester.runpytest(f"--racecheck-replay={make_token('test_t.py::test_other')}")
    result.assert_outcomes(skipped=1)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*racecheck: error: --racecheck-replay: no selected*"])


def test_replay_that_does_not_fail_passes(
    pytester: pytest.Pytester, fake_engine: Any, make_token: Any
) -> None:
    pytester.makepyfile(test_t="import pytest\n@pytest.mark.racecheck\ndef test_x():\n    pass\n")
    result = pytester.runpytest(f"--racecheck-replay={make_token('test_t.py::test_x')}")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["*racecheck: replayed schedule on test_t.py::test_x: did not fail"]
    )
    (call,) = fake_engine.replays
    assert call["label"] == "test_t.py::test_x"
    assert not {"strategy", "schedules", "seed"} & set(call)


def test_report_dir(pytester: pytest.Pytester, fake_engine: Any) -> None:
    pytester.makepyfile(
        test_r="""
        import pytest

        @pytest.mark.racecheck(schedules=10)
        def test_ok():
            pass

        @pytest.mark.racecheck(schedules=10)
        def test_bad():
            raise AssertionError("boom")
        """
    )
    result = pytester.runpytest("--racecheck-report-dir=out")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["racecheck reports: *racecheck.json*"])
    import json

    data = json.loads((pytester.path / "out" / "racecheck.json").read_text())
    text = json.dumps(data)
    assert "test_r.py::test_ok" in text and "test_r.py::test_bad" in text


def test_plugin_import_is_light() -> None:
    code = textwrap.dedent(
        """
        import sys
        import racecheck.pytest_plugin
        heavy = [m for m in ("asyncio", "trio", "hypothesis", "racecheck.engine",
                 "racecheck.explore", "racecheck.backends") if m in sys.modules]
        print(heavy)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "[]"
