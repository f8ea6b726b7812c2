"""DPOR on ``concurrent.futures.Future`` (threads): a future's method is one operation on it.

Each method of a ``concurrent.futures.Future`` takes the future's condition
(an ``RLock``), and ``set_result`` notifies it: several scheduling points.
Recorded as lock and condition operations, any two critical sections of one
future were ordered, also two reads (``done()`` and ``done()``), and a
release raced the next acquire: the bridge scenario
(``scenarios/cleveragents_7105_bridge.py``) spent most of its DPOR runs
there. Recorded as what the method does to the future (its state, its done
callbacks), only methods that really conflict are ordered, and a
``result()`` that finds the future done follows the set that finished it
without racing it (run first, it would have waited for that set).

Trace counts of tiny programs are counted by hand; the partners keep apart
the orders that matter (``done()`` before or after the set, which thread
runs a done callback, a second ``set_result`` that raises); and DPOR must
reach every state random and PCT reach on random future programs.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import racecheck


def _traces(report: racecheck.Report) -> int:
    (note,) = [n for n in report.notes if n.startswith("verified: all ")]
    return int(note.split()[2])


def _start_all(*bodies: Callable[[], object]) -> None:
    """Start the threads and return: the main thread adds no conflicts of its own."""
    for body in bodies:
        threading.Thread(target=body).start()


# -- what commutes ----------------------------------------------------------------------


def two_readers() -> None:
    """Two threads ask a pending future whether it is done: the reads commute, 1 trace."""
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    _start_all(future.done, future.done)


def result_after_set() -> None:
    """One thread sets, another waits for the result: one outcome, 1 trace.

    Whether ``result()`` finds the future done or waits for the set, it
    returns the same value after the same set.
    """
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    got: list[int] = []
    _start_all(lambda: future.set_result(1), lambda: got.append(future.result()))


def two_results_after_set() -> None:
    """Two threads wait for the result of a third's set: 1 trace."""
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    _start_all(lambda: future.set_result(1), future.result, future.result)


# -- what must stay apart ---------------------------------------------------------------


def done_and_set() -> None:
    """``done()`` before or after the set: 2 traces."""
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    _start_all(lambda: future.set_result(1), future.done)


def callback_and_set() -> None:
    """Who runs the done callback: the setter (added first) or the adder (set first), 2."""
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    _start_all(lambda: future.set_result(1), lambda: future.add_done_callback(id))


@pytest.mark.parametrize(
    ("program", "traces"),
    [
        (two_readers, 1),
        (result_after_set, 1),
        (two_results_after_set, 1),
        (done_and_set, 2),
        (callback_and_set, 2),
    ],
    ids=lambda p: getattr(p, "__name__", str(p)),
)
def test_future_methods_count_as_one_operation_each(program: Any, traces: int) -> None:
    report = racecheck.check(program, strategy="dpor", schedules=500)
    assert report.verified, report.notes
    assert _traces(report) == traces, report.notes


def callback_runs_on_the_adder() -> None:
    """The done callback runs on the thread that added it when the set came first."""
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    ran_on: list[str] = []

    def add() -> None:
        future.add_done_callback(lambda _: ran_on.append(threading.current_thread().name))

    setter = threading.Thread(target=lambda: future.set_result(1), name="setter")
    adder = threading.Thread(target=add, name="adder")
    setter.start()
    adder.start()
    setter.join()
    adder.join()
    assert ran_on == ["setter"], f"the callback ran on {ran_on}"


def second_set_raises() -> None:
    """Two setters: whichever comes second raises InvalidStateError; both orders matter."""
    future: concurrent.futures.Future[str] = concurrent.futures.Future()
    raised: list[str] = []

    def set_it(name: str) -> None:
        try:
            future.set_result(name)
        except concurrent.futures.InvalidStateError:
            raised.append(name)

    first = threading.Thread(target=set_it, args=("first",))
    second = threading.Thread(target=set_it, args=("second",))
    first.start()
    second.start()
    first.join()
    second.join()
    assert raised != ["first"], "the first thread's set raised"


def cancel_or_run() -> None:
    """A cancel against the worker's set_running_or_notify_cancel: the cancel may win."""
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    outcome: list[str] = []

    def work() -> None:
        if future.set_running_or_notify_cancel():
            future.set_result(1)
            outcome.append("ran")
        else:
            outcome.append("cancelled")

    worker = threading.Thread(target=work)
    worker.start()
    future.cancel()
    worker.join()
    assert outcome == ["ran"], outcome


@pytest.mark.parametrize(
    "program",
    [callback_runs_on_the_adder, second_set_raises, cancel_or_run],
    ids=lambda p: p.__name__,
)
def test_orders_of_a_future_that_matter_are_explored(program: Callable[[], None]) -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(program, strategy="dpor", schedules=500, minimize=False)
    assert found.value.kind == "exception"


# -- DPOR against sampling on random future programs (hypothesis) ----------------------

#: ("set", k) set_result(k) (InvalidStateError counts); ("cancel",) cancel();
#: ("run",) set_running_or_notify_cancel() (RuntimeError counts); ("done",) done();
#: ("cancelled",) cancelled(); ("result",) result() (waits; CancelledError counts);
#: ("poll",) result(timeout=1) (virtual time; TimeoutError counts);
#: ("callback",) add_done_callback: the callback writes which thread ran it;
#: ("w", k) the shared variable read and written
FutureOp = tuple[Any, ...]


def _future_op() -> st.SearchStrategy[FutureOp]:
    return st.one_of(
        st.tuples(st.just("set"), st.integers(1, 3)),
        st.just(("cancel",)),
        st.just(("run",)),
        st.just(("done",)),
        st.just(("cancelled",)),
        st.just(("result",)),
        st.just(("poll",)),
        st.just(("callback",)),
        st.tuples(st.just("w"), st.integers(1, 3)),
    )


@st.composite
def future_programs(draw: Any, actors: int = 2, ops: int = 3) -> tuple[tuple[FutureOp, ...], ...]:
    count = draw(st.integers(2, actors))
    return tuple(
        tuple(draw(st.lists(_future_op(), min_size=1, max_size=ops))) for _ in range(count)
    )


def _note_runner(shared: list[int]) -> Callable[[object], None]:
    """A done callback that writes which thread ran it (the adder, or the one that set)."""

    def callback(_: object) -> None:
        shared[0] = 10 + int(threading.current_thread().name.removeprefix("op-"))

    return callback


def _run_future_ops(
    future: concurrent.futures.Future[int],
    shared: list[int],
    ops: Sequence[FutureOp],
    out: list[int],
    me: int,
) -> None:
    acc = 0
    for op in ops:
        acc *= 11
        name = op[0]
        try:
            if name == "set":
                future.set_result(op[1])
            elif name == "cancel":
                acc += 1 + future.cancel()
            elif name == "run":
                acc += 3 + future.set_running_or_notify_cancel()
            elif name == "done":
                acc += future.done()
            elif name == "cancelled":
                acc += 2 * future.cancelled()
            elif name == "result":
                acc += future.result()
            elif name == "poll":
                acc += future.result(timeout=1)
            elif name == "callback":
                future.add_done_callback(_note_runner(shared))
            else:
                acc += shared[0]
                shared[0] = op[1]
        except concurrent.futures.InvalidStateError:
            acc += 5
        except concurrent.futures.CancelledError:
            acc += 6
        except TimeoutError:
            acc += 7
        except RuntimeError:
            acc += 8
    out[me] = acc


FutureOutcome = tuple[tuple[int, ...], int, str]


def future_target(
    program: tuple[tuple[FutureOp, ...], ...],
    seen: set[FutureOutcome],
    forbidden: FutureOutcome | None = None,
) -> Callable[[], None]:
    def target() -> None:
        future: concurrent.futures.Future[int] = concurrent.futures.Future()
        shared = [0]
        accs = [0] * len(program)
        workers = [
            threading.Thread(
                target=_run_future_ops, args=(future, shared, ops, accs, i), name=f"op-{i}"
            )
            for i, ops in enumerate(program)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        final = (tuple(accs), shared[0], future._state)
        seen.add(final)
        assert final != forbidden, "reached the forbidden state"

    return target


def _check(target: Callable[[], None], strategy: str, schedules: int) -> Any:
    try:
        return racecheck.check(target, strategy=strategy, schedules=schedules, seed=7)
    except racecheck.RaceFound as found:
        return found


def reaches_every_sampled_state(
    program: Any,
    forbid: Callable[[list[FutureOutcome]], list[FutureOutcome]],
    fixed: bool = False,
) -> set[FutureOutcome]:
    """DPOR reaches every state sampling reaches, and fails a target forbidding ``forbid``'s."""
    sampled: set[FutureOutcome] = set()
    failed = False
    for strategy in ("random", "pct"):
        result = _check(future_target(program, sampled), strategy, 300)
        failed = failed or isinstance(result, racecheck.RaceFound)
    reduced: set[FutureOutcome] = set()
    dpor = _check(future_target(program, reduced), "dpor", 3000)
    if failed:
        # a deadlock (a result() nobody sets): DPOR must find one too
        assert isinstance(dpor, racecheck.RaceFound), (program, dpor)
        return sampled
    assert not isinstance(dpor, racecheck.RaceFound), (program, dpor)
    if fixed:
        assert dpor.exhausted, (program, dpor.notes)
    else:
        assume(dpor.exhausted)
    assert dpor.verified, dpor.notes
    assert sampled <= reduced, (program, sampled - reduced)
    for forbidden in forbid(sorted(sampled)):
        with pytest.raises(racecheck.RaceFound):
            racecheck.check(
                future_target(program, set(), forbidden),
                strategy="dpor",
                schedules=3000,
                minimize=False,
            )
    return sampled


#: one program per pair of methods where one reads what the other changes
_CONFLICTING_PAIRS = {
    "done_vs_set": ((("set", 1),), (("done",),)),
    "callback_vs_set": ((("set", 1), ("w", 2)), (("callback",), ("w", 3))),
    "cancel_vs_run": ((("run",), ("set", 2)), (("cancel",), ("cancelled",))),
    "set_vs_set": ((("set", 1),), (("set", 2), ("result",))),
    "done_then_result_vs_set": ((("set", 1),), (("done",), ("result",))),
}

_HEALTH = [HealthCheck.too_slow, HealthCheck.filter_too_much]


@pytest.mark.parametrize("program", list(_CONFLICTING_PAIRS.values()), ids=list(_CONFLICTING_PAIRS))
def test_dpor_reaches_every_sampled_state_of_conflicting_future_pairs(program: Any) -> None:
    """Each sampled state forbidden in turn: DPOR must reach it."""
    sampled = reaches_every_sampled_state(program, lambda states: states, fixed=True)
    assert len(sampled) >= 2, sampled  # the order of the pair shows in the outcome


@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=_HEALTH)
@given(program=future_programs(), data=st.data())
def test_dpor_reaches_every_sampled_state_of_future_programs(program: Any, data: Any) -> None:
    reaches_every_sampled_state(
        program, lambda states: [data.draw(st.sampled_from(states), label="forbidden")]
    )


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=_HEALTH)
@given(program=future_programs(actors=3), data=st.data())
def test_dpor_reaches_every_sampled_state_of_future_programs_more(program: Any, data: Any) -> None:
    """The CI case's property over more programs (three threads), not derandomized."""
    reaches_every_sampled_state(
        program, lambda states: [data.draw(st.sampled_from(states), label="forbidden")]
    )


def wait_sees_the_set() -> None:
    """``concurrent.futures.wait`` reads the state of each future under its lock itself
    (not through a method): main looks before or after the worker's set."""
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    worker = threading.Thread(target=lambda: future.set_result(1))
    worker.start()
    done, _ = concurrent.futures.wait([future], timeout=0)
    worker.join()
    assert future not in done, "the set came before the wait's look"


def test_a_future_read_by_the_module_functions_still_races_its_set() -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(wait_sees_the_set, strategy="dpor", schedules=200, minimize=False)
    assert "the set came before" in str(found.value.cause)


def peeks_at_the_state() -> None:
    """Traced code reading the future's private state races the set like ``done()``."""
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    worker = threading.Thread(target=lambda: future.set_result(1))
    worker.start()
    state = future._state
    worker.join()
    assert state == "PENDING", "the set came before the peek"


def test_traced_code_reading_a_futures_state_still_races_its_set() -> None:
    with pytest.raises(racecheck.RaceFound) as found:
        racecheck.check(peeks_at_the_state, strategy="dpor", schedules=200, minimize=False)
    assert "the set came before" in str(found.value.cause)
