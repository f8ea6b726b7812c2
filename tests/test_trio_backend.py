"""The trio backend, against real trio: classic bugs found, fixes never flagged, state pristine.

Every scenario here builds its shared state inside the target, so each schedule
starts fresh. The bugs are trio versions of the classics; each has a fixed
twin that must survive exploration.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

trio = pytest.importorskip("trio")

import racecheck  # noqa: E402
from racecheck.backends import trio_backend  # noqa: E402
from racecheck.errors import UnsupportedError  # noqa: E402

Target = Callable[[], Any]


# ----------------------------------------------------------------- helpers


def _trio_globals() -> tuple[Any, Any, Any]:
    import trio._core._run as run_module
    import trio._threads as threads_module

    return (
        run_module._r,
        run_module._ALLOW_DETERMINISTIC_SCHEDULING,
        threads_module.start_thread_soon,
    )


@pytest.fixture(autouse=True)
def trio_pristine() -> Iterator[None]:
    """Every test must leave trio's private globals exactly as it found them."""
    before = _trio_globals()
    yield
    after = _trio_globals()
    assert after[0] is before[0], "trio._core._run._r was not restored"
    assert after[1] == before[1], "_ALLOW_DETERMINISTIC_SCHEDULING was not restored"
    assert after[2] is before[2], "trio._threads.start_thread_soon was not restored"
    assert trio_backend._saved is None


def find(target: Target, **options: Any) -> racecheck.RaceFound:
    options.setdefault("backend", "trio")
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, **options)
    return info.value


# ------------------------------------------------------------ the classics


class Account:
    def __init__(self) -> None:
        self.balance = 0

    async def deposit(self, amount: int) -> None:
        current = self.balance
        await trio.sleep(0)  # a checkpoint between the read and the write
        self.balance = current + amount


async def lost_update() -> None:
    account = Account()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(account.deposit, 10)
        nursery.start_soon(account.deposit, 5)
    assert account.balance == 15, account.balance


async def lost_update_fixed() -> None:
    account = Account()
    lock = trio.Lock()

    async def deposit(amount: int) -> None:
        async with lock:
            await account.deposit(amount)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(deposit, 10)
        nursery.start_soon(deposit, 5)
    assert account.balance == 15, account.balance


def _transfer_pair(fixed: bool) -> Target:
    async def abba() -> None:
        a, b = trio.Lock(), trio.Lock()

        async def one() -> None:
            async with a:
                await trio.sleep(0)
                async with b:
                    pass

        async def two() -> None:
            first, second = (a, b) if fixed else (b, a)  # fixed: one global lock order
            async with first:
                await trio.sleep(0)
                async with second:
                    pass

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one)
            nursery.start_soon(two)

    abba.__qualname__ = abba.__name__ = "abba_fixed" if fixed else "abba"
    return abba


abba = _transfer_pair(fixed=False)
abba_fixed = _transfer_pair(fixed=True)


def _semaphore_leak(fixed: bool) -> Target:
    async def leak() -> None:
        sem = trio.Semaphore(1)
        scope = trio.CancelScope()

        async def worker() -> None:
            with scope:
                if fixed:
                    async with sem:  # acquire and release are paired with no gap
                        await trio.sleep(0)
                        await trio.sleep(0)
                else:
                    await sem.acquire()
                    await trio.sleep(0)  # cancellation can land here, before the try
                    try:
                        await trio.sleep(0)
                    finally:
                        sem.release()

        async def shutdown() -> None:
            await trio.sleep(0)
            scope.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(worker)
            nursery.start_soon(shutdown)
        await sem.acquire()  # deadlocks once the slot leaked

    leak.__qualname__ = leak.__name__ = "leak_fixed" if fixed else "leak"
    return leak


semaphore_leak = _semaphore_leak(fixed=False)
semaphore_leak_fixed = _semaphore_leak(fixed=True)


async def lost_wakeup() -> None:
    state = {"ready": False}
    cond = trio.Condition()

    async def waiter() -> None:
        if not state["ready"]:  # checked without the lock...
            await trio.sleep(0)
            async with cond:
                await cond.wait()  # ...so the notify may already be gone

    async def notifier() -> None:
        state["ready"] = True
        async with cond:
            cond.notify_all()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        nursery.start_soon(notifier)


async def lost_wakeup_fixed() -> None:
    state = {"ready": False}
    cond = trio.Condition()

    async def waiter() -> None:
        async with cond:
            while not state["ready"]:
                await cond.wait()

    async def notifier() -> None:
        async with cond:
            state["ready"] = True
            cond.notify_all()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        nursery.start_soon(notifier)


async def event_lost_wakeup() -> None:
    """An Event cleared (by a re-arm) after it was set: the waiter never wakes."""
    holder = {"event": trio.Event()}

    async def waiter() -> None:
        await trio.sleep(0)
        await holder["event"].wait()

    async def rearm() -> None:
        holder["event"].set()
        await trio.sleep(0)
        holder["event"] = trio.Event()  # a fresh, unset event replaces the set one

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        nursery.start_soon(rearm)


BUGS = {
    "lost_update": (lost_update, "exception"),
    "abba": (abba, "deadlock"),
    "semaphore_leak": (semaphore_leak, "deadlock"),
    "lost_wakeup": (lost_wakeup, "deadlock"),
    "event_lost_wakeup": (event_lost_wakeup, "deadlock"),
}
FIXED = {
    "lost_update": lost_update_fixed,
    "abba": abba_fixed,
    "semaphore_leak": semaphore_leak_fixed,
    "lost_wakeup": lost_wakeup_fixed,
}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("bug", sorted(BUGS))
def test_classic_bug_found_with_pct(bug: str, seed: int) -> None:
    target, kind = BUGS[bug]
    found = find(target, strategy="pct", schedules=2000, seed=seed)
    assert found.kind == kind
    assert found.schedules_run <= 2000
    if kind == "exception":
        assert isinstance(found.cause, AssertionError)  # the user's, not a group


@pytest.mark.parametrize("bug", sorted(FIXED))
def test_fixed_version_never_flagged(bug: str) -> None:
    report = racecheck.check(FIXED[bug], backend="trio", strategy="pct", schedules=500)
    assert report.schedules_run == 500


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_replay_fails_again_with_the_same_kind(bug: str) -> None:
    target, kind = BUGS[bug]
    found = find(target, strategy="random", schedules=2000, seed=7)
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(target, found.schedule, backend="trio")
    assert again.value.kind == kind == found.kind
    assert again.value.schedule == found.schedule


def test_deadlock_detail_names_waits_holders_and_places() -> None:
    found = find(abba, strategy="pct", schedules=2000)
    detail = found.detail
    assert detail.startswith("deadlock:")
    assert "one() waits: acquire Lock#" in detail
    assert "two() waits: acquire Lock#" in detail
    assert "held by" in detail
    assert "test_trio_backend.py:" in detail and "async with" in detail
    assert found.cause is None


def test_batch_order_is_controlled_not_natural() -> None:
    """Passes in trio's deterministic order (creation order); fails when reordered."""

    async def ordered() -> None:
        log: list[str] = []

        async def first() -> None:
            log.append("first")

        async def second() -> None:
            log.append("second")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(first)
            nursery.start_soon(second)
        assert log == ["first", "second"], log

    # the all-zero schedule is trio's natural order: it passes
    natural = racecheck.check(ordered, backend="trio", strategy="exhaustive", schedules=1)
    assert natural.schedules_run == 1
    found = find(ordered, strategy="exhaustive", schedules=20)
    assert found.preemptions >= 1
    assert found.trace is not None
    names = [actor.name for actor in found.trace.actors]
    assert any("first()" in n for n in names) and any("second()" in n for n in names)


def test_exhaustive_on_trio_covers_postponing_and_says_so() -> None:
    """Every step is a choice among all runnable tasks (trio may leave any of them
    queued for later batches), so finishing the space is a claim about trio's freedom."""

    async def two_tasks() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep, 0)
            nursery.start_soon(trio.sleep, 0)

    report = racecheck.check(two_tasks, backend="trio", strategy="exhaustive", schedules=1000)
    assert report.exhausted, str(report)
    assert report.schedules_run > 1
    assert "every schedule racecheck can make of this program ran" in str(report)


def test_exhaustive_with_inline_to_thread_workers_never_claims_exhausted() -> None:
    """A worker runs inline at its call: orders where tasks run while it works were not run."""

    async def offload() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.to_thread.run_sync, int)
            nursery.start_soon(trio.sleep, 0)

    report = racecheck.check(offload, backend="trio", strategy="exhaustive", schedules=1000)
    assert report.schedules_run > 1
    assert not report.exhausted
    assert "to_thread workers ran inline" in str(report)


def test_exhaustive_waiting_for_a_real_thread_never_claims_exhausted() -> None:
    async def waits_for_thread() -> None:
        event = trio.Event()
        token = trio.lowlevel.current_trio_token()

        def later() -> None:
            time.sleep(0.01)
            trio.from_thread.run_sync(event.set, trio_token=token)

        thread = threading.Thread(target=later)
        thread.start()
        await event.wait()
        thread.join()

    report = racecheck.check(waits_for_thread, backend="trio", strategy="exhaustive", schedules=5)
    assert not report.exhausted
    assert "waited for work from threads or I/O" in str(report)


# -------------------------------------------------------------- virtual time


def test_sleeping_an_hour_costs_no_real_time() -> None:
    async def slow() -> None:
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep, 3600)
            nursery.start_soon(trio.sleep, 1800)
        assert trio.current_time() - start == 3600
        with trio.move_on_after(30) as scope:
            await trio.sleep_forever()
        assert scope.cancelled_caught
        with pytest.raises(trio.TooSlowError):
            with trio.fail_after(5):
                await trio.Event().wait()

    started = time.perf_counter()
    report = racecheck.check(slow, backend="trio", strategy="pct", schedules=20)
    assert report.schedules_run == 20
    assert time.perf_counter() - started < 5


def test_timeout_racing_work_is_explored() -> None:
    """Deadlines expire at exact virtual times, so the outcome is a function of the schedule."""

    async def racing() -> None:
        done: list[str] = []

        async def work() -> None:
            await trio.sleep(1)
            done.append("work")

        with trio.move_on_after(1):  # same deadline as the work: order decides
            async with trio.open_nursery() as nursery:
                nursery.start_soon(work)
        assert done == ["work"]

    found = find(racing, strategy="pct", schedules=500)
    assert found.kind == "exception"
    with pytest.raises(racecheck.RaceFound):
        racecheck.replay(racing, found.schedule, backend="trio")


# -------------------------------------------------------------- primitives


async def pipeline() -> None:
    """A correct program using most of trio's toolbox; must never be flagged."""
    send, receive = trio.open_memory_channel[int](1)
    limiter = trio.CapacityLimiter(2)
    lock, sem, event = trio.Lock(), trio.Semaphore(2), trio.Event()
    cond = trio.Condition()
    totals = {"sum": 0, "done": 0}

    async def producer(out: Any, values: range) -> None:
        async with out:
            for value in values:
                async with limiter, sem:
                    await out.send(value)

    async def consumer() -> None:
        async with receive:
            async for value in receive:
                async with lock:
                    current = totals["sum"]
                    await trio.sleep(0)
                    totals["sum"] = current + value
        async with cond:
            totals["done"] += 1
            cond.notify_all()
        event.set()

    async def watcher() -> None:
        await event.wait()
        async with cond:
            while totals["done"] < 1:
                await cond.wait()

    async with trio.open_nursery() as nursery:
        async with send:
            # clone before starting: a clone taken inside the task could race
            # the close of ``send`` (racecheck found exactly that in a draft)
            nursery.start_soon(producer, send.clone(), range(0, 5))
            nursery.start_soon(producer, send.clone(), range(5, 10))
        nursery.start_soon(consumer)
        nursery.start_soon(watcher)
        with trio.CancelScope() as scope:
            scope.cancel()
            await trio.sleep(1)  # cancelled at once
    assert totals["sum"] == sum(range(10))


def test_trio_primitives_work_unchanged() -> None:
    report = racecheck.check(pipeline, backend="trio", strategy="random", schedules=200)
    assert report.schedules_run == 200


def test_to_thread_runs_inline_without_real_threads_or_false_deadlocks() -> None:
    seen: set[int] = set()

    def blocking(value: int) -> int:
        seen.add(threading.get_ident())
        return value * 2

    async def offload() -> None:
        results: list[int] = []

        async def one(value: int) -> None:
            results.append(await trio.to_thread.run_sync(blocking, value))

        async with trio.open_nursery() as nursery:
            for value in range(3):
                nursery.start_soon(one, value)
        assert sorted(results) == [0, 2, 4]

    threads_before = set(threading.enumerate())
    started = time.perf_counter()
    report = racecheck.check(offload, backend="trio", strategy="pct", schedules=100)
    assert report.schedules_run == 100
    assert time.perf_counter() - started < 10
    # one thread ran every worker: the run's own (inline), never trio's worker pool
    assert len(seen) == 1 and threading.get_ident() not in seen
    new_threads = set(threading.enumerate()) - threads_before
    assert not [t.name for t in new_threads if t.name != "racecheck-explorer"]


def test_race_through_to_thread_is_found() -> None:
    box = {"n": 0}

    def read() -> int:
        return box["n"]

    async def racy() -> None:
        box["n"] = 0

        async def bump() -> None:
            current = await trio.to_thread.run_sync(read)
            box["n"] = current + 1

        async with trio.open_nursery() as nursery:
            nursery.start_soon(bump)
            nursery.start_soon(bump)
        assert box["n"] == 2

    found = find(racy, strategy="pct", schedules=500)
    assert isinstance(found.cause, AssertionError)


def test_from_thread_inside_inline_worker_is_a_clear_usage_error() -> None:
    def calls_back() -> None:
        trio.from_thread.run_sync(lambda: None)

    async def nested() -> None:
        await trio.to_thread.run_sync(calls_back)

    with pytest.raises(UnsupportedError, match="from_thread"):
        racecheck.check(nested, backend="trio", schedules=5)


def test_a_user_thread_waking_the_run_is_not_a_deadlock() -> None:
    async def waits_for_thread() -> None:
        event = trio.Event()
        token = trio.lowlevel.current_trio_token()

        def later() -> None:
            time.sleep(0.01)
            trio.from_thread.run_sync(event.set, trio_token=token)

        thread = threading.Thread(target=later)
        thread.start()
        await event.wait()
        thread.join()

    report = racecheck.check(waits_for_thread, backend="trio", strategy="pct", schedules=3)
    assert report.schedules_run == 3


def test_a_thread_that_never_calls_back_is_reported_stuck_not_hung() -> None:
    release = threading.Event()

    async def waits_forever() -> None:
        event = trio.Event()
        token = trio.lowlevel.current_trio_token()

        def never() -> None:
            release.wait(30)
            try:
                trio.from_thread.run_sync(event.set, trio_token=token)
            except trio.RunFinishedError:
                pass

        threading.Thread(target=never, daemon=True).start()
        await event.wait()

    started = time.perf_counter()
    try:
        with pytest.raises(racecheck.StuckError, match="no scheduling progress"):
            racecheck.check(waits_forever, backend="trio", schedules=2, watchdog=0.5)
    finally:
        release.set()
    assert time.perf_counter() - started < 10
    deadline = time.monotonic() + 5
    while trio_backend._saved is not None and time.monotonic() < deadline:
        time.sleep(0.01)


# ----------------------------------------------------- exceptions and limits


def test_exception_group_is_unwrapped_to_the_users_exception() -> None:
    async def raises() -> None:
        async def bad() -> None:
            await trio.sleep(0)
            raise KeyError("boom")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(bad)
            nursery.start_soon(trio.sleep, 10)

    found = find(raises, schedules=5)
    assert found.kind == "exception"
    assert type(found.cause) is KeyError
    assert found.trace is not None
    operations = [step.operation for step in found.trace.steps]
    assert "raised KeyError" in operations
    assert "cancelled" in operations


def test_several_errors_keep_the_group() -> None:
    async def two_fail() -> None:
        async def bad(n: int) -> None:
            raise ValueError(n)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(bad, 1)
            nursery.start_soon(bad, 2)

    found = find(two_fail, schedules=5)
    assert isinstance(found.cause, BaseExceptionGroup)
    assert len(found.cause.exceptions) == 2


def test_step_limit_unwinds_a_spin_loop_by_cancellation() -> None:
    async def spin() -> None:
        async def spinner() -> None:
            while True:
                await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(spinner)
            nursery.start_soon(spinner)

    found = find(spin, schedules=3, max_steps=300)
    assert found.kind == "step-limit"
    # the next exploration starts clean
    assert (
        racecheck.check(
            lost_update_fixed, backend="trio", strategy="pct", schedules=20
        ).schedules_run
        == 20
    )


def test_step_limit_stops_a_loop_that_ignores_cancellation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cleaned: list[str] = []

    async def stubborn() -> None:
        async def spinner() -> None:
            try:
                with trio.CancelScope(shield=True):
                    while True:
                        await trio.sleep(0)
            finally:
                cleaned.append("spinner")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(spinner)

    found = find(stubborn, schedules=2, max_steps=200, minimize=False)
    assert found.kind == "step-limit"
    assert cleaned  # the abandoned coroutine was closed, its finally ran
    assert "Exception ignored" not in capsys.readouterr().err
    assert (
        racecheck.check(
            lost_update_fixed, backend="trio", strategy="pct", schedules=20
        ).schedules_run
        == 20
    )


def test_code_swallowing_every_exception_is_stopped_and_trio_stays_usable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def immortal() -> None:
        async def forever() -> None:
            while True:
                try:
                    await trio.sleep(0)
                except BaseException:  # swallows Cancelled and racecheck's abort
                    pass

        async with trio.open_nursery() as nursery:
            nursery.start_soon(forever)

    started = time.perf_counter()
    with _no_unraisable():
        found = find(immortal, schedules=2, max_steps=100, minimize=False)
    assert found.kind == "step-limit"
    assert time.perf_counter() - started < 10
    assert "Exception ignored" not in capsys.readouterr().err
    assert trio.run(_plain) == 3
    assert (
        racecheck.check(
            lost_update_fixed, backend="trio", strategy="pct", schedules=20
        ).schedules_run
        == 20
    )


class _no_unraisable:
    """Fail if anything reaches sys.unraisablehook (pytest would only warn)."""

    def __enter__(self) -> None:
        self.seen: list[Any] = []
        self.previous = sys.unraisablehook
        sys.unraisablehook = self.seen.append

    def __exit__(self, *exc: object) -> None:
        import gc

        gc.collect()
        sys.unraisablehook = self.previous
        assert not self.seen, [str(u.exc_value) for u in self.seen]


def test_deadlock_ignoring_cancellation_still_ends() -> None:
    async def shielded_deadlock() -> None:
        lock = trio.Lock()
        await lock.acquire()

        async def blocked() -> None:
            with trio.CancelScope(shield=True):
                await lock.acquire()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(blocked)

    found = find(shielded_deadlock, schedules=2, minimize=False)
    assert found.kind == "deadlock"
    assert "blocked() waits: acquire Lock#1 (held by" in found.detail


def test_internals_pristine_after_failures_and_deadlocks() -> None:
    before = _trio_globals()
    find(lost_update, schedules=50)
    assert _trio_globals()[0] is before[0] and _trio_globals()[2] is before[2]
    find(abba, schedules=200)
    after = _trio_globals()
    assert after[0] is before[0]
    assert after[1] == before[1]
    assert after[2] is before[2]
    # and plain trio still runs with its own scheduler afterwards
    assert trio.run(_plain) == 3


async def _plain() -> int:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.sleep, 0)
    return 3


def test_uninstall_is_idempotent_and_restores() -> None:
    backend = trio_backend.TrioBackend(lost_update)
    before = _trio_globals()
    backend.install()
    backend.uninstall()
    backend.uninstall()
    assert _trio_globals()[0] is before[0]


# ------------------------------------------------------------ version pins


@pytest.mark.parametrize("version", ["0.21.0", "0.36.0", "1.0.0", "garbage"])
def test_untested_trio_version_is_a_clear_usage_error(
    monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    monkeypatch.setattr(trio_backend, "installed_version", lambda: version)
    monkeypatch.delenv(trio_backend.ALLOW_UNTESTED_ENV, raising=False)
    with pytest.raises(UnsupportedError) as info:
        racecheck.check(lost_update, backend="trio", schedules=5)
    message = str(info.value)
    assert f"trio {version} is not supported" in message
    assert ">=0.22,<0.36" in message
    assert isinstance(info.value, racecheck.UsageError)


def test_untested_version_can_be_tried_explicitly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trio_backend, "installed_version", lambda: "0.99.0")
    monkeypatch.setenv(trio_backend.ALLOW_UNTESTED_ENV, "1")
    find(lost_update, schedules=50)  # the behaviour probe passed: exploring works


def test_installed_trio_is_in_the_tested_range() -> None:
    trio_backend.check_version(trio.__version__)


# ------------------------------------------------------------------ pytest


MARKED_TRIO = """
import pytest
import trio

class Account:
    def __init__(self):
        self.balance = 0

    async def deposit(self, amount):
        current = self.balance
        await trio.sleep(0)
        self.balance = current + amount

@pytest.mark.racecheck(backend="trio", schedules=200)
async def test_deposit():
    account = Account()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(account.deposit, 10)
        nursery.start_soon(account.deposit, 5)
    assert account.balance == 15

@pytest.mark.racecheck(backend="trio", schedules=50)
async def test_locked_deposit():
    account = Account()
    lock = trio.Lock()

    async def deposit(amount):
        async with lock:
            await account.deposit(amount)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(deposit, 10)
        nursery.start_soon(deposit, 5)
    assert account.balance == 15
    assert trio.current_time() < 1  # racecheck's virtual clock, not pytest-trio's
"""


@pytest.mark.parametrize("with_pytest_trio", [False, True])
def test_pytest_marker_runs_async_test_on_trio(
    pytester: pytest.Pytester, with_pytest_trio: bool
) -> None:
    args: list[str] = []
    if with_pytest_trio:
        pytest.importorskip("pytest_trio")
        pytester.makeini("[pytest]\ntrio_mode = true\n")
        args = ["-p", "trio"]
    pytester.makepyfile(test_bank=MARKED_TRIO)
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*racecheck: race found after * AssertionError*"])
    assert "rc1:trio:" in result.stdout.str()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
