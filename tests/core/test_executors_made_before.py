"""A ``ThreadPoolExecutor`` made at import: each schedule's work runs on threads racecheck runs.

Libraries keep a module-level executor (``_executor = ThreadPoolExecutor()``).
Its work queue is a C ``SimpleQueue`` made before racecheck patched anything,
and once it has run work its worker threads are real ones. Before, a target
that submitted to it stalled for the watchdog (a controlled worker blocked in
the real queue's ``get``), left an ``AssertionError`` in ``threading._shutdown``
at interpreter exit, or, on the next check in the process, reported a false
deadlock at schedule 1.

Now every schedule's submits to an executor made before the exploration go
to a twin made inside the schedule (same size, name prefix and initializer),
whose workers racecheck schedules like any thread; the executor itself is
left as it was, usable after the exploration.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import racecheck

COLD = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="cold")
WARM = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="warm")
WARM.submit(int).result()  # a real worker thread exists before any check


class Counter:
    def __init__(self) -> None:
        self.value = 0
        self.lock = threading.Lock()

    def bump(self) -> None:
        seen = self.value
        time.sleep(0)
        self.value = seen + 1

    def locked_bump(self) -> None:
        with self.lock:
            self.bump()


def lost_update_on(executor: concurrent.futures.ThreadPoolExecutor) -> None:
    counter = Counter()
    futures = [executor.submit(counter.bump) for _ in range(2)]
    for future in futures:
        future.result()
    assert counter.value == 2, counter.value


def locked_on(executor: concurrent.futures.ThreadPoolExecutor) -> None:
    counter = Counter()
    list(executor.map(lambda _: counter.locked_bump(), range(2)))
    assert counter.value == 2, counter.value


@pytest.mark.parametrize("executor", [COLD, WARM], ids=["cold", "warm"])
@pytest.mark.parametrize("strategy", ["auto", "dpor"])
def test_a_lost_update_on_a_module_level_executor_is_found(
    executor: concurrent.futures.ThreadPoolExecutor, strategy: str
) -> None:
    threads_before, queue_before = set(executor._threads), executor._work_queue
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(lambda: lost_update_on(executor), strategy=strategy, schedules=300)
    assert found.value.kind == "exception", found.value
    assert executor._threads == threads_before and executor._work_queue is queue_before
    assert executor.submit(int, "7").result(timeout=5) == 7  # still the real, working pool


@pytest.mark.parametrize("executor", [COLD, WARM], ids=["cold", "warm"])
def test_the_locked_version_passes(executor: concurrent.futures.ThreadPoolExecutor) -> None:
    report = racecheck.check(lambda: locked_on(executor), schedules=200)
    assert report.schedules_run >= 1


def test_shutting_it_down_inside_a_schedule_leaves_it_working() -> None:
    def shut_down_early() -> None:
        COLD.submit(int).result()
        COLD.shutdown(wait=True)
        with pytest.raises(RuntimeError):
            COLD.submit(int)

    racecheck.check(shut_down_early, schedules=20)
    assert COLD.submit(int, "3").result(timeout=5) == 3


def test_an_async_target_submitting_to_a_warm_executor_runs_on_threads() -> None:
    async def task_and_pool() -> None:
        counter = Counter()
        work = asyncio.wrap_future(WARM.submit(counter.bump))
        seen = counter.value
        await asyncio.sleep(0)
        counter.value = seen + 1
        await work
        assert counter.value == 2, counter.value

    with pytest.raises(racecheck.RaceFound):
        racecheck.check(task_and_pool, schedules=300)


async def task_and_warm_pool_polled() -> None:
    counter = Counter()
    work = WARM.submit(counter.bump)  # its workers run: no thread starts for this work
    seen = counter.value
    await asyncio.sleep(0)
    counter.value = seen + 1
    while not work.done():
        await asyncio.sleep(0.001)
    assert counter.value == 2, counter.value


@pytest.mark.parametrize("strategy", ["dpor", "exhaustive"])
def test_named_asyncio_backend_claims_nothing_about_a_warm_pool(strategy: str) -> None:
    report = racecheck.check(
        task_and_warm_pool_polled, strategy=strategy, schedules=20, backend="asyncio"
    )
    assert not report.verified and not report.exhausted, str(report)
    assert "ThreadPoolExecutor 'warm'" in str(report), str(report)


def test_a_warm_pool_moves_an_async_target_to_threads() -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(task_and_warm_pool_polled, schedules=300)
    assert "backend='threads'" in str(found.value)


def test_nothing_is_left_for_interpreter_exit(tmp_path: object) -> None:
    program = textwrap.dedent(
        """
        import concurrent.futures, time
        import racecheck

        POOL = concurrent.futures.ThreadPoolExecutor(max_workers=2)

        def target():
            box = {"n": 0}
            def bump():
                seen = box["n"]; time.sleep(0); box["n"] = seen + 1
            for future in [POOL.submit(bump) for _ in range(2)]:
                future.result()

        print(racecheck.check(target, schedules=30).schedules_run)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr
