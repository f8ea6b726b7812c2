"""The ``racecheck`` command line: run / replay / list, exit codes, messages.

Most tests use ``fake_engine`` (tests/conftest.py) to pin down the CLI's own
contract; the ``real_engine`` ones run racecheck's exploration for real.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import racecheck
from racecheck.cli import main
from racecheck.report import RunRecord

SCENARIOS = """
import racecheck

class FakeDeadlock(Exception):
    pass


class FakeStepLimit(Exception):
    pass

def ok():
    pass

def bad():
    raise AssertionError("balance is 5, expected 15")

def stuck():
    raise FakeDeadlock("Task-2 waits for Lock#1 held by Task-3")

def spin():
    raise FakeStepLimit("passed 10000 steps")

BANK = racecheck.Scenario(
    name="bank",
    issue="demo#1",
    description="two deposits race",
    invariants=("balance is the sum of deposits",),
    variants={
        "buggy": racecheck.Variant(bad, expect="race", summary="read-modify-write"),
        "correct": racecheck.Variant(ok, expect="safe", summary="with a lock"),
    },
)
"""

MORE = """
import racecheck

class FakeDeadlock(Exception):
    pass


class FakeStepLimit(Exception):
    pass

def ok():
    pass

def stuck():
    raise FakeDeadlock("Task-2 waits for Lock#1 held by Task-3")

def spin():
    raise FakeStepLimit("passed 10000 steps")

LOCKS = racecheck.Scenario(
    name="locks",
    variants={
        "deadlocks": racecheck.Variant(stuck, expect="deadlock"),
        "spins": racecheck.Variant(spin, expect="safe", options={"max_steps": 50}),
        "fixed": racecheck.Variant(ok, expect="safe"),
    },
    options={"backend": "asyncio"},
)
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with a scenarios/ folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "bank.py").write_text(textwrap.dedent(SCENARIOS))
    return tmp_path


def add_more(project: Path) -> None:
    (project / "scenarios" / "locks.py").write_text(textwrap.dedent(MORE))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------- run


def test_run_all_expectations_met(project: Path, fake_engine: Any, capsys: Any) -> None:
    code, out, err = run(capsys, "run")
    assert code == 0, out + err
    lines = out.splitlines()
    assert lines[0].split() == [
        "scenario",
        "variant",
        "expect",
        "verdict",
        "ok",
        "schedules",
        "distinct/orders",
        "seconds",
    ]
    assert lines[1].split()[:6] == ["bank", "buggy", "race", "race", "✓", "3"]
    assert lines[2].split()[:6] == ["bank", "correct", "safe", "safe", "✓", "1000"]
    assert "bank[buggy]: race after 3 schedules: AssertionError: balance is 5, expected 15" in out
    assert "replay: racecheck replay 'scenarios/bank.py::bank[buggy]' rc1:asyncio:task:" in out
    assert "2 variants: 2 met" in out
    assert err == ""


def test_run_passes_options_and_labels(project: Path, fake_engine: Any, capsys: Any) -> None:
    add_more(project)
    _code, _out, _err = run(
        capsys,
        "run",
        "scenarios/locks.py::locks[spins]",
        "--seed",
        "7",
        "--schedules",
        "20",
        "--strategy",
        "random",
    )
    (call,) = fake_engine.calls
    assert call["label"] == "locks[spins]"
    assert call["strategy"] == "random" and call["schedules"] == 20 and call["seed"] == 7
    assert call["backend"] == "asyncio" and call["max_steps"] == 50
    assert callable(call["progress"])


def test_scenario_options_beat_defaults_but_not_the_command_line(
    project: Path, fake_engine: Any, capsys: Any
) -> None:
    (project / "scenarios" / "opts.py").write_text(
        textwrap.dedent(
            """
            import racecheck
            def ok(): pass
            S = racecheck.Scenario(
                name="opts",
                variants={"v": racecheck.Variant(ok, expect="safe", options={"schedules": 33})},
                options={"strategy": "exhaustive", "seed": 4},
            )
            """
        )
    )
    run(capsys, "run", "scenarios/opts.py")
    assert fake_engine.calls[-1]["schedules"] == 33
    assert fake_engine.calls[-1]["strategy"] == "exhaustive"
    assert fake_engine.calls[-1]["seed"] == 4
    run(capsys, "run", "scenarios/opts.py", "--schedules", "5", "--strategy", "pct")
    assert fake_engine.calls[-1]["schedules"] == 5
    assert fake_engine.calls[-1]["strategy"] == "pct"
    assert fake_engine.calls[-1]["seed"] == 4


def test_exhaustive_safe_row_that_did_not_exhaust_says_so(
    project: Path, fake_engine: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = fake_engine.check

    def check(target: Any, **options: Any) -> Any:
        report = real(target, **options)
        report.exhausted = False
        return report

    monkeypatch.setattr(racecheck, "check", check)
    code, out, _ = run(
        capsys, "run", "scenarios/bank.py::bank[correct]", "--strategy", "exhaustive"
    )
    assert code == 0
    assert "1000 not exhausted" in out


def test_exhausted_safe_row_says_so(project: Path, fake_engine: Any, capsys: Any) -> None:
    code, out, _ = run(
        capsys, "run", "scenarios/bank.py::bank[correct]", "--strategy", "exhaustive"
    )
    assert code == 0
    assert "1000 exhausted" in out


def test_deadlock_and_step_limit_verdicts(project: Path, fake_engine: Any, capsys: Any) -> None:
    add_more(project)
    code, out, _ = run(capsys, "run", "scenarios/locks.py")
    assert code == 1
    rows = {line.split()[1]: line.split() for line in out.splitlines()[1:4]}
    assert rows["deadlocks"][2:5] == ["deadlock", "deadlock", "✓"]
    assert rows["spins"][2:5] == ["safe", "step-limit", "✗"]
    assert rows["fixed"][2:5] == ["safe", "safe", "✓"]
    assert "UNMET: locks[spins]: step-limit after 3 schedules: passed 10000 steps" in out
    assert "step-limit meets no expectation" in out
    assert "3 variants: 2 met, 1 unmet (locks[spins])" in out


def test_step_limit_does_not_meet_a_race_expectation(
    project: Path, fake_engine: Any, capsys: Any
) -> None:
    (project / "scenarios" / "spin.py").write_text(
        textwrap.dedent(
            """
            import racecheck
            class FakeStepLimit(Exception): pass
            def spin(): raise FakeStepLimit("spin")
            V = racecheck.Variant(spin, expect="race")
            S = racecheck.Scenario(name="spin", variants={"v": V})
            """
        )
    )
    code, out, _ = run(capsys, "run", "scenarios/spin.py")
    assert code == 1
    assert out.splitlines()[1].split()[2:5] == ["race", "step-limit", "✗"]


def test_a_deadlock_does_not_meet_a_race_expectation(
    project: Path, fake_engine: Any, capsys: Any
) -> None:
    (project / "scenarios" / "dl.py").write_text(
        textwrap.dedent(
            """
            import racecheck
            class FakeDeadlock(Exception): pass
            def stuck(): raise FakeDeadlock("stuck")
            V = racecheck.Variant(stuck, expect="race")
            S = racecheck.Scenario(name="dl", variants={"v": V})
            """
        )
    )
    code, out, _ = run(capsys, "run", "scenarios/dl.py")
    assert code == 1
    assert "UNMET: dl[v]: deadlock after 3 schedules (expected race)" in out


def test_unmet_expectations_exit_1(project: Path, fake_engine: Any, capsys: Any) -> None:
    (project / "scenarios" / "wrong.py").write_text(
        textwrap.dedent(
            """
            import racecheck
            def ok(): pass
            def bad(): raise AssertionError("lost update")
            S = racecheck.Scenario(name="wrong", variants={
                "claims-race": racecheck.Variant(ok, expect="race"),
                "claims-safe": racecheck.Variant(bad, expect="safe"),
            })
            """
        )
    )
    code, out, _ = run(capsys, "run", "scenarios/wrong.py")
    assert code == 1
    assert "UNMET: wrong[claims-race]: expected a race, but none of 1000 schedules failed" in out
    assert (
        "UNMET: wrong[claims-safe]: race after 3 schedules (expected safe): AssertionError" in out
    )


def test_select_filter(project: Path, fake_engine: Any, capsys: Any) -> None:
    add_more(project)
    code, _, _ = run(capsys, "run", "-k", "buggy")
    assert code == 0
    assert [c["label"] for c in fake_engine.calls] == ["bank[buggy]"]
    code, _out, err = run(capsys, "run", "-k", "nothing-like-this")
    assert code == 2
    assert err == "racecheck: error: -k 'nothing-like-this' selects no scenario variant\n"


def test_json_output(project: Path, fake_engine: Any, capsys: Any) -> None:
    code, out, _err = run(capsys, "run", "--json", "--no-report")
    assert code == 0
    data = json.loads(out)
    assert [(r["scenario"], r["variant"], r["verdict"]) for r in data] == [
        ("bank", "buggy", "race"),
        ("bank", "correct", "safe"),
    ]
    for key in (
        "scenario",
        "variant",
        "expect",
        "verdict",
        "kind",
        "schedules_run",
        "exhausted",
        "schedule",
        "seconds",
    ):
        assert key in data[0]
    assert data[0]["kind"] == "exception" and data[0]["schedule"].startswith("rc1:")
    assert data[1]["kind"] is None and data[1]["schedule"] is None


def test_reports_are_written(project: Path, fake_engine: Any, capsys: Any) -> None:
    code, out, _ = run(capsys, "run")
    assert code == 0
    data = json.loads((project / "reports" / "racecheck.json").read_text())
    records = data if isinstance(data, list) else data.get("records", data.get("results"))
    assert records, data
    assert "reports: " in out


def test_reports_fallback_is_atomic_json(
    project: Path, fake_engine: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import racecheck.report

    def not_yet(records: Any, directory: Any) -> Any:
        raise NotImplementedError

    monkeypatch.setattr(racecheck.report, "write_reports", not_yet)
    code, _out, _ = run(capsys, "run", "--report-dir", "out/deep")
    assert code == 0
    written = project / "out" / "deep" / "racecheck.json"
    data = json.loads(written.read_text())
    assert [r["verdict"] for r in data] == ["race", "safe"]
    assert sorted(os.listdir(written.parent)) == ["racecheck.json"]  # no temp file left


def test_no_report(project: Path, fake_engine: Any, capsys: Any) -> None:
    code, _, _ = run(capsys, "run", "--no-report")
    assert code == 0
    assert not (project / "reports").exists()


def test_trace_flag_prints_the_failure(project: Path, fake_engine: Any, capsys: Any) -> None:
    code, out, _ = run(capsys, "run", "--trace", "scenarios/bank.py::bank[buggy]")
    assert code == 0
    assert "bank[buggy]: race after 3 schedules: AssertionError" in out
    assert "racecheck: race found" not in out  # the summary is not repeated
    assert "schedule: rc1:" in out
    assert "replay: racecheck replay 'scenarios/bank.py::bank[buggy]' rc1:" in out


class _Tty(io.StringIO):
    encoding = "utf-8"

    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal(
    project: Path, fake_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tty = _Tty()
    monkeypatch.setattr(sys, "stdout", tty)
    assert main(["run", "--no-report"]) == 0
    text = tty.getvalue()
    assert "\r\033[K  bank[correct]  1000/1000 schedules" in text
    # the status line is cleared before each row is printed
    assert "\r\033[Kbank" in text or "\r\033[K\n" not in text


def test_no_progress_when_not_a_terminal(project: Path, fake_engine: Any, capsys: Any) -> None:
    _, out, _ = run(capsys, "run", "--no-report")
    assert "\r" not in out


def test_ascii_terminal_gets_ascii_marks(
    project: Path, fake_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    buf = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", buf)
    assert main(["run", "--no-report"]) == 0
    buf.flush()
    text = buf.buffer.getvalue().decode()  # type: ignore[attr-defined]
    assert " ok " in text and "✓" not in text


def test_ctrl_c_prints_the_table_so_far(
    project: Path, fake_engine: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = fake_engine.check

    def check(target: Any, **options: Any) -> Any:
        if options["label"] == "bank[correct]":
            raise KeyboardInterrupt
        return real(target, **options)

    monkeypatch.setattr(racecheck, "check", check)
    code, out, err = run(capsys, "run")
    assert code == 2
    assert out.splitlines()[1].split()[:5] == ["bank", "buggy", "race", "race", "✓"]
    assert out.splitlines()[2].split()[:4] == ["bank", "correct", "safe", "interrupted"]
    assert "2 variants: 1 met, 1 interrupted (bank[correct])" in out
    assert "interrupted" in err and "partial reports" in err
    assert "Traceback" not in out + err
    # the partial report: what ran, and the variant in flight marked interrupted
    data = json.loads((project / "reports" / "racecheck.json").read_text())
    assert [r["verdict"] for r in data["records"]] == ["race", "interrupted"]


@pytest.mark.parametrize(
    "error",
    [
        racecheck.UsageError("target must be a function or coroutine function"),
        racecheck.StuckError("Thread-1 blocked on a lock created before racecheck started"),
        racecheck.TokenError("bad"),
    ],
)
def test_engine_usage_errors_are_one_line_exit_2(
    project: Path, fake_engine: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    def check(target: Any, **options: Any) -> Any:
        raise error

    monkeypatch.setattr(racecheck, "check", check)
    code, out, err = run(capsys, "run", "--no-report")
    assert code == 2
    assert f"racecheck: error: bank[buggy]: {error}\n" in err
    assert "Traceback" not in out + err
    assert "error" in out  # the rows are still printed


def test_missing_default_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _out, err = run(capsys, "run")
    assert code == 2
    assert err == "racecheck: error: no such file or directory: scenarios\n"


def test_import_error_is_one_line(project: Path, fake_engine: Any, capsys: Any) -> None:
    (project / "scenarios" / "x.py").write_text("import nope\n")
    code, out, err = run(capsys, "run")
    assert code == 2
    assert err == (
        "racecheck: error: cannot import scenarios/x.py: ModuleNotFoundError:"
        " No module named 'nope'\n"
    )
    assert out == ""


def test_argparse_errors_are_one_line(capsys: Any) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", "--schedules", "zero"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("racecheck: error: argument --schedules")
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2


def test_run_accepts_selectors(project: Path, fake_engine: Any, capsys: Any) -> None:
    code, _out, err = run(capsys, "run", "scenarios/bank.py::bank[nope]")
    assert code == 2
    assert "no variant 'nope'" in err


# ------------------------------------------------------------------- replay


def _token_from(out: str) -> str:
    for word in out.split():
        if word.startswith("rc1:"):
            return word
    raise AssertionError(f"no token in {out!r}")


def test_replay_reproduces_exit_1(project: Path, fake_engine: Any, capsys: Any) -> None:
    _, out, _ = run(capsys, "run", "--no-report")
    token = _token_from(out)
    code, out, err = run(capsys, "replay", "scenarios/bank.py", token)
    assert code == 1, err
    assert "replaying bank[buggy]" in out
    assert "AssertionError: balance is 5, expected 15" in out
    assert f"replay: racecheck replay 'scenarios/bank.py::bank[buggy]' {token}" in out
    assert fake_engine.replays[-1]["label"] == "bank[buggy]"


def test_replay_on_a_variant_that_does_not_fail_exits_0(
    project: Path, fake_engine: Any, capsys: Any, make_token: Any
) -> None:
    token = make_token("bank[correct]")
    code, out, err = run(capsys, "replay", "scenarios/bank.py::bank[correct]", token)
    assert code == 0, err
    assert "does not reproduce" in out


def test_replay_a_buggy_schedule_against_the_fixed_variant(
    project: Path, fake_engine: Any, capsys: Any, make_token: Any
) -> None:
    token = make_token("bank[buggy]")
    code, out, err = run(capsys, "replay", "scenarios/bank.py::bank[correct]", token)
    assert code == 0, err
    assert "on bank[correct] (schedule recorded on bank[buggy]) without failing" in out
    call = fake_engine.replays[-1]
    assert call["label"] == "bank[buggy]"  # the token's own label
    assert call["target"].__name__ == "ok"  # the correct variant's target


def test_replay_divergence_on_another_variant_is_exit_2(
    project: Path, fake_engine: Any, capsys: Any, make_token: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def replay(target: Any, token: str, **options: Any) -> None:
        raise racecheck.DivergenceError("decision 3: 2 actors enabled, the token recorded 3", 3)

    monkeypatch.setattr(racecheck, "replay", replay)
    token = make_token("bank[buggy]")
    code, _out, err = run(capsys, "replay", "scenarios/bank.py::bank[correct]", token)
    assert code == 2
    assert err == (
        "racecheck: error: the schedule recorded on bank[buggy] does not apply to"
        " bank[correct]: decision 3: 2 actors enabled, the token recorded 3\n"
    )


def test_replay_explicit_variant_token_for_another_scenario(
    project: Path, fake_engine: Any, capsys: Any, make_token: Any
) -> None:
    token = make_token("elsewhere[buggy]")
    code, _, err = run(capsys, "replay", "scenarios/bank.py::bank[correct]", token)
    assert code == 2
    assert err == (
        "racecheck: error: the token was not recorded for bank[correct]"
        " nor for any other variant of bank\n"
    )


def test_replay_token_for_another_scenario(
    project: Path, fake_engine: Any, capsys: Any, make_token: Any
) -> None:
    token = make_token("something-else[buggy]")
    code, _out, err = run(capsys, "replay", "scenarios/bank.py", token)
    assert code == 2
    assert err == (
        "racecheck: error: the token was not recorded for any variant of scenarios/bank.py"
        " (bank[buggy], bank[correct])\n"
    )


@pytest.mark.parametrize("token", ["garbage", "rc1:asyncio:task:py311:abcd:!!!!", "rc9:x"])
def test_replay_malformed_token(project: Path, fake_engine: Any, capsys: Any, token: str) -> None:
    code, _out, err = run(capsys, "replay", "scenarios/bank.py", token)
    assert code == 2
    assert err.startswith("racecheck: error: ") and err.count("\n") == 1
    assert "token" in err


# --------------------------------------------------------------------- list


def test_list(project: Path, capsys: Any) -> None:
    add_more(project)
    code, out, err = run(capsys, "list")
    assert code == 0, err
    assert "bank  (demo#1)  scenarios/bank.py" in out
    assert "two deposits race" in out
    assert "- balance is the sum of deposits" in out
    assert "buggy    expect race      read-modify-write" in out
    assert "options: backend='asyncio'" in out
    assert "[max_steps=50]" in out


def test_list_selector_and_json(project: Path, capsys: Any) -> None:
    code, out, _ = run(capsys, "list", "--json", "scenarios/bank.py::bank[correct]")
    assert code == 0
    (entry,) = json.loads(out)
    assert entry["name"] == "bank"
    assert entry["variants"] == [
        {
            "name": "correct",
            "expect": "safe",
            "summary": "with a lock",
            "selector": "scenarios/bank.py::bank[correct]",
        }
    ]


def test_list_missing_file(project: Path, capsys: Any) -> None:
    code, _, err = run(capsys, "list", "scenarios/nope.py")
    assert code == 2
    assert err == "racecheck: error: no such file or directory: scenarios/nope.py\n"


# ------------------------------------------------------------- entry point


def test_console_script(project: Path) -> None:
    exe = Path(sys.executable).with_name("racecheck")
    cmd = (
        [str(exe)]
        if exe.exists()
        else [sys.executable, "-c", "from racecheck.cli import main; raise SystemExit(main())"]
    )
    proc = subprocess.run([*cmd, "list", "nope.py"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == "racecheck: error: no such file or directory: nope.py\n"
    proc = subprocess.run([*cmd, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    for command in ("run", "replay", "list"):
        assert command in proc.stdout


def test_record_fields_match_the_report_package() -> None:
    from racecheck.cli import record_to_json

    rec = RunRecord(
        scenario="s",
        variant="v",
        expect="safe",
        verdict="safe",
        kind=None,
        schedules_run=1,
        exhausted=True,
        schedule=None,
        seconds=0.5,
    )
    data = record_to_json(rec)
    assert "trace" not in data
    json.dumps(data)


# ------------------------------------------------------- with the real engine

REAL = """
import asyncio
import racecheck


class Account:
    def __init__(self, lock=None):
        self.balance = 0
        self.lock = lock

    async def deposit(self, amount):
        current = self.balance
        await asyncio.sleep(0)
        self.balance = current + amount

    async def locked_deposit(self, amount):
        async with self.lock:
            await self.deposit(amount)


async def buggy():
    account = Account()
    await asyncio.gather(account.deposit(10), account.deposit(5))
    assert account.balance == 15, f"balance {account.balance} != 15"


async def correct():
    account = Account(asyncio.Lock())
    await asyncio.gather(account.locked_deposit(10), account.locked_deposit(5))
    assert account.balance == 15, f"balance {account.balance} != 15"


BANK = racecheck.Scenario(
    name="bank",
    issue="demo#1",
    variants={
        "buggy": racecheck.Variant(buggy, expect="race", summary="read, await, write"),
        "correct": racecheck.Variant(correct, expect="safe", summary="under an asyncio.Lock"),
    },
)
"""


@pytest.fixture
def real_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real_engine: None) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "bank.py").write_text(REAL)
    return tmp_path


def test_real_run_and_replay(real_project: Path, capsys: Any) -> None:
    code, out, err = run(capsys, "run", "--schedules", "100")
    assert code == 0, out + err
    rows = [line.split() for line in out.splitlines()[1:3]]
    assert rows[0][:5] == ["bank", "buggy", "race", "race", "✓"]
    assert rows[1][:5] == ["bank", "correct", "safe", "safe", "✓"]
    # the portfolio stops early once every schedule has run
    assert rows[1][5] == "100" or rows[1][6] in ("exhausted", "verified")
    assert "AssertionError: balance 5 != 15" in out or "balance 10 != 15" in out
    data = json.loads((real_project / "reports" / "racecheck.json").read_text())
    assert data
    token = _token_from(out)

    code, out, err = run(capsys, "replay", "scenarios/bank.py", token)
    assert code == 1, out + err
    assert "replaying bank[buggy]" in out
    assert "Task-2" in out  # the trace
    # the fixed variant follows the schedule as far as it goes and does not fail: exit 0
    code, out, err = run(capsys, "replay", "scenarios/bank.py::bank[correct]", token)
    assert code == 0, out + err
    assert "without failing" in out


def test_real_exhaustive_reports_exhaustion(real_project: Path, capsys: Any) -> None:
    code, out, err = run(
        capsys, "run", "--strategy", "exhaustive", "--schedules", "500", "--json", "--no-report"
    )
    assert code == 0, out + err
    buggy, correct = json.loads(out)
    assert buggy["verdict"] == "race"
    assert correct["verdict"] == "safe"
    assert correct["exhausted"] is True
    assert correct["schedules_run"] < 500


def test_real_malformed_token(real_project: Path, capsys: Any) -> None:
    code, _out, err = run(capsys, "replay", "scenarios/bank.py::bank[buggy]", "rc1:nope")
    assert code == 2
    assert err.startswith("racecheck: error: malformed schedule token")
    assert err.count("\n") == 1


def test_real_ctrl_c(real_project: Path) -> None:
    """SIGINT in the middle of an exploration: the table so far, 'interrupted', exit 2."""
    import signal
    import time

    exe = Path(sys.executable).with_name("racecheck")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "racecheck.cli"]
    # a few distinct schedules only: keep the random walk from saturating and stopping
    bank = real_project / "scenarios" / "bank.py"
    bank.write_text(
        bank.read_text().replace('issue="demo#1",', 'issue="demo#1", options={"saturation": 0},')
    )
    proc = subprocess.Popen(
        [*cmd, "run", "--strategy", "random", "--schedules", "1000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    header = proc.stdout.readline()
    first_row = proc.stdout.readline()  # bank[buggy] fails fast; bank[correct] runs on
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()  # a run that ignored the interrupt must not outlive the test
        proc.communicate()
        raise
    assert proc.returncode == 2, header + first_row + out + err
    assert header.split()[:2] == ["scenario", "variant"]
    assert first_row.split()[:5] == ["bank", "buggy", "race", "race", "✓"]
    assert "2 variants: 1 met, 1 interrupted (bank[correct])" in out
    assert "interrupted" in err
    assert "Traceback" not in out + err
    data = json.loads((real_project / "reports" / "racecheck.json").read_text())
    assert [r["verdict"] for r in data["records"]] == ["race", "interrupted"]
