"""Shard workers in sessions of their own (racecheck.worker_session): real processes only.

Under Linux's autogroup scheduling the CPU is shared per session first, so shard
workers leave the caller's session; they must then still end with their parent
and still hear Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from racecheck.worker_session import wanted

needs_autogroup = pytest.mark.skipif(
    not wanted(), reason="a session of its own changes nothing without Linux autogroup"
)

SESSIONS = """
import os
import pytest


@pytest.mark.racecheck(schedules=20)
async def test_where(tmp_path_factory):
    root = tmp_path_factory.getbasetemp().parent.parent
    (root / f"sid-{os.getpid()}").write_text(f"{os.getsid(0)} {os.getppid()}")
"""


def _sessions(pytester: pytest.Pytester) -> set[int]:
    found = set()
    for path in pytester.path.parent.rglob("sid-*"):
        found.add(int(path.read_text().split()[0]))
        path.unlink()
    return found


@needs_autogroup
@pytest.mark.slow  # CI time: its siblings cover the feature in CI
def test_xdist_shard_workers_run_in_sessions_of_their_own(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    monkeypatch.setenv("RACECHECK_DB", "none")
    pytester.makepyfile(test_sessions=SESSIONS)
    ours = os.getsid(0)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--racecheck-shards=auto"
    )
    result.assert_outcomes(passed=1)
    sessions = _sessions(pytester)
    assert sessions and ours not in sessions
    # turned off: the workers stay in the caller's session
    monkeypatch.setenv("RACECHECK_WORKER_SESSION", "inherit")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--racecheck-shards=auto"
    )
    result.assert_outcomes(passed=1)
    assert _sessions(pytester) == {ours}


def test_plain_xdist_workers_keep_the_callers_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    monkeypatch.setenv("RACECHECK_DB", "none")
    pytester.makepyfile(test_sessions=SESSIONS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=1)
    assert _sessions(pytester) == {os.getsid(0)}


PARENT = textwrap.dedent(
    """
    import multiprocessing, sys, time

    def child():
        from racecheck.worker_session import own_session
        assert own_session()
        time.sleep(600)

    if __name__ == "__main__":
        p = multiprocessing.get_context("spawn").Process(target=child)
        p.start()
        print(p.pid, flush=True)
        time.sleep(600)
    """
)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@needs_autogroup
def test_a_worker_in_its_own_session_dies_with_its_parent(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 60
        while os.getsid(child) == os.getsid(0) and time.monotonic() < deadline:
            time.sleep(0.05)  # the child is still starting
        assert os.getsid(child) != os.getsid(0)
        parent.kill()  # no goodbye: SIGKILL
        parent.wait()
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the worker outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()


LONG = textwrap.dedent(
    """
    import asyncio
    import racecheck


    async def slow():
        async def worker():
            for _ in range(30):
                await asyncio.sleep(0)

        await asyncio.gather(worker(), worker(), worker())


    SCENARIO = racecheck.Scenario(
        name="long",
        variants={"it": racecheck.Variant(slow, expect="safe", options={"strategy": "random"})},
    )
    """
)


@needs_autogroup
def test_ctrl_c_reaches_run_j_workers_in_their_own_sessions(tmp_path: Path) -> None:
    (tmp_path / "scen_long.py").write_text(LONG)
    env = dict(os.environ, RACECHECK_DB="none")
    run = subprocess.Popen(
        [sys.executable, "-m", "racecheck", "run", "scen_long.py", "-j", "2",
         "--schedules", "10000000"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        workers: list[int] = []
        while len(workers) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            workers = [
                int(p)
                for p in Path(f"/proc/{run.pid}/task/{run.pid}/children").read_text().split()
                if os.getsid(int(p)) != os.getsid(0)
            ]
        assert len(workers) == 2, "the workers did not start sessions of their own"
        time.sleep(1.0)  # let them start exploring
        run.send_signal(signal.SIGINT)  # what the terminal sends the foreground group
        run.communicate(timeout=120)
        assert not [w for w in workers if _alive(w)]
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
