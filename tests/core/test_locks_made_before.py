"""Locks made before the run are scheduled like racecheck's own (issue: real code).

Each module under test is written to ``tmp_path`` and imported *before*
``racecheck.check`` runs, the way a library's module-level lock is made at
import time. Without adoption, the second thread to take such a lock blocks in
C and the run ends in a StuckError after the watchdog; with it, correct code
runs clean and buggy code is found.
"""

from __future__ import annotations

import importlib
import sys
import threading
import uuid
from pathlib import Path
from types import ModuleType

import pytest

import racecheck

WATCHDOG = 4.0


def load(tmp_path: Path, source: str) -> ModuleType:
    name = f"made_before_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(source)
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


def check(target: object, **options: object) -> racecheck.Report:
    options.setdefault("schedules", 60)
    options.setdefault("watchdog", WATCHDOG)
    return racecheck.check(target, strategy="random", **options)  # type: ignore[arg-type]


COUNTER_WITH = """
import threading
{header}

class Counter:
    def __init__(self):
        self.value = 0

counter = Counter()

def bump():
    with {lock}:
        seen = counter.value
        counter.value = seen + 1

def target():
    counter.value = 0
    threads = [threading.Thread(target=bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.value == 2, counter.value
"""


@pytest.mark.parametrize(
    ("header", "lock"),
    [
        ("_lock = threading.Lock()", "_lock"),
        ("_lock = threading.RLock()", "_lock"),
        ("_lock = threading.Condition()", "_lock"),
        ("_lock = threading.Semaphore(1)", "_lock"),
        ("_lock = threading.BoundedSemaphore(1)", "_lock"),
        ("from threading import Lock\n_lock = Lock()", "_lock"),
        ("class Registry:\n    lock = threading.Lock()", "Registry.lock"),
    ],
    ids=["Lock", "RLock", "Condition", "Semaphore", "BoundedSemaphore", "from-import", "class"],
)
def test_module_level_primitive_guards_the_counter(tmp_path: Path, header: str, lock: str) -> None:
    module = load(tmp_path, COUNTER_WITH.format(header=header, lock=lock))
    report = check(module.target)
    assert report.schedules_run == 60


def test_both_orders_of_taking_a_module_level_lock_are_explored(tmp_path: Path) -> None:
    """The adopted lock is a scheduling point in user code, as a lock made in the run is."""
    module = load(
        tmp_path,
        """
import threading
_lock = threading.Lock()
orders = set()

def target():
    order = []
    def take(name):
        with _lock:
            order.append(name)
    threads = [threading.Thread(target=take, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    orders.add("".join(order))
""",
    )
    check(module.target, schedules=40)
    assert module.orders == {"ab", "ba"}


def test_from_import_lock_made_at_call_time(tmp_path: Path) -> None:
    module = load(
        tmp_path,
        """
import threading
from threading import Lock

class Account:
    def __init__(self):
        self._lock = Lock()
        self.balance = 0

    def deposit(self, amount):
        with self._lock:
            current = self.balance
            self.balance = current + amount

def target():
    account = Account()
    threads = [threading.Thread(target=account.deposit, args=(n,)) for n in (10, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert account.balance == 15, account.balance
""",
    )
    check(module.target)
    assert module.Lock is threading.Lock, "the rebound factory was not put back"


def test_buggy_code_guarded_by_a_module_level_lock_is_still_found(tmp_path: Path) -> None:
    """The lock guards the write but not the read: a lost update across the lock."""
    module = load(
        tmp_path,
        """
import threading
_lock = threading.Lock()
state = {"value": 0}

def bump():
    seen = state["value"]
    with _lock:
        state["value"] = seen + 1

def target():
    state["value"] = 0
    threads = [threading.Thread(target=bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state["value"] == 2, state["value"]
""",
    )
    with pytest.raises(racecheck.RaceFound) as found:
        check(module.target, schedules=200)
    assert found.value.kind == "exception"
    racecheck_lock = module._lock
    assert type(racecheck_lock) is type(threading.Lock()), "the original lock was not put back"


def test_abba_on_module_level_locks_is_a_deadlock_not_a_stall(tmp_path: Path) -> None:
    module = load(
        tmp_path,
        """
import threading
a = threading.Lock()
b = threading.Lock()

def one():
    with a:
        with b:
            pass

def two():
    with b:
        with a:
            pass

def target():
    threads = [threading.Thread(target=one), threading.Thread(target=two)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
""",
    )
    with pytest.raises(racecheck.RaceFound) as found:
        check(module.target, schedules=200)
    assert found.value.kind == "deadlock"
    assert "a" in str(found.value) or "Lock" in str(found.value)


def test_queue_made_outside_the_target(tmp_path: Path) -> None:
    module = load(
        tmp_path,
        """
import queue
import threading
jobs = queue.Queue()
done = []

def consumer():
    while True:
        item = jobs.get()
        if item is None:
            return
        done.append(item)

def target():
    done.clear()
    worker = threading.Thread(target=consumer)
    worker.start()
    for n in range(3):
        jobs.put(n)
    jobs.put(None)
    worker.join()
    assert done == [0, 1, 2], done
""",
    )
    check(module.target)


def test_event_made_outside_the_target(tmp_path: Path) -> None:
    module = load(
        tmp_path,
        """
import threading
ready = threading.Event()
box = []

def producer():
    box.append(1)
    ready.set()

def target():
    ready.clear()
    box.clear()
    t = threading.Thread(target=producer)
    t.start()
    ready.wait()
    assert box == [1]
    t.join()
""",
    )
    check(module.target)


def test_logging_from_threads_with_a_user_handler(tmp_path: Path) -> None:
    """The handler's RLock (made before the run) is held while user code runs."""
    module = load(
        tmp_path,
        """
import logging
import threading

class ListHandler(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        seen = len(self.records)
        self.records.append(seen)

handler = ListHandler()
log = logging.getLogger("made_before_threads")
log.addHandler(handler)
log.propagate = False
log.setLevel(logging.INFO)

def work(n):
    log.info("work %s", n)

def target():
    handler.records.clear()
    threads = [threading.Thread(target=work, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert handler.records == [0, 1], handler.records
""",
    )
    check(module.target)


def test_cached_property_of_two_instances(tmp_path: Path) -> None:
    """3.11's functools.cached_property holds a class-wide RLock made at class creation."""
    module = load(
        tmp_path,
        """
import functools
import threading

class Config:
    def __init__(self, n):
        self.n = n
        self.calls = 0

    @functools.cached_property
    def value(self):
        self.calls += 1
        return self.n * 2

def target():
    configs = [Config(1), Config(2)]
    threads = [threading.Thread(target=lambda c=c: c.value) for c in configs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [c.value for c in configs] == [2, 4]
""",
    )
    check(module.target)


def test_lock_captured_in_a_closure(tmp_path: Path) -> None:
    lock = threading.Lock()
    state = {"value": 0}

    def bump() -> None:
        with lock:
            seen = state["value"]
            state["value"] = seen + 1

    def target() -> None:
        state["value"] = 0
        threads = [threading.Thread(target=bump) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert state["value"] == 2

    check(target)
    assert type(lock) is type(threading.Lock())


def test_lock_held_by_an_uncontrolled_thread_is_named(tmp_path: Path) -> None:
    module = load(
        tmp_path,
        """
import threading
outside_lock = threading.Lock()

def work():
    with outside_lock:
        pass

def target():
    t = threading.Thread(target=work)
    t.start()
    t.join()
""",
    )
    release = threading.Event()
    holding = threading.Event()

    def hold() -> None:
        with module.outside_lock:
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold, name="outsider")
    holder.start()
    holding.wait(5)
    try:
        with pytest.raises(racecheck.StuckError) as stuck:
            check(module.target, watchdog=1.0, schedules=5)
    finally:
        release.set()
        holder.join(5)
    message = str(stuck.value)
    assert "outside_lock" in message
    assert "\n" not in message.strip()


def test_nothing_adopted_outlives_the_run(tmp_path: Path) -> None:
    module = load(
        tmp_path,
        """
import threading
from threading import Condition, RLock
lock = threading.Lock()
rlock = RLock()
cond = Condition()

class Holder:
    def __init__(self):
        self.lock = threading.Lock()

holder = Holder()

def target():
    def work():
        with lock, rlock, cond, holder.lock:
            pass
    t = threading.Thread(target=work)
    t.start()
    t.join()
""",
    )
    before = {
        "lock": module.lock,
        "rlock": module.rlock,
        "cond_lock": module.cond._lock,
        "cond_acquire": module.cond.acquire,
        "holder": module.holder.lock,
    }
    check(module.target, schedules=10)
    assert module.lock is before["lock"]
    assert module.rlock is before["rlock"]
    assert module.cond._lock is before["cond_lock"]
    assert module.cond.acquire == before["cond_acquire"]
    assert type(module.cond.acquire.__self__) is type(threading.RLock())
    assert module.holder.lock is before["holder"]
    assert module.Condition is threading.Condition
    assert module.RLock is threading.RLock
    assert threading._allocate_lock is __import__("_thread").allocate_lock  # type: ignore[attr-defined]


def test_multiprocessing_locks_shared_by_threads(tmp_path: Path) -> None:
    """tqdm keeps a multiprocessing RLock next to its thread lock, made lazily."""
    module = load(
        tmp_path,
        """
import multiprocessing
import threading
made_early = multiprocessing.RLock()
state = {}

def bump(lock, key):
    with lock:
        seen = state[key]
        state[key] = seen + 1

def target():
    state.update(early=0, late=0)
    made_late = multiprocessing.Lock()
    threads = [
        threading.Thread(target=bump, args=args)
        for args in [(made_early, "early"), (made_late, "late")] * 2
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state == {"early": 2, "late": 2}, state
""",
    )
    check(module.target)
    assert type(module.made_early._semlock).__module__ == "_multiprocessing"


def test_a_finalizer_takes_no_scheduling_point(tmp_path: Path) -> None:
    """A ``__del__`` runs where the last reference goes: no switch inside it."""
    module = load(
        tmp_path,
        """
import threading
closed = []

class Resource:
    def __del__(self):
        seen = len(closed)
        closed.append(seen)

def work():
    Resource()  # finalised right here, mid-statement

def target():
    closed.clear()
    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert closed == [0, 1], closed
""",
    )
    check(module.target, schedules=100)


class _ModuleIsAProperty:
    """Some libraries give their classes a computed ``__module__``."""

    __module__ = property(lambda self: "somewhere")  # type: ignore[assignment]

    def __init__(self) -> None:
        self.value = 0


def test_a_class_whose_module_is_not_a_string_is_walked_past() -> None:
    import racecheck

    shared = _ModuleIsAProperty()

    def target() -> None:
        shared.value += 1

    report = racecheck.check(target, schedules=3)
    assert report.schedules_run >= 1


# -- a run cut off inside a ``with`` block ----------------------------------------------

CUT_OFF = """
import threading

LOCK = threading.{kind}()
STATE = {{}}


def work():
    with LOCK:
        STATE["x"] = STATE.get("x", 0) + 1
    STATE["y"] = 1


def target():
    STATE.clear()
    t = threading.Thread(target=work)
    t.start()
    work()
    t.join()
"""


@pytest.mark.parametrize("kind", ["Lock", "RLock", "Semaphore", "BoundedSemaphore"])
def test_a_run_cut_off_at_any_step_leaves_no_lock_made_before_it_held(
    tmp_path: Path, kind: str
) -> None:
    """A run ends early (the step bound, a replay leaving its token, a strategy's
    error) by raising RunAborted at a scheduling point. One such point is the
    ``with`` line on the way out of the block, past the block's protected range,
    so the block's ``__exit__`` never runs. Before the fix the module's lock was
    still held after ``check()`` returned (the step bound cut at step 9): every
    later run waited on it, and so did the caller's own code. A replayed token of a
    buggy release diverging on the fixed one (aws-lambda-powertools 3.31.1's
    ``_COUNTERS_LOCK``) was reported as a deadlock of a thread on a lock "held by"
    itself. A semaphore (Python-level state around a raw lock) lost its permit the
    same way: the cut-off point now lets the thread unwind, as after any failure."""
    module = load(tmp_path, CUT_OFF.format(kind=kind))
    lock = module.LOCK
    for bound in range(1, 40):
        try:
            racecheck.check(module.target, max_steps=bound, schedules=1, strategy="random")
        except racecheck.RaceFound as found:
            assert found.kind == "step-limit", found
        assert lock.acquire(blocking=False), f"still held after max_steps={bound}"
        lock.release()
    check(module.target)  # and a whole exploration runs after them
