"""``racecheck stress``: run in a real subprocess, as users run it."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stress_programs import SOCKET_COUNTER_SOURCE

SCENARIO = (
    """
import socket
import threading

import racecheck


"""
    + SOCKET_COUNTER_SOURCE
    + """

def buggy():
    socket_counter(False)


def correct():
    socket_counter(True)


def hangs():
    # a non-daemon thread that never ends: the interpreter would wait for it at exit
    # (explicitly: threads started from racecheck's daemon run thread are daemon)
    never = threading.Event()
    threading.Thread(target=never.wait, name="never-ends", daemon=False).start()
    never.wait()


def crash():
    import ctypes

    ctypes.string_at(0)


def slow():
    marker = __import__("os").environ["STRESS_STARTED"]
    open(marker, "w").close()
    __import__("time").sleep(0.05)


class Box:
    value = 0


def lost_update():
    box = Box()

    def bump():
        for _ in range(10):
            v = box.value
            box.value = v + 1

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box.value == 20, box.value


RMW = racecheck.Scenario(
    name="rmw", variants={"buggy": racecheck.Variant(lost_update, expect="race")}
)


COUNTER = racecheck.Scenario(
    name="socket-counter",
    variants={
        "buggy": racecheck.Variant(buggy, expect="race"),
        "correct": racecheck.Variant(correct, expect="safe"),
    },
)
"""
)


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "sockets.py"
    path.write_text(SCENARIO)
    return path


def _command() -> list[str]:
    exe = Path(sys.executable).with_name("racecheck")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "racecheck"]


def stress(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RACECHECK_DB="none")
    return subprocess.run(
        [*_command(), "stress", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_a_socket_race_fails_with_its_rate_and_exit_1(scenario_file: Path) -> None:
    proc = stress(
        scenario_file.parent, "sockets.py::socket-counter[buggy]", "--runs", "40", "--seed", "1"
    )
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "racecheck stress: socket-counter[buggy] [threads] -- NON-REPLAYABLE" in out
    assert "of 40 runs" in out and "95% CI" in out
    assert "AssertionError at sockets.py:" in out and "lost update" in out
    assert "controlled scheduler: out of reach: StuckError" in out
    assert proc.stderr == ""


def test_a_reproduced_failure_prints_a_replay_command_that_fails_again(
    scenario_file: Path,
) -> None:
    proc = stress(scenario_file.parent, "sockets.py::rmw[buggy]", "--runs", "100", "--seed", "3")
    assert proc.returncode == 1, proc.stderr
    assert "controlled scheduler: reproduced" in proc.stdout
    [line] = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("replay: ")]
    command = shlex.split(line.strip()[len("replay: ") :])
    assert command[:3] == ["racecheck", "replay", "sockets.py::rmw[buggy]"]
    replayed = subprocess.run(
        [*_command(), *command[1:]],
        cwd=scenario_file.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "race found" in replayed.stdout


def test_a_correct_variant_exits_0(scenario_file: Path) -> None:
    proc = stress(scenario_file.parent, "sockets.py::socket-counter[correct]", "--runs", "30")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "failed 0 of 30 runs (0.0%); 95% CI 0.0–11.4%" in proc.stdout


def test_a_function_of_the_file_can_be_stressed(scenario_file: Path) -> None:
    proc = stress(scenario_file.parent, "sockets.py::correct", "--runs", "10", "--parallel", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "racecheck stress: correct [threads]" in proc.stdout
    assert "2 copies per run" in proc.stdout


def test_a_hang_is_dumped_and_racecheck_exits(scenario_file: Path) -> None:
    t0 = time.monotonic()
    proc = stress(
        scenario_file.parent, "sockets.py::hangs", "--runs", "2", "--timeout", "0.5", timeout=60
    )
    assert time.monotonic() - t0 < 60  # generous: the non-daemon thread did not keep it alive
    assert proc.returncode == 1
    assert "hangs: 2 run(s) timed out" in proc.stdout
    assert "thread 'never-ends'" in proc.stdout
    assert "never.wait()" in proc.stdout
    assert "abandoned threads still running" in proc.stdout


def test_a_crash_in_a_worker_process_is_reported(scenario_file: Path) -> None:
    proc = stress(scenario_file.parent, "sockets.py::crash", "--runs", "2", "--isolate", "process")
    assert proc.returncode == 1, proc.stderr
    assert "crashes: 2 run(s) killed their worker process" in proc.stdout
    assert "killed by SIGSEGV" in proc.stdout and "in crash" in proc.stdout


def test_processes_run_a_scenario_variant(scenario_file: Path) -> None:
    proc = stress(
        scenario_file.parent,
        "sockets.py::socket-counter[buggy]",
        "--runs",
        "30",
        "--processes",
        "2",
        "--reproduce",
        "0",
    )
    assert proc.returncode == 1, proc.stderr
    assert "of 30 runs" in proc.stdout and "2 at a time" in proc.stdout
    assert "lost update" in proc.stdout


def test_ctrl_c_prints_partial_statistics_and_exits_2(scenario_file: Path, tmp_path: Path) -> None:
    started = tmp_path / "started"
    env = dict(os.environ, RACECHECK_DB="none", STRESS_STARTED=str(started))
    proc = subprocess.Popen(
        [*_command(), "stress", "sockets.py::slow", "--runs", "100000"],
        cwd=scenario_file.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2
    assert "interrupted after" in out and "of 100,000 runs" in out
    assert "failed 0 of" in out
    assert err.strip().splitlines() == ["racecheck: interrupted (the statistics above are partial)"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope.py"], "racecheck: error: no such file or directory: nope.py"),
        (["sockets.py::nothing"], "has no scenario or function named 'nothing'"),
        (["sockets.py::socket-counter[nope]"], "no variant 'nope'"),
        (["sockets.py", "--runs", "0"], "--runs: must be at least 1"),
        (["sockets.py", "--parallel", "two"], "--parallel: not an integer"),
        (["sockets.py", "--timeout", "0"], "--timeout: must be more than 0 seconds"),
        (["sockets.py", "--reproduce", "-1"], "--reproduce: must be 0 or more"),
        (["empty.py"], "empty.py defines no racecheck.Scenario; name the function"),
        (["sockets.py::MISSING[x]"], "has no scenario or function named 'MISSING'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    scenario_file: Path, args: list[str], message: str
) -> None:
    (scenario_file.parent / "empty.py").write_text("X = 1\n")
    proc = stress(scenario_file.parent, *args, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("racecheck: error: ")
    assert message in lines[0]


def test_progress_lines_go_to_stderr_without_a_terminal(scenario_file: Path) -> None:
    proc = stress(
        scenario_file.parent,
        "sockets.py::correct",
        "--runs",
        "300",
        "--progress-every",
        "0.01",
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines and all(line.startswith("progress: correct: ") for line in lines)
    assert "failed 0 of 300 runs" in proc.stdout and "progress:" not in proc.stdout


def test_json_output(scenario_file: Path) -> None:
    proc = stress(
        scenario_file.parent, "sockets.py::rmw", "--runs", "50", "--json", "--reproduce", "0"
    )
    assert proc.returncode == 1, proc.stderr
    [report] = json.loads(proc.stdout)
    assert report["label"] == "rmw[buggy]" and report["runs"] == 50
    assert report["replayable"] is False and report["ok"] is False
    assert 0 < report["failed_runs"] == sum(g["count"] for g in report["groups"])
    low, high = report["ci95"]
    assert low <= report["failure_rate"] <= high
