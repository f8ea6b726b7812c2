"""The threads backend's gates: eventfds on Linux, raw locks elsewhere.

A gate is where an actor's thread sleeps while another holds the baton
(racecheck.backends.threads.gate). These tests run real threads: the
descriptors an exploration opens are given back, a gate opened twice is open
once and a drained gate is closed, and the lock gates (other platforms, or no
descriptor left) explore exactly as the eventfd gates do.
"""

from __future__ import annotations

import os
import threading

import pytest

import racecheck
from racecheck.backends.threads import gate as gate_module
from racecheck.backends.threads.gate import Gate
from racecheck.backends.threads.runtime import ThreadRuntime
from racecheck.bench.workloads import two_threads
from racecheck.engine import Controller
from racecheck.strategies.hypothesis import NaturalOrder


class _Counter:
    def __init__(self) -> None:
        self.value = 0


def _lost_update() -> None:
    counter = _Counter()

    def bump() -> None:
        current = counter.value
        counter.value = current + 1

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter.value == 2


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_an_exploration_gives_its_descriptors_back() -> None:
    racecheck.check(two_threads, strategy="pct", schedules=3, seed=0)  # imports, caches
    before = _open_descriptors()
    racecheck.check(two_threads, strategy="pct", schedules=5, seed=1, saturation=0)
    with pytest.raises(racecheck.RaceFound):  # an aborted run and a shrink, too
        racecheck.check(_lost_update, strategy="random", schedules=200, seed=0)
    assert _open_descriptors() == before


def _waiter(gate: Gate, woke: list[bool]) -> threading.Thread:
    thread = threading.Thread(target=lambda: (gate.wait(), woke.append(True)))
    thread.start()
    return thread


@pytest.mark.parametrize("kind", ["eventfd", "lock"])
def test_opened_twice_is_open_once_and_drain_closes(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if kind == "lock":
        monkeypatch.setattr(gate_module, "_eventfd", None)
    elif gate_module._eventfd is None:
        pytest.skip("no os.eventfd here")
    gate = Gate()
    try:
        gate.open()
        try:
            gate.force_open()  # an aborted run opens every parked actor's gate, some twice
        except RuntimeError:  # the lock says so; the callers that may do it catch it
            assert kind == "lock"
        gate.wait()
        gate.drain()  # nothing pending: returns at once
        gate.force_open()  # an abort's open that its owner never took
        assert gate.is_open()
        gate.drain()  # gone: the next waiter sleeps
        assert not gate.is_open(), "a drained gate would let its waiter through"
        woke: list[bool] = []
        thread = _waiter(gate, woke)
        gate.open()
        thread.join(5)
        assert woke == [True]
    finally:
        gate.close()


def test_a_closed_gate_opens_nothing() -> None:
    gate = Gate()
    gate.close()
    gate.open()  # a late abort of a run that is long over: harmless
    gate.wait()
    gate.close()


def test_lock_gates_explore_the_same_schedules(monkeypatch: pytest.MonkeyPatch) -> None:
    found = []
    for eventfd in (gate_module._eventfd, None):
        monkeypatch.setattr(gate_module, "_eventfd", eventfd)
        with pytest.raises(racecheck.RaceFound) as race:
            racecheck.check(_lost_update, strategy="random", schedules=200, seed=3)
        found.append((race.value.schedule, race.value.schedules_run))
        result = racecheck.check(two_threads, strategy="pct", schedules=20, seed=1)
        assert result.schedules_run == 20
    assert found[0] == found[1]


@pytest.mark.parametrize("kind", ["eventfd", "lock"])
def test_an_aborted_run_opens_each_gate_once(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several threads of an aborted run wake the others (the one that ended it,
    each actor as it unwinds, the root's clean-up in backend._reap). An actor
    already woken and unwinding must not be opened again: nothing in the run
    would take that open, and its worker, parked again for the next run, took
    it for the start of its next job (DPOR's daemon_worker_fixed raised
    NondeterminismError, 1 in 10-20 explorations on 3.11)."""
    if kind == "lock":
        monkeypatch.setattr(gate_module, "_eventfd", None)
    runtime = ThreadRuntime(Controller(NaturalOrder(), 100))
    root = runtime.adopt_root("main", Gate())
    daemon = runtime.new_actor("daemon", None, True, Gate())
    try:
        runtime.root_finished = True
        assert runtime.exit(root) is None  # only a daemon left: the run ends, it unwinds
        assert daemon.gate.is_open()
        daemon.gate.wait()  # its thread wakes and unwinds...
        runtime.abort_all()  # ...while the root cleans up
        runtime.exit(daemon)
        assert not daemon.gate.is_open(), "an open outlived the run"
    finally:
        root.gate.close()
        daemon.gate.close()
