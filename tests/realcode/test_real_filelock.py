"""filelock 3.29.5: two threads asking for the same ``is_singleton=True`` lock get two.

``FileLockMeta.__call__`` looks the path up in the class's instance cache,
builds a lock on a miss, then stores it, with nothing held in between: two
threads constructing the first lock for a path both miss and each get their
own "singleton", so reentrant locking across call sites breaks. 3.29.6 does
the look-up, build and store under the class's ``_instances_lock``, an RLock
made when the class is defined.
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest, FlaggedByTheDetector

pytest.importorskip("filelock")

USER_TEST = """
import threading

import pytest
from filelock import FileLock


@pytest.mark.racecheck
def test_threads_share_the_singleton_lock(tmp_path):
    path = str(tmp_path / "state.json.lock")
    locks = []

    def worker():
        lock = FileLock(path, is_singleton=True)
        locks.append(lock)

    workers = [threading.Thread(target=worker) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert locks[0] is locks[1], "two singleton FileLocks for one path"
"""


class TestFilelock(FailsItsUserTest, FlaggedByTheDetector):
    library = "filelock"
    module = "filelock"
    user_test = USER_TEST
    symptom = "two singleton FileLocks for one path"
    finding = "lost update"
    finding_shows = ("_api.py:",)
