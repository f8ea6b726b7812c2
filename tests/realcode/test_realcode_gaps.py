"""The smallest programs that reproduce what the real-library suite caught racecheck missing.

These need no third-party library, so the normal suite runs them. Each runs in
a fresh interpreter with a hard timeout: a stalled run leaves a thread blocked
in C, which must not wedge the test process. A gap racecheck still has is
``xfail(strict=True)``, so a fix turns it into an XPASS that fails the suite
and asks for the marker to go (multiprocessing locks and first-use threads
went that way).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# tqdm's write lock is a pair: a multiprocessing RLock and a threading RLock,
# both made at import. A multiprocessing lock is a ``_multiprocessing.SemLock``,
# not a ``_thread`` lock, so the adoption walk leaves it alone.
MULTIPROCESSING_LOCK = """
import multiprocessing
import threading

import racecheck

_LOCK = multiprocessing.{factory}()
count = 0


def bump():
    global count
    with _LOCK:
        seen = count
        count = seen + 1


def target():
    global count
    count = 0
    workers = [threading.Thread(target=bump) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert count == 2


report = racecheck.check(target, schedules=30, watchdog=2)
print("CLEAN", report.schedules_run)
"""


# tqdm's first bar starts a monitor thread that lives on (``tqdm.monitor``).
# In the exploring process only the first schedule starts it; a fresh process
# replaying a token found later starts it again: one actor more than recorded.
FIRST_USE_THREAD = """
import sys
import threading

import racecheck


class Registry:
    monitor = None
    items = set()

    def __init__(self):
        cls = type(self)
        if cls.monitor is None or not cls.monitor.is_alive():
            stop = threading.Event()
            cls.monitor = threading.Thread(target=self._watch, args=(stop,), daemon=True)
            cls.monitor.start()
        cls.items.add(self)
        self.pos = len([i for i in cls.items if i is not self])

    @staticmethod
    def _watch(stop):
        while not stop.wait(10):
            pass


def target():
    Registry.items = set()
    made = []
    workers = [threading.Thread(target=lambda: made.append(Registry().pos)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(made) == [0, 1], made


if sys.argv[1] == "check":
    try:
        racecheck.check(target, schedules=300, watchdog=5)
    except racecheck.RaceFound as exc:
        print("FOUND", exc.schedules_run, exc.schedule)
else:
    try:
        racecheck.replay(target, sys.argv[2])
    except racecheck.RaceFound:
        print("FAILS AGAIN")
"""


# The sync/async bridge (janus, any queue fed from the loop to a worker thread):
# the worker waits on a threading.Condition that a coroutine notifies later.
EXECUTOR_WAITS_FOR_LOOP = """
import asyncio
import threading

import racecheck


async def handoff():
    cond = threading.Condition()
    items = []

    def consumer():
        with cond:
            while not items:
                cond.wait()
            items.pop()

    worker = asyncio.create_task(asyncio.to_thread(consumer))
    await asyncio.sleep(0.01)
    with cond:
        items.append(1)
        cond.notify()
    await worker


asyncio.run(handoff())  # fine without racecheck
report = racecheck.check(handoff, schedules=20, watchdog=2)
print("CLEAN", report.schedules_run)
"""


# multimethod 1.9: a dict subclass that redefines ``__setitem__`` in Python (to
# validate what is registered) is still iterated and filled by the builtin's
# own code: ``for k in self`` and ``self.setdefault(...)`` never reach the
# subclass's methods. Two threads looking up new keys: one stores while the
# other is still iterating ("dictionary changed size during iteration").
# multimethod stores with ``self.setdefault(types, *funcs)``: a call with
# unpacked arguments (CALL_FUNCTION_EX), not a plain call. Its fix (1.9.1)
# iterates ``list(self)``, a copy made in one C call: that races with nothing.
SUBCLASS_ITERATED = """
import sys
import threading

import racecheck


def below(a, b):
    return a < b


class Registry(dict):
    def __setitem__(self, key, value):
        if not isinstance(key, int):
            raise TypeError(key)
        super().__setitem__(key, value)

    def lookup(self, key):
        smaller = [k for k in {keys} if below(k, key)]
        return self.setdefault({store})


def target():
    registry = Registry()
    registry[1] = 0
    registry[2] = 1
    failures = []

    def look(key):
        try:
            registry.lookup(key)
        except RuntimeError as exc:
            failures.append(exc)

    workers = [threading.Thread(target=look, args=(key,)) for key in (5, 6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    {check}


try:
    report = racecheck.check(target, schedules=1000, {options})
except racecheck.RaceFound as exc:
    print("FOUND", exc.kind, exc.schedules_run)
    print(exc)
else:
    print("CLEAN", report.schedules_run, "verified" if report.verified else "not verified")
"""


def run_script(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


@pytest.mark.parametrize("factory", ["Lock", "RLock"])
def test_module_level_multiprocessing_lock_is_scheduled(tmp_path: Path, factory: str) -> None:
    done = run_script(tmp_path, MULTIPROCESSING_LOCK.format(factory=factory))
    assert "StuckError" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert "CLEAN 30" in done.stdout, done.stdout


def test_token_found_after_first_use_init_replays_in_a_fresh_process(tmp_path: Path) -> None:
    found = run_script(tmp_path, FIRST_USE_THREAD, "check")
    assert found.returncode == 0, found.stderr
    words = found.stdout.split()
    assert words[:1] == ["FOUND"], found.stdout + found.stderr
    assert int(words[1]) > 1, "found in the first schedule: this program shows nothing"
    replayed = run_script(tmp_path, FIRST_USE_THREAD, "replay", words[2])
    assert "FAILS AGAIN" in replayed.stdout, replayed.stdout + replayed.stderr


def test_executor_work_that_waits_for_the_loop_is_scheduled(tmp_path: Path) -> None:
    done = run_script(tmp_path, EXECUTOR_WAITS_FOR_LOOP)
    assert "StuckError" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert "CLEAN 20" in done.stdout, done.stdout


def test_dpor_sees_a_dict_subclass_iterated_while_another_thread_stores(tmp_path: Path) -> None:
    """The iteration is a read of the whole dict even though the class redefines
    ``__setitem__``: without it DPOR called this program verified in 4 schedules."""
    source = SUBCLASS_ITERATED.format(
        keys="self",
        store="key, len(smaller)",
        check="assert not failures, failures",
        options='strategy="dpor"',
    )
    done = run_script(tmp_path, source)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("FOUND exception"), done.stdout + done.stderr
    assert "dictionary changed size during iteration" in done.stdout, done.stdout


@pytest.mark.parametrize("store", ["key, len(smaller)", "key, *[len(smaller)]"])
def test_detector_flags_a_dict_subclass_iterated_while_another_thread_stores(
    tmp_path: Path, store: str
) -> None:
    """The same program, its failures swallowed: the detector alone reports the race,
    whether the store's arguments are spelled out or unpacked."""
    source = SUBCLASS_ITERATED.format(keys="self", store=store, check="pass", options="detect=True")
    done = run_script(tmp_path, source)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("FOUND data-race"), done.stdout + done.stderr
    assert "iterated self" in done.stdout, done.stdout
    assert "called .setdefault() on self" in done.stdout, done.stdout


# The same lookup on a plain dict, its loop over a copy: ``keys`` is the copy.
COPY_THEN_STORE = """
import threading

import racecheck


def target():
    cache = {1: "a", 2: "b"}

    def look(key):
        smaller = [k for k in KEYS if k < key]
        cache.setdefault(key, key)

    workers = [threading.Thread(target=look, args=(key,)) for key in (5, 6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


try:
    report = racecheck.check(target, schedules=300, detect=True)
except racecheck.RaceFound as exc:
    print("FOUND", exc.kind, exc.schedules_run)
    print(exc)
else:
    print("CLEAN", report.schedules_run)
"""


@pytest.mark.parametrize("keys", ["list(cache)", "tuple(cache)", "sorted(cache)"])
def test_a_copy_made_in_one_call_does_not_race_with_a_store(tmp_path: Path, keys: str) -> None:
    """multimethod 1.9.1's fix: the loop runs over a copy, taken in one C call, so
    another thread's ``setdefault`` lands before or after it, never inside. The detector
    called that an unsynchronised data race. (A value worked out from the copy and
    stored with ``setdefault`` is clean too; a count is not: see the tests below.)"""
    done = run_script(tmp_path, COPY_THEN_STORE.replace("KEYS", keys))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("CLEAN"), done.stdout + done.stderr


def test_a_loop_over_the_container_itself_still_races_with_a_store(tmp_path: Path) -> None:
    """The other side of the copy rule: the loop reads the dict between its steps."""
    done = run_script(tmp_path, COPY_THEN_STORE.replace("KEYS", "cache"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("FOUND data-race"), done.stdout + done.stderr


# multimethod 1.9.1's lookup, without the library: the registered entries (str
# keys) and the cache of answers (int keys) share one dict. A lookup copies the
# keys in one call, works out its answer from the registered ones and stores it
# with ``setdefault``. Another thread's answer, unordered with the copy, is
# another key: the store only inserts if absent, so it cannot lose that entry.
# ``COUNT`` spells the partners: an answer worked out from how many entries
# there are (numbering the keys as they come) is a real bug, two keys get one
# number, and a cache bounded by its size lets both threads in past the bound.
ANSWER_FROM_A_COPY = """
import threading

import racecheck


def target():
    cache = {"a": 1, "b": 2}
    numbers = []

    def look(key):
        STORE

    workers = [threading.Thread(target=look, args=(key,)) for key in (5, 6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


try:
    report = racecheck.check(target, schedules=300, detect=True)
except racecheck.RaceFound as exc:
    print("FOUND", exc.kind, exc.schedules_run)
    print(exc)
else:
    print("CLEAN", report.schedules_run)
"""


@pytest.mark.parametrize(
    "store",
    [
        "cache.setdefault(key, [k for k in list(cache) if isinstance(k, str)])",
        "found = {k for k in sorted(cache, key=str) if isinstance(k, str)}\n"
        "        for k in found:\n"
        "            cache.setdefault(key, k)",
        "keys = list(cache)\n"
        "        answer = [k for k in keys if isinstance(k, str)]\n"
        "        cache.setdefault(key, answer)",
    ],
    ids=["value", "loop-over-answer", "copy-kept"],
)
def test_an_answer_from_a_copy_stored_with_setdefault_is_clean(tmp_path: Path, store: str) -> None:
    """multimethod 1.9.1 under the detector: the copy decides only what ``setdefault``
    inserts, and ``setdefault`` inserts only if the key is absent, so another
    thread's entry stored meanwhile is not lost. The detector reported the copy as
    deciding the store ("that read decided: ... called .setdefault()")."""
    done = run_script(tmp_path, ANSWER_FROM_A_COPY.replace("STORE", store))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("CLEAN"), done.stdout + done.stderr


@pytest.mark.parametrize(
    "store",
    [
        "cache.setdefault(key, len(cache))",
        "if len(cache) < 3:\n            cache.setdefault(key, key)",
        "count = len(list(cache))\n        cache.setdefault(key, count)",
        "cache[key] = [k for k in list(cache) if isinstance(k, str)]",
    ],
    ids=["numbered", "bounded", "numbered-from-copy", "plain-store"],
)
def test_an_answer_from_the_count_stored_with_setdefault_still_races(
    tmp_path: Path, store: str
) -> None:
    """The partners: a count (``len``, also of a copy) is exactly what another
    thread's insert changes, so an entry numbered by it, or let in under a bound,
    is a real bug; and a plain store is not an insert-if-absent."""
    done = run_script(tmp_path, ANSWER_FROM_A_COPY.replace("STORE", store))
    assert done.returncode == 0, done.stderr
    # the bounded cache may first show as the check made stale in one schedule
    kind = done.stdout.split()[:2]
    assert kind in (["FOUND", "data-race"], ["FOUND", "atomicity-violation"]), done.stdout


# aws-lambda-powertools 3.31.1: every call configures its persistence layer, which
# stores the circuit's settings under its lock and reads them back in a later
# critical section. Two threads store equal settings for one circuit: the second
# overwrites the first's with an equal value, so what the first reads back is what
# it stored. The detector compared only scalars and reported "overwritten before
# read"; a named tuple of equal immutable fields is now the same value to it
# (tests/detect/test_detector_equal_values.py holds the partners that stay reported).
EQUAL_SETTINGS = """
import threading
from typing import NamedTuple

import racecheck


class Settings(NamedTuple):
    max_age: int


class Store:
    def __init__(self):
        self._lock = threading.Lock()
        self._settings = {}

    def configure(self, name, max_age):
        with self._lock:
            self._settings[name] = Settings(max_age)

    def settings_for(self, name):
        with self._lock:
            return self._settings.get(name)


def target():
    store = Store()
    seen = []

    def call():
        store.configure("payments", MAX_AGE)
        seen.append(store.settings_for("payments"))

    workers = [threading.Thread(target=call) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert seen == [Settings(5), Settings(5)]


try:
    report = racecheck.check(target, detect=True, schedules=300)
    print("CLEAN", report.schedules_run)
except racecheck.RaceFound as exc:
    print("FOUND", exc.kind, str(exc).splitlines()[0])
"""


def test_equal_settings_overwritten_under_a_lock_are_not_a_race(tmp_path: Path) -> None:
    done = run_script(tmp_path, EQUAL_SETTINGS.replace("MAX_AGE", "5"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("CLEAN"), done.stdout


# loguru's handlers, without the library: copy-on-write. A logging thread reads
# ``core.handlers`` once, with no lock, and loops over that dict; a reconfiguring
# thread builds a new dict under the lock and stores it whole. The loop runs over
# the dict it read, which nobody changes after it is published (loguru 0.7.3).
# ``MUTATE_AFTER`` spells 0.7.2's bug: the dict is published, then popped from.
PUBLISHED_WHOLE = """
import threading

import racecheck


class Core:
    def __init__(self):
        self.lock = threading.Lock()
        self.handlers = {1: "stderr", 2: "file"}


def target():
    core = Core()
    seen = []

    def log():
        for handler in core.handlers.values():
            seen.append(handler)

    def remove_all():
        with core.lock:
            handlers = core.handlers.copy()
            for handler_id in list(handlers):
                if not MUTATE_AFTER:
                    handlers = handlers.copy()
                handlers.pop(handler_id)
                core.handlers = handlers

    workers = [threading.Thread(target=log), threading.Thread(target=remove_all)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


try:
    report = racecheck.check(target, schedules=300, detect=True)
    print("CLEAN", report.schedules_run)
except racecheck.RaceFound as exc:
    print("FOUND", exc.kind, str(exc).splitlines()[0])
"""


def test_a_dict_published_whole_does_not_race_with_its_readers(tmp_path: Path) -> None:
    done = run_script(tmp_path, PUBLISHED_WHOLE.replace("MUTATE_AFTER", "False"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("CLEAN"), done.stdout


def test_a_dict_mutated_after_it_is_published_races_with_its_readers(tmp_path: Path) -> None:
    """loguru 0.7.2: after the first pop the published dict is the one popped from."""
    done = run_script(tmp_path, PUBLISHED_WHOLE.replace("MUTATE_AFTER", "True"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("FOUND data-race"), done.stdout


# trio-websocket 0.10.2's reader task, without the library: it loops while a
# "reading" flag is set; ``aclose`` clears the flag and closes the stream, and
# the reader, finding the stream closed, clears the flag too. Both stores are
# the constant False: neither replaces a value the other computed.
STOP_FLAG_CLEARED_TWICE = """
import trio
import trio.testing

import racecheck


class Connection:
    def __init__(self):
        self.reading = True
        self.stream = trio.testing.memory_stream_pair()[0]


async def target():
    conn = Connection()

    async def reader():
        while conn.reading:
            try:
                await conn.stream.receive_some(10)
            except trio.ClosedResourceError:
                conn.reading = False  # the stream is gone: stop reading
                break

    async def closer():
        conn.reading = False
        await conn.stream.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        nursery.start_soon(closer)


try:
    report = racecheck.check(target, backend="trio", detect=True, schedules=100)
    print("CLEAN", report.schedules_run)
except racecheck.RaceFound as exc:
    print("FOUND", exc.kind, str(exc).splitlines()[0])
"""


def test_a_stop_flag_cleared_by_two_tasks_is_not_a_lost_update(tmp_path: Path) -> None:
    done = run_script(tmp_path, STOP_FLAG_CLEARED_TWICE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("CLEAN"), done.stdout


def test_different_settings_overwritten_under_a_lock_are_still_reported(tmp_path: Path) -> None:
    """The partner: two threads configuring one circuit differently read each other's."""
    program = EQUAL_SETTINGS.replace(
        "MAX_AGE", "5 + (threading.current_thread() is workers[0])"
    ).replace("    assert seen == [Settings(5), Settings(5)]\n", "")
    done = run_script(tmp_path, program)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("FOUND atomicity-violation"), done.stdout
    assert "overwritten before read" in done.stdout, done.stdout
