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
from realcode_support import (
    expect_clean,
    expect_detector_clean,
    expect_detector_finding,
    expect_found,
    expect_replay_after_fix,
    expect_replay_fails,
    require_pin,
    save_token,
    without_assertions,
)

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

SYMPTOM = "two singleton FileLocks for one path"


def test_buggy_release_is_found_and_replays(pytester: pytest.Pytester) -> None:
    require_pin("filelock", "buggy")
    pytester.makepyfile(test_user_filelock=USER_TEST)
    found = expect_found(pytester, SYMPTOM)
    save_token("filelock", found.token)
    expect_replay_fails(pytester, found, SYMPTOM)
    print(f"realcode filelock buggy: found after {found.schedules} ({found.strategy})")


def test_fixed_release_runs_clean(pytester: pytest.Pytester) -> None:
    require_pin("filelock", "fixed")
    pytester.makepyfile(test_user_filelock=USER_TEST)
    print(expect_clean(pytester))


def test_fixed_release_does_not_fail_on_the_buggy_token(pytester: pytest.Pytester) -> None:
    require_pin("filelock", "fixed")
    pytester.makepyfile(test_user_filelock=USER_TEST)
    print(
        "realcode filelock fixed, buggy token:",
        expect_replay_after_fix(pytester, "filelock", SYMPTOM),
    )


def test_buggy_release_is_flagged_by_the_detector_alone(pytester: pytest.Pytester) -> None:
    """Assertion removed, filelock traced: the detector names the race itself."""
    require_pin("filelock", "buggy")
    pytester.makepyfile(test_user_filelock=without_assertions(USER_TEST))
    output = expect_detector_finding(pytester, "filelock", "lost update")
    assert "_api.py:" in output, output


def test_fixed_release_is_clean_under_the_detector(pytester: pytest.Pytester) -> None:
    """No false alarm on the fixed release, filelock traced as code under test."""
    require_pin("filelock", "fixed")
    pytester.makepyfile(test_user_filelock=USER_TEST)
    expect_detector_clean(pytester, "filelock")
