"""Lock factories captured before the run make locks racecheck schedules.

``field(default_factory=threading.Lock)`` in a dataclass and
``defaultdict(threading.Lock)`` keep a reference to the real factory, taken
at import time: patching ``threading.Lock`` for the run does not reach them,
so every lock they make during the run is a raw C lock. The second thread to
take one blocked in C, and every run ended in a StuckError after the
watchdog (10 s by default), on correct code too. Both are common in real
libraries (per-key lock tables, dataclass-based clients). The walk that
adopts locks made before the run now also swaps such captured factories for
racecheck's, and puts them back afterwards.

Each module is written to ``tmp_path`` and imported before the run, as in
test_locks_made_before.py.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from pathlib import Path

import pytest
from test_locks_made_before import check, load

import racecheck

DATACLASS = """
import threading
from dataclasses import dataclass, field

@dataclass
class Account:
    balance: int = 0
    lock: object = field(default_factory=threading.{factory})

def deposit(account, guarded_read):
    if guarded_read:
        with account.lock:
            seen = account.balance
            account.balance = seen + 1
    else:
        seen = account.balance
        with account.lock:
            account.balance = seen + 1

def target(guarded_read=True):
    account = Account()
    threads = [threading.Thread(target=deposit, args=(account, guarded_read)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert account.balance == 2, account.balance
"""

LOCK_TABLE = """
import threading
from collections import defaultdict

LOCKS = defaultdict(threading.{factory})
counts = {{}}

def bump(key, guarded_read):
    if guarded_read:
        with LOCKS[key]:
            counts[key] = counts.get(key, 0) + 1
    else:
        seen = counts.get(key, 0)
        with LOCKS[key]:
            counts[key] = seen + 1

def target(guarded_read=True):
    counts.clear()
    threads = [threading.Thread(target=bump, args=("k", guarded_read)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts["k"] == 2, counts
"""

SHAPES = {"dataclass field": DATACLASS, "defaultdict": LOCK_TABLE}


@pytest.mark.parametrize("factory", ["Lock", "RLock"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_correct_code_runs_clean(tmp_path: Path, shape: str, factory: str) -> None:
    module = load(tmp_path, SHAPES[shape].format(factory=factory))
    report = check(module.target)
    assert report.schedules_run == 60


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_read_outside_the_lock_is_found(tmp_path: Path, shape: str) -> None:
    module = load(tmp_path, SHAPES[shape].format(factory="Lock"))
    with pytest.raises(racecheck.RaceFound):
        check(lambda: module.target(guarded_read=False), minimize=False)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_dpor_verifies_the_correct_code(tmp_path: Path, shape: str) -> None:
    module = load(tmp_path, SHAPES[shape].format(factory="Lock"))
    report = racecheck.check(module.target, strategy="dpor", schedules=500, watchdog=4.0)
    assert report.verified, report.notes


def test_the_factories_are_put_back(tmp_path: Path) -> None:
    module = load(tmp_path, DATACLASS.format(factory="Lock") + LOCK_TABLE.format(factory="Lock"))
    check(module.target)
    assert module.Account.__dataclass_fields__["lock"].default_factory is threading.Lock
    assert module.LOCKS.default_factory is threading.Lock
    made = module.Account().lock
    assert type(made) is type(threading.Lock())
    table: defaultdict[str, object] = defaultdict(threading.Lock)
    assert type(table["k"]) is type(threading.Lock())
