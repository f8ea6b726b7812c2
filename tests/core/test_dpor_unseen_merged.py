"""DPOR sees values that two paths of a line merge: ``l or []``, ``a if c else b``.

The operand analysis (detect.operands) rebuilds what an instruction works on
from the instructions that pushed it. Where two paths meet (``self.items or
[]``, ``pa if c else pb``) it kept what the paths agree on and took the rest
for an unknown value, which nothing reads. So ``for v in (self.items or [])``,
``sorted(a if c else b)`` and ``(pa if c else pb)(v)`` recorded nothing of the
container read or the C callable called, and DPOR called each of these order
bugs and lost updates "verified" after two schedules, detector on or off, while
a random walk found them.

A merged value is now kept as its alternatives. Which one ran is not known, so
for DPOR's step log a container read reads all of each alternative (a read of
any key of each object, or of anything when an alternative is a call's result
that may hide state), and a merged callable is a call the step log waits for
(StepLog.expect_call). The race detector records none of this: an access that
may not have happened must not be reported as a race.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from typing import Any

import pytest
from dpor_verdicts import assert_dpor_finds, assert_dpor_verifies
from test_dpor_unseen_accesses import _in_two_threads
from test_dpor_unseen_sound4 import _one_after_the_other, _seen
from test_dpor_unseen_sound12 import _items, _put_first, _reset_items


class _Box:
    x = 0
    y = 0


class _Holder:
    def __init__(self) -> None:
        self.items: list[int] = [0]


_box = _Box()
_holder = _Holder()
_other_items: list[int] = [5]
_chosen = True  # which path a merge takes: always the shared one
_set_x = functools.partial(setattr, _box, "x")
_set_y = functools.partial(setattr, _box, "y")


def _shared_items() -> list[int]:
    return _items


def _other() -> list[int]:
    return _other_items


def _make_x_setter() -> Callable[[int], None]:
    return functools.partial(setattr, _box, "x")


def _make_y_setter() -> Callable[[int], None]:
    return functools.partial(setattr, _box, "y")


# -- lost updates: the callable is one of two ---------------------------------------------------


def _bump_through_merged_setters() -> None:
    value = _box.x
    (_set_x if _chosen else _set_y)(value + 1)


def _bump_through_merged_made_setters() -> None:
    value = _box.x
    (_make_x_setter() if _chosen else _make_y_setter())(value + 1)


def _bump_through_and_or() -> None:
    value = _box.x
    ((_chosen and _make_x_setter()) or _make_y_setter())(value + 1)


LOST_UPDATES: dict[str, Callable[[], None]] = {
    "(pa if c else pb)(v)": _bump_through_merged_setters,
    "(make_a() if c else make_b())(v)": _bump_through_merged_made_setters,
    "(c and make_a() or make_b())(v)": _bump_through_and_or,
}


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
@pytest.mark.parametrize("form", sorted(LOST_UPDATES))
def test_dpor_finds_a_lost_update_through_a_merged_callable(form: str, detect: bool) -> None:
    target = _in_two_threads(LOST_UPDATES[form], lambda: setattr(_box, "x", 0), lambda: _box.x)
    assert_dpor_finds(target, detect=detect)


# -- order bugs: a loop or C code reads one of two containers ------------------------------------


def _put_held_first() -> None:
    _holder.items[0] = 1


def _reset_held() -> None:
    _holder.items = [0]


def _read_loop_over_or() -> None:
    seen = []
    for item in _items or []:
        seen.append(item)
    _seen["v"] = seen


def _read_loop_over_held_or() -> None:
    seen = []
    for item in _holder.items or []:
        seen.append(item)
    _seen["v"] = seen


def _read_list_of_or() -> None:
    _seen["v"] = list(_items or [])


def _read_sorted_of_either() -> None:
    _seen["v"] = sorted(_items if _chosen else _other_items)


def _read_comprehension_of_either() -> None:
    _seen["v"] = [item for item in (_items if _chosen else _other_items)]


def _read_sorted_of_either_result() -> None:
    _seen["v"] = sorted(_shared_items() if _chosen else _other())


def _read_join_of_either_result() -> None:
    _seen["v"] = "".join(map(str, _shared_items() if _chosen else _other()))


def _read_extend_of_or() -> None:
    mine: list[int] = []
    mine.extend(_items or [])
    _seen["v"] = mine


ORDER_BUGS: dict[str, tuple[Callable[[], None], Callable[[], None], Callable[[], None], Any]] = {
    "for v in (l or [])": (_put_first, _read_loop_over_or, _reset_items, [1]),
    "for v in (self.items or [])": (
        _put_held_first,
        _read_loop_over_held_or,
        _reset_held,
        [1],
    ),
    "list(l or [])": (_put_first, _read_list_of_or, _reset_items, [1]),
    "sorted(l if c else m)": (_put_first, _read_sorted_of_either, _reset_items, [1]),
    "[v for v in (l if c else m)]": (_put_first, _read_comprehension_of_either, _reset_items, [1]),
    "sorted(get() if c else other())": (
        _put_first,
        _read_sorted_of_either_result,
        _reset_items,
        [1],
    ),
    "''.join(map(str, get() if c else other()))": (
        _put_first,
        _read_join_of_either_result,
        _reset_items,
        "1",
    ),
    "mine.extend(l or [])": (_put_first, _read_extend_of_or, _reset_items, [1]),
}


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
@pytest.mark.parametrize("form", sorted(ORDER_BUGS))
def test_dpor_finds_an_order_bug_through_a_merged_container(form: str, detect: bool) -> None:
    first, second, reset, want = ORDER_BUGS[form]
    target = _one_after_the_other(first, second, reset, want)
    target()  # the natural order passes
    assert_dpor_finds(target, detect=detect)


# -- asyncio: a task's step between two awaits reads ``self.items or []`` -----------------------


async def _fill_late() -> None:
    await asyncio.sleep(0)
    _holder.items[0] = 1


async def _snapshot_items() -> None:
    seen = [item for item in _holder.items or []]
    await asyncio.sleep(0)
    _seen["v"] = seen


async def _snapshot_before_fill() -> None:
    _seen.clear()
    _reset_held()
    await asyncio.gather(_fill_late(), _snapshot_items())
    assert _seen["v"] == [0], "the fill ran before the snapshot"


def test_dpor_finds_an_order_bug_through_a_merged_container_on_asyncio() -> None:
    asyncio.run(_snapshot_before_fill())  # the natural order passes
    assert_dpor_finds(_snapshot_before_fill, backend="asyncio")


# -- precision: what is read is each alternative, not everything ---------------------------------

_results: dict[str, int] = {}


def _total_over_either(name: str) -> Callable[[], None]:
    def total() -> None:
        count = 0
        for item in _items or []:
            count += item
        _results[name] = count  # its own key, there already: no other thread writes it

    return total


def _total_over_items(name: str) -> Callable[[], None]:
    def total() -> None:
        count = 0
        for item in _items:
            count += item
        _results[name] = count

    return total


def _totals_in_two_threads(total: Callable[[str], Callable[[], None]]) -> Callable[[], None]:
    def target() -> None:
        _results.update(a=-1, b=-1)
        workers = [threading.Thread(target=total(name)) for name in "ab"]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert _results == {"a": 0, "b": 0}

    return target


def test_reading_one_of_two_containers_meets_only_writes_of_those_containers() -> None:
    """``for v in (l or [])`` costs DPOR what ``for v in l`` does: taken for a read of
    anything, each thread's loop met the other thread's write of its own key."""
    _reset_items()
    merged = assert_dpor_verifies(_totals_in_two_threads(_total_over_either))
    direct = assert_dpor_verifies(_totals_in_two_threads(_total_over_items))
    assert merged.verified_note.split("(")[0] == direct.verified_note.split("(")[0]


def test_a_merged_python_callable_is_not_opaque() -> None:
    """``(on_a if c else on_b)(v)`` calling a function written in Python: its call event
    answers the wait, so the step is not opaque and the guarded program is verified."""
    lock = threading.Lock()

    def on_a(value: int) -> None:
        _box.x = value

    def on_b(value: int) -> None:
        _box.y = value

    def bump() -> None:
        with lock:
            value = _box.x
            (on_a if _chosen else on_b)(value + 1)

    assert_dpor_verifies(_in_two_threads(bump, lambda: setattr(_box, "x", 0), lambda: _box.x))
