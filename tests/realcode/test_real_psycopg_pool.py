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
from realcode_support import FailsItsUserTest, FlaggedByTheDetector

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


class TestPsycopgPool(FailsItsUserTest, FlaggedByTheDetector):
    """What the detector sees: two unordered stores of the lazily made lock."""

    library = "psycopg-pool"
    module = "psycopg_pool"
    user_test = USER_TEST
    symptom = "the pool was started twice"
    finding = "data race"
    finding_shows = ("self._lock", "pool.py:419")
