"""DPOR sees the state C objects keep where the detector did not look.

Four families of accesses went unrecorded, and DPOR called lost updates and
order bugs "verified" after two schedules:

* items of C containers beyond dict, list, set and deque: a ``Counter``'s
  items (its Python ``__missing__`` made the detector skip the class as a
  container with item methods of its own), a ``bytearray``'s and an
  ``array.array``'s items, a ``memoryview``'s (which are its exporter's),
  reads through a ``MappingProxyType`` and through a dict's view made once;
  and the insertion a ``defaultdict`` makes when ``dd[k]`` misses, which was
  recorded as a read only;
* an iterator shared by two actors, advanced by a ``for`` loop: recorded as a
  read of it, or not at all;
* attributes a C object keeps in C (getset descriptors): ``ctypes.c_int(0).value``,
  ``decimal.Context().prec``.

Every program here fails in some order that exhaustive search reaches within a
handful of schedules; DPOR must reach one too, and never say "verified".
"""

from __future__ import annotations

import array
import collections
import ctypes
import decimal
import threading
import types
from collections.abc import Callable
from typing import Any

import pytest
from test_dpor_unseen_accesses import _in_two_threads

import racecheck


def _first_then_second(
    first: Callable[[], None],
    second: Callable[[], Any],
    reset: Callable[[], None],
    expected: Any,
) -> Callable[[], None]:
    """``first`` in one thread, ``second`` in another: the natural order sees ``expected``."""

    def target() -> None:
        reset()
        seen: list[Any] = []
        workers = [
            threading.Thread(target=first),
            threading.Thread(target=lambda: seen.append(second())),
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert seen == [expected], f"the second thread ran first: {seen}"

    return target


# -- items of C containers --------------------------------------------------------------------

_counter: collections.Counter[str] = collections.Counter()
_bytes = bytearray(2)
_ints = array.array("i", [0, 0])
_bytes_view = memoryview(_bytes)
_table: dict[str, int] = {}
_proxy = types.MappingProxyType(_table)
_keys = _table.keys()
_items = _table.items()
_lazy: collections.defaultdict[str, int] = collections.defaultdict(int)
_list = [0, 0]


def _bump_counter_in_place() -> None:
    _counter["k"] += 1


def _bump_counter() -> None:
    value = _counter["k"]
    _counter["k"] = value + 1


def _bump_bytearray() -> None:
    value = _bytes[0]
    _bytes[0] = value + 1


def _bump_bytearray_from_the_end() -> None:
    value = _bytes[-2]
    _bytes[-2] = value + 1


def _bump_array() -> None:
    value = _ints[0]
    _ints[0] = value + 1


def _bump_through_the_view() -> None:
    value = _bytes[0]
    _bytes_view[0] = value + 1


def _bump_read_through_the_view() -> None:
    value = _bytes_view[0]
    _bytes[0] = value + 1


def _zero_bytes() -> None:
    _bytes[0] = _bytes[1] = 0


def _zero_ints() -> None:
    _ints[0] = _ints[1] = 0


LOST_UPDATES: dict[str, tuple[Callable[[], None], Callable[[], None], Callable[[], Any]]] = {
    "Counter c[k] += 1": (_bump_counter_in_place, _counter.clear, lambda: _counter["k"]),
    "Counter c[k] = c[k] + 1": (_bump_counter, _counter.clear, lambda: _counter["k"]),
    "bytearray item": (_bump_bytearray, _zero_bytes, lambda: _bytes[0]),
    "bytearray item by a negative index": (
        _bump_bytearray_from_the_end,
        _zero_bytes,
        lambda: _bytes[0],
    ),
    "array.array item": (_bump_array, _zero_ints, lambda: _ints[0]),
    "memoryview write, bytearray read": (_bump_through_the_view, _zero_bytes, lambda: _bytes[0]),
    "bytearray write, memoryview read": (
        _bump_read_through_the_view,
        _zero_bytes,
        lambda: _bytes[0],
    ),
}


def _found_by_dpor(target: Callable[[], None], detect: bool = False) -> None:
    with pytest.raises(racecheck.RaceFound):
        report = racecheck.check(
            target, strategy="dpor", backend="threads", schedules=200, detect=detect
        )
        pytest.fail(f"DPOR passed a race: {report.notes}")


@pytest.mark.parametrize("form", sorted(LOST_UPDATES))
def test_dpor_finds_a_lost_update_on_a_c_container(form: str) -> None:
    _found_by_dpor(_in_two_threads(*LOST_UPDATES[form]))


def _insert_by_lookup() -> None:
    _lazy["a"]  # a miss inserts the default: a write of the key and of the size


def _store_a_slice_of_bytes() -> None:
    _bytes[0:1] = b"\x01"  # the size and the end stay: the first item changes


def _store_a_slice_of_the_list() -> None:
    _list[0:1] = [1]


def _clear_table() -> None:
    _table.clear()


ORDER_BUGS: dict[str, tuple[Callable[[], None], Callable[[], Any], Callable[[], None], Any]] = {
    "defaultdict insertion by dd[k], len read": (
        _insert_by_lookup,
        lambda: len(_lazy),
        _lazy.clear,
        1,
    ),
    "defaultdict insertion by dd[k], membership read": (
        _insert_by_lookup,
        lambda: "a" in _lazy,
        _lazy.clear,
        True,
    ),
    "bytearray slice store, item read": (
        _store_a_slice_of_bytes,
        lambda: _bytes[0],
        _zero_bytes,
        1,
    ),
    "list slice store, item read": (
        _store_a_slice_of_the_list,
        lambda: _list[0],
        lambda: _list.__setitem__(0, 0),
        1,
    ),
    "MappingProxyType item read": (
        lambda: _table.update(k=1),
        lambda: _proxy["k"],
        lambda: _table.update(k=0),
        1,
    ),
    "dict keys view made once, membership read": (
        lambda: _table.update(k=1),
        lambda: "k" in _keys,
        _clear_table,
        True,
    ),
    "dict items view made once, len read": (
        lambda: _table.update(k=1),
        lambda: len(_items),
        _clear_table,
        1,
    ),
}


@pytest.mark.parametrize("form", sorted(ORDER_BUGS))
def test_dpor_finds_an_order_bug_on_a_c_container(form: str) -> None:
    _found_by_dpor(_first_then_second(*ORDER_BUGS[form]))


# -- the safe versions stay verified ----------------------------------------------------------

_lock = threading.Lock()


def _bump_counter_locked() -> None:
    with _lock:
        _counter["k"] += 1


def _both_bytes_bumped() -> None:
    """Each thread bumps its own byte of one bytearray: no two accesses meet."""
    _zero_bytes()

    def bump(index: int) -> None:
        value = _bytes[index]
        _bytes[index] = value + 1

    workers = [threading.Thread(target=bump, args=(index,)) for index in (0, 1)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert _bytes == bytearray(b"\x01\x01")


@pytest.mark.parametrize(
    "target",
    [
        _in_two_threads(_bump_counter_locked, _counter.clear, lambda: _counter["k"]),
        _both_bytes_bumped,
    ],
    ids=["locked Counter update", "each thread its own byte"],
)
def test_safe_updates_of_c_containers_are_still_verified(target: Callable[[], None]) -> None:
    report = racecheck.check(target, strategy="dpor", backend="threads", schedules=200)
    assert report.verified, report.notes


# -- shared iterators -------------------------------------------------------------------------

_shared: dict[str, Any] = {}


def _take_first() -> Any:
    for item in _shared["it"]:
        return item
    return None


def _numbers() -> Any:
    yield from range(10)


ITERATORS: dict[str, Callable[[], Any]] = {
    "list iterator": lambda: iter([0, 1, 2]),
    "range iterator": lambda: iter(range(10)),
    "generator": _numbers,
}


def _two_take_one(kind: str) -> Callable[[], None]:
    """Each thread takes one item with ``for x in it: return x``: the first thread to
    loop takes 0. The loop advances the iterator: a write, not a read."""
    return _first_then_second(
        _take_first, _take_first, lambda: _shared.update(it=ITERATORS[kind]()), 1
    )


@pytest.mark.parametrize("kind", sorted(ITERATORS))
def test_a_for_loop_advances_a_shared_iterator(kind: str) -> None:
    _found_by_dpor(_two_take_one(kind))


def _drain() -> None:
    _shared["drained"] = [item for item in _shared["it"]]


def test_a_comprehension_advances_a_shared_iterator() -> None:
    """One thread drains the iterator in a comprehension (a loop in code of its own),
    the other takes one item: in the natural order nothing is left for it."""
    target = _first_then_second(
        _drain, lambda: next(_shared["it"], None), lambda: _shared.update(it=iter([0, 1])), None
    )
    _found_by_dpor(target)


# -- attributes C objects keep in C -----------------------------------------------------------

_number = ctypes.c_int(0)
_context = decimal.Context(prec=5)


def _bump_c_int() -> None:
    value = _number.value
    _number.value = value + 1


def _bump_precision() -> None:
    value = _context.prec
    _context.prec = value + 1


C_ATTRIBUTES: dict[str, tuple[Callable[[], None], Callable[[], None], Callable[[], Any]]] = {
    "ctypes.c_int .value": (
        _bump_c_int,
        lambda: setattr(_number, "value", 0),
        lambda: _number.value,
    ),
    "decimal.Context .prec": (
        _bump_precision,
        lambda: setattr(_context, "prec", 5),  # 0 is no precision
        lambda: _context.prec - 5,
    ),
}


@pytest.mark.parametrize("form", sorted(C_ATTRIBUTES))
def test_dpor_finds_a_lost_update_of_a_c_attribute(form: str) -> None:
    _found_by_dpor(_in_two_threads(*C_ATTRIBUTES[form]))


@pytest.mark.parametrize(
    "target",
    [
        _in_two_threads(*LOST_UPDATES["Counter c[k] += 1"]),
        _in_two_threads(*LOST_UPDATES["memoryview write, bytearray read"]),
        _first_then_second(*ORDER_BUGS["defaultdict insertion by dd[k], len read"]),
        _first_then_second(*ORDER_BUGS["MappingProxyType item read"]),
        _two_take_one("generator"),
        _in_two_threads(*C_ATTRIBUTES["ctypes.c_int .value"]),
    ],
    ids=["Counter", "memoryview", "defaultdict", "MappingProxyType", "iterator", "ctypes"],
)
def test_the_detector_feeds_dpor_the_same_accesses(target: Callable[[], None]) -> None:
    """With the detector judging too (``detect=True``), DPOR still sees each family."""
    _found_by_dpor(target, detect=True)
