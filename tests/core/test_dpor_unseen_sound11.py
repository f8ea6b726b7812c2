"""DPOR never calls a program verified when state changed where nothing recorded it.

Three families went unseen, and DPOR said "verified" after one or two schedules:

* untraced library code that no traced frame called: an actor whose entry
  point is a library function (``Thread(target=lib.fn)``, a pool's
  ``submit(lib.fn)``, a library coroutine handed to ``create_task`` or a trio
  nursery), a callback a stdlib helper runs (``ExitStack.callback(lib.fn)``),
  a dataclass's ``default_factory``. A call from traced code into untraced
  code was a blind spot already; reached through the stdlib or racecheck's
  own machinery, it was not.
* what the stdlib calls for the traced code: a C method or quiet stdlib code
  as a thread's target, a pool's work or an exit callback
  (``Thread(target=d.update)``), a slot wrapper or a partial handed over
  (``default_factory=itertools.count().__next__``): C calls were recorded only
  from traced frames, and slot wrappers fire no profile event at all.
* stdlib code racecheck takes for quiet (it changes only what it is handed)
  that reads or writes global state nobody hands it: ``os.getenv`` reads
  ``os.environ``, a logger's effective level is its ancestors' levels and the
  process-wide ``logging.disable``, a ``functools.singledispatch`` function
  looks up a registry its ``register`` fills.

Each program below passes in its natural order and fails in another that
exhaustive search reaches within a few schedules.
"""

from __future__ import annotations

import abc
import asyncio
import collections
import concurrent.futures
import contextlib
import dataclasses
import functools
import importlib.util
import itertools
import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import racecheck

#: the untraced library, loaded from a site-packages directory by the fixture below
#: (held in a dict: a module bound at this module's top level would be code under test,
#: which racecheck traces), and the dict it writes
_LIB: dict[str, ModuleType] = {}
_lib_state: dict[str, int] = {}

_LIBRARY_SOURCE = '''
"""A third-party library racecheck does not trace: its path holds site-packages."""
STATE = {"x": 0}


def put(value):
    STATE["x"] = value


async def put_async(value):
    STATE["x"] = value


def make_after_put():
    STATE["x"] = 1
    return []


class Finder:
    """An import hook, as setuptools' _distutils_hack installs one: it finds nothing."""

    def find_spec(self, name, path, target=None):
        return None
'''


@pytest.fixture(scope="module", autouse=True)
def _untraced_library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    folder = tmp_path_factory.mktemp("lib") / "site-packages"
    folder.mkdir()
    path = Path(folder, "racecheck_untraced_lib.py")
    path.write_text(_LIBRARY_SOURCE)
    spec = importlib.util.spec_from_file_location("racecheck_untraced_lib", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    global _lib_state
    _LIB["lib"], _lib_state = module, module.STATE
    yield
    _LIB.clear()


_seen: dict[str, Any] = {}


def _read_state() -> None:
    _seen["x"] = _lib_state["x"]


def _library_writes_before_a_read(
    start_writer: Callable[[], Callable[[], None]],
) -> Callable[[], None]:
    """The library's write (in the writer started first) and a traced read in another thread:
    the natural order reads 1, the other order 0."""

    def target() -> None:
        _lib_state["x"] = 0
        finish = start_writer()
        reader = threading.Thread(target=_read_state)
        reader.start()
        reader.join()
        finish()
        assert _seen["x"] == 1, "the read came first"

    return target


def _as_thread_target() -> Callable[[], None]:
    worker = threading.Thread(target=_LIB["lib"].put, args=(1,))
    worker.start()
    return worker.join


def _submitted_to_a_pool() -> Callable[[], None]:
    pool = concurrent.futures.ThreadPoolExecutor(1)
    future = pool.submit(_LIB["lib"].put, 1)

    def finish() -> None:
        future.result()
        pool.shutdown()

    return finish


def _as_a_default_factory() -> Callable[[], None]:
    @dataclasses.dataclass
    class Made:
        items: list[int] = dataclasses.field(default_factory=_LIB["lib"].make_after_put)

    worker = threading.Thread(target=Made)
    worker.start()
    return worker.join


def _exit_callback() -> None:
    with contextlib.ExitStack() as stack:
        stack.callback(_LIB["lib"].put, 1)


def _as_an_exit_callback() -> Callable[[], None]:
    worker = threading.Thread(target=_exit_callback)
    worker.start()
    return worker.join


async def _read_late(pause: Callable[[], Any]) -> None:
    await pause()
    await pause()
    _read_state()


async def _library_task_on_asyncio() -> None:
    _lib_state["x"] = 0
    task = asyncio.create_task(_LIB["lib"].put_async(1))
    await asyncio.gather(task, _read_late(functools.partial(asyncio.sleep, 0)))
    assert _seen["x"] == 1, "the read came first"


async def _library_task_on_trio() -> None:
    import trio

    _lib_state["x"] = 0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_LIB["lib"].put_async, 1)
        nursery.start_soon(_read_late, functools.partial(trio.sleep, 0))
    assert _seen["x"] == 1, "the read came first"


UNTRACED_ENTRIES: dict[str, tuple[str, Callable[..., Any]]] = {
    "Thread(target=lib.fn)": ("threads", _library_writes_before_a_read(_as_thread_target)),
    "pool.submit(lib.fn)": ("threads", _library_writes_before_a_read(_submitted_to_a_pool)),
    "default_factory=lib.fn": ("threads", _library_writes_before_a_read(_as_a_default_factory)),
    "ExitStack.callback(lib.fn)": ("threads", _library_writes_before_a_read(_as_an_exit_callback)),
    "create_task(lib coroutine)": ("asyncio", _library_task_on_asyncio),
    "start_soon(lib coroutine)": ("trio", _library_task_on_trio),
}


@pytest.mark.parametrize("form", sorted(UNTRACED_ENTRIES))
def test_untraced_code_not_called_by_traced_code_is_found_or_not_verified(form: str) -> None:
    backend, target = UNTRACED_ENTRIES[form]
    if backend == "trio":
        pytest.importorskip("trio")
    try:
        report = racecheck.check(target, strategy="dpor", backend=backend, schedules=200)
    except racecheck.RaceFound:
        return
    assert not report.verified, report.notes
    assert any(
        "racecheck_untraced_lib.put" in note or "racecheck_untraced_lib.make" in note
        for note in report.notes
    ), report.notes


def _quiet_entries() -> None:
    """Threads, a pool, a dataclass factory and exit callbacks, all of them stdlib or traced."""

    @dataclasses.dataclass
    class Made:
        items: list[int] = dataclasses.field(default_factory=list)

    def exit_callback() -> None:
        with contextlib.ExitStack() as stack:
            stack.callback(_read_state)

    _lib_state["x"] = 0
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(_read_state).result()
    workers = [threading.Thread(target=Made), threading.Thread(target=exit_callback)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def test_stdlib_entry_points_and_callbacks_are_no_blind_spot() -> None:
    report = racecheck.check(_quiet_entries, strategy="dpor", backend="threads", schedules=200)
    assert report.verified, report.notes


async def _traced_task_on_trio() -> None:
    import trio

    async with trio.open_nursery() as nursery:
        nursery.start_soon(_read_late, functools.partial(trio.sleep, 0))
        nursery.start_soon(_read_late, functools.partial(trio.sleep, 0))


def test_trio_and_its_dependencies_are_no_blind_spot() -> None:
    """trio's runner calls outcome and sortedcontainers between the user's steps."""
    pytest.importorskip("trio")
    _lib_state["x"] = 0
    report = racecheck.check(_traced_task_on_trio, strategy="dpor", backend="trio", schedules=200)
    assert report.verified, report.notes


# -- C methods and quiet stdlib code handed over: called by the stdlib, for the traced code ---

_table: dict[str, int] = {"x": 0}
_counted: collections.Counter[str] = collections.Counter()


def _read_table() -> None:
    _seen["x"] = _table["x"]


def _read_counted() -> None:
    _seen["x"] = _counted.get("x", 0)


def _handed_over_before_a_read(
    start_writer: Callable[[], Callable[[], None]], read: Callable[[], None]
) -> Callable[[], None]:
    def target() -> None:
        _table["x"] = 0
        _counted.clear()
        finish = start_writer()
        reader = threading.Thread(target=read)
        reader.start()
        reader.join()
        finish()
        assert _seen["x"] == 1, "the read came first"

    return target


def _update_as_thread_target() -> Callable[[], None]:
    worker = threading.Thread(target=_table.update, args=({"x": 1},))
    worker.start()
    return worker.join


def _update_submitted() -> Callable[[], None]:
    pool = concurrent.futures.ThreadPoolExecutor(1)
    future = pool.submit(_table.update, {"x": 1})

    def finish() -> None:
        future.result()
        pool.shutdown()

    return finish


def _update_on_exit() -> None:
    with contextlib.ExitStack() as stack:
        stack.callback(_table.update, {"x": 1})


def _update_as_exit_callback() -> Callable[[], None]:
    worker = threading.Thread(target=_update_on_exit)
    worker.start()
    return worker.join


def _setitem_as_thread_target() -> Callable[[], None]:
    worker = threading.Thread(target=_table.__setitem__, args=("x", 1))
    worker.start()
    return worker.join


def _partial_submitted() -> Callable[[], None]:
    pool = concurrent.futures.ThreadPoolExecutor(1)
    future = pool.submit(functools.partial(_table.update, x=1))

    def finish() -> None:
        future.result()
        pool.shutdown()

    return finish


def _counter_update_as_thread_target() -> Callable[[], None]:
    worker = threading.Thread(target=collections.Counter.update, args=(_counted, "x"))
    worker.start()
    return worker.join


HANDED_OVER = {
    "Thread(target=d.update)": (_update_as_thread_target, _read_table),
    "pool.submit(d.update)": (_update_submitted, _read_table),
    "ExitStack.callback(d.update)": (_update_as_exit_callback, _read_table),
    "Thread(target=Counter.update)": (_counter_update_as_thread_target, _read_counted),
    "Thread(target=d.__setitem__)": (_setitem_as_thread_target, _read_table),
    "pool.submit(partial(d.update))": (_partial_submitted, _read_table),
}


@pytest.mark.parametrize("form", sorted(HANDED_OVER))
def test_dpor_finds_a_race_in_what_the_stdlib_calls_for_traced_code(form: str) -> None:
    target = _handed_over_before_a_read(*HANDED_OVER[form])
    with pytest.raises(racecheck.RaceFound):
        report = racecheck.check(target, strategy="dpor", backend="threads", schedules=200)
        pytest.fail(f"DPOR passed an order bug: {report.notes}")


_numbered: dict[str, Any] = {}


def _make_numbered(name: str) -> None:
    _numbered[name] = _numbered["class"]()


def _numbered_in_thread_order() -> None:
    """A dataclass numbers its instances with a shared counter's ``__next__``: the
    instance made in the first thread gets 0 in the natural order only."""

    @dataclasses.dataclass
    class Numbered:
        number: int = dataclasses.field(default_factory=itertools.count().__next__)

    _numbered.update({"class": Numbered, "a": None, "b": None})
    workers = [threading.Thread(target=_make_numbered, args=(name,)) for name in "ab"]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert _numbered["a"].number == 0, "the second thread's instance came first"


def test_dpor_finds_a_race_in_a_dataclass_default_factory() -> None:
    with pytest.raises(racecheck.RaceFound):
        report = racecheck.check(
            _numbered_in_thread_order, strategy="dpor", backend="threads", schedules=200
        )
        pytest.fail(f"DPOR passed an order bug: {report.notes}")


# -- quiet stdlib code with global state of its own -------------------------------------------

_ENV_KEY = "RACECHECK_TEST_SOUND11"
_parent = logging.getLogger("racecheck_test_sound11")
_child = logging.getLogger("racecheck_test_sound11.child")


def _set_env() -> None:
    os.environ[_ENV_KEY] = "1"


def _getenv() -> None:
    _seen["x"] = os.getenv(_ENV_KEY)


def _expandvars() -> None:
    _seen["x"] = os.path.expandvars("$" + _ENV_KEY)


def _set_parent_level() -> None:
    _parent.setLevel(logging.DEBUG)


def _effective_level() -> None:
    _seen["x"] = _child.getEffectiveLevel()


def _child_enabled() -> None:
    _seen["x"] = _child.isEnabledFor(logging.DEBUG)


def _disable_logging() -> None:
    logging.disable(logging.CRITICAL)


def _parent_enabled() -> None:
    _seen["x"] = _parent.isEnabledFor(logging.ERROR)


def _reset_logging() -> None:
    logging.disable(logging.NOTSET)
    _parent.setLevel(logging.WARNING)


_dispatch: dict[str, Any] = {}


def _reset_dispatch() -> None:
    @functools.singledispatch
    def kind(value: object) -> str:
        return "object"

    _dispatch["kind"] = kind


def _register_int() -> None:
    _dispatch["kind"].register(int, lambda value: "int")


def _dispatch_int() -> None:
    _seen["x"] = _dispatch["kind"](1)


class _Plain:
    pass


def _reset_abc() -> None:
    _dispatch["abc"] = abc.ABCMeta("Fresh", (), {})


def _register_plain() -> None:
    _dispatch["abc"].register(_Plain)


def _isinstance_plain() -> None:
    _seen["x"] = isinstance(_Plain(), _dispatch["abc"])


def _write_then_read(
    write: Callable[[], None], read: Callable[[], None], reset: Callable[[], None], want: Any
) -> Callable[[], None]:
    """``write`` in the first thread, ``read`` in the second: the natural order gives ``want``."""

    def target() -> None:
        reset()
        workers = [threading.Thread(target=write), threading.Thread(target=read)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        reset()
        assert _seen["x"] == want, "the read came first"

    return target


def _reset_env() -> None:
    os.environ[_ENV_KEY] = "0"


HIDDEN_STATE = {
    "os.getenv": (_set_env, _getenv, _reset_env, "1"),
    "os.path.expandvars": (_set_env, _expandvars, _reset_env, "1"),
    "a parent's level": (_set_parent_level, _effective_level, _reset_logging, logging.DEBUG),
    "a parent's level, cached": (_set_parent_level, _child_enabled, _reset_logging, True),
    "logging.disable": (_disable_logging, _parent_enabled, _reset_logging, False),
    "singledispatch register": (_register_int, _dispatch_int, _reset_dispatch, "int"),
    "ABCMeta.register": (_register_plain, _isinstance_plain, _reset_abc, True),
}


@pytest.mark.parametrize(
    "detect", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["plain", "detect"]
)
@pytest.mark.parametrize("form", sorted(HIDDEN_STATE))
def test_dpor_finds_a_race_on_quiet_stdlib_state(form: str, detect: bool) -> None:
    target = _write_then_read(*HIDDEN_STATE[form])
    try:
        with pytest.raises(racecheck.RaceFound):
            report = racecheck.check(
                target, strategy="dpor", backend="threads", schedules=200, detect=detect
            )
            pytest.fail(f"DPOR passed an order bug: {report.notes}")
    finally:
        _reset_logging()
        os.environ.pop(_ENV_KEY, None)


def _read_quiet_state(reader: str, look: bool) -> None:
    if look:
        _seen[reader] = (os.getenv(_ENV_KEY), os.path.expanduser("~"), _dispatch["kind"](1))
    else:
        _seen[reader] = (None, "~", "object")


def _two_readers(look: bool) -> racecheck.Report:
    def target() -> None:
        _reset_dispatch()
        _seen.update(a=None, b=None)  # stores of new keys would change its shape
        workers = [threading.Thread(target=_read_quiet_state, args=(r, look)) for r in "ab"]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()

    return racecheck.check(target, strategy="dpor", backend="threads", schedules=200)


def test_reading_quiet_stdlib_state_adds_no_interleavings() -> None:
    """Reads commute: two threads that look at the environment and dispatch are explored in
    as many orders as two threads that do not."""
    looking, not_looking = _two_readers(True), _two_readers(False)
    assert looking.verified, looking.notes
    assert looking.schedules_run == not_looking.schedules_run, (looking.notes, not_looking.notes)


def _imports_lazily() -> None:
    """Each thread imports a module that is not there, asking every import hook."""

    def work() -> None:
        try:
            import racecheck_no_such_module  # type: ignore[import-not-found]  # noqa: F401
        except ImportError:
            pass
        mine = [0]
        mine[0] += 1

    workers = [threading.Thread(target=work) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def test_an_import_hook_a_library_installed_is_no_blind_spot() -> None:
    """The import system calls the hooks installed packages put in ``sys.meta_path``
    (setuptools' _distutils_hack is in every venv it made), under the import lock, for
    their own caches: a lazy import in the target must not cost its verification."""
    import sys

    finder = _LIB["lib"].Finder()
    sys.meta_path.insert(0, finder)
    try:
        report = racecheck.check(_imports_lazily, strategy="dpor", backend="threads")
    finally:
        sys.meta_path.remove(finder)
    assert report.verified, report.notes
