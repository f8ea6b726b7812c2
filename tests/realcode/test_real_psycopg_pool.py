"""psycopg-pool 3.3.0: two threads opening one ``ConnectionPool`` both start it.

The sync pool created its lock lazily, in ``open()`` (``try: self._lock``
``except AttributeError: self._lock = Lock()``). Two threads calling
``open()`` on a fresh pool can both find no lock, each make one, each take
its own, and both run ``_open()``: the second start trips ``assert not
self._workers``. 3.3.1 creates the lock in ``__init__`` ("threads concurrently
calling open() can't race on it"). No database is needed: ``min_size=0``
opens no connection, and the pool is closed at the end.
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

pytest.importorskip("psycopg_pool")

USER_TEST = """
import threading

import pytest
from psycopg_pool import ConnectionPool


@pytest.mark.racecheck
def test_two_threads_open_the_pool_once():
    pool = ConnectionPool("dbname=none", min_size=0, max_size=1, open=False, num_workers=1)
    errors = []

    def open_pool():
        try:
            pool.open(wait=False)
        except AssertionError as exc:
            errors.append(exc)

    workers = [threading.Thread(target=open_pool) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    pool.close(timeout=1.0)
    assert not errors, f"the pool was started twice: {errors!r}"
"""

SYMPTOM = "the pool was started twice"
LIBRARY = "psycopg-pool"


def test_buggy_release_is_found_and_replays(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "buggy")
    pytester.makepyfile(test_user_pool=USER_TEST)
    found = expect_found(pytester, SYMPTOM)
    save_token(LIBRARY, found.token)
    expect_replay_fails(pytester, found, SYMPTOM)
    print(f"realcode psycopg-pool buggy: found after {found.schedules} ({found.strategy})")


def test_fixed_release_runs_clean(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_pool=USER_TEST)
    print(expect_clean(pytester))


def test_fixed_release_does_not_fail_on_the_buggy_token(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_pool=USER_TEST)
    print(
        "realcode psycopg-pool fixed, buggy token:",
        expect_replay_after_fix(pytester, LIBRARY, SYMPTOM),
    )


def test_buggy_release_is_flagged_by_the_detector_alone(pytester: pytest.Pytester) -> None:
    """Assertion removed, psycopg_pool traced: two unordered stores of the lazy lock."""
    require_pin(LIBRARY, "buggy")
    pytester.makepyfile(test_user_pool=without_assertions(USER_TEST))
    output = expect_detector_finding(pytester, "psycopg_pool", "data race")
    assert "self._lock" in output and "pool.py:419" in output, output


def test_fixed_release_is_clean_under_the_detector(pytester: pytest.Pytester) -> None:
    """No false alarm on the fixed release, psycopg_pool traced as code under test."""
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_pool=USER_TEST)
    expect_detector_clean(pytester, "psycopg_pool")
