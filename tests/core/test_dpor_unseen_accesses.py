"""DPOR sees the accesses that no attribute or item instruction spells.

DPOR's independence relation is only as good as the recorded accesses. Three
families went unrecorded, and DPOR called lost updates "verified" after two
schedules, on every backend:

* a module's attributes, read and written from another module
  (``settings.counter += 1``, ``settings.__dict__["counter"]``, and a
  ``ModuleType`` subclass such as apipkg's lazy ``ApiModule``): the detector
  skipped every module attribute as "a binding nobody races on";
* an item whose key is computed in place (``d[id(o)]``, ``lst[i + 1]``), and
  an attribute or item of a call's result (``get().counter``): the operands
  could not be rebuilt, and the access was dropped;
* the slot wrappers a class's dunder methods are (``object.__setattr__``,
  ``dict.__setitem__``, ``obj.__setattr__``, ``super().__setattr__``): a C
  call through one fires no profile event, so nothing saw it.

Every program here fails in some order that exhaustive search reaches within
a handful of schedules; DPOR must reach one too, and never say "verified".
"""

from __future__ import annotations

import asyncio
import functools
import sys
import threading
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

import dpor_shared_settings as settings
import pytest

import racecheck


def _in_two_threads(
    bump: Callable[[], None], reset: Callable[[], None], read: Callable[[], Any]
) -> Callable[[], None]:
    def target() -> None:
        reset()
        workers = [threading.Thread(target=bump) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert read() == 2, "an update was lost"

    return target


# -- module attributes ------------------------------------------------------------------------


def _reset_settings() -> None:
    settings.counter = 0


def _bump_module_attribute() -> None:
    value = settings.counter
    settings.counter = value + 1


def _bump_module_dict() -> None:
    value = settings.__dict__["counter"]
    settings.__dict__["counter"] = value + 1


def _read_settings() -> int:
    return settings.counter


class _Namespace(ModuleType):
    """A module object made at run time, as a plugin registry or a lazy API makes one."""


_namespace = _Namespace("racecheck_test_namespace")


def _reset_namespace() -> None:
    _namespace.counter = 0


def _bump_namespace() -> None:
    value = _namespace.counter
    _namespace.counter = value + 1


# -- slot wrappers: dunder methods called by name ---------------------------------------------


class _Box:
    pass


class _Slotted:
    __slots__ = ("counter",)


class _Guarded:
    """A class that checks what is set on it, and sets it through ``super()``."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            raise AttributeError(name)
        super().__setattr__(name, value)


_box, _slotted, _guarded, _table = _Box(), _Slotted(), _Guarded(), {"counter": 0}


def _bump_object_setattr() -> None:
    value = object.__getattribute__(_box, "counter")
    object.__setattr__(_box, "counter", value + 1)


def _bump_slot_through_object() -> None:
    value = object.__getattribute__(_slotted, "counter")
    object.__setattr__(_slotted, "counter", value + 1)


def _bump_bound_setattr() -> None:
    value = _box.counter
    _box.__setattr__("counter", value + 1)


def _bump_through_super() -> None:
    value = _guarded.counter
    _guarded.counter = value + 1


def _bump_dict_setitem() -> None:
    value = _table["counter"]
    dict.__setitem__(_table, "counter", value + 1)


def _bump_bound_setitem() -> None:
    value = _table.__getitem__("counter")
    _table.__setitem__("counter", value + 1)


_slots_by_id: dict[int, int] = {}
_pair = [0, 0]


def _bump_computed_dict_key() -> None:
    value = _slots_by_id[id(_box)]
    _slots_by_id[id(_box)] = value + 1


def _bump_computed_list_index() -> None:
    first = 0
    value = _pair[first + 1]
    _pair[first + 1] = value + 1


LOST_UPDATES = {
    "item with a computed dict key": (
        _bump_computed_dict_key,
        lambda: _slots_by_id.update({id(_box): 0}),
        lambda: _slots_by_id[id(_box)],
    ),
    "item with a computed list index": (
        _bump_computed_list_index,
        lambda: _pair.__setitem__(1, 0),
        lambda: _pair[1],
    ),
    "module attribute": (_bump_module_attribute, _reset_settings, _read_settings),
    "module __dict__ item": (_bump_module_dict, _reset_settings, _read_settings),
    "module global, written from inside": (settings.bump_here, _reset_settings, _read_settings),
    "ModuleType subclass attribute": (
        _bump_namespace,
        _reset_namespace,
        lambda: _namespace.counter,
    ),
    "object.__setattr__": (
        _bump_object_setattr,
        lambda: setattr(_box, "counter", 0),
        lambda: _box.counter,
    ),
    "object.__setattr__ on a slot": (
        _bump_slot_through_object,
        lambda: setattr(_slotted, "counter", 0),
        lambda: _slotted.counter,
    ),
    "obj.__setattr__": (
        _bump_bound_setattr,
        lambda: setattr(_box, "counter", 0),
        lambda: _box.counter,
    ),
    "super().__setattr__": (
        _bump_through_super,
        lambda: setattr(_guarded, "counter", 0),
        lambda: _guarded.counter,
    ),
    "dict.__setitem__": (
        _bump_dict_setitem,
        lambda: _table.__setitem__("counter", 0),
        lambda: _table["counter"],
    ),
    "d.__setitem__": (
        _bump_bound_setitem,
        lambda: _table.update(counter=0),
        lambda: _table["counter"],
    ),
}


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
@pytest.mark.parametrize("form", sorted(LOST_UPDATES))
def test_dpor_finds_a_lost_update_on_threads(form: str, detect: bool) -> None:
    target = _in_two_threads(*LOST_UPDATES[form])
    with pytest.raises(racecheck.RaceFound):
        report = racecheck.check(
            target, strategy="dpor", backend="threads", schedules=200, detect=detect
        )
        pytest.fail(f"DPOR passed a lost update: {report.notes}")


async def _bump_settings(late: bool, pause: Callable[[], Awaitable[None]]) -> None:
    for _ in range(2 if late else 0):
        await pause()
    value = settings.counter
    await pause()
    settings.counter = value + 1


async def _bumped_on_asyncio() -> None:
    """The natural order keeps both updates; delaying the second bump's start loses one."""
    settings.counter = 0
    pause = functools.partial(asyncio.sleep, 0)
    await asyncio.gather(_bump_settings(False, pause), _bump_settings(True, pause))
    assert settings.counter == 2, "an update was lost"


async def _bumped_on_trio() -> None:
    import trio

    settings.counter = 0
    pause = functools.partial(trio.sleep, 0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_bump_settings, False, pause)
        nursery.start_soon(_bump_settings, True, pause)
    assert settings.counter == 2, "an update was lost"


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_dpor_finds_a_module_attribute_race_across_checkpoints(backend: str, detect: bool) -> None:
    if backend == "trio":
        trio = pytest.importorskip("trio")
        target = _bumped_on_trio
        trio.run(target)  # the natural order is fine
    else:
        target = _bumped_on_asyncio
        asyncio.run(target())
    with pytest.raises(racecheck.RaceFound):
        report = racecheck.check(
            target, strategy="dpor", backend=backend, schedules=200, detect=detect
        )
        pytest.fail(f"DPOR passed a lost update: {report.notes}")


# -- apipkg's shape: a lazy module set up by its first look-up --------------------------------


class _LazyModule(ModuleType):
    """apipkg 2.0.0's ``ApiModule`` in small: the first miss pops a hook that sets attributes."""

    def __init__(self) -> None:
        super().__init__("racecheck_test_lazy")
        self.hooks: dict[str, Callable[[], None]] = {"first access": self._set_up}

    def _set_up(self) -> None:
        self.greeting = "hello"

    def __getattr__(self, name: str) -> Any:
        if "first access" in self.hooks:
            self.hooks.pop("first access")()
        return ModuleType.__getattribute__(self, name)


def _lazy_module_looked_up_by_two_threads() -> None:
    lazy = _LazyModule()
    sys.modules[lazy.__name__] = lazy
    seen: dict[int, str] = {}

    def use(n: int) -> None:
        try:
            seen[n] = lazy.greeting
        except (AttributeError, KeyError) as error:
            seen[n] = repr(error)

    workers = [threading.Thread(target=use, args=(n,)) for n in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    del sys.modules[lazy.__name__]
    assert seen == {0: "hello", 1: "hello"}, seen


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
def test_dpor_finds_the_half_set_up_lazy_module(detect: bool) -> None:
    with pytest.raises(racecheck.RaceFound):
        report = racecheck.check(
            _lazy_module_looked_up_by_two_threads,
            strategy="dpor",
            backend="threads",
            schedules=200,
            detect=detect,
        )
        pytest.fail(f"DPOR passed apipkg's race: {report.notes}")


# -- what must stay verified ------------------------------------------------------------------

_settings_lock = threading.Lock()


def _bump_module_attribute_locked() -> None:
    with _settings_lock:
        _bump_module_attribute()


def _read_module_bindings() -> None:
    # a module's functions, classes and submodules, and a constant nobody writes
    read = (settings.bump_here, threading.Lock, asyncio.sleep, sys.maxsize)
    assert all(read)


def _work_alone() -> None:
    mine = [0]
    mine[0] += 1


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
def test_a_locked_module_attribute_update_is_verified(detect: bool) -> None:
    target = _in_two_threads(_bump_module_attribute_locked, _reset_settings, _read_settings)
    report = racecheck.check(
        target, strategy="dpor", backend="threads", schedules=200, detect=detect
    )
    assert report.verified, report.notes


def test_reading_module_bindings_adds_no_interleavings() -> None:
    def schedules_to_verify(work: Callable[[], None]) -> int:
        target = _in_two_threads(work, _reset_settings, lambda: 2)
        report = racecheck.check(target, strategy="dpor", backend="threads", schedules=200)
        assert report.verified, report.notes
        return report.schedules_run

    assert schedules_to_verify(_read_module_bindings) == schedules_to_verify(_work_alone)


# -- objects that cannot be rebuilt: a call's result ------------------------------------------


def _the_box() -> _Box:
    return _box


def _bump_through_a_call() -> None:
    value = _the_box().counter
    _the_box().counter = value + 1


def _read_a_name_nobody_writes() -> None:
    _box.seen = _the_box().name


def test_an_update_through_a_call_result_is_found() -> None:
    """``get().counter``: the object is a call's result, which the detector cannot rebuild
    without running code. The accesses were dropped, and DPOR called this verified."""
    target = _in_two_threads(
        _bump_through_a_call, lambda: setattr(_box, "counter", 0), lambda: _box.counter
    )
    with pytest.raises(racecheck.RaceFound):
        report = racecheck.check(target, strategy="dpor", backend="threads", schedules=200)
        pytest.fail(f"DPOR passed a lost update: {report.notes}")


def _reads_through_a_call_before_a_plain_write() -> None:
    """The natural order reads 0; the other order, 1. Only the write is placed."""
    _box.counter = 0
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(_the_box().counter))
    writer = threading.Thread(target=lambda: setattr(_box, "counter", 1))
    for worker in (reader, writer):
        worker.start()
    for worker in (reader, writer):
        worker.join()
    assert seen == [0], "the write came first"


def test_a_read_through_a_call_result_meets_the_write_it_races() -> None:
    """The read's object is unknown, so it meets every write of ``counter``."""
    with pytest.raises(racecheck.RaceFound):
        report = racecheck.check(
            _reads_through_a_call_before_a_plain_write,
            strategy="dpor",
            backend="threads",
            schedules=200,
        )
        pytest.fail(f"DPOR passed the order bug: {report.notes}")


def test_a_call_result_read_of_what_nobody_writes_is_still_verified() -> None:
    _box.name = "box"
    target = _in_two_threads(_read_a_name_nobody_writes, _reset_settings, lambda: 2)
    report = racecheck.check(target, strategy="dpor", backend="threads", schedules=200)
    assert report.verified, report.notes
