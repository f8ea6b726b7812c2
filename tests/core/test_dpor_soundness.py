"""DPOR must reach every final state plain runs reach: fixed regressions of misses.

Each program here once made DPOR call itself verified while plain random runs
reached a final state it never did (found by the slow hypothesis differential
tests in test_dpor_random.py). They run as fixed, fast tests so the miss
cannot come back unnoticed.

``try then lock``: each of two threads first tries the lock without blocking
and, if it got it, writes ``x``; then it takes the lock blocking and writes
``x`` again. The missed order: A holds the lock from its try, B's try fails and
B blocks on its second acquire, A releases (waking B), A goes on and takes
the lock again first (B is disabled again), ... but B could instead have
taken the lock right after A's release, leaving A's lock block last. DPOR
reversed no race that leads there: B's retry races with A's second acquire,
yet A's later release, which woke B again, sat between them in
happens-before, and B (disabled at that release) could not be moved before
it. See DPORChooser._reverse_disabled.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence

import pytest
import test_dpor_random as differential

import racecheck
from racecheck.strategies.dpor import DPORChooser

#: (x at the end, each thread's result)
Outcome = tuple[int, tuple[int, ...]]


def _try_then_lock(x: dict[str, int], lock: threading.Lock) -> int:
    acc = 0
    if lock.acquire(blocking=False):
        try:
            x["x"] = acc
            x["x"] = acc + 2
        finally:
            lock.release()
    else:
        acc += 100  # the failed attempt is in the result: it saw the lock taken
    with lock:
        x["x"] = acc
        x["x"] = acc + 2
    return acc


def _writer_then_next(x: dict[str, int], counter: itertools.count[int]) -> int:
    x["x"] = 0
    return next(counter)


def make_target(
    actors: Sequence[str], seen: set[Outcome], forbidden: Outcome | None = None
) -> Callable[[], None]:
    """``actors``: "try" (try then lock) or "next" (a write, then next() on a shared counter)."""

    def target() -> None:
        x = {"x": 0}
        lock = threading.Lock()
        counter = itertools.count(1)
        results = [0] * len(actors)

        def run(me: int, kind: str) -> None:
            if kind == "try":
                results[me] = _try_then_lock(x, lock)
            else:
                results[me] = _writer_then_next(x, counter)

        workers = [threading.Thread(target=run, args=(i, kind)) for i, kind in enumerate(actors)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        outcome = (x["x"], tuple(results))
        seen.add(outcome)
        assert outcome != forbidden, f"reached {outcome}"

    return target


def sampled_states(actors: Sequence[str]) -> set[Outcome]:
    sampled: set[Outcome] = set()
    for strategy in ("random", "pct"):
        racecheck.check(make_target(actors, sampled), strategy=strategy, schedules=300, seed=7)
    return sampled


#: the missed final states: x written last by the thread whose try succeeded
MISSED: dict[tuple[str, ...], list[Outcome]] = {
    ("try", "try"): [(2, (0, 100)), (2, (100, 0))],
    ("try", "next", "try"): [(2, (0, 1, 100)), (2, (100, 1, 0))],
}


@pytest.mark.parametrize("actors", list(MISSED), ids=["-".join(a) for a in MISSED])
def test_dpor_reaches_every_state_random_runs_reach_with_try_then_lock(
    actors: tuple[str, ...],
) -> None:
    sampled = sampled_states(actors)
    # the reference itself must show the orders DPOR once missed
    assert set(MISSED[actors]) <= sampled
    reached: set[Outcome] = set()
    report = racecheck.check(make_target(actors, reached), strategy="dpor", schedules=20_000)
    assert report.verified, report.notes
    assert sampled - reached == set()


@pytest.mark.parametrize("actors", list(MISSED), ids=["-".join(a) for a in MISSED])
def test_dpor_fails_a_target_that_forbids_the_once_missed_state(actors: tuple[str, ...]) -> None:
    forbidden = MISSED[actors][0]
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(
            make_target(actors, set(), forbidden),
            strategy="dpor",
            schedules=20_000,
            minimize=False,
        )


# -- the same, in test_dpor_random's program language (its threads interpreter) -------------

_W0 = ("w", "x", 0)
_W2 = ("w", "x", 2)
_TRY_THEN_LOCK = (("try", (_W0, _W2)), ("lock", (_W0, _W2)))

#: program -> a final state DPOR once missed that plain runs reach
PROGRAMS: dict[str, tuple[differential.Program, differential.Outcome]] = {
    # as the slow hypothesis test reported it
    "reported": (
        differential.Program(1, (_TRY_THEN_LOCK, (_W0, ("next",)), _TRY_THEN_LOCK)),
        ((2,), (0, 1, 100)),
    ),
    # found by random programs over the same operations
    "lock-next/try/try-lock": (
        differential.Program(
            1,
            (
                (("lock", (_W0,)), ("next",)),
                (("try", (_W0, _W2)),),
                (("try", (_W2,)), ("lock", (_W2,))),
            ),
        ),
        ((2,), (1, 0, 100)),
    ),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_dpor_reaches_every_sampled_state_of_once_missed_programs(name: str) -> None:
    program, missed = PROGRAMS[name]
    sampled: set[differential.Outcome] = set()
    for seed in (7, 14):
        for strategy in ("random", "pct"):
            racecheck.check(
                differential.make_target(program, "threads", sampled),
                strategy=strategy,
                schedules=300,
                seed=seed,
            )
    assert missed in sampled
    reached: set[differential.Outcome] = set()
    report = racecheck.check(
        differential.make_target(program, "threads", reached), strategy="dpor", schedules=20_000
    )
    assert report.verified, report.notes
    assert sampled - reached == set()


# -- a run that ends while another actor could still run -----------------------------------


class _Box:
    def __init__(self) -> None:
        self.x = 0


def daemon_writes_before_main_ends() -> None:
    """A daemon thread that main never waits for: main's end races its first step.

    In the natural order main keeps running and returns before the daemon
    ever ran, so no step of the daemon is recorded and no race of the run
    names it: the order where it ran first was never tried (random runs
    find it in a few schedules).
    """
    box = _Box()

    def write() -> None:
        box.x = 1

    threading.Thread(target=write, daemon=True).start()
    assert box.x == 0, "the daemon wrote first"


def test_dpor_tries_an_actor_that_could_still_run_when_the_program_ended() -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(daemon_writes_before_main_ends, strategy="dpor", schedules=50)
    assert "the daemon wrote first" in str(found.value.cause)


# -- a step that moved the virtual clock because nobody could run ----------------------------


def _last_writer_while_one_sleeps(seen: set[int]) -> Callable[[], None]:
    """One thread writes ``x`` and sleeps; another writes ``x`` and ends: who wrote last?

    In the natural order the second thread's last step writes ``x``, ends,
    and leaves nobody to run, so the same step moves the virtual clock
    (``accesses.IDLE_CLOCK``) and wakes the sleeper. That move follows the
    sleeper's steps (run before them, nobody would have been idle), but the
    write before it could have run before the sleeper's write all the same.
    """

    def target() -> None:
        box = {"x": 0}

        def sleeper() -> None:
            box["x"] = 1
            time.sleep(0.01)

        def writer() -> None:
            box["x"] = 2

        threads = [threading.Thread(target=sleeper), threading.Thread(target=writer)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seen.add(box["x"])

    return target


def test_dpor_reverses_a_write_made_before_the_clock_moved_in_the_same_step() -> None:
    """Once missed (x = 1, the writer first) and verified with one trace: the orders of
    an idle clock move, applied to the whole step that made it (strategies.dpor,
    _before_idle_move). The same hole lost semaphore_oversubscribed (test_dpor.py).
    """
    sampled: set[int] = set()
    racecheck.check(_last_writer_while_one_sleeps(sampled), strategy="random", schedules=40)
    assert sampled == {1, 2}
    reached: set[int] = set()
    report = racecheck.check(_last_writer_while_one_sleeps(reached), strategy="dpor", schedules=50)
    assert report.verified, report.notes
    assert reached == {1, 2}


def _two_workers_two_sections(seen: set[tuple[tuple[str, int], ...]]) -> Callable[[], None]:
    def target() -> None:
        lock = threading.Lock()
        log: list[tuple[str, int]] = []

        def worker(name: str) -> None:
            for k in range(2):
                with lock:
                    log.append((name, k))

        workers = [threading.Thread(target=worker, args=(name,)) for name in "ab"]
        for worker_thread in workers:
            worker_thread.start()
        for worker_thread in workers:
            worker_thread.join()
        seen.add(tuple(log))

    return target


def test_runs_blocked_by_sleep_sets_lose_no_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Source-DPOR with sleep sets may reach a state where every enabled actor sleeps
    (its continuations were explored in a sibling branch); the run is not analysed past
    it. Two threads with two critical sections each end that way in 10 of their runs,
    and the search still reaches all 6 orders of the four sections (probes, which run
    off the search, are turned off so that only the search's own runs count)."""
    monkeypatch.setattr(DPORChooser, "probes", False)
    seen: set[tuple[tuple[str, int], ...]] = set()
    report = racecheck.check(
        _two_workers_two_sections(seen), strategy="dpor", schedules=500, leak_check=False
    )
    assert report.verified, report.notes
    assert any("ended in a state whose continuations were all explored" in n for n in report.notes)
    orders = {
        tuple(order)
        for order in itertools.permutations([("a", 0), ("a", 1), ("b", 0), ("b", 1)])
        if order.index(("a", 0)) < order.index(("a", 1))
        and order.index(("b", 0)) < order.index(("b", 1))
    }
    assert seen == orders
