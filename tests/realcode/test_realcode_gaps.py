"""The smallest programs that reproduce what the real-library suite caught racecheck missing.

These need no third-party library, so the normal suite runs them. Each runs in
a fresh interpreter with a hard timeout: a stalled run leaves a thread blocked
in C, which must not wedge the test process. A gap racecheck still has is
``xfail(strict=True)``, so a fix turns it into an XPASS that fails the suite
and asks for the marker to go (multiprocessing locks and first-use threads
went that way).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# tqdm's write lock is a pair: a multiprocessing RLock and a threading RLock,
# both made at import. A multiprocessing lock is a ``_multiprocessing.SemLock``,
# not a ``_thread`` lock, so the adoption walk leaves it alone.
MULTIPROCESSING_LOCK = """
import multiprocessing
import threading

import racecheck

_LOCK = multiprocessing.{factory}()
count = 0


def bump():
    global count
    with _LOCK:
        seen = count
        count = seen + 1


def target():
    global count
    count = 0
    workers = [threading.Thread(target=bump) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert count == 2


report = racecheck.check(target, schedules=30, watchdog=2)
print("CLEAN", report.schedules_run)
"""


# tqdm's first bar starts a monitor thread that lives on (``tqdm.monitor``).
# In the exploring process only the first schedule starts it; a fresh process
# replaying a token found later starts it again: one actor more than recorded.
FIRST_USE_THREAD = """
import sys
import threading

import racecheck


class Registry:
    monitor = None
    items = set()

    def __init__(self):
        cls = type(self)
        if cls.monitor is None or not cls.monitor.is_alive():
            stop = threading.Event()
            cls.monitor = threading.Thread(target=self._watch, args=(stop,), daemon=True)
            cls.monitor.start()
        cls.items.add(self)
        self.pos = len([i for i in cls.items if i is not self])

    @staticmethod
    def _watch(stop):
        while not stop.wait(10):
            pass


def target():
    Registry.items = set()
    made = []
    workers = [threading.Thread(target=lambda: made.append(Registry().pos)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(made) == [0, 1], made


if sys.argv[1] == "check":
    try:
        racecheck.check(target, schedules=300, watchdog=5)
    except racecheck.RaceFound as exc:
        print("FOUND", exc.schedules_run, exc.schedule)
else:
    try:
        racecheck.replay(target, sys.argv[2])
    except racecheck.RaceFound:
        print("FAILS AGAIN")
"""


# The sync/async bridge (janus, any queue fed from the loop to a worker thread):
# the worker waits on a threading.Condition that a coroutine notifies later.
EXECUTOR_WAITS_FOR_LOOP = """
import asyncio
import threading

import racecheck


async def handoff():
    cond = threading.Condition()
    items = []

    def consumer():
        with cond:
            while not items:
                cond.wait()
            items.pop()

    worker = asyncio.create_task(asyncio.to_thread(consumer))
    await asyncio.sleep(0.01)
    with cond:
        items.append(1)
        cond.notify()
    await worker


asyncio.run(handoff())  # fine without racecheck
report = racecheck.check(handoff, schedules=20, watchdog=2)
print("CLEAN", report.schedules_run)
"""


def run_script(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


@pytest.mark.parametrize("factory", ["Lock", "RLock"])
def test_module_level_multiprocessing_lock_is_scheduled(tmp_path: Path, factory: str) -> None:
    done = run_script(tmp_path, MULTIPROCESSING_LOCK.format(factory=factory))
    assert "StuckError" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert "CLEAN 30" in done.stdout, done.stdout


def test_token_found_after_first_use_init_replays_in_a_fresh_process(tmp_path: Path) -> None:
    found = run_script(tmp_path, FIRST_USE_THREAD, "check")
    assert found.returncode == 0, found.stderr
    words = found.stdout.split()
    assert words[:1] == ["FOUND"], found.stdout + found.stderr
    assert int(words[1]) > 1, "found in the first schedule: this program shows nothing"
    replayed = run_script(tmp_path, FIRST_USE_THREAD, "replay", words[2])
    assert "FAILS AGAIN" in replayed.stdout, replayed.stdout + replayed.stderr


def test_executor_work_that_waits_for_the_loop_is_scheduled(tmp_path: Path) -> None:
    done = run_script(tmp_path, EXECUTOR_WAITS_FOR_LOOP)
    assert "StuckError" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert "CLEAN 20" in done.stdout, done.stdout
