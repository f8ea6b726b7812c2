"""The asyncio backend on real event loops: decisions, primitives, time, failures."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import racecheck
from racecheck.engine import Controller
from racecheck.strategies.base import BaseChooser


class Account:
    def __init__(self) -> None:
        self.balance = 0

    async def deposit(self, amount: int) -> None:
        current = self.balance
        await asyncio.sleep(0)
        self.balance = current + amount


async def lost_update() -> None:
    account = Account()
    await asyncio.gather(account.deposit(10), account.deposit(5))
    assert account.balance == 15, account.balance


@pytest.mark.parametrize("strategy", ["pct", "random", "exhaustive", "hypothesis"])
def test_every_strategy_finds_the_lost_update_and_replay_repeats_it(strategy: str) -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(lost_update, strategy=strategy, schedules=200)
    found = info.value
    assert found.kind == "exception"
    assert isinstance(found.cause, AssertionError)
    assert isinstance(found, AssertionError)
    for _ in range(3):
        with pytest.raises(racecheck.RaceFound) as again:
            racecheck.replay(lost_update, found.schedule)
        assert again.value.kind == "exception"
        assert str(again.value.cause).splitlines()[0] == str(found.cause).splitlines()[0]


def test_the_report_tells_the_story() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(lost_update, schedules=50)
    text = str(info.value)
    assert "deposit(10)" in text and "deposit(5)" in text
    assert "cur" not in text or "current = self.balance" in text
    assert "self.balance = current + amount" in text
    assert "✗" in text and "assert account.balance == 15" in text
    assert info.value.schedule in text
    assert "racecheck.replay(lost_update" in text


class Guarded:
    def __init__(self) -> None:
        self.balance = 0
        self.lock = asyncio.Lock()

    async def deposit(self, amount: int) -> None:
        async with self.lock:
            current = self.balance
            await asyncio.sleep(0)
            self.balance = current + amount


async def all_primitives() -> None:
    """Every stock primitive, used correctly: must never be flagged."""
    account = Guarded()
    event = asyncio.Event()
    condition = asyncio.Condition()
    semaphore = asyncio.Semaphore(2)
    queue: asyncio.Queue[int] = asyncio.Queue(maxsize=1)
    items: list[int] = []
    ready: list[bool] = []

    async def producer() -> None:
        for i in range(3):
            await queue.put(i)
        await queue.put(-1)

    async def consumer() -> None:
        while (item := await queue.get()) != -1:
            items.append(item)

    async def waiter() -> None:
        async with condition:
            await condition.wait_for(lambda: bool(ready))

    async def notifier() -> None:
        await event.wait()
        async with condition:
            ready.append(True)
            condition.notify_all()

    async def limited() -> None:
        async with semaphore:
            await asyncio.sleep(0.5)

    async with asyncio.TaskGroup() as group:
        group.create_task(producer())
        group.create_task(consumer())
        group.create_task(waiter())
        group.create_task(notifier())
        for _ in range(3):
            group.create_task(limited())
        group.create_task(account.deposit(1))
        group.create_task(account.deposit(2))
        event.set()
    assert items == [0, 1, 2]
    assert account.balance == 3
    assert await asyncio.wait_for(asyncio.sleep(1, result="done"), timeout=5) == "done"
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(asyncio.sleep(10), timeout=1)
    async with asyncio.timeout(2):
        await asyncio.sleep(1)


@pytest.mark.parametrize("strategy", ["pct", "random"])
def test_stock_primitives_work_unchanged(strategy: str) -> None:
    report = racecheck.check(all_primitives, strategy=strategy, schedules=300, seed=1)
    assert report.schedules_run == 300
    assert report.distinct_schedules > 10


def test_exhaustive_explores_the_whole_bounded_space() -> None:
    async def fixed() -> None:
        account = Guarded()
        await asyncio.gather(account.deposit(1), account.deposit(2))
        assert account.balance == 3

    report = racecheck.check(fixed, strategy="exhaustive", schedules=10_000, preemption_bound=2)
    assert report.exhausted is True
    assert report.schedules_run == report.distinct_schedules
    assert report.schedules_run < 10_000
    # unbounded, the search deepens one preemption at a time: a level re-runs
    # the shallower schedules, and it stops when a level pruned nothing
    deepened = racecheck.check(fixed, strategy="exhaustive", schedules=10_000)
    assert deepened.exhausted is True
    assert deepened.distinct_schedules == report.distinct_schedules
    small = racecheck.check(fixed, strategy="exhaustive", schedules=2, preemption_bound=2)
    assert small.exhausted is False


def test_time_is_virtual() -> None:
    async def slow() -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.sleep(3600)
        async with asyncio.timeout(7200):
            await asyncio.sleep(3600)
        assert loop.time() - start == pytest.approx(7200)

    started = time.perf_counter()
    racecheck.check(slow, schedules=20)
    # A hang guard, not a speed check: real sleeps would take 40 hours.
    assert time.perf_counter() - started < 600


def test_deadlock_names_each_waiting_task_and_the_line() -> None:
    async def abba() -> None:
        a, b = asyncio.Lock(), asyncio.Lock()

        async def one() -> None:
            async with a:
                await asyncio.sleep(0)
                async with b:
                    pass

        async def two() -> None:
            async with b:
                await asyncio.sleep(0)
                async with a:
                    pass

        await asyncio.gather(one(), two())

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(abba, schedules=100)
    found = info.value
    assert found.kind == "deadlock"
    assert "acquire Lock#" in found.detail
    assert "async with b:" in found.detail and "async with a:" in found.detail
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(abba, found.schedule)
    assert again.value.kind == "deadlock"


def test_a_never_set_event_is_a_deadlock_not_a_hang() -> None:
    async def forgotten() -> None:
        event = asyncio.Event()
        await event.wait()

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(forgotten, schedules=5)
    assert info.value.kind == "deadlock"
    assert "wait Event#1" in info.value.detail


def test_executors_and_threadsafe_callbacks_are_not_deadlocks() -> None:
    async def uses_threads() -> None:
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, sum, [1, 2]) == 3
        assert await asyncio.to_thread(lambda: "x") == "x"
        future = loop.create_future()
        helper = threading.Thread(target=lambda: loop.call_soon_threadsafe(future.set_result, 42))
        helper.start()
        assert await future == 42
        helper.join()

    # By default a thread the target starts moves the exploration to the threads
    # backend at once: it controls the helper thread and the executor's threads
    # (executor work alone is explored on both: test_executor_work.py).
    report = racecheck.check(uses_threads, schedules=30)
    assert report.backend == "threads"
    assert report.notes[0].startswith("ran on the threads backend: the target started a thread")
    assert not report.warnings
    # Asked for by name, the asyncio backend runs executor work inline, and says
    # what that leaves out: races inside the executor work.
    report = racecheck.check(uses_threads, schedules=30, backend="asyncio")
    assert report.schedules_run >= 1
    assert not report.exhausted
    assert any("ran inline on the loop's thread" in w for w in report.warnings), report.warnings


def test_an_unawaited_task_that_dies_fails_the_run() -> None:
    async def fire_and_forget() -> None:
        async def boom() -> None:
            raise ValueError("lost in the background")

        asyncio.get_running_loop().create_task(boom())
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(fire_and_forget, schedules=5)
    assert isinstance(info.value.cause, ValueError)


def test_spinning_tasks_hit_the_step_limit() -> None:
    async def spin() -> None:
        flag: list[bool] = []

        async def waiter() -> None:
            while not flag:
                await asyncio.sleep(0)

        await waiter()

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(spin, schedules=3, max_steps=500)
    assert info.value.kind == "step-limit"
    assert "max_steps=500" in info.value.detail


def test_cancellation_works_and_is_explored() -> None:
    async def cancels() -> None:
        started = asyncio.Event()

        async def worker() -> None:
            started.set()
            await asyncio.sleep(10)

        task = asyncio.get_running_loop().create_task(worker())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    racecheck.check(cancels, schedules=50)


class ExplodingChooser(BaseChooser):
    name = "exploding"

    def __init__(self, after: int) -> None:
        self.after = after
        self.calls = 0

    def choose(self, candidates: object, step: int) -> int:
        self.calls += 1
        if self.calls > self.after:
            raise RuntimeError("chooser failed")
        return 0


def test_a_chooser_that_raises_leaves_the_loop_consistent() -> None:
    from racecheck.backends.asyncio_backend import AsyncioBackend

    backend = AsyncioBackend(all_primitives)
    chooser = ExplodingChooser(after=3)
    controller = Controller(chooser, max_steps=10_000)
    backend.run_once(controller)
    assert isinstance(controller.internal_error, RuntimeError)
    # The next run on a fresh loop is unaffected, and nothing leaked.
    assert racecheck.check(all_primitives, schedules=5).schedules_run == 5
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()


def test_replay_reports_divergence_at_the_step() -> None:
    shape = {"workers": 2}

    async def changes_shape() -> None:
        workers = shape["workers"]
        account = Account()
        await asyncio.gather(*(account.deposit(1) for _ in range(workers)))
        assert account.balance == workers

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(changes_shape, schedules=50, minimize=False)
    shape["workers"] = 3  # "the code changed" between the failure and its replay
    with pytest.raises(racecheck.DivergenceError, match="diverged at decision"):
        racecheck.replay(changes_shape, info.value.schedule)
