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
from realcode_support import (
    expect_clean,
    expect_detector_clean,
    expect_found,
    expect_replay_after_fix,
    expect_replay_fails,
    require_pin,
    save_token,
)

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

SYMPTOM = "settings loaded 2 times"


def test_buggy_release_is_found_and_replays(pytester: pytest.Pytester) -> None:
    require_pin("cachetools", "buggy")
    pytester.makepyfile(test_user_cachetools=USER_TEST)
    found = expect_found(pytester, SYMPTOM)
    save_token("cachetools", found.token)
    expect_replay_fails(pytester, found, SYMPTOM)
    print(f"realcode cachetools buggy: found after {found.schedules} ({found.strategy})")


def test_fixed_release_runs_clean(pytester: pytest.Pytester) -> None:
    require_pin("cachetools", "fixed")
    pytester.makepyfile(test_user_cachetools=USER_TEST)
    print(expect_clean(pytester))


def test_fixed_release_does_not_fail_on_the_buggy_token(pytester: pytest.Pytester) -> None:
    require_pin("cachetools", "fixed")
    pytester.makepyfile(test_user_cachetools=USER_TEST)
    print(
        "realcode cachetools fixed, buggy token:",
        expect_replay_after_fix(pytester, "cachetools", SYMPTOM),
    )


def test_fixed_release_is_clean_under_the_detector(pytester: pytest.Pytester) -> None:
    """No false alarm on the fixed release, cachetools traced as code under test."""
    require_pin("cachetools", "fixed")
    pytester.makepyfile(test_user_cachetools=USER_TEST)
    expect_detector_clean(pytester, "cachetools")
