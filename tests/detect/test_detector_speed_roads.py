"""The detector's short roads for ``name.attr`` answer exactly as its general road.

Most accesses a detected run hands over are ``self.x`` or ``obj.x`` on an
ordinary object, or ``module.attr``, and most calls are of ``f`` or
``module.f``, a function or class written in Python, whose callable is
looked up without the frame's locals. ``Detector._access`` works out once per
recipe that such an access goes straight to ``_attribute`` (``_recipe_plan``),
and ``_attribute`` asks once per class whether the object is an ordinary one
whose ``__dict__`` it may read at once (``_ordinary_dict``). Every other
object (a class, a module, a ``threading.local``, a callable instance, a
slotted one, an object whose ``__dict__`` is a property) takes the general
road. Each program below runs with the short roads and with them closed
(every recipe and class answered "ask everything"); the verdict, the
finding and the schedule it was found in must be the same.
"""

from __future__ import annotations

import asyncio
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import racecheck
from racecheck.detect import detector as detector_module
from racecheck.detect import finding_of


class Box:
    def __init__(self) -> None:
        self.n = 0


class Slotted:
    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


class Callable_:
    """A callable instance keeps its state in its ``__dict__`` all the same."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> int:
        return self.n


class Shared:
    n = 0  # class-level state: ``Shared.n`` is the class's attribute


SHARED_BOX = Box()  # a module global: the access's base is a global, not a local


async def _bump(box: Any) -> None:
    current = box.n
    await asyncio.sleep(0)
    box.n = current + 1


def _lost_update(make: Callable[[], Any]) -> Callable[[], Any]:
    async def target() -> None:
        box = make()
        await asyncio.gather(_bump(box), _bump(box))

    return target


async def _bump_global() -> None:
    current = SHARED_BOX.n
    await asyncio.sleep(0)
    SHARED_BOX.n = current + 1


async def global_lost_update() -> None:
    SHARED_BOX.n = 0
    await asyncio.gather(_bump_global(), _bump_global())


async def _bump_class() -> None:
    current = Shared.n
    await asyncio.sleep(0)
    Shared.n = current + 1


async def class_lost_update() -> None:
    Shared.n = 0
    await asyncio.gather(_bump_class(), _bump_class())


async def _read_module_attribute() -> None:
    # ``asyncio.sleep`` is a module attribute: a binding nobody races on
    sleep = asyncio.sleep
    await sleep(0)


async def module_attributes_only() -> None:
    await asyncio.gather(_read_module_attribute(), _read_module_attribute())


#: a module holding state: ``SETTINGS.counter`` is its global, read from outside
SETTINGS = types.ModuleType("settings")


async def _bump_module() -> None:
    value = SETTINGS.counter  # the short road answers a function at once, not this
    await asyncio.sleep(0)
    SETTINGS.counter = value + 1


async def module_lost_update() -> None:
    SETTINGS.counter = 0
    await asyncio.gather(_bump_module(), _bump_module())


def thread_local_counters() -> None:
    """Each thread's ``threading.local`` attributes are its own: nothing races."""
    local = threading.local()

    def work() -> None:
        local.n = 0
        local.n = local.n + 1

    workers = [threading.Thread(target=work) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def _locked_threads() -> None:
    box, lock = Box(), threading.Lock()

    def work() -> None:
        with lock:
            box.n = box.n + 1

    workers = [threading.Thread(target=work) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def _unlocked_threads() -> None:
    box = Box()

    def work() -> None:
        box.n = box.n + 1

    workers = [threading.Thread(target=work) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


PROGRAMS: dict[str, tuple[Callable[[], Any], str, bool]] = {
    # name: (target, backend, a finding expected)
    "ordinary object": (_lost_update(Box), "asyncio", True),
    "slotted object": (_lost_update(Slotted), "asyncio", True),
    "callable instance": (_lost_update(Callable_), "asyncio", True),
    "global base": (global_lost_update, "asyncio", True),
    "class attribute": (class_lost_update, "asyncio", True),
    "module attribute": (module_attributes_only, "asyncio", False),
    "module state": (module_lost_update, "asyncio", True),
    "threading.local": (thread_local_counters, "threads", False),
    "threads, locked": (_locked_threads, "threads", False),
    "threads, unlocked": (_unlocked_threads, "threads", True),
}


def _outcome(target: Callable[[], Any], backend: str) -> tuple[Any, ...]:
    """The verdict, the finding, and where it was found (or how much ran clean)."""
    try:
        report = racecheck.check(target, detect=True, backend=backend, schedules=60, seed=0)
    except racecheck.RaceFound as exc:
        return ("found", exc.kind, exc.schedule, exc.schedules_run, finding_of(exc))
    return ("clean", report.schedules_run, report.distinct_schedules)


@pytest.fixture
def fresh_caches() -> Iterator[None]:
    """The per-recipe and per-class answers, emptied before and after (they outlive runs)."""
    detector_module._LABELS.clear()
    detector_module._ORDINARY_DICTS.clear()
    yield
    detector_module._LABELS.clear()
    detector_module._ORDINARY_DICTS.clear()


def _general_road_only(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = detector_module._recipe_plan
    monkeypatch.setattr(
        detector_module, "_recipe_plan", lambda recipe: (*plan(recipe)[:3], None, None)
    )
    monkeypatch.setattr(detector_module, "_ordinary_dict", lambda cls: None)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_short_roads_answer_as_the_general_road(
    name: str, fresh_caches: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    target, backend, expect_finding = PROGRAMS[name]
    short = _outcome(target, backend)
    assert (short[0] == "found") is expect_finding, short
    detector_module._LABELS.clear()
    detector_module._ORDINARY_DICTS.clear()
    _general_road_only(monkeypatch)
    general = _outcome(target, backend)
    assert short == general


def test_the_short_roads_are_taken_where_they_apply(fresh_caches: None) -> None:
    """Which recipes and classes take them: otherwise the comparison above proves little."""
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(_lost_update(Box), detect=True, schedules=60, seed=0)
    plans = {
        (entry[0].op, entry[0].name): entry[3]
        for entry in detector_module._LABELS.values()
        if entry[0].name == "n"
    }
    assert plans[("read", "n")] == (False, "box", "n")
    assert plans[("write", "n")] == (False, "box", "n")
    assert detector_module._ORDINARY_DICTS[Box] is not None
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(_lost_update(Slotted), detect=True, schedules=60, seed=0)
    assert detector_module._ORDINARY_DICTS[Slotted] is None  # no __dict__: the general road
    # a call of a module's class (threading.Thread) or function: the callable is looked up
    # without the frame's locals (the threads feed hands every callee recipe over)
    racecheck.check(_locked_threads, detect=True, schedules=5, seed=0)
    named = {entry[4] for entry in detector_module._LABELS.values() if entry[0].op == "callee"}
    assert ("threading", "Thread") in named
