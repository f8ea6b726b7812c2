"""DPOR sees reads and writes that no attribute or item instruction spells as such.

Four more families went unrecorded, and DPOR called an order bug or a lost
update "verified" after two schedules:

* a read that finds nothing: ``hasattr(o, "conn")`` before a lazy
  ``o.conn = ...``, ``getattr(o, "x", None)`` after another thread's
  ``del o.x``; and a class attribute read through an instance
  (``conf.timeout`` while another thread sets ``Conf.timeout``): the
  detector read the instance's dictionary, found no entry, and dropped it;
* a read of a whole list by an instruction that is no item access: a
  membership test (``1 in lst`` against ``lst[0] = 1``), a comparison
  (``lst == [1]``), an unpacking (``first, = lst``);
* an in-place operator on a mutable container reached through a local
  alias (``table = shared; table |= {...}``, ``items += [...]``): the
  container's own C slot changes it, and no profile event fires;
* another name for an object's storage: its ``__dict__`` kept in a variable,
  or used through a method (``o.__dict__.update(x=1)``,
  ``vars(o).get("x")``), against ``o.x``.

Every program here fails in some order that exhaustive search reaches within
a handful of schedules; DPOR must reach one too, and never say "verified".
"""

from __future__ import annotations

import threading
import weakref
from collections import ChainMap
from collections.abc import Callable
from typing import Any

import pytest

import racecheck


class _Box:
    pass


class _Conf:
    timeout = 0


class _Derived(_Conf):
    pass


_box = _Box()
_conf = _Derived()
_table: dict[str, Any] = {}
_seen: dict[str, Any] = {}
_made: list[int] = []


def _in_two_threads(first: Callable[[], None], second: Callable[[], None]) -> None:
    workers = [threading.Thread(target=first), threading.Thread(target=second)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def _ordered(
    reset: Callable[[], None], first: Callable[[], None], second: Callable[[], None], want: Any
) -> Callable[[], None]:
    """``first`` in one thread, ``second`` in another: the natural order reads ``want``."""

    def target() -> None:
        _seen.clear()
        reset()
        _in_two_threads(first, second)
        assert _seen["value"] == want, "the other order"

    return target


def _twice(
    reset: Callable[[], None], update: Callable[[], None], read: Callable[[], Any], want: Any
) -> Callable[[], None]:
    """The same update in two threads: the natural order gives ``want``."""

    def target() -> None:
        reset()
        _in_two_threads(update, update)
        assert read() == want, "an update was lost"

    return target


# -- reads that find nothing ------------------------------------------------------------------


def _lazy_connect() -> None:
    if not hasattr(_box, "conn"):
        _box.conn = object()
        _made.append(1)


def _forget_connection() -> None:
    _box.__dict__.pop("conn", None)
    _made.clear()


def _delete_x() -> None:
    del _box.x


def _read_x_or_none() -> None:
    _seen["value"] = getattr(_box, "x", None)


def _set_class_timeout() -> None:
    _Derived.timeout = 1


def _read_timeout_through_instance() -> None:
    _seen["value"] = _conf.timeout


def _read_timeout_through_subclass() -> None:
    _seen["value"] = _Derived.timeout


class _Service:
    pass


def _singleton() -> None:
    if not hasattr(_Service, "instance"):
        _Service.instance = object()  # type: ignore[attr-defined]
        _made.append(1)


def _forget_singleton() -> None:
    if "instance" in _Service.__dict__:
        del _Service.instance  # type: ignore[attr-defined]
    _made.clear()


def _reset_timeout() -> None:
    _Conf.timeout = 0
    if "timeout" in _Derived.__dict__:
        del _Derived.timeout


# -- whole-list reads -------------------------------------------------------------------------


def _reset_list() -> None:
    _table["items"] = [0]


def _store_first() -> None:
    _table["items"][0] = 1


def _read_membership() -> None:
    _seen["value"] = 1 in _table["items"]


def _read_comparison() -> None:
    items = _table["items"]
    _seen["value"] = items == [1]


def _read_unpacked() -> None:
    (first,) = _table["items"]
    _seen["value"] = first


# -- in-place operators on an alias -----------------------------------------------------------


# each reads the container, then makes a call (a scheduling point), then changes it in place


def _merge_through_alias() -> None:
    value = _table["count"]
    merged = _table
    merged |= dict(count=value + 1)


def _reset_count() -> None:
    _table["count"] = 0


def _extend_through_alias() -> None:
    items = _table["items"]
    size = len(items)
    items += list((size,))


def _factor() -> int:
    return 2


def _repeat_through_alias() -> None:
    items = _table["items"]
    if len(items) == 1:
        items *= _factor()


# -- another name for an object's storage -----------------------------------------------------


def _reset_box_x() -> None:
    _box.x = 0


def _set_through_kept_dict() -> None:
    namespace = _box.__dict__
    namespace["x"] = 1


def _set_through_dict_update() -> None:
    _box.__dict__.update(x=1)


def _set_x() -> None:
    _box.x = 1


def _read_x() -> None:
    _seen["value"] = _box.x


def _read_through_vars_get() -> None:
    _seen["value"] = vars(_box).get("x")


def _read_membership_of_dict() -> None:
    _seen["value"] = "x" in _box.__dict__


def _forget_x() -> None:
    _box.__dict__.pop("x", None)


class _Other(_Box):
    pass


def _reset_class() -> None:
    _box.__class__ = _Box


def _change_class() -> None:
    _box.__class__ = _Other


def _read_class() -> None:
    _seen["value"] = isinstance(_box, _Other)


_proxy = weakref.proxy(_box)


def _set_x_through_proxy() -> None:
    _proxy.x = 1


def _counter_cell() -> Any:
    count = 0

    def bump() -> int:
        nonlocal count
        count += 1
        return count

    return bump


_bump = _counter_cell()


_cell = _bump.__closure__[0]  # type: ignore[index]


def _reset_cell() -> None:
    _cell.cell_contents = 0


def _set_cell() -> None:
    _cell.cell_contents = 5


def _read_cell() -> None:
    _seen["value"] = _bump()


_overrides: dict[str, int] = {}
_settings = ChainMap(_overrides, {"level": 0})


def _override_level() -> None:
    _overrides["level"] = 1


def _read_level() -> None:
    _seen["value"] = _settings["level"]


ORDER_BUGS: dict[str, tuple[Callable[[], None], Callable[[], None], Callable[[], None], Any]] = {
    "getattr default after del": (
        lambda: setattr(_box, "x", 1),
        _delete_x,
        _read_x_or_none,
        None,
    ),
    "class attribute through an instance": (
        _reset_timeout,
        _set_class_timeout,
        _read_timeout_through_instance,
        1,
    ),
    "class attribute through a subclass": (
        _reset_timeout,
        _read_timeout_through_subclass,
        _set_class_timeout,
        0,
    ),
    "x in list": (_reset_list, _store_first, _read_membership, True),
    "list == list": (_reset_list, _store_first, _read_comparison, True),
    "unpacked list": (_reset_list, _store_first, _read_unpacked, 1),
    "o.__dict__ kept in a variable": (_reset_box_x, _set_through_kept_dict, _read_x, 1),
    "o.__dict__.update": (_reset_box_x, _set_through_dict_update, _read_x, 1),
    "vars(o).get": (_reset_box_x, _set_x, _read_through_vars_get, 1),
    "'x' in o.__dict__": (_forget_x, _set_x, _read_membership_of_dict, True),
    "isinstance after o.__class__ =": (_reset_class, _change_class, _read_class, True),
    "weakref.proxy(o).x": (_reset_box_x, _set_x_through_proxy, _read_x, 1),
    "cell.cell_contents": (_reset_cell, _set_cell, _read_cell, 6),
    "ChainMap over a dict": (_overrides.clear, _override_level, _read_level, 1),
}

LOST_UPDATES: dict[str, tuple[Callable[[], None], Callable[[], None], Callable[[], Any], Any]] = {
    "hasattr lazy init": (_forget_connection, _lazy_connect, lambda: len(_made), 1),
    "hasattr lazy class singleton": (_forget_singleton, _singleton, lambda: len(_made), 1),
    "dict |= on an alias": (_reset_count, _merge_through_alias, lambda: _table["count"], 2),
    "list += on an alias": (_reset_list, _extend_through_alias, lambda: _table["items"], [0, 1, 2]),
    "list *= on an alias": (_reset_list, _repeat_through_alias, lambda: len(_table["items"]), 2),
}


def _check(target: Callable[[], None], detect: bool) -> racecheck.Report:
    return racecheck.check(target, strategy="dpor", backend="threads", schedules=200, detect=detect)


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
@pytest.mark.parametrize("form", sorted(ORDER_BUGS))
def test_dpor_finds_an_order_bug(form: str, detect: bool) -> None:
    with pytest.raises(racecheck.RaceFound):
        report = _check(_ordered(*ORDER_BUGS[form]), detect)
        pytest.fail(f"DPOR passed an order bug: {report.notes}")


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
@pytest.mark.parametrize("form", sorted(LOST_UPDATES))
def test_dpor_finds_a_lost_update(form: str, detect: bool) -> None:
    with pytest.raises(racecheck.RaceFound):
        report = _check(_twice(*LOST_UPDATES[form]), detect)
        pytest.fail(f"DPOR passed a lost update: {report.notes}")


# -- what must stay verified, and cheap -------------------------------------------------------

_lock = threading.Lock()


def _lazy_connect_locked() -> None:
    with _lock:
        _lazy_connect()


def test_a_locked_lazy_init_is_verified() -> None:
    report = _check(_twice(_forget_connection, _lazy_connect_locked, lambda: len(_made), 1), False)
    assert report.verified, report.notes


def _read_what_nobody_writes() -> None:
    items = _table["items"]
    mine = [_conf.timeout]
    mine += items
    # (no assert: pytest rewrites one into reads of its own)
    looks = (0 in items, items == [0], f"{items}", repr(mine), hasattr(_box, "never"))
    mine += [looks, vars(_box).get("never")]


def _work_alone() -> None:
    mine = [0]
    mine[0] += 1


def test_reads_of_what_nobody_writes_add_no_interleavings() -> None:
    def schedules_to_verify(work: Callable[[], None]) -> int:
        report = _check(_twice(_reset_list, work, lambda: 0, 0), False)
        assert report.verified, report.notes
        return report.schedules_run

    assert schedules_to_verify(_read_what_nobody_writes) == schedules_to_verify(_work_alone)
