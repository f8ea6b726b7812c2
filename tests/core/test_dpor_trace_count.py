"""DPOR's "verified: all N non-equivalent interleavings" counts traces, not runs.

Tiny thread programs whose number of Mazurkiewicz traces is known by hand.
Each thread only writes (or reads) one shared attribute, so a trace is fixed
by the order of the conflicting accesses and nothing else:

* n writers of one attribute: every order of the writes, n! traces;
* two readers and one writer: the write before or after each read, 2 x 2.

The main thread starts the threads and returns (it never joins them), so it
adds no conflicts of its own. Before, a run that the sleep sets (which
compare steps across runs by type of object) let through was counted as a
new trace though it repeated one: 3, 15 and 11.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import pytest

import racecheck


class Box:
    def __init__(self) -> None:
        self.value = 0


def _start_all(*bodies: Callable[[], None]) -> None:
    for body in bodies:
        threading.Thread(target=body).start()


def writers(n: int) -> Callable[[], None]:
    def program() -> None:
        shared = Box()

        def writer(i: int) -> Callable[[], None]:
            def work() -> None:
                shared.value = i

            return work

        _start_all(*(writer(i) for i in range(n)))

    program.__name__ = f"writers_{n}"
    return program


def two_readers_one_writer() -> None:
    shared = Box()
    seen = [Box(), Box()]

    def reader(i: int) -> Callable[[], None]:
        def work() -> None:
            seen[i].value = shared.value

        return work

    def writer() -> None:
        shared.value = 1

    _start_all(reader(0), reader(1), writer)


def _counted(report: racecheck.Report) -> int:
    (note,) = [n for n in report.notes if n.startswith("verified: all ")]
    return int(note.split()[2])


@pytest.mark.parametrize(
    ("program", "traces"),
    [(writers(2), 2), (writers(3), 6), (two_readers_one_writer, 4)],
    ids=["writers_2", "writers_3", "two_readers_one_writer"],
)
def test_verified_counts_each_trace_once(program: Callable[[], None], traces: int) -> None:
    report = racecheck.check(program, strategy="dpor", schedules=1000)
    assert report.verified, report.notes
    assert _counted(report) == traces, report.notes
    assert report.schedules_run >= traces


def _runs(note: str, what: str) -> int:
    found = re.search(rf"(\d+) runs? {what}", note)
    return int(found.group(1)) if found else 0


@pytest.mark.parametrize("program", [writers(3), two_readers_one_writer])
def test_every_run_is_a_trace_a_sleep_set_cut_or_a_named_repeat(
    program: Callable[[], None],
) -> None:
    report = racecheck.check(program, strategy="dpor", schedules=1000)
    (note,) = [n for n in report.notes if n.startswith("verified: all ")]
    cut = _runs(note, "ended in a state whose continuations were all explored")
    repeated = _runs(note, "repeated a trace already explored")
    probe = re.search(r"(\d+) probe runs? off the search", note)  # never analysed
    probes = int(probe.group(1)) if probe else 0
    assert _counted(report) + cut + repeated + probes == report.schedules_run, report.notes


# -- closure variables no other activation can reach yet ---------------------------------


def _private_closures_on_threads() -> None:
    """Each thread binds its own closure variable before any closure over it exists."""

    def work(items: list[int]) -> None:
        def double(x: int) -> int:
            return x * 2

        total = 0
        total = sum(double(i) for i in items)  # the genexpr closes over double, total is its own
        assert total >= 0

    _start_all(lambda: work([1, 2]), lambda: work([3]))


async def _private_closures_on_asyncio() -> None:
    """The executor's shape: each gathered coroutine defines a helper and gathers over it."""
    import asyncio

    async def deliver(messages: list[int]) -> None:
        async def deliver_one(message: int) -> None:
            await asyncio.sleep(0)

        await asyncio.gather(*(deliver_one(m) for m in messages))

    await asyncio.gather(deliver([1, 2]), deliver([3]))


async def _deliver_one(message: int) -> None:
    import asyncio

    await asyncio.sleep(0)


async def _no_closures_on_asyncio() -> None:
    """The same gathers with no closure variable at all: the count to match."""
    import asyncio

    async def deliver(messages: list[int]) -> None:
        await asyncio.gather(*map(_deliver_one, messages))

    await asyncio.gather(deliver([1, 2]), deliver([3]))


@pytest.mark.parametrize(
    ("program", "backend"),
    [(_private_closures_on_threads, "threads"), (_private_closures_on_asyncio, "asyncio")],
    ids=["threads", "asyncio"],
)
def test_a_closure_variable_bound_before_any_closure_exists_conflicts_with_nothing(
    program: Callable[[], object], backend: str
) -> None:
    """Feeding DPOR alone, every closure variable of one name is taken for one: two
    activations binding their own ``double`` conflicted, and the executor scenario's
    correct variant spent a quarter of its reversals on ``_deliver_for_edge_runner``.
    A store before the code makes any closure over the cell is private to its activation."""
    report = racecheck.check(program, strategy="dpor", backend=backend, schedules=1000)
    assert report.verified, report.notes
    # One trace, on asyncio as many as the same gathers with no closure make: where
    # each gather's waking callback lands among the other tasks' steps decides
    # nothing here (nothing after a wake conflicts with a step queued ahead of its
    # callback: dpor.DPORChooser._placements), so it is not told apart (it made 3)
    assert _counted(report) == 1, report.notes
    if backend == "asyncio":
        control = racecheck.check(_no_closures_on_asyncio, strategy="dpor", schedules=1000)
        assert _counted(control) == 1, control.notes


def _closure_made_before_the_store() -> None:
    """The closure exists (and runs on another thread) before the variable is bound."""
    seen: list[object] = []

    def owner() -> None:
        value = None

        def read() -> None:
            seen.append(value)

        threading.Thread(target=read).start()
        value = 1
        assert value == 1

    owner()
    # the reader's thread may read before or after the store: two traces


def _closure_made_in_an_earlier_iteration() -> None:
    seen: list[object] = []

    def owner() -> None:
        for round_ in range(2):
            value = round_
            if round_ == 0:

                def read() -> None:
                    seen.append(value)  # noqa: B023 (the late binding is the point)

                threading.Thread(target=read).start()

    owner()


@pytest.mark.parametrize(
    "program", [_closure_made_before_the_store, _closure_made_in_an_earlier_iteration]
)
def test_a_store_after_a_closure_over_the_variable_exists_still_conflicts(
    program: Callable[[], None],
) -> None:
    report = racecheck.check(program, strategy="dpor", schedules=1000)
    assert report.verified, report.notes
    assert _counted(report) >= 2, report.notes


# -- a runtime function's fresh result iterated in place ----------------------------------


def _writers_and_a_settle(iterate_in_place: bool) -> Callable[[], object]:
    async def program() -> None:
        import asyncio

        boxes = [Box(), Box()]

        async def write(i: int) -> None:
            await asyncio.sleep(0)
            boxes[i].value = 1

        tasks = [asyncio.create_task(write(i)) for i in range(2)]
        if iterate_in_place:
            for _task in asyncio.all_tasks():  # a new set each call: no state of the program
                await asyncio.sleep(0)
        else:
            current = asyncio.all_tasks()
            for _task in current:
                await asyncio.sleep(0)
        await asyncio.gather(*tasks)

    return program


def test_iterating_asyncio_all_tasks_in_place_adds_no_interleavings() -> None:
    """``for t in asyncio.all_tasks():`` (the loop tests' settle) iterated a call's result
    the detector cannot rebuild, taken for a read of anything that lingers to the task's
    end: it met every write of the run (21 traces of a loop program became 80). The
    task registry it reads is recorded as asyncio's own; its result is a new set."""
    counts = []
    for in_place in (False, True):
        report = racecheck.check(
            _writers_and_a_settle(in_place), strategy="dpor", backend="asyncio", schedules=1000
        )
        assert report.verified, report.notes
        counts.append(_counted(report))
    assert counts[1] == counts[0], counts
