"""DPOR sees what C code does inside a call that fires no profile event.

A profile hook reports a C call (``c_call``) only for a builtin function or
method called straight from Python code. These went unrecorded, and DPOR
called lost updates and order bugs "verified" after two schedules:

* C callable objects: ``functools.partial`` over a C function or bound C
  method, ``operator.attrgetter``/``itemgetter``/``methodcaller``, and the
  ``functools.lru_cache`` wrapper, whose check-then-insert runs in C around a
  traced function (two threads computed the cached value twice);
* lazy C iterators (``map``, ``filter``, ``itertools``) over a shared container,
  and the C functions they call (``list(map(setattr, ...))``);
* a container handed to a C method bound to another object (``"".join(l)``,
  ``mine.extend(l)``, ``t.update(d)``, ``"{k}".format_map(d)``, ``e.union(s)``):
  the hook records the object the method is bound to, not what it reads.

Every program here fails in an order exhaustive search reaches in a handful of
schedules; DPOR must find it too, and never say "verified".
"""

from __future__ import annotations

import functools
import itertools
import operator
import threading
from collections.abc import Callable
from typing import Any

import pytest
from test_dpor_unseen_accesses import _in_two_threads

import racecheck


class _Box:
    x = 0


_box = _Box()
_table: dict[str, Any] = {}
_items: list[Any] = []
_members: set[int] = set()
_seen: dict[str, Any] = {}
_computed: list[int] = []


def _one_after_the_other(
    first: Callable[[], None], second: Callable[[], None], reset: Callable[[], None], want: Any
) -> Callable[[], None]:
    """``first`` in one thread, ``second`` in another: the natural order sees ``want``."""

    def target() -> None:
        _seen.clear()
        reset()
        workers = [threading.Thread(target=first), threading.Thread(target=second)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert _seen["v"] == want, "the second thread ran first"

    return target


# -- C callable objects -----------------------------------------------------------------------

_set_x = functools.partial(setattr, _box, "x")
_update_table = functools.partial(_table.update)
_get_x = operator.attrgetter("x")
_get_k = operator.itemgetter("k")
_append_one = operator.methodcaller("append", 1)


def _bump_partial_setattr() -> None:
    value = _box.x
    _set_x(value + 1)


def _bump_partial_update() -> None:
    value = _table["k"]
    _update_table({"k": value + 1})


def _bump_map_setattr() -> None:
    value = _box.x
    list(map(setattr, [_box], ["x"], [value + 1]))


@functools.cache
def _load(key: int) -> int:
    _computed.append(key)
    return key


def _reset_load() -> None:
    _computed.clear()
    _load.cache_clear()


LOST_UPDATES: dict[str, tuple[Callable[[], None], Callable[[], None], Callable[[], Any]]] = {
    "partial(setattr, o, 'x')": (
        _bump_partial_setattr,
        lambda: setattr(_box, "x", 0),
        lambda: _box.x,
    ),
    "partial(d.update)": (
        _bump_partial_update,
        lambda: _table.__setitem__("k", 0),
        lambda: _table["k"],
    ),
    "list(map(setattr, ...))": (_bump_map_setattr, lambda: setattr(_box, "x", 0), lambda: _box.x),
    # the cache's check-then-insert: both threads miss, and the value is computed twice
    "lru_cache": (lambda: (_load(1), None)[1], _reset_load, lambda: 3 - len(_computed)),
}


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
@pytest.mark.parametrize("form", sorted(LOST_UPDATES))
def test_dpor_finds_a_lost_update_inside_a_c_call(form: str, detect: bool) -> None:
    target = _in_two_threads(*LOST_UPDATES[form])
    with pytest.raises(racecheck.RaceFound):
        report = racecheck.check(
            target,
            strategy="dpor",
            backend="threads",
            schedules=200,
            detect=detect,
            minimize=False,
        )
        pytest.fail(f"DPOR passed a lost update: {report.notes}")


def _put_x() -> None:
    _box.x = 1


def _put_k() -> None:
    _table["k"] = 1


def _put_first() -> None:
    _items[0] = 1


def _put_member() -> None:
    _members.add(1)


def _read_attrgetter() -> None:
    _seen["v"] = _get_x(_box)


def _read_itemgetter() -> None:
    _seen["v"] = _get_k(_table)


def _append_through_methodcaller() -> None:
    _append_one(_items)


def _append_through_map() -> None:
    list(map(_items.append, [1]))


def _count_items() -> None:
    _seen["v"] = len(_items)


def _read_filter() -> None:
    _seen["v"] = list(filter(None, _items))


def _read_islice() -> None:
    _seen["v"] = list(itertools.islice(_items, 1))


def _read_chain() -> None:
    for item in itertools.chain(_items):
        _seen["v"] = [item]


def _read_join() -> None:
    _seen["v"] = "".join(map(str, _items))


def _read_str_join() -> None:
    _seen["v"] = ",".join(_table)


def _read_extend() -> None:
    mine: list[int] = []
    mine.extend(_items)
    _seen["v"] = mine


def _read_format_map() -> None:
    _seen["v"] = "{k}".format_map(_table)


def _read_update_argument() -> None:
    mine: dict[str, int] = {}
    mine.update(_table)
    _seen["v"] = mine["k"]


def _read_union_argument() -> None:
    mine: set[int] = set()
    _seen["v"] = len(mine.union(_members))


def _reset_items() -> None:
    _items[:] = [0]


def _reset_table() -> None:
    _table.clear()
    _table["k"] = 0


ORDER_BUGS: dict[str, tuple[Callable[[], None], Callable[[], None], Callable[[], None], Any]] = {
    "attrgetter": (_put_x, _read_attrgetter, lambda: setattr(_box, "x", 0), 1),
    "itemgetter": (_put_k, _read_itemgetter, _reset_table, 1),
    "methodcaller('append')": (_append_through_methodcaller, _count_items, _items.clear, 1),
    "list(map(l.append, xs))": (_append_through_map, _count_items, _items.clear, 1),
    "list(filter(None, l))": (_put_first, _read_filter, _reset_items, [1]),
    "list(islice(l, 1))": (_put_first, _read_islice, _reset_items, [1]),
    "for x in chain(l)": (_put_first, _read_chain, _reset_items, [1]),
    "''.join(map(str, l))": (_put_first, _read_join, _reset_items, "1"),
    "','.join(d)": (_put_k, _read_str_join, _table.clear, "k"),
    "mine.extend(l)": (_put_first, _read_extend, _reset_items, [1]),
    "'{k}'.format_map(d)": (_put_k, _read_format_map, _reset_table, "1"),
    "mine.update(d)": (_put_k, _read_update_argument, _reset_table, 1),
    "mine.union(s)": (_put_member, _read_union_argument, _members.clear, 1),
}


@pytest.mark.parametrize("form", sorted(ORDER_BUGS))
def test_dpor_finds_an_order_bug_inside_a_c_call(form: str) -> None:
    first, second, reset, want = ORDER_BUGS[form]
    target = _one_after_the_other(first, second, reset, want)
    target()  # the natural order passes
    with pytest.raises(racecheck.RaceFound):
        report = racecheck.check(
            target, strategy="dpor", backend="threads", schedules=200, minimize=False
        )
        pytest.fail(f"DPOR passed an order bug: {report.notes}")


def _append_in_a_later_step() -> None:
    appending = map(_items.append, [1])  # a lazy C iterator: nothing is appended yet
    _seen["begun"] = True
    for _ in appending:
        pass


def _count_items_once_begun() -> None:
    if _seen.get("begun"):
        _seen["v"] = len(_items)


def test_a_lazy_c_iterator_is_recorded_where_it_is_consumed() -> None:
    """``map(l.append, xs)`` appends when it is consumed, steps after it was made: seen
    between the two, ``begun`` is set and nothing is appended yet."""

    def target() -> None:
        _seen.clear()
        _items.clear()
        workers = [
            threading.Thread(target=_append_in_a_later_step),
            threading.Thread(target=_count_items_once_begun),
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert _seen.get("v", 1) == 1, "counted between the map's making and its use"

    target()  # the natural order passes
    with pytest.raises(racecheck.RaceFound):
        report = racecheck.check(
            target, strategy="dpor", backend="threads", schedules=200, minimize=False
        )
        pytest.fail(f"DPOR passed an order bug: {report.notes}")


# -- the safe versions stay verified ----------------------------------------------------------

_lock = threading.Lock()


def _bump_partial_locked() -> None:
    with _lock:
        value = _box.x
        _set_x(value + 1)


def _join_own_list() -> None:
    mine = ["a", "b"]
    _seen[str(threading.get_ident())] = ("".join(mine), _get_x(_box))


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
def test_a_locked_update_through_partial_is_verified(detect: bool) -> None:
    target = _in_two_threads(_bump_partial_locked, lambda: setattr(_box, "x", 0), lambda: _box.x)
    report = racecheck.check(
        target, strategy="dpor", backend="threads", schedules=200, detect=detect
    )
    assert report.verified, report.notes


def test_reading_only_what_nobody_writes_is_verified() -> None:
    target = _in_two_threads(_join_own_list, lambda: setattr(_box, "x", 0), lambda: 2)
    report = racecheck.check(target, strategy="dpor", backend="threads", schedules=200)
    assert report.verified, report.notes
