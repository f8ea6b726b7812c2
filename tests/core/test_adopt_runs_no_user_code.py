"""Reading the user's objects from the outside must not run the user's code.

The threads backend walks module globals and the objects the target reaches,
looking for raw locks to adopt; every exploration digests what the target
keeps between schedules, to name suspects of a state leak (statewatch). A
class may make ``__dict__`` a property: apipkg's lazy ``ApiModule`` loads
every lazy attribute there, importing modules and running its first-access
hook. Reading ``__dict__`` the ordinary way there would run that, before the
first schedule: the library's one-time work would be done by racecheck, and
the race around it gone from every schedule (the detector had the same flaw:
docs/detect.md, apipkg).
"""

from __future__ import annotations

import sys
import threading
import types
import uuid
from typing import Any

import racecheck


class LazyModule(types.ModuleType):
    """A module whose ``__dict__`` property does first-access work, as apipkg's does."""

    loads: list[str]

    @property  # type: ignore[misc]
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        namespace: dict[str, Any] = types.ModuleType.__dict__["__dict__"].__get__(self)
        namespace["loads"].append("module __dict__ read")
        return namespace


class Plain:
    """Where the instances' dictionary comes from (CPython's own ``__dict__`` descriptor)."""


class LazyBox(Plain):
    """A plain object with the same kind of ``__dict__`` property."""

    def __init__(self) -> None:
        self.loads: list[str] = []
        self.lock = threading.Lock()

    @property  # type: ignore[misc]
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        namespace: dict[str, Any] = Plain.__dict__["__dict__"].__get__(self)
        namespace["loads"].append("object __dict__ read")
        return namespace


def test_no_dict_property_of_a_module_or_an_object_runs_during_a_check() -> None:
    name = f"lazy_{uuid.uuid4().hex[:8]}"
    module = LazyModule(name)
    types.ModuleType.__dict__["__dict__"].__get__(module)["loads"] = []
    module_loads: list[str] = types.ModuleType.__dict__["__dict__"].__get__(module)["loads"]
    box = LazyBox()
    box_loads: list[str] = Plain.__dict__["__dict__"].__get__(box)["loads"]
    box_lock = Plain.__dict__["__dict__"].__get__(box)["lock"]
    holder = [box]  # the walk reaches the box through the target's closure
    sys.modules[name] = module
    try:

        def target() -> None:
            def work() -> None:
                with box_lock:
                    pass

            workers = [threading.Thread(target=work) for _ in range(2)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            assert holder

        report = racecheck.check(target, strategy="random", schedules=5, watchdog=4.0)
    finally:
        del sys.modules[name]
    assert report.schedules_run == 5
    assert module_loads == []
    assert box_loads == []
