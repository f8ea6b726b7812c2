"""Shapes real libraries use that the detector must see (issue 14): attribute access
through ``getattr``/``setattr``/``vars``/``__dict__``, closure cells per activation,
class attributes."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import racecheck

sys.path.insert(0, str(Path(__file__).parent))
import marsys_getattr

DETECTOR_KINDS = ("atomicity-violation", "data-race")


def detect(target: Callable[[], Any], schedules: int = 60) -> Any:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=schedules)
    assert info.value.kind in DETECTOR_KINDS, info.value
    return info.value.cause.finding  # type: ignore[union-attr]


def clean(target: Callable[[], Any], schedules: int = 40) -> None:
    report = racecheck.check(target, detect=True, schedules=schedules)
    assert report.schedules_run == schedules or report.exhausted


# -- 1. attribute access spelled as a call or a dictionary ----------------------------


def test_marsys_getattr_shape_is_flagged_on_the_write_and_the_read() -> None:
    finding = detect(marsys_getattr.buggy)
    assert finding.pattern == "overwritten before read"
    first, middle, last = finding.accesses
    assert first.target == last.target == "self._current_instance"
    assert (first.action, middle.action, last.action) == ("wrote", "wrote", "read")
    write, read = marsys_getattr.marked("write"), marsys_getattr.marked("read")
    assert (first.lineno, middle.lineno, last.lineno) == (write, write, read)
    assert first.actor == last.actor != middle.actor


def test_marsys_getattr_fixed_is_clean() -> None:
    clean(marsys_getattr.fixed)


class Box:
    def __init__(self) -> None:
        self.value = "none"


def _handlers(write: Callable[[Box, str], None], read: Callable[[Box], Any]) -> Callable[[], Any]:
    async def target() -> None:
        box = Box()

        async def handle(name: str) -> Any:
            write(box, name)
            await asyncio.sleep(0)
            return read(box)

        await asyncio.gather(handle("a"), handle("b"))

    return target


def _vars_write(box: Box, name: str) -> None:
    vars(box)["value"] = name


def _vars_read(box: Box) -> Any:
    return vars(box)["value"]


def _dict_write(box: Box, name: str) -> None:
    box.__dict__["value"] = name


def _dict_read(box: Box) -> Any:
    return box.__dict__["value"]


def _setattr_dynamic(box: Box, name: str) -> None:
    attribute = "value"
    setattr(box, attribute, name)


@pytest.mark.parametrize(
    ("write", "read"),
    [
        (_vars_write, _vars_read),
        (_dict_write, _dict_read),
        (_setattr_dynamic, _dict_read),
        (_dict_write, lambda box: getattr(box, "value")),  # noqa: B009
    ],
    ids=["vars", "__dict__", "setattr-by-name", "dict-then-getattr"],
)
def test_attribute_through_its_namespace(
    write: Callable[[Box, str], None], read: Callable[[Box], Any]
) -> None:
    finding = detect(_handlers(write, read))
    assert finding.pattern == "overwritten before read"
    assert all(a.target.endswith(".value") for a in finding.accesses), finding


def test_getattr_of_another_name_is_not_that_attribute() -> None:
    def write(box: Box, name: str) -> None:
        setattr(box, "value", name)  # noqa: B010

    clean(_handlers(write, lambda box: getattr(box, "other", None)))


# -- 2. closure cells: one per activation -----------------------------------------------


def _in_threads(work: Callable[[int], Any], count: int = 3) -> None:
    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def make_and_call(i: int) -> int:
    """Each call has its own ``k`` cell, shared only with its own ``key``."""
    k = i

    def key() -> int:
        return k

    k = key() + 1  # a write to this activation's cell only
    return key()


def comprehension_capture(i: int) -> list[int]:
    k = i
    k = k * 2  # the captured variable, written in this frame
    return [k + j for j in range(2)]


def wrapper_activations(i: int) -> int:
    """The cachetools shape: a decorator's wrapper writes its local ``k``, captured below."""

    def cached(func: Callable[[int], int]) -> Callable[[int], int]:
        def wrapper(arg: int) -> int:
            k = (arg,)
            lookup = lambda: k  # noqa: E731
            k = (*lookup(), 0)
            return func(k[0])

        return wrapper

    shared = cached(lambda v: v + 1)
    return shared(i)


@pytest.mark.parametrize(
    "work",
    [make_and_call, comprehension_capture, wrapper_activations],
    ids=lambda f: f.__name__,
)
def test_one_closure_maker_called_from_several_threads_is_clean(
    work: Callable[[int], Any],
) -> None:
    clean(lambda: _in_threads(work), schedules=30)


def shared_cell() -> None:
    count = 0

    def work(_: int) -> None:
        nonlocal count
        count += 1

    _in_threads(work, 2)


def shared_cell_written_by_the_owner() -> None:
    state = "idle"

    def work(_: int) -> None:
        nonlocal state
        state = "busy"

    thread = threading.Thread(target=work, args=(0,))
    thread.start()
    state = "stopped"  # not ordered with the thread's write
    thread.join()


@pytest.mark.parametrize("target", [shared_cell, shared_cell_written_by_the_owner])
def test_a_cell_shared_by_threads_is_still_a_race(target: Callable[[], None]) -> None:
    finding = detect(target)
    names = {a.target for a in finding.accesses}
    assert names <= {"count", "state"} and len(finding.accesses) >= 2


# -- 3. class attributes ----------------------------------------------------------------


class Registry:
    _instance: Registry | None = None
    builds = 0
    lock = threading.Lock()

    @classmethod
    def instance(cls) -> Registry:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    @classmethod
    def build(cls) -> None:
        cls.builds += 1

    @classmethod
    def build_locked(cls) -> None:
        with cls.lock:
            cls.builds += 1

    @classmethod
    def instance_locked(cls) -> Registry:
        with cls.lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance


def _fresh_registry() -> type[Registry]:
    # a subclass per run: class attributes must not carry over between schedules
    return type("FreshRegistry", (Registry,), {"_instance": None, "builds": 0})


def _class_workload(method: str) -> Callable[[], None]:
    def target() -> None:
        registry = _fresh_registry()
        _in_threads(lambda _: getattr(registry, method)(), 2)

    return target


@pytest.mark.parametrize("method", ["instance", "build"])
def test_class_attribute_races_are_reported(method: str) -> None:
    finding = detect(_class_workload(method))
    target = "cls._instance" if method == "instance" else "cls.builds"
    assert {a.target for a in finding.accesses} == {target}
    assert len({a.actor for a in finding.accesses}) == 2


@pytest.mark.parametrize("method", ["instance_locked", "build_locked"])
def test_class_attributes_under_a_lock_are_clean(method: str) -> None:
    clean(_class_workload(method))


async def class_attribute_across_await() -> None:
    registry = _fresh_registry()

    async def build() -> None:
        count = registry.builds
        await asyncio.sleep(0)
        registry.builds = count + 1

    await asyncio.gather(build(), build())


def test_class_attribute_lost_update_across_an_await() -> None:
    finding = detect(class_attribute_across_await)
    assert finding.pattern == "lost update"
    assert finding.accesses[0].target == "registry.builds"


# -- 5. state behind a property; a dict's get-then-insert in traced library code --------


class Iteration:
    """``iter_state`` is a property over a ``threading.local``: per thread, shared by tasks."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._local.iter_state = 0

    @property
    def iter_state(self) -> int:
        return int(getattr(self._local, "iter_state", 0))

    @iter_state.setter
    def iter_state(self, value: int) -> None:
        self._local.iter_state = value


async def property_lost_update() -> None:
    iteration = Iteration()

    async def advance() -> None:
        state = iteration.iter_state
        await asyncio.sleep(0)
        iteration.iter_state = state + 1

    await asyncio.gather(advance(), advance())


def test_lost_update_through_a_property_is_reported() -> None:
    finding = detect(property_lost_update)
    assert finding.pattern == "lost update"
    assert {a.target for a in finding.accesses} == {"self._local.iter_state"}
    assert finding.accesses[0].action == "read" and finding.accesses[-1].action == "wrote"


def property_per_thread() -> None:
    iteration = Iteration()

    def advance(_: int) -> None:
        iteration.iter_state = iteration.iter_state + 1  # this thread's own slot

    _in_threads(advance, 2)


def test_thread_local_state_behind_a_property_is_clean_across_threads() -> None:
    clean(property_per_thread)


LIBRARY = """
import threading

class Registry:
    def __init__(self):
        self._items = {}
        self._lock = threading.Lock()

    def get_or_create(self, key, factory):
        value = self._items.get(key)
        if value is None:
            value = factory()
            self._items[key] = value
        return value

    def get_or_create_locked(self, key, factory):
        with self._lock:
            value = self._items.get(key)
            if value is None:
                value = factory()
                self._items[key] = value
            return value
"""


@pytest.fixture
def library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    package = tmp_path / "site-packages" / "rc14registry"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(LIBRARY)
    monkeypatch.syspath_prepend(str(package.parent))
    return "rc14registry"


def _registry_threads(name: str, method: str) -> Callable[[], None]:
    def target() -> None:
        module = __import__(name)
        registry = module.Registry()
        _in_threads(lambda i: getattr(registry, method)("k", object), 2)

    return target


def test_dict_get_then_insert_across_threads_in_a_traced_library(library: str) -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(
            _registry_threads(library, "get_or_create"),
            detect=True,
            schedules=60,
            trace_packages=[library],
        )
    assert info.value.kind in DETECTOR_KINDS, info.value
    finding = info.value.cause.finding  # type: ignore[union-attr]
    assert all(a.target == "self._items['k']" for a in finding.accesses), finding
    assert all(a.filename.endswith("rc14registry/__init__.py") for a in finding.accesses)


def test_dict_get_then_insert_under_a_lock_is_clean(library: str) -> None:
    report = racecheck.check(
        _registry_threads(library, "get_or_create_locked"),
        detect=True,
        schedules=40,
        trace_packages=[library],
    )
    assert report.schedules_run == 40 or report.exhausted


class Table(dict[str, object]):
    """A dict subclass with no overrides, as libraries keep their registries."""


@pytest.mark.parametrize(
    "make", [dict, collections.OrderedDict, Table], ids=["dict", "OrderedDict", "subclass"]
)
def test_get_then_insert_on_dict_subclasses_across_an_await(
    make: Callable[[], dict[str, object]],
) -> None:
    async def target() -> None:
        table = make()

        async def ensure(key: str) -> object:
            value = table.get(key)
            if value is None:
                await asyncio.sleep(0)  # the fetch
                value = table[key] = object()
            return value

        await asyncio.gather(ensure("k"), ensure("k"))

    finding = detect(target)
    assert finding.kind == "atomicity-violation"
    assert {a.target for a in finding.accesses} == {"table['k']"}


def test_defaultdict_reads_never_insert_keys() -> None:
    made: list[str] = []

    def factory() -> list[str]:
        made.append("x")
        return []

    async def target() -> None:
        table: collections.defaultdict[str, list[str]] = collections.defaultdict(factory)

        async def add(key: str) -> None:
            if table.get("other") is None:  # .get never calls the factory
                table[key].append(key)
            await asyncio.sleep(0)
            table[key].append(key)

        await asyncio.gather(add("a"), add("b"))

    racecheck.check(target, schedules=5, strategy="random")
    without = len(made)
    made.clear()
    racecheck.check(target, schedules=5, strategy="random", detect=True)
    assert len(made) == without > 0


MAPPING_LIBRARY = '''
import threading
from collections.abc import MutableMapping


class Cache(MutableMapping):
    """A mapping over a private dict, as caching libraries write them."""

    def __init__(self):
        self.__data = {}

    def __getitem__(self, key):
        return self.__data[key]

    def __setitem__(self, key, value):
        self.__data[key] = value

    def __delitem__(self, key):
        del self.__data[key]

    def __iter__(self):
        return iter(self.__data)

    def __len__(self):
        return len(self.__data)


def cached(func):
    """Look up under the lock, compute outside it, store under it again."""
    cache, lock = Cache(), threading.Lock()

    def wrapper(key):
        with lock:
            try:
                return cache[key]
            except KeyError:
                pass
        value = func(key)
        with lock:
            cache[key] = value
        return value

    return wrapper


def cached_locked(func):
    cache, lock = Cache(), threading.Lock()

    def wrapper(key):
        with lock:
            try:
                return cache[key]
            except KeyError:
                value = cache[key] = func(key)
                return value

    return wrapper
'''


@pytest.fixture
def mapping_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    package = tmp_path / "site-packages" / "rc14mapping"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(MAPPING_LIBRARY)
    monkeypatch.syspath_prepend(str(package.parent))
    return "rc14mapping"


def _cached_threads(name: str, decorator: str) -> Callable[[], None]:
    def target() -> None:
        module = __import__(name)
        load = getattr(module, decorator)(lambda key: {"key": key})
        _in_threads(lambda _: load("db"), 2)

    return target


def test_mapping_lookup_then_store_in_separate_critical_sections(mapping_library: str) -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(
            _cached_threads(mapping_library, "cached"),
            detect=True,
            schedules=100,
            trace_packages=[mapping_library],
        )
    finding = info.value.cause.finding  # type: ignore[union-attr]
    assert finding.kind == "atomicity-violation", finding
    first, middle, last = finding.accesses
    assert "return self.__data[key]" in first.line
    assert "self.__data[key] = value" in middle.line == last.line
    assert first.actor == last.actor != middle.actor


def test_mapping_lookup_and_store_in_one_critical_section_is_clean(
    mapping_library: str,
) -> None:
    report = racecheck.check(
        _cached_threads(mapping_library, "cached_locked"),
        detect=True,
        schedules=60,
        trace_packages=[mapping_library],
    )
    assert report.schedules_run == 60 or report.exhausted


# -- a read outside the lock that decides a removal under it ----------------------------


class Jobs:
    def __init__(self, count: int) -> None:
        self.items = list(range(count))
        self.lock = threading.Lock()
        self.done: list[int] = []

    def take_checked_outside(self) -> None:
        if self.items:  # decides the pop below, but outside the lock
            with self.lock:
                self.done.append(self.items.pop())

    def take_checked_inside(self) -> None:
        with self.lock:
            if self.items:
                self.done.append(self.items.pop())

    def drain(self) -> None:
        while True:
            with self.lock:
                if not self.items:
                    return
                self.done.append(self.items.pop())


def _jobs(method: str, count: int) -> Callable[[], None]:
    def target() -> None:
        jobs = Jobs(count)

        def work(_: int) -> None:
            with contextlib.suppress(IndexError):  # the symptom: the detector must see it first
                getattr(jobs, method)()

        _in_threads(work, 2)

    return target


def test_emptiness_checked_outside_the_lock_then_pop_under_it() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(_jobs("take_checked_outside", 1), detect=True, schedules=100)
    finding = info.value.cause.finding  # type: ignore[union-attr]
    assert finding.pattern == "stale check", finding
    first, _, last = finding.accesses
    assert "if self.items:" in first.line and ".pop()" in last.line
    assert first.actor == last.actor and not first.locks and last.locks


@pytest.mark.parametrize(("method", "count"), [("take_checked_inside", 1), ("drain", 4)])
def test_emptiness_checked_under_the_lock_is_clean(method: str, count: int) -> None:
    clean(_jobs(method, count), schedules=60)
