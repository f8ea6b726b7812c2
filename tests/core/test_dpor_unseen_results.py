"""DPOR sees a container read through a property, an ``await``, or a packed call.

``for v in self.pending`` where ``pending`` is a property, ``sorted(o.prop)``,
``x in o.prop``, ``for v in await self.fetch()`` and ``sorted(o.get(*args))``
read a container that Python code handed back. The operand analysis cannot
rebuild such a value without running code (a property's getter, a coroutine),
and it took an unrebuilt attribute, an await's result and a packed call's
result for values that hold no state, so the read was dropped: DPOR called each
of these order bugs verified after one or two schedules, detector on or off,
while a random walk found them.

An awaited coroutine's return value is kept by the step log's profile hook for
the awaits whose value a recipe reads (StepLog.awaited_value), and read as that
object. A property's value, a packed call's result, an item of a mapping whose
``__getitem__`` is Python code may be anything the code returned: a read of any
key on an unknown object (StepLog.unplaced_read), lingering for a loop. A stored
item of a ``defaultdict``/``OrderedDict``/``Counter`` is read as a dict's.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from dpor_verdicts import assert_dpor_finds, assert_dpor_verifies
from test_dpor_unseen_sound4 import _one_after_the_other, _seen


class _Holder:
    def __init__(self) -> None:
        self._items: list[int] = [0]

    @property
    def items(self) -> list[int]:
        return self._items

    def get(self, *ignored: Any) -> list[int]:
        return self._items


_holder = _Holder()


def _put_first() -> None:
    _holder._items[0] = 1


def _reset() -> None:
    _holder._items = [0]


def _read_loop_over_property() -> None:
    seen = []
    for item in _holder.items:
        seen.append(item)
    _seen["v"] = seen


def _read_sorted_property() -> None:
    _seen["v"] = sorted(_holder.items)


def _read_in_property() -> None:
    _seen["v"] = [1] if 1 in _holder.items else [0]


def _read_sorted_packed_call() -> None:
    ignored = ()
    _seen["v"] = sorted(_holder.get(*ignored))


ORDER_BUGS: dict[str, Callable[[], None]] = {
    "for v in o.prop": _read_loop_over_property,
    "sorted(o.prop)": _read_sorted_property,
    "1 in o.prop": _read_in_property,
    "sorted(o.get(*a))": _read_sorted_packed_call,
}


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
@pytest.mark.parametrize("form", sorted(ORDER_BUGS))
def test_dpor_finds_an_order_bug_through_a_value_code_handed_back(form: str, detect: bool) -> None:
    target = _one_after_the_other(_put_first, ORDER_BUGS[form], _reset, [1])
    target()  # the natural order passes
    assert_dpor_finds(target, detect=detect)


async def _fetch() -> list[int]:
    return _holder._items


async def _fill_late() -> None:
    await asyncio.sleep(0)
    _holder._items[0] = 1


async def _snapshot_awaited() -> None:
    seen = [item for item in await _fetch()]
    await asyncio.sleep(0)
    _seen["v"] = seen


async def _snapshot_before_fill() -> None:
    _seen.clear()
    _reset()
    await asyncio.gather(_fill_late(), _snapshot_awaited())
    assert _seen["v"] == [0], "the fill ran before the snapshot"


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
def test_dpor_finds_an_order_bug_through_an_awaited_container(detect: bool) -> None:
    asyncio.run(_snapshot_before_fill())  # the natural order passes
    assert_dpor_finds(_snapshot_before_fill, backend="asyncio", detect=detect)


# -- what stays precise --------------------------------------------------------------------------


class _Plain:
    def __init__(self) -> None:
        self.items: list[int] = [0]


_plain = _Plain()


def _traces(read: Callable[[], None]) -> str:
    def write_elsewhere() -> None:
        _holder._items[0] = 1

    report = assert_dpor_verifies(_one_after_the_other(write_elsewhere, read, _reset, [0]))
    return report.verified_note.split("(")[0]


def test_a_plain_attribute_is_still_read_where_it_is() -> None:
    """``for v in o.items`` with ``items`` in the instance is read as that list: it
    costs DPOR what a loop over a list of the thread's own does, against a write of
    another object."""

    def read_attribute() -> None:
        _seen["v"] = [item for item in _plain.items]

    def read_own() -> None:
        own = [0]
        _seen["v"] = [item for item in own]

    assert _traces(read_attribute) == _traces(read_own)


_totals: dict[str, int] = {}


async def _total_awaited(name: str) -> None:
    count = 0
    for item in await _fetch():
        count += item
    await asyncio.sleep(0)
    _totals[name] = count  # its own key, there already: no other task writes it


async def _total_direct(name: str) -> None:
    count = 0
    for item in _holder._items:
        count += item
    await asyncio.sleep(0)
    _totals[name] = count


def _awaited_traces(total: Callable[[str], Any]) -> str:
    async def target() -> None:
        _totals.update(a=-1, b=-1)
        await asyncio.gather(total("a"), total("b"))
        assert _totals == {"a": 0, "b": 0}

    _reset()
    report = assert_dpor_verifies(target, backend="asyncio")
    return report.verified_note.split("(")[0]


def test_an_awaited_container_is_read_as_the_object_the_coroutine_returned() -> None:
    """``for v in await fetch()`` costs DPOR what a loop over the list itself does: the
    step log keeps what the coroutine returned. Taken for a read of anything, each
    task's loop met the other task's write of its own key."""
    assert _awaited_traces(_total_awaited) == _awaited_traces(_total_direct)


def _total_through(read: Callable[[], list[int]]) -> Callable[[str], Callable[[], None]]:
    def total_into(name: str) -> Callable[[], None]:
        def total() -> None:
            _totals[name] = sum(read())

        return total

    return total_into


def _property_loop() -> list[int]:
    return [item for item in _holder.items]


def _list_loop() -> list[int]:
    return [item for item in _holder._items]


def _property_sorted() -> list[int]:
    return sorted(_holder.items)


def _list_sorted() -> list[int]:
    return sorted(_holder._items)


def _property_extended() -> list[int]:
    mine: list[int] = []
    mine.extend(_holder.items)
    return mine


def _list_extended() -> list[int]:
    mine: list[int] = []
    mine.extend(_holder._items)
    return mine


def _threads_traces(read: Callable[[], list[int]]) -> str:
    def target() -> None:
        _totals.update(a=-1, b=-1)
        workers = [threading.Thread(target=_total_through(read)(name)) for name in "ab"]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert _totals == {"a": 0, "b": 0}

    _reset()
    report = assert_dpor_verifies(target)
    return report.verified_note.split("(")[0]


@pytest.mark.parametrize(
    ("through_property", "through_list"),
    [
        (_property_loop, _list_loop),
        (_property_sorted, _list_sorted),
        (_property_extended, _list_extended),
    ],
    ids=["for", "sorted", "extend"],
)
def test_a_property_value_is_read_as_the_object_its_getter_returned(
    through_property: Callable[[], list[int]], through_list: Callable[[], list[int]]
) -> None:
    """``for v in o.prop``, ``sorted(o.prop)``, ``mine.extend(o.prop)`` cost DPOR what
    reading the list itself does: the step log keeps what the getter returned at the
    attribute load. Taken for a read of anything, each thread's read met the other
    thread's write of its own key."""
    assert _threads_traces(through_property) == _threads_traces(through_list)


async def _fails_after_a_yield() -> list[int]:
    await asyncio.sleep(0)
    raise ValueError("no items")


async def _snapshot_on_second_try(done: asyncio.Future[list[int]]) -> None:
    seen: list[int] = []
    for attempt in (_fails_after_a_yield, lambda: done):
        try:
            seen = [item for item in await attempt()]
        except ValueError:
            continue
    await asyncio.sleep(0)
    _seen["v"] = seen


async def _fill_later() -> None:
    for _ in range(3):
        await asyncio.sleep(0)
    _holder._items[0] = 1


async def _second_try_before_fill() -> None:
    _seen.clear()
    _reset()
    done: asyncio.Future[list[int]] = asyncio.get_running_loop().create_future()
    done.set_result(_holder._items)  # before either task starts: ordered before both
    await asyncio.gather(_fill_later(), _snapshot_on_second_try(done))
    assert _seen["v"] == [0], "the fill ran before the snapshot"


def test_an_await_that_raised_leaves_no_value_for_the_next_pass() -> None:
    """The first pass awaits a coroutine that yields, then raises; the second awaits a
    future (written in C: it returns nothing to Python). What the first left (its
    yield's value, then None as it raised) is no return value: kept, the second
    pass's read was taken for a read of None, and DPOR called the order verified."""
    asyncio.run(_second_try_before_fill())  # the natural order passes
    assert_dpor_finds(_second_try_before_fill, backend="asyncio")
