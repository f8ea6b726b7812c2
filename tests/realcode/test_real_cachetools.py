"""cachetools 5.5.2: ``cachetools.func.lru_cache`` calls the function twice for one key.

The decorator checks the cache under its lock, releases the lock to call the
wrapped function, and stores the result under the lock again: two threads
missing the same key both run the (expensive) function, a cache stampede.
6.0.0 makes the ``cachetools.func`` decorators wait on a ``Condition`` (made
at decoration time, from ``from threading import Condition``) while the key
is pending, so the function runs once.
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest

pytest.importorskip("cachetools")

USER_TEST = """
import threading

import pytest
from cachetools.func import lru_cache

loads = []


@lru_cache(maxsize=32)
def load_settings(name):
    loads.append(name)  # stands for a slow read of a settings file
    return {"name": name}


@pytest.mark.racecheck
def test_settings_are_loaded_once():
    load_settings.cache_clear()
    loads.clear()
    workers = [threading.Thread(target=load_settings, args=("db",)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert loads == ["db"], f"settings loaded {len(loads)} times"
"""


class TestCachetools(FailsItsUserTest):
    library = "cachetools"
    module = "cachetools"
    user_test = USER_TEST
    symptom = "settings loaded 2 times"
