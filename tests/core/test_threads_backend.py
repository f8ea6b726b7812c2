"""The threads backend with real threads: points, primitives, failures, hygiene."""

from __future__ import annotations

import asyncio
import queue
import socket
import sys
import threading
import time

import pytest

import racecheck

ORIGINALS = {
    "Lock": threading.Lock,
    "RLock": threading.RLock,
    "Condition": threading.Condition,
    "Event": threading.Event,
    "start": threading.Thread.start,
    "join": threading.Thread.join,
    "sleep": time.sleep,
    "SimpleQueue": queue.SimpleQueue,
    "new_event_loop": asyncio.new_event_loop,
}
IMPORT_TIME_LOCK = threading.Lock()  # real: created before racecheck patches anything


def assert_pristine() -> None:
    assert threading.Lock is ORIGINALS["Lock"]
    assert threading.RLock is ORIGINALS["RLock"]
    assert threading.Condition is ORIGINALS["Condition"]
    assert threading.Event is ORIGINALS["Event"]
    assert threading.Thread.start is ORIGINALS["start"]
    assert threading.Thread.join is ORIGINALS["join"]
    assert time.sleep is ORIGINALS["sleep"]
    assert queue.SimpleQueue is ORIGINALS["SimpleQueue"]
    assert asyncio.new_event_loop is ORIGINALS["new_event_loop"]
    if sys.version_info >= (3, 12):
        assert sys.monitoring.get_tool(3) is None
        assert sys.monitoring.get_tool(4) is None


class Counter:
    def __init__(self) -> None:
        self.value = 0

    def increment(self) -> None:
        self.value += 1


def run_threads(*targets: object) -> None:
    threads = [threading.Thread(target=t) for t in targets]  # type: ignore[arg-type]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def lost_increment() -> None:
    counter = Counter()
    run_threads(counter.increment, counter.increment)
    assert counter.value == 2, counter.value


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_default_granularity_finds_a_lost_plus_equals(seed: int) -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(lost_increment, strategy="pct", schedules=2000, seed=seed)
    assert info.value.kind == "exception"
    with pytest.raises(racecheck.RaceFound) as again:
        racecheck.replay(lost_increment, info.value.schedule)
    assert again.value.kind == "exception"
    assert_pristine()


def test_line_granularity_cannot_split_one_line_but_opcode_can() -> None:
    report = racecheck.check(lost_increment, schedules=300, granularity="line")
    # `self.value += 1` is one line: atomic at that grain (auto's DPOR member may prove it)
    assert report.schedules_run == 300 or report.verified, report
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(lost_increment, schedules=2000, granularity="opcode")


def test_the_trace_shows_threads_lines_and_the_write() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(lost_increment, schedules=2000)
    text = str(info.value)
    assert "Thread-2 (increment)" in text and "Thread-3 (increment)" in text
    assert "self.value += 1" in text
    assert "write .value" in text
    assert "assert counter.value == 2" in text


def all_primitives_used_correctly() -> None:
    lock, rlock = threading.Lock(), threading.RLock()
    condition = threading.Condition()
    semaphore = threading.BoundedSemaphore(2)
    event = threading.Event()
    barrier = threading.Barrier(2)
    jobs: queue.Queue[int] = queue.Queue(maxsize=1)
    simple: queue.SimpleQueue[str] = queue.SimpleQueue()
    results: list[int] = []
    state = {"ready": False, "total": 0}

    def producer() -> None:
        for i in range(3):
            jobs.put(i)
        jobs.put(-1)
        with condition:
            state["ready"] = True
            condition.notify_all()
        barrier.wait()
        event.set()

    def consumer() -> None:
        while (item := jobs.get()) != -1:
            with rlock, rlock:
                results.append(item)
        with condition:
            while not state["ready"]:
                condition.wait()
        barrier.wait()
        event.wait()
        simple.put("done")

    def adder() -> None:
        with semaphore:
            time.sleep(0.5)
            with lock:
                state["total"] += 1

    threads = [threading.Thread(target=f) for f in (producer, consumer, adder, adder)]
    for thread in threads:
        thread.start()
    assert simple.get(timeout=60) == "done"
    for thread in threads:
        thread.join()
        assert not thread.is_alive()
    assert results == [0, 1, 2]
    assert state["total"] == 2
    assert not lock.locked()


@pytest.mark.parametrize("strategy", ["pct", "random"])
def test_controlled_primitives_behave_like_the_real_ones(strategy: str) -> None:
    report = racecheck.check(all_primitives_used_correctly, strategy=strategy, schedules=300)
    assert report.schedules_run == 300
    all_primitives_used_correctly()  # and the same code runs unpatched afterwards
    assert_pristine()


def test_exhaustive_completes_a_small_space() -> None:
    def guarded() -> None:
        counter, lock = Counter(), threading.Lock()

        def work() -> None:
            with lock:
                counter.increment()

        run_threads(work, work)
        assert counter.value == 2

    report = racecheck.check(guarded, strategy="exhaustive", schedules=20_000, preemption_bound=1)
    assert report.exhausted is True


def test_deadlock_reports_the_wait_for_graph() -> None:
    def abba() -> None:
        a, b = threading.Lock(), threading.Lock()

        def one() -> None:
            with a, b:
                pass

        def two() -> None:
            with b, a:
                pass

        run_threads(one, two)

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(abba, schedules=500)
    detail = info.value.detail
    assert info.value.kind == "deadlock"
    assert "held by Thread-" in detail
    assert "with a, b:" in detail and "with b, a:" in detail
    assert_pristine()


def test_an_exception_in_any_thread_fails_the_run() -> None:
    def worker_raises() -> None:
        def boom() -> None:
            raise KeyError("from a worker")

        run_threads(boom)

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(worker_raises, schedules=5)
    assert isinstance(info.value.cause, KeyError)
    assert "Thread-2 (boom)" in str(info.value)


def test_sleep_is_virtual_and_timeouts_fire() -> None:
    def sleepy() -> None:
        event = threading.Event()
        start = time.monotonic()
        time.sleep(3600)
        assert event.wait(timeout=1800) is False
        lock = threading.Lock()
        lock.acquire()
        assert lock.acquire(timeout=60) is False
        assert time.monotonic() - start < 600  # hang guard: real sleeps take over an hour

    started = time.perf_counter()
    racecheck.check(sleepy, schedules=10)
    assert time.perf_counter() - started < 600  # hang guard, not a speed check


def test_spin_loops_hit_the_step_limit() -> None:
    def spinner() -> None:
        flag = {"go": False}

        def wait_for_flag() -> None:
            while not flag["go"]:
                pass

        run_threads(wait_for_flag)

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(spinner, schedules=2, max_steps=2000)
    assert info.value.kind == "step-limit"
    assert_pristine()


def test_a_blocked_daemon_thread_does_not_fail_the_run() -> None:
    def leaves_a_daemon() -> None:
        jobs: queue.Queue[int] = queue.Queue()
        worker = threading.Thread(target=jobs.get, daemon=True)
        worker.start()

    # random: every one of the 20 schedules runs (auto's DPOR member ends after one)
    assert racecheck.check(leaves_a_daemon, strategy="random", schedules=20).schedules_run == 20


def test_a_real_lock_from_import_time_is_scheduled_not_hung() -> None:
    """Made at import, before racecheck patched anything: adopted for the run."""

    def holds_real_lock() -> None:
        def holder() -> None:
            with IMPORT_TIME_LOCK:
                time.sleep(1)

        def contender() -> None:
            with IMPORT_TIME_LOCK:
                pass

        run_threads(holder, contender)

    report = racecheck.check(holds_real_lock, schedules=50, watchdog=5)
    assert report.schedules_run == 50
    assert_pristine()
    assert type(IMPORT_TIME_LOCK) is type(threading.Lock())
    assert not IMPORT_TIME_LOCK.locked()


#: a lock racecheck cannot reach: a frozenset is not rewritten (a tuple now is copied)
UNREACHABLE = frozenset([threading.Lock()])


def test_a_lock_racecheck_cannot_reach_is_reported_not_hung() -> None:
    def holds_hidden_lock() -> None:
        def holder() -> None:
            hidden = next(iter(UNREACHABLE))
            with hidden:
                time.sleep(1)

        def contender() -> None:
            hidden = next(iter(UNREACHABLE))
            with hidden:
                pass

        run_threads(holder, contender)

    started = time.perf_counter()
    with pytest.raises(racecheck.StuckError) as stuck:
        racecheck.check(holds_hidden_lock, schedules=50, watchdog=1.5)
    assert time.perf_counter() - started < 600  # hang guard: it must not wait forever
    message = str(stuck.value)
    assert "blocked in C" in message
    assert "contender" in message  # the user's blocked thread, not racecheck's workers
    assert "`hidden`" in message  # the object, by the name the code gives it
    assert "racecheck-" not in message
    assert_pristine()
    hidden = next(iter(UNREACHABLE))
    assert not hidden.locked() or hidden.acquire(timeout=5)


def test_a_thread_waiting_on_a_socket_is_reported_as_io_with_stress_mode_named() -> None:
    def talk_over_a_socket() -> None:
        ours, theirs = socket.socketpair()
        got: list[bytes] = []

        def reader() -> None:
            got.append(theirs.recv(10))

        def writer() -> None:
            ours.sendall(b"hi")

        try:
            run_threads(reader, writer)
        finally:
            ours.close()
            theirs.close()

    with pytest.raises(racecheck.StuckError) as stuck:
        racecheck.check(talk_over_a_socket, schedules=5, watchdog=1.5)
    message = str(stuck.value)
    assert "reader" in message and "`theirs`" in message, message
    assert "socket" in message and "racecheck stress" in message, message
    assert "every lock" not in message, message  # nothing here is a lock: no advice on locks
    assert_pristine()


def test_threads_and_an_event_loop_share_one_schedule() -> None:
    def loop_in_a_thread() -> None:
        loop = asyncio.new_event_loop()
        runner = threading.Thread(target=loop.run_forever)
        runner.start()
        seen: list[str] = []

        async def note(text: str) -> str:
            await asyncio.sleep(0)
            seen.append(text)
            return text

        futures = [asyncio.run_coroutine_threadsafe(note(t), loop) for t in "abc"]
        assert [f.result(timeout=60) for f in futures] == ["a", "b", "c"]
        loop.call_soon_threadsafe(loop.stop)
        runner.join()
        loop.close()
        assert sorted(seen) == ["a", "b", "c"]

    report = racecheck.check(loop_in_a_thread, schedules=200)
    assert report.distinct_schedules > 20
    assert_pristine()


def test_coroutine_returned_by_a_sync_target_is_a_usage_error() -> None:
    async def job() -> None:
        pass

    with pytest.raises(racecheck.UsageError, match="awaitable"):
        racecheck.check(lambda: job(), schedules=1)
    assert_pristine()


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11 chains sys.settrace")
def test_an_existing_tracer_is_chained_not_clobbered() -> None:
    seen: list[str] = []

    def tracer(frame: object, event: str, arg: object) -> object:
        code = getattr(frame, "f_code", None)
        if code is not None and code.co_name == "increment":
            seen.append(event)
        return tracer

    sys.settrace(tracer)
    try:
        with pytest.raises(racecheck.RaceFound):
            racecheck.check(lost_increment, schedules=2000)
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(None)
    assert "call" in seen


def test_plain_call_soon_from_another_thread_does_not_wake_an_idle_loop() -> None:
    """Only call_soon_threadsafe writes the self-pipe; an idle loop misses the rest."""

    async def work() -> int:
        return 42

    def off_loop_create_task() -> None:
        loop = asyncio.new_event_loop()
        loop_thread = threading.Thread(target=loop.run_forever, name="event-loop")
        loop_thread.start()
        results: queue.Queue[int] = queue.Queue()

        def worker() -> None:
            task = loop.create_task(work())  # not thread-safe
            task.add_done_callback(lambda t: results.put(t.result()))

        creator = threading.Thread(target=worker)
        creator.start()
        creator.join()
        try:
            results.get(timeout=1.0)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            loop_thread.join()
            loop.close()

    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(off_loop_create_task, schedules=500)
    assert isinstance(info.value.cause, queue.Empty)
