"""DPOR sees calls whose callable or arguments no name reaches.

Each of these let DPOR call a lost update or an order bug "verified" after two
schedules, detector on or off:

* a callable that is itself a call's result, called in place:
  ``functools.partial(setattr, o, "x")(v)``, ``getattr(holder, "setter")(v)``,
  ``make_setter()(v)``. A C callable object fires no profile event; the call
  is now rebuilt when making it runs no user code, and otherwise the step log
  waits for the call's event (none came: the step is opaque);
* packed arguments (CALL_FUNCTION_EX): ``setter(*args)``, ``mine.extend(*a)``,
  ``print(*a)``, ``zip(*[mine, shared])``: what C reads of them was not recorded
  (and ``[mine, shared]`` was taken for ``mine``: a BUILD_LIST left an item
  standing for the new list);
* a container that C code reads, handed over as a call's result:
  ``list(islice(get(), 1))``, ``enumerate(get())``, ``sorted(get())``,
  ``"".join(map(str, get()))``: a read of any key on an unknown object;
* a class's ``__dict__`` kept in a variable: ``ns = Cls.__dict__; ns["x"]``.

The rest of the forms the audit listed were already seen on main (a C builtin
reading a container whole, ``map``/``zip`` over a shared list in any argument,
``x in bytearray``/``array``/``memoryview``): they are kept here as guards.
"""

from __future__ import annotations

import array
import asyncio
import functools
import io
import itertools
import threading
from collections.abc import Callable
from typing import Any

import pytest
from dpor_verdicts import assert_dpor_finds, assert_dpor_verifies
from test_dpor_unseen_accesses import _in_two_threads
from test_dpor_unseen_sound4 import _one_after_the_other, _seen


class _Box:
    x = 0


class _Holder:
    pass


_box = _Box()
_holder = _Holder()
_holder.setter = functools.partial(setattr, _box, "x")
_setter = functools.partial(setattr, _box, "x")
_items: list[int] = [0]
_buffer = bytearray(1)
_numbers = array.array("i", [0])


def _make_setter() -> Callable[[int], None]:
    return functools.partial(setattr, _box, "x")


def _shared_items() -> list[int]:
    return _items


# -- lost updates: the callable is a call's result, or its arguments are packed ---------------


def _bump_inline_partial() -> None:
    value = _box.x
    functools.partial(setattr, _box, "x")(value + 1)


def _bump_getattr_result() -> None:
    value = _box.x
    getattr(_holder, "setter")(value + 1)  # noqa: B009 (the form under test)


def _bump_made_setter() -> None:
    value = _box.x
    _make_setter()(value + 1)


def _bump_packed_partial() -> None:
    value = _box.x
    packed = (value + 1,)
    _setter(*packed)


LOST_UPDATES: dict[str, Callable[[], None]] = {
    "partial(setattr, o, 'x')(v)": _bump_inline_partial,
    "getattr(holder, 'setter')(v)": _bump_getattr_result,
    "make_setter()(v)": _bump_made_setter,
    "setter(*args)": _bump_packed_partial,
}


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
@pytest.mark.parametrize("form", sorted(LOST_UPDATES))
def test_dpor_finds_a_lost_update_through_an_unnamed_callable(form: str, detect: bool) -> None:
    target = _in_two_threads(LOST_UPDATES[form], lambda: setattr(_box, "x", 0), lambda: _box.x)
    assert_dpor_finds(target, detect=detect)


# -- order bugs: C code reads a container that no name reaches --------------------------------


def _put_first() -> None:
    _items[0] = 1


def _reset_items() -> None:
    _items[:] = [0]


def _read_extend_packed() -> None:
    mine: list[int] = []
    packed = (_items,)
    mine.extend(*packed)
    _seen["v"] = mine


def _read_print_packed() -> None:
    out = io.StringIO()
    packed = (_items,)
    print(*packed, file=out, end="")
    _seen["v"] = out.getvalue()


def _read_zip_packed() -> None:
    _seen["v"] = [b for _, b in zip(*[[0], _items])]  # noqa: B905


def _read_islice_of_result() -> None:
    _seen["v"] = list(itertools.islice(_shared_items(), 1))


def _read_enumerate_of_result() -> None:
    _seen["v"] = [item for _, item in enumerate(_shared_items())]


def _read_sorted_result() -> None:
    _seen["v"] = sorted(_shared_items())


def _read_join_of_result() -> None:
    _seen["v"] = "".join(map(str, _shared_items()))


def _put_class_attribute() -> None:
    _Box.x = 1


def _read_class_namespace() -> None:
    namespace = _Box.__dict__
    _seen["v"] = namespace["x"]


# guards: seen on main already
def _read_print() -> None:
    out = io.StringIO()
    print(_items, file=out, end="")
    _seen["v"] = out.getvalue()


def _read_map_second_argument() -> None:
    _seen["v"] = list(map(max, [0], _items))


def _put_byte() -> None:
    _buffer[0] = 1


def _read_in_bytearray() -> None:
    _seen["v"] = 1 in _buffer


def _read_in_memoryview() -> None:
    _seen["v"] = 1 in memoryview(_buffer)


def _put_number() -> None:
    _numbers[0] = 1


def _read_in_array() -> None:
    _seen["v"] = 1 in _numbers


ORDER_BUGS: dict[str, tuple[Callable[[], None], Callable[[], None], Callable[[], None], Any]] = {
    "mine.extend(*a)": (_put_first, _read_extend_packed, _reset_items, [1]),
    "print(*a)": (_put_first, _read_print_packed, _reset_items, "[1]"),
    "zip(*[mine, l])": (_put_first, _read_zip_packed, _reset_items, [1]),
    "list(islice(get(), 1))": (_put_first, _read_islice_of_result, _reset_items, [1]),
    "enumerate(get())": (_put_first, _read_enumerate_of_result, _reset_items, [1]),
    "sorted(get())": (_put_first, _read_sorted_result, _reset_items, [1]),
    "''.join(map(str, get()))": (_put_first, _read_join_of_result, _reset_items, "1"),
    "ns = Cls.__dict__; ns['x']": (
        _put_class_attribute,
        _read_class_namespace,
        lambda: setattr(_Box, "x", 0),
        1,
    ),
    "guard: print(l)": (_put_first, _read_print, _reset_items, "[1]"),
    "guard: map(f, mine, l)": (_put_first, _read_map_second_argument, _reset_items, [1]),
    "guard: 1 in bytearray": (
        _put_byte,
        _read_in_bytearray,
        lambda: _buffer.__setitem__(0, 0),
        True,
    ),
    "guard: 1 in memoryview": (
        _put_byte,
        _read_in_memoryview,
        lambda: _buffer.__setitem__(0, 0),
        True,
    ),
    "guard: 1 in array": (_put_number, _read_in_array, lambda: _numbers.__setitem__(0, 0), True),
}


@pytest.mark.parametrize("form", sorted(ORDER_BUGS))
def test_dpor_finds_an_order_bug_through_an_unnamed_container(form: str) -> None:
    first, second, reset, want = ORDER_BUGS[form]
    target = _one_after_the_other(first, second, reset, want)
    target()  # the natural order passes
    assert_dpor_finds(target)


# -- asyncio: the same recording, a task's step between two awaits ----------------------------


async def _bump_made_setter_async(late: bool) -> None:
    for _ in range(2 if late else 0):
        await asyncio.sleep(0)
    value = _box.x
    await asyncio.sleep(0)
    _make_setter()(value + 1)


async def _bumped_through_made_setters() -> None:
    """The natural order keeps both updates; delaying the second bump's start loses one."""
    _box.x = 0
    await asyncio.gather(_bump_made_setter_async(False), _bump_made_setter_async(True))
    assert _box.x == 2, "an update was lost"


def test_dpor_finds_a_lost_update_through_a_made_setter_on_asyncio() -> None:
    asyncio.run(_bumped_through_made_setters())  # the natural order is fine
    assert_dpor_finds(_bumped_through_made_setters, backend="asyncio")


# -- the safe versions stay verified ----------------------------------------------------------

_lock = threading.Lock()


def _bump_getattr_result_locked() -> None:
    with _lock:
        value = _box.x
        getattr(_holder, "setter")(value + 1)  # noqa: B009 (the form under test)


class _Counter:
    def __init__(self) -> None:
        self.total = 0

    def add(self, amount: int) -> None:
        self.total += amount


def _own_attribute() -> None:
    mine = _Box()
    mine.x = 1


def _own_work() -> None:
    mine = _Counter()
    mine.add(len(sorted([3, 1])))
    mine.add(int(str(threading.get_ident())) * 0)


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
def test_a_locked_update_through_a_rebuilt_setter_is_verified(detect: bool) -> None:
    """``getattr(holder, "setter")`` runs no user code: rebuilt, the partial's write is
    placed precisely (an opaque step would meet every step, and the search explode)."""
    target = _in_two_threads(
        _bump_getattr_result_locked, lambda: setattr(_box, "x", 0), lambda: _box.x
    )
    assert_dpor_verifies(target, detect=detect)


def test_python_methods_and_new_objects_leave_independent_threads_independent() -> None:
    """``mine.add(...)`` (a method written in Python, not rebuilt as a C callable) and
    ``str(threading.get_ident())`` (new objects) wait for no call event and read
    nothing unplaced: two threads that share nothing explore as many traces as two that
    only set an attribute of their own object."""
    working = assert_dpor_verifies(_in_two_threads(_own_work, _seen.clear, lambda: 2))
    idle = assert_dpor_verifies(_in_two_threads(_own_attribute, _seen.clear, lambda: 2))
    assert working.schedules_run == idle.schedules_run, working.notes


def _put_x(value: int) -> None:
    _box.x = value


def _get_put_x() -> Callable[[int], None]:
    return _put_x


def _bump_directly_locked() -> None:
    with _lock:
        value = _box.x
        _put_x(value + 1)
        _holder.__dict__.update(seen=value)


def _bump_through_made_callables_locked() -> None:
    with _lock:
        value = _box.x
        _get_put_x()(value + 1)  # a Python function: its call event is awaited
        _get_update()(seen=value)  # a builtin method: its c_call event, then its arguments


def _get_update() -> Callable[..., None]:
    return _holder.__dict__.update


def test_a_made_python_function_or_builtin_is_not_opaque() -> None:
    """A callable the detector cannot rebuild that fires its profile event (a Python
    function, a builtin method) leaves the step as precise as a direct call: as many
    traces as the same update spelled directly (an opaque step would meet every step)."""
    reset, read = (lambda: setattr(_box, "x", 0)), (lambda: _box.x)
    made = assert_dpor_verifies(_in_two_threads(_bump_through_made_callables_locked, reset, read))
    direct = assert_dpor_verifies(_in_two_threads(_bump_directly_locked, reset, read))
    assert made.schedules_run == direct.schedules_run, made.notes
