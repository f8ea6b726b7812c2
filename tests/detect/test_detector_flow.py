"""Issue 14, the rest: a read outside the lock that decides a write under it,
``collections.deque`` as a container, and closure makers called from many threads."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import racecheck

sys.path.insert(0, str(Path(__file__).parent))
from test_detector_shapes import clean, detect, make_and_call, wrapper_activations

log = logging.getLogger("racecheck.tests.flow")


def _threads(work: Callable[[int], Any], count: int = 2) -> None:
    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


# -- 1. a read outside the lock, a write inside it --------------------------------------


class Account:
    def __init__(self) -> None:
        self.balance = 100
        self.lock = threading.Lock()
        self.served = 0

    def withdraw_checked_outside(self, amount: int) -> None:
        if self.balance >= amount:  # decides the withdrawal, but outside the lock
            with self.lock:
                self.balance -= amount

    def withdraw_checked_inside(self, amount: int) -> None:
        with self.lock:
            if self.balance >= amount:
                self.balance -= amount

    def withdraw_double_checked(self, amount: int) -> None:
        if self.balance >= amount:  # a fast path, re-checked under the lock
            with self.lock:
                if self.balance >= amount:
                    self.balance -= amount

    def shown_then_served(self, amount: int) -> None:
        log.debug("balance before: %s", self.balance)  # only displayed
        with self.lock:
            self.balance -= amount
            self.served += 1

    def current(self) -> int:
        return self.balance

    def returned_for_display_then_served(self, amount: int) -> None:
        log.debug("balance before: %s", self.current())  # returned, then displayed
        with self.lock:
            self.balance -= amount


def _account(method: str) -> Callable[[], None]:
    def target() -> None:
        account = Account()
        _threads(lambda _: getattr(account, method)(40))

    return target


def test_a_check_outside_the_lock_deciding_a_write_under_it_is_reported() -> None:
    # No schedule needs the other withdrawal *between* check and act: the
    # check is not ordered with the other thread's write, so it could be.
    finding = detect(_account("withdraw_checked_outside"), schedules=20)
    assert finding.kind == "data-race", finding
    targets = {a.target for a in finding.accesses}
    assert targets == {"self.balance"}, finding
    check = next(a for a in finding.accesses if "if self.balance >= amount" in a.line)
    other = finding.accesses[0]
    assert not check.locks and other.locks and other.actor != check.actor
    assert other.action == "wrote"


@pytest.mark.parametrize(
    "method",
    [
        "withdraw_checked_inside",
        "withdraw_double_checked",
        "shown_then_served",
        "returned_for_display_then_served",
    ],
)
def test_checked_under_the_lock_or_only_displayed_is_clean(method: str) -> None:
    clean(_account(method), schedules=30)


class Stats:
    def __init__(self) -> None:
        self.items: list[int] = []
        self.lock = threading.Lock()

    def add_and_report(self, i: int) -> None:
        log.debug("%d items so far", len(self.items))  # an atomic measure, displayed
        with self.lock:
            self.items.append(i)


def test_a_length_only_displayed_is_not_a_race() -> None:
    def target() -> None:
        stats = Stats()
        _threads(stats.add_and_report)

    clean(target, schedules=30)


# -- 3. collections.deque ----------------------------------------------------------------


class Waiters:
    def __init__(self, count: int) -> None:
        self.queue: collections.deque[int] = collections.deque(range(count))
        self.lock = threading.Lock()
        self.woken: list[int] = []

    async def wake_one(self) -> None:
        if self.queue:
            await asyncio.sleep(0)
            self.woken.append(self.queue.popleft())

    async def wake_one_by_length(self) -> None:
        if len(self.queue) > 0:
            await asyncio.sleep(0)
            self.woken.append(self.queue.popleft())

    async def wake_one_fixed(self) -> None:
        await asyncio.sleep(0)
        if self.queue:
            self.woken.append(self.queue.popleft())

    def take_checked_outside(self, _: int) -> None:
        if self.queue:
            with self.lock:
                self.woken.append(self.queue.popleft())

    def take_checked_inside(self, _: int) -> None:
        with self.lock:
            if self.queue:
                self.woken.append(self.queue.popleft())


def _tasks(method: str) -> Callable[[], Any]:
    async def target() -> None:
        waiters = Waiters(1)
        with contextlib.suppress(IndexError):
            await asyncio.gather(getattr(waiters, method)(), getattr(waiters, method)())

    return target


@pytest.mark.parametrize("method", ["wake_one", "wake_one_by_length"])
def test_deque_check_then_popleft_across_an_await(method: str) -> None:
    finding = detect(_tasks(method))
    assert finding.pattern == "stale check", finding
    first, middle, last = finding.accesses
    assert "self.queue" in first.line and "popleft" in middle.line and "popleft" in last.line
    assert first.actor == last.actor != middle.actor


def test_deque_recheck_after_the_await_is_clean() -> None:
    clean(_tasks("wake_one_fixed"))


def _deque_threads(method: str) -> Callable[[], None]:
    def target() -> None:
        waiters = Waiters(1)

        def work(i: int) -> None:
            with contextlib.suppress(IndexError):
                getattr(waiters, method)(i)

        _threads(work)

    return target


def test_deque_checked_outside_the_lock_is_reported() -> None:
    finding = detect(_deque_threads("take_checked_outside"), schedules=60)
    assert {a.target for a in finding.accesses} == {"self.queue"}, finding
    assert any("if self.queue:" in a.line and not a.locks for a in finding.accesses)


def test_deque_checked_inside_the_lock_is_clean() -> None:
    clean(_deque_threads("take_checked_inside"), schedules=40)


def test_deque_append_and_popleft_from_two_threads_are_atomic() -> None:
    def target() -> None:
        box: collections.deque[int] = collections.deque()
        got: list[int] = []

        def producer() -> None:
            for i in range(3):
                box.append(i)

        def consumer() -> None:
            for _ in range(6):
                with contextlib.suppress(IndexError):
                    got.append(box.popleft())

        threads = [threading.Thread(target=producer), threading.Thread(target=consumer)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    clean(target, schedules=30)


def test_iterating_a_deque_another_thread_appends_to_is_a_data_race() -> None:
    def target() -> None:
        box: collections.deque[int] = collections.deque([0, 1])
        seen: list[int] = []

        def writer() -> None:
            box.append(2)

        thread = threading.Thread(target=writer)
        thread.start()
        with contextlib.suppress(RuntimeError):  # "deque mutated during iteration"
            seen.extend(x for x in box)
        thread.join()

    finding = detect(target)
    assert finding.kind == "data-race", finding
    assert {a.target for a in finding.accesses} == {"box"}


# -- 4. closure makers from many threads -------------------------------------------------


@pytest.mark.parametrize("count", [2, 5, 8])
@pytest.mark.parametrize("work", [make_and_call, wrapper_activations], ids=lambda f: f.__name__)
def test_closure_maker_from_n_threads_is_clean(count: int, work: Callable[[int], Any]) -> None:
    clean(lambda: _threads(work, count), schedules=15)


def shared_cell_from_n_threads(count: int) -> Callable[[], None]:
    def target() -> None:
        total = 0

        def bump(_: int) -> None:
            nonlocal total
            total += 1

        _threads(bump, count)

    return target


@pytest.mark.parametrize("count", [2, 5])
def test_a_shared_cell_names_two_accesses_of_that_cell(count: int) -> None:
    finding = detect(shared_cell_from_n_threads(count))
    assert {a.target for a in finding.accesses} == {"total"}
    assert all("total" in a.line for a in finding.accesses)
    assert len({a.actor for a in finding.accesses}) == 2


def test_replaying_a_flow_finding_reproduces_it() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(_account("withdraw_checked_outside"), detect=True, schedules=20)
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(_account("withdraw_checked_outside"), info.value.schedule, detect=True)
    assert again.value.kind == info.value.kind


# -- 2. stale hand-off decisions in asyncio locking libraries ----------------------------

import handoff_models  # noqa: E402


@pytest.mark.parametrize(
    ("target", "state"),
    [(handoff_models.fifo_buggy, "self._waiters"), (handoff_models.rw_buggy, "self._w_state")],
    ids=["anyio-lock-waiter-left-queued", "rwlock-two-writers"],
)
def test_stale_hand_off_is_flagged_without_assertions(target: Any, state: str) -> None:
    finding = detect(target, schedules=200)
    decided, meanwhile, acted = finding.accesses
    assert {a.target for a in finding.accesses} == {state}, finding
    if finding.pattern == "stale check":
        # the woken writer's own check before it waited, a third task's write, its act
        # (found in a schedule where the waker's decision was not the one acted on)
        assert decided.actor == acted.actor != meanwhile.actor, finding
        assert "self._w_state += 1" in acted.line
        return
    assert finding.pattern == "stale hand-off", finding
    assert len({decided.actor, meanwhile.actor, acted.actor}) == 3
    assert (
        "release" in decided.line
        or "_wake_up" in decided.line
        or "for " in decided.line
        or ("if " in decided.line)
    )


@pytest.mark.parametrize(
    "target",
    [handoff_models.fifo_fixed, handoff_models.rw_fixed, handoff_models.fifo_no_give_up],
    ids=["anyio-lock-4.14", "rwlock-hand-off-carries-state", "walk-wakes-the-head"],
)
def test_fixed_hand_offs_are_clean(target: Any) -> None:
    clean(target, schedules=200)


# -- 5. fixed releases: limits 5.3.0's moving window ------------------------------------


class Windows:
    """limits 5.3.0's async memory storage: a sweep over a snapshot of the keys, each
    key handled under its own lock, re-checked before it is written."""

    def __init__(self) -> None:
        self.events: dict[str, list[int]] = {}
        self.locks: collections.defaultdict[str, asyncio.Lock] = collections.defaultdict(
            asyncio.Lock
        )

    async def expire(self) -> None:
        for key in list(self.events.keys()):
            async with self.locks[key]:
                await asyncio.sleep(0)
                if self.events.get(key, []):
                    self.events[key] = self.events[key][:1]

    async def hit(self, key: str) -> None:
        await asyncio.sleep(0)
        async with self.locks[key]:
            self.events.setdefault(key, [])
            self.events[key][:0] = [1]


def test_a_keyed_store_after_a_sweep_over_the_keys_is_not_a_lost_update() -> None:
    async def target() -> None:
        windows = Windows()
        windows.events["a"] = [0, 0]
        await asyncio.gather(windows.expire(), windows.hit("b"), windows.hit("a"))

    clean(target, schedules=60)


class Drain:
    def __init__(self) -> None:
        self.items: list[int] = [1]
        self.done: list[int] = []

    async def flush(self) -> None:
        batch = list(self.items)
        await asyncio.sleep(0)
        self.done.extend(batch)
        self.items.clear()  # drops whatever was added during the await

    async def add(self) -> None:
        self.items.append(2)


def test_a_snapshot_then_clear_is_still_a_lost_update() -> None:
    async def target() -> None:
        drain = Drain()
        await asyncio.gather(drain.flush(), drain.add())

    finding = detect(target)
    assert finding.pattern == "lost update", finding
    assert "list(self.items)" in finding.accesses[0].line
    assert ".clear()" in finding.accesses[-1].line


# -- a locked counter bumped in a loop ----------------------------------------------------


def locked_counter_in_a_loop() -> None:
    lock = threading.Lock()
    state = {"n": 0}

    def one() -> None:
        for _ in range(5):
            with lock:
                state["n"] += 1  # preempted between its read and its write, lock held

    threads = [threading.Thread(target=one) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_a_locked_read_modify_write_in_a_loop_is_clean() -> None:
    # Another thread running (without touching the counter) between the read and the
    # write of one `+=` does not make it "overwritten before read"
    clean(locked_counter_in_a_loop, schedules=60)


def own_write_overwritten_then_read_back() -> None:
    lock = threading.Lock()
    box = {"owner": ""}
    seen: list[str] = []

    def one(name: str) -> None:
        with lock:
            box["owner"] = name
        with lock:
            seen.append(box["owner"])  # may be the other thread's name

    threads = [threading.Thread(target=one, args=(n,)) for n in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_own_write_overwritten_then_read_back_is_still_reported() -> None:
    finding = detect(own_write_overwritten_then_read_back)
    assert finding.pattern == "overwritten before read", finding
