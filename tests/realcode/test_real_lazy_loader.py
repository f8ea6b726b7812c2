"""lazy_loader 0.3: two threads lazily loading one module get two module objects.

``lazy_loader.load(name)`` returns ``sys.modules[name]`` if it is there;
otherwise it finds the module's spec, makes a module from it, stores it in
``sys.modules`` and arms a ``LazyLoader`` on it. Nothing is held between the
look-up and the store: two threads loading the same name both miss, each
makes its own module and stores it, and the first one's caller keeps a
module that ``sys.modules`` no longer holds (upstream PR #90, "make
lazy_load.load partially thread-safe"). 0.4 does all of it under
``threadlock``, a ``threading.Lock`` made when ``lazy_loader`` is imported.

The user test takes the module out of ``sys.modules`` first, as a fresh
process would have it: racecheck runs the test body once per schedule.
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

pytest.importorskip("lazy_loader")

USER_TEST = """
import sys
import threading

import lazy_loader as lazy
import pytest


@pytest.mark.racecheck
def test_threads_loading_one_module_share_it():
    sys.modules.pop("colorsys", None)  # as in a fresh process: nobody loaded it yet
    modules = {}

    def load(n):
        modules[n] = lazy.load("colorsys")

    workers = [threading.Thread(target=load, args=(n,)) for n in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert modules[0] is modules[1], "two module objects for one lazily loaded name"
"""

LIBRARY = "lazy_loader"
SYMPTOM = "two module objects for one lazily loaded name"


def test_buggy_release_is_found_and_replays(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "buggy")
    pytester.makepyfile(test_user_lazy_loader=USER_TEST)
    found = expect_found(pytester, SYMPTOM)
    save_token(LIBRARY, found.token)
    expect_replay_fails(pytester, found, SYMPTOM)
    print(f"realcode lazy_loader buggy: found after {found.schedules} ({found.strategy})")


def test_buggy_release_is_flagged_by_the_detector_alone(pytester: pytest.Pytester) -> None:
    """Assertion removed, lazy_loader traced: the look-up decides a store another one beat."""
    require_pin(LIBRARY, "buggy")
    pytester.makepyfile(test_user_lazy_loader=without_assertions(USER_TEST))
    output = expect_detector_finding(pytester, "lazy_loader", "lost update")
    assert "sys.modules['colorsys']" in output and "__init__.py:206" in output, output


def test_fixed_release_runs_clean(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_lazy_loader=USER_TEST)
    print(expect_clean(pytester))


def test_fixed_release_does_not_fail_on_the_buggy_token(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_lazy_loader=USER_TEST)
    print(
        "realcode lazy_loader fixed, buggy token:",
        expect_replay_after_fix(pytester, LIBRARY, SYMPTOM),
    )


def test_fixed_release_is_clean_under_the_detector(pytester: pytest.Pytester) -> None:
    """No false alarm on the fixed release: every step under the import-time lock."""
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_lazy_loader=USER_TEST)
    expect_detector_clean(pytester, "lazy_loader")
