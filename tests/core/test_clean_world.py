"""Every schedule starts from a clean world.

Objects made in one schedule must be finalised before the next one starts,
while nothing runs: a library ``__del__`` that schedules work on "the running
loop" (redis-py's async connection does) must never add a task to a later
schedule. A traced replay that leaves its schedule is reported as such, never
as a race with an empty trace. And a token found late in a long exploration
replays in a fresh process, even when the code does one-time work on first
use.
"""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

import racecheck
from racecheck.errors import StateLeakError

# ------------------------------------------------ finalisers between schedules

STATE: dict[str, Any] = {"run": 0, "live": 0, "inside": [], "made": 0}
PENDING: set[Any] = set()


class Connection:
    """Holds itself in a cycle, so only the cyclic collector can free it."""

    def __init__(self, run: int) -> None:
        self.me = self
        self.run = run
        STATE["live"] += 1
        STATE["made"] += 1

    async def disconnect(self) -> None:
        await asyncio.sleep(0)

    def __del__(self) -> None:
        STATE["live"] -= 1
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        # what redis-py's async Connection.__del__ does: schedule a disconnect
        STATE["inside"].append((self.run, STATE["run"]))
        PENDING.add(loop.create_task(self.disconnect()))


async def uses_a_connection() -> None:
    STATE["run"] += 1
    assert STATE["live"] == 0, f"{STATE['live']} connection(s) of earlier schedules still alive"
    Connection(STATE["run"])
    # allocate enough containers that an enabled collector fires inside the run
    junk = [[i] for i in range(3000)]
    del junk

    async def step() -> None:
        await asyncio.sleep(0)

    await asyncio.gather(step(), step())


def test_finalisers_of_earlier_schedules_never_run_inside_a_later_one() -> None:
    STATE.update(run=0, live=0, inside=[], made=0)
    report = racecheck.check(uses_a_connection, strategy="random", schedules=60)
    assert report.schedules_run == 60
    assert STATE["inside"] == [], f"finalised inside a run: {STATE['inside'][:5]}"
    assert STATE["made"] == 60
    assert STATE["live"] == 0


THREAD_STATE: dict[str, Any] = {"run": 0, "live": 0, "inside": []}


class Resource:
    def __init__(self) -> None:
        self.me = self
        THREAD_STATE["live"] += 1

    def __del__(self) -> None:
        THREAD_STATE["live"] -= 1
        if THREAD_STATE.get("running"):
            THREAD_STATE["inside"].append(THREAD_STATE["run"])


def threads_target() -> None:
    THREAD_STATE["run"] += 1
    THREAD_STATE["running"] = True
    try:
        assert THREAD_STATE["live"] == 0, "a resource of an earlier schedule is still alive"
        Resource()
        junk = [[i] for i in range(3000)]
        del junk
        box = [0]

        def work() -> None:
            box[0] += 1

        workers = [threading.Thread(target=work) for _ in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        THREAD_STATE["running"] = False


def test_threads_schedules_start_clean() -> None:
    THREAD_STATE.update(run=0, live=0, inside=[])
    racecheck.check(threads_target, strategy="random", schedules=30)
    assert THREAD_STATE["inside"] == []
    assert THREAD_STATE["live"] == 0


@pytest.mark.parametrize("enabled", [True, False])
def test_the_callers_gc_setting_is_restored(enabled: bool) -> None:
    async def racy() -> None:
        box = [0]

        async def inc() -> None:
            current = box[0]
            await asyncio.sleep(0)
            box[0] = current + 1

        await asyncio.gather(inc(), inc())
        assert box[0] == 2

    async def fine() -> None:
        await asyncio.sleep(0)

    frozen = gc.get_freeze_count()
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        racecheck.check(fine, schedules=5)
        assert gc.isenabled() is enabled
        with pytest.raises(racecheck.RaceFound) as info:
            racecheck.check(racy, schedules=50)
        assert gc.isenabled() is enabled
        with pytest.raises(racecheck.RaceFound):
            racecheck.replay(racy, info.value.schedule)
        assert gc.isenabled() is enabled
        assert gc.get_freeze_count() == frozen
    finally:
        gc.enable() if was else gc.disable()


# ------------------------------------------ a traced replay that leaves its path

CALLS = {"n": 0}


async def fails_once_on_another_path() -> None:
    # nondeterministic on purpose: the fifth call takes another path and fails
    CALLS["n"] += 1
    extra = CALLS["n"] == 5

    async def step() -> None:
        await asyncio.sleep(0)

    steps = [step(), step(), step()] if extra else [step(), step()]
    await asyncio.gather(*steps)
    assert not extra, "the fifth call failed"


def test_a_traced_replay_that_diverges_is_not_a_race_with_an_empty_trace() -> None:
    CALLS["n"] = 0
    try:
        racecheck.check(fails_once_on_another_path, strategy="random", schedules=50)
    except racecheck.RaceFound as exc:  # pragma: no cover - the old behaviour
        assert exc.trace is not None, "a RaceFound with an empty trace"
        pytest.fail(f"reported as a race: {exc.summary}")
    except StateLeakError as exc:
        message = str(exc)
        assert "does not reproduce" in message
        assert "fifth call failed" in message
    else:  # pragma: no cover
        pytest.fail("the failure was not reported at all")


# ------------------------------- late tokens replay in a fresh process (first use)

FIRST_USE = """
import asyncio

_CACHE = {}


async def settings(key):
    # one-time initialisation on first use, as libraries do: it suspends once
    if key not in _CACHE:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        _CACHE[key] = len(key)
    return _CACHE[key]


async def worker(number, order):
    await settings("step")
    await asyncio.sleep(0)
    order.append(number)


async def target():
    order = []
    await asyncio.gather(worker(1, order), worker(2, order), worker(3, order))
    assert order != [3, 2, 1], f"order {order}"
"""

FIRST_USE_THREADS = """
import threading

_CACHE = {}


def settings(key):
    # one-time initialisation on first use: shared reads and writes, traced
    if key not in _CACHE:
        table = {}
        for i in range(3):
            table[i] = i * i
        _CACHE[key] = table
    return _CACHE[key]


def target():
    order = []

    def worker(number):
        settings("step")
        order.append(number)

    threads = [threading.Thread(target=worker, args=(n,)) for n in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert order != [3, 2, 1], f"order {order}"
"""

REPLAY = """
import sys
sys.path.insert(0, sys.argv[1])
import racecheck
import first_use
try:
    racecheck.replay(first_use.target, sys.argv[2], label="first-use")
except racecheck.RaceFound as exc:
    print("REPRODUCED", exc.summary)
except racecheck.UsageError as exc:
    print("ERROR", type(exc).__name__, exc)
else:
    print("CLEAN")
"""


@pytest.mark.parametrize("source", [FIRST_USE, FIRST_USE_THREADS], ids=["asyncio", "threads"])
def test_a_late_token_replays_in_a_fresh_process(tmp_path: Path, source: str) -> None:
    (tmp_path / "first_use.py").write_text(source)
    sys.path.insert(0, str(tmp_path))
    try:
        import first_use

        found: racecheck.RaceFound | None = None
        for seed in range(30):
            try:
                racecheck.check(
                    first_use.target,
                    strategy="random",
                    schedules=500,
                    seed=seed,
                    minimize=False,
                    label="first-use",
                )
            except racecheck.RaceFound as exc:
                if exc.schedules_run > 1:
                    found = exc
                    break
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("first_use", None)
    assert found is not None, "no seed found the race after the first-use schedule"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(REPLAY), str(tmp_path), found.schedule],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.stdout.startswith("REPRODUCED"), done.stdout + done.stderr
    assert "order [3, 2, 1]" in done.stdout


def test_the_gc_setting_comes_back_when_the_worker_is_abandoned() -> None:
    """A StuckError leaves the worker blocked in C; the caller's setting is restored anyway."""
    read_end, write_end = os.pipe()

    def blocks_in_c() -> None:
        def reader() -> None:
            os.read(read_end, 1)  # blocks in C: invisible to the scheduler

        worker = threading.Thread(target=reader)
        worker.start()
        worker.join()

    was = gc.isenabled()
    frozen = gc.get_freeze_count()
    gc.enable()
    try:
        with pytest.raises(racecheck.StuckError):
            racecheck.check(blocks_in_c, schedules=3, watchdog=1.0)
        assert gc.isenabled()
        assert gc.get_freeze_count() == frozen
    finally:
        os.write(write_end, b"x")  # let the abandoned reader finish
        os.close(write_end)
        gc.enable() if was else gc.disable()


def test_a_failing_runs_objects_do_not_outlive_it() -> None:
    """A weakly keyed library cache (filelock's singletons) must start empty again.

    The failure's traceback used to keep the failing run's locals alive, so the
    cache was still full in the shrinker's and the replay's runs: the race did
    not reproduce and was reported as state leaking between schedules.
    """
    import threading
    import weakref
    from typing import ClassVar

    class Singleton:
        _instances: ClassVar[weakref.WeakValueDictionary[str, Singleton]] = (
            weakref.WeakValueDictionary()
        )

        @classmethod
        def get(cls, key: str) -> Singleton:
            found = cls._instances.get(key)
            if found is None:
                found = cls()
                cls._instances[key] = found
            return found

    def target() -> None:
        got: list[Singleton] = []

        def worker() -> None:
            got.append(Singleton.get("path"))

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert got[0] is got[1], "two singletons"

    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(target, strategy="random", schedules=200)
    assert "two singletons" in str(found.value)
    assert found.value.trace is not None


def test_garbage_that_outlived_its_run_is_collected_before_the_next() -> None:
    """A weak registry must not see last run's object, even one an older object kept alive.

    Each run replaces a long-lived holder's node; the old node is a cycle that
    survived one collection (it was reachable then), so only a full pass frees
    it. Collecting the young generation alone left it in the registry, and the
    next run's path changed (tqdm's set of bars behaves like this).
    """
    import threading
    import weakref

    class Node:
        def __init__(self) -> None:
            self.me = self  # a cycle: only the collector frees it

    registry: weakref.WeakSet[Node] = weakref.WeakSet()
    holder: dict[str, Node] = {}

    def target() -> None:
        assert len(registry) <= 1, f"{len(registry)} nodes: an earlier run's node is still alive"
        node = Node()
        registry.add(node)
        holder["current"] = node
        seen: list[int] = []
        threads = [threading.Thread(target=lambda: seen.append(len(registry))) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    report = racecheck.check(target, strategy="random", schedules=50)
    assert report.schedules_run == 50


async def _never_started() -> None:
    await asyncio.sleep(0)


def _loop_left_with_work_by_a_failing_run() -> None:
    """A thread's event loop gets a task it never runs; the main thread then fails."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    tasks: list[asyncio.Task[None]] = []

    def serve() -> None:
        asyncio.set_event_loop(loop)
        tasks.append(loop.create_task(_never_started()))
        ready.set()

    worker = threading.Thread(target=serve)
    worker.start()
    ready.wait()
    worker.join()
    raise AssertionError("the run fails with the loop still holding its task")


def test_a_failing_runs_abandoned_event_loop_leaves_no_warnings() -> None:
    """A loop made in a run and left behind by its failure is closed by racecheck.

    Its never-started tasks would otherwise warn "coroutine ... was never
    awaited" (and the loop "unclosed event loop") whenever the failure is
    dropped: noise about racecheck's abort, in some later test's output.
    """
    import warnings

    gc.collect()  # earlier tests' garbage (their loops) must not be counted here
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(_loop_left_with_work_by_a_failing_run, schedules=3, minimize=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gc.collect()  # whatever else the exploration left: only the failure's hold counts
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del found
        gc.collect()
    noise = [
        str(w.message)
        for w in caught
        if "never awaited" in str(w.message) or "unclosed event loop" in str(w.message)
    ]
    assert noise == []


# ------------------------------------------------ garbage from before the check


class _PooledConnection:
    def __init__(self) -> None:
        self.uses = 0


def _pooled_connection(pool: Any) -> _PooledConnection:
    """Check-then-insert into a weak pool: a library's per-key singleton."""
    found = pool.get("db")
    if found is None:
        found = _PooledConnection()
        pool["db"] = found
    return found


def _two_users(pool: Any, lock: threading.Lock | None) -> None:
    connection = _pooled_connection(pool)

    def use() -> None:
        if lock is None:
            connection.uses += 1
        else:
            with lock:
                connection.uses += 1

    threads = [threading.Thread(target=use) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert connection.uses == 2, f"{connection.uses} uses"


def test_garbage_left_before_a_check_is_not_kept_through_it() -> None:
    """The fixed twin, checked after the buggy one in the same process, passes.

    The buggy check's failure sits in reference cycles (an exception, its
    traceback, the frames) until the collector runs; the next check froze the
    heap with that garbage in it, so the buggy run's connection stayed in the
    weak pool for the whole next check, and the FIXED code failed at its first
    schedule ("3 uses"): a race reported on the fix.
    """
    import weakref

    pool: weakref.WeakValueDictionary[str, _PooledConnection] = weakref.WeakValueDictionary()
    was_enabled = gc.isenabled()
    gc.disable()  # the caller's collector might run at any time: make "not yet" certain
    try:
        with pytest.raises(racecheck.RaceFound):
            racecheck.check(lambda: _two_users(pool, None), strategy="random", schedules=300)
        fixed_lock = threading.Lock()
        report = racecheck.check(
            lambda: _two_users(pool, fixed_lock), strategy="random", schedules=50
        )
    finally:
        if was_enabled:
            gc.enable()
    assert report.schedules_run == 50
