"""More places a lock, or a lock factory, made at import time can sit.

Real libraries keep import-time locks in more shapes than a module global or
an attribute: a ``defaultdict`` subclass or an ``OrderedDict`` used as a lock
table, ``threading.RLock`` (a Python function, unlike ``Lock``) or, on 3.13,
``threading.Lock`` (a class) kept as a factory, a ``functools.partial`` bound
to a lock, the closure of a ``@synchronized`` decorator, a
``WeakValueDictionary`` registry. A lock (or factory) the walk does not reach
is a raw C lock during the run: the second controlled thread to take it blocks
where the scheduler cannot see it, and the run ends in a StuckError after the
watchdog, on correct code too. Each shape here: correct code runs clean,
the lost update is found, nothing stalls, and the originals are back after
the run (also after a failing one).

Each module is written to ``tmp_path`` and imported before the run, as in
test_locks_made_before.py.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import ModuleType

import pytest
from test_hygiene import run_script
from test_locks_made_before import check, load

import racecheck

RAW_LOCK = type(threading.Lock())
RAW_RLOCK = type(threading.RLock())

COUNTER = """
import functools
import threading
import weakref
from collections import OrderedDict, defaultdict
{setup}
counts = {{"k": 0}}
RUN = {{}}

def bump(guarded_read):
    if guarded_read:
        with {lock}:
            seen = counts["k"]
            counts["k"] = seen + 1
    else:
        seen = counts["k"]
        with {lock}:
            counts["k"] = seen + 1

def target(guarded_read=True):
    counts["k"] = 0
    {prepare}
    threads = [threading.Thread(target=bump, args=(guarded_read,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts["k"] == 2, counts
"""

#: shape -> (setup at import time, the lock the threads take, what target does first)
LOCK_SHAPES: dict[str, tuple[str, str, str]] = {
    "defaultdict subclass": (
        "class LockTable(defaultdict):\n    pass\nLOCKS = LockTable(threading.Lock)",
        'LOCKS["k"]',
        "pass",
    ),
    "defaultdict subclass of RLock": (
        "class LockTable(defaultdict):\n    pass\nLOCKS = LockTable(threading.RLock)",
        'LOCKS["k"]',
        "pass",
    ),
    "defaultdict subclass, lock made at import": (
        'class LockTable(defaultdict):\n    pass\nLOCKS = LockTable(threading.Lock)\nLOCKS["k"]',
        'LOCKS["k"]',
        "pass",
    ),
    "OrderedDict lock table": (
        'LOCKS = OrderedDict([("k", threading.Lock()), ("j", threading.RLock())])',
        'LOCKS["k"]',
        "pass",
    ),
    "dict lock table": ('LOCKS = {"k": threading.Lock()}', 'LOCKS["k"]', "pass"),
    "dict subclass lock table": (
        "class Table(dict):\n    pass\nLOCKS = Table(k=threading.Lock())",
        'LOCKS["k"]',
        "pass",
    ),
    "RLock factory as a class attribute": (
        "class Store:\n    lock_factory = threading.RLock",
        'RUN["lock"]',
        'RUN["lock"] = Store.lock_factory()',
    ),
    "Lock factory as a class attribute": (
        "class Store:\n    lock_factory = threading.Lock",
        'RUN["lock"]',
        'RUN["lock"] = Store.lock_factory()',
    ),
    "RLock factory as an instance attribute": (
        "class Store:\n    def __init__(self):\n        self.lock_factory = threading.RLock\n"
        "store = Store()",
        'RUN["lock"]',
        'RUN["lock"] = store.lock_factory()',
    ),
    "RLock factory as a dict value": (
        'FACTORIES = {"lock": threading.RLock}',
        'RUN["lock"]',
        'RUN["lock"] = FACTORIES["lock"]()',
    ),
    "Condition factory as a class attribute": (
        "class Store:\n    condition_factory = threading.Condition",
        'RUN["lock"]',
        'RUN["lock"] = Store.condition_factory()',
    ),
    "RLock factory in a partial": (
        "make_lock = functools.partial(threading.RLock)",
        'RUN["lock"]',
        'RUN["lock"] = make_lock()',
    ),
    "lock bound by a partial": (
        "def _the(lock):\n    return lock\nLOCK_OF = functools.partial(_the, threading.Lock())",
        "LOCK_OF()",
        "pass",
    ),
    "lock in a WeakValueDictionary": (
        "class Resource:\n    def __init__(self):\n        self.lock = threading.Lock()\n"
        "resource = Resource()\nLOCKS = weakref.WeakValueDictionary(k=resource.lock)",
        'LOCKS["k"]',
        "pass",
    ),
    "RLock factory as a default argument": (
        "def make_lock(factory=threading.RLock):\n    return factory()",
        'RUN["lock"]',
        'RUN["lock"] = make_lock()',
    ),
    "lock as a function attribute": (
        "def guarded():\n    return guarded.lock\nguarded.lock = threading.Lock()",
        "guarded()",
        "pass",
    ),
    "striped locks in a tuple": (
        "LOCKS = tuple(threading.Lock() for _ in range(4))",
        'LOCKS[len("k") % 4]',
        "pass",
    ),
    "lock in a tuple in a dict": (
        'REGISTRY = {"k": ("label", threading.RLock())}',
        'REGISTRY["k"][1]',
        "pass",
    ),
    "locks in a namedtuple attribute": (
        "from typing import NamedTuple\n"
        "class Locks(NamedTuple):\n    internal: object\n    transaction: object\n"
        "class ReadWrite:\n    def __init__(self):\n"
        "        self._locks = Locks(threading.Lock(), threading.Lock())\n"
        "rw = ReadWrite()",
        "rw._locks.internal",
        "pass",
    ),
    "Condition as a class attribute": (
        "class Shared:\n    cond = threading.Condition()",
        "Shared.cond",
        "pass",
    ),
    "Semaphore as a class attribute": (
        "class Shared:\n    sem = threading.Semaphore(1)",
        "Shared.sem",
        "pass",
    ),
}

SYNCHRONIZED = """
import functools
import threading

def synchronized(function):
    lock = threading.Lock()

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with lock:
            return function(*args, **kwargs)

    return wrapper

counts = {"k": 0}

@synchronized
def increment():
    seen = counts["k"]
    counts["k"] = seen + 1

@synchronized
def read():
    return counts["k"]

@synchronized
def write(value):
    counts["k"] = value

class Counter:
    @synchronized
    def increment(self):
        increment()

def bump(guarded_read):
    if guarded_read:
        Counter().increment()
    else:
        write(read() + 1)  # each on its own lock: the update is lost

def target(guarded_read=True):
    counts["k"] = 0
    threads = [threading.Thread(target=bump, args=(guarded_read,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts["k"] == 2, counts
"""


def _shape(tmp_path: Path, shape: str) -> ModuleType:
    if shape == "synchronized decorator":
        return load(tmp_path, SYNCHRONIZED)
    setup, lock, prepare = LOCK_SHAPES[shape]
    return load(tmp_path, COUNTER.format(setup=setup, lock=lock, prepare=prepare))


SHAPES = [*LOCK_SHAPES, "synchronized decorator"]


@pytest.mark.parametrize("shape", SHAPES)
def test_correct_code_runs_clean(tmp_path: Path, shape: str) -> None:
    module = _shape(tmp_path, shape)
    report = check(module.target)
    assert report.schedules_run == 60


@pytest.mark.parametrize("shape", SHAPES)
def test_a_read_outside_the_lock_is_found(tmp_path: Path, shape: str) -> None:
    module = _shape(tmp_path, shape)
    with pytest.raises(racecheck.RaceFound):
        check(lambda: module.target(guarded_read=False), minimize=False)


#: every shape at once, and what must be the very same objects after the run
EVERY_SHAPE = """
import collections
import functools
import threading
import weakref
from collections import OrderedDict, defaultdict

SET_KEYS = []

class LockTable(defaultdict):
    # the user's code: the walk reads and writes entries through dict's own
    def __setitem__(self, key, value):
        SET_KEYS.append(key)
        super().__setitem__(key, value)

    def items(self):
        raise AssertionError("LockTable.items called")

TABLE = LockTable(threading.RLock)
TABLE["early"]
ORDERED = OrderedDict([("k", threading.Lock()), ("j", threading.RLock())])

class Store:
    lock_factory = threading.RLock
    def __init__(self):
        self.lock_factory = threading.RLock

store = Store()
FACTORIES = {"lock": threading.RLock}
make_lock = functools.partial(threading.RLock)
def _the(lock):
    return lock
LOCK_OF = functools.partial(_the, threading.Lock())
def made_by(factory=threading.RLock):
    return factory()

class Resource:
    def __init__(self):
        self.lock = threading.Lock()

resource = Resource()
REGISTRY = weakref.WeakValueDictionary(k=resource.lock)
STRIPES = tuple(threading.Lock() for _ in range(2))
Pair = collections.namedtuple("Pair", "first second")
PAIR = Pair(threading.Lock(), threading.RLock())
def with_attribute():
    return with_attribute.lock
with_attribute.lock = threading.Lock()

def synchronized(function):
    lock = threading.Lock()
    @functools.wraps(function)
    def wrapper(*args):
        with lock:
            return function(*args)
    return wrapper

counts = {"k": 0}

@synchronized
def read():
    return counts["k"]

def bump(racy):
    locks = [TABLE["k"], TABLE["early"], ORDERED["k"], ORDERED["j"], Store.lock_factory(),
             store.lock_factory(), FACTORIES["lock"](), make_lock(), LOCK_OF(), made_by(),
             REGISTRY["k"], STRIPES[0], STRIPES[1], PAIR.first, PAIR.second, with_attribute()]
    for lock in locks:
        with lock:
            pass
    seen = read() if racy else 1
    with TABLE["k"]:
        counts["k"] = seen + 1

def target(racy=False):
    counts["k"] = 0
    threads = [threading.Thread(target=bump, args=(racy,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts["k"] == 2, counts

def originals():
    return [
        defaultdict.default_factory.__get__(TABLE), dict.__getitem__(TABLE, "early"),
        ORDERED["k"], ORDERED["j"], list(ORDERED), Store.lock_factory, store.lock_factory,
        FACTORIES["lock"], make_lock.func, LOCK_OF.args, made_by.__defaults__,
        REGISTRY.data["k"], REGISTRY["k"], read.__closure__[0].cell_contents,
        STRIPES, PAIR, with_attribute.lock,
    ]

def restored(before):
    import gc
    gc.collect()  # a proxy's weak reference, gone: the registry's entry stays
    now = originals()
    changed = [i for i, (a, b) in enumerate(zip(before, now)) if a is not b and a != b]
    assert not changed, changed
    assert TABLE.default_factory is threading.RLock and make_lock.func is threading.RLock
    assert type(ORDERED["k"]) is type(threading.Lock()), ORDERED
    assert type(LOCK_OF.args[0]) is type(threading.Lock())
    assert REGISTRY["k"] is resource.lock
    assert type(PAIR) is Pair and type(PAIR.first) is type(threading.Lock())
    assert "early" not in SET_KEYS[1:], SET_KEYS
    return "RESTORED"
"""


@pytest.mark.parametrize("racy", [False, True], ids=["passing run", "failing run"])
def test_every_original_is_back_after_the_run(tmp_path: Path, racy: bool) -> None:
    module = load(tmp_path, EVERY_SHAPE)
    before = module.originals()
    if racy:
        with pytest.raises(racecheck.RaceFound):
            check(lambda: module.target(racy=True), minimize=False)
    else:
        assert check(module.target).schedules_run == 60
    assert module.restored(before) == "RESTORED"
    assert module.TABLE["new"] is not None  # the factory makes raw locks again
    assert type(dict.__getitem__(module.TABLE, "new")) is RAW_RLOCK


def test_every_original_is_back_after_ctrl_c(tmp_path: Path) -> None:
    (tmp_path / "every_shape.py").write_text(EVERY_SHAPE)
    result = run_script(
        f"""
        import sys, racecheck
        sys.path.insert(0, {str(tmp_path)!r})
        import every_shape
        before = every_shape.originals()
        try:
            racecheck.check(every_shape.target, strategy="random", schedules=10**7, saturation=0)
            print("FINISHED")
        except KeyboardInterrupt:
            print("INTERRUPTED")
        print(every_shape.restored(before))
        """,
        interrupt_after=1.5,
    )
    assert "INTERRUPTED" in result.stdout, result.stderr
    assert "RESTORED" in result.stdout, result.stderr
    assert "PRISTINE" in result.stdout, result.stdout
