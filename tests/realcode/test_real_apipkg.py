"""apipkg 2.0.0: a thread sees a lazy module half set up by another's first access.

An ``apipkg.ApiModule`` runs its ``__onfirstaccess__`` hook on the first
attribute look-up that misses: ``__getattr__`` checks ``"__onfirstaccess__"
in self.__map__``, pops it, and calls the hook, which sets attributes on the
module. Nothing is held: a second thread looking up an attribute the hook
sets, after the first popped the hook and before the hook set it, finds
neither the hook nor the attribute and gets ``AttributeError``; two threads
that both find the hook both pop it, and the second gets ``KeyError``
(upstream PR 25, "Fix race conditions for attribute creation"). 2.0.1 runs the look-up
under an ``RLock`` made when apipkg is imported (a lock racecheck adopts),
and looks the attribute up again after waiting for it.

The detector alone flags 2.0.0 since this round: until then it read the
module's state through ``object.__getattribute__(mod, "__dict__")``, which
runs ``ApiModule``'s ``__dict__`` property, which loads everything: the
detector ran the first-access hook itself, and every run it watched was
clean (the reduced shape, ``tests/detect/test_detector_halfdone.py``, even
passed its assertion under the detector).
"""

from __future__ import annotations

import pytest
from realcode_support import (
    detector_args,
    expect_clean,
    expect_detector_clean,
    expect_detector_finding,
    expect_found,
    expect_replay_after_fix,
    expect_replay_fails,
    require_pin,
    run_user_test,
    save_token,
    without_assertions,
)

pytest.importorskip("apipkg")

USER_TEST = """
import sys
import threading

import apipkg
import pytest


def _first_access():
    sys.modules["lazyapi"].greeting = "hello"


@pytest.mark.racecheck
def test_threads_see_what_the_first_access_sets_up():
    api = apipkg.ApiModule("lazyapi", {"__onfirstaccess__": "test_user_apipkg:_first_access"})
    sys.modules["lazyapi"] = api
    seen = {}

    def use(n):
        try:
            seen[n] = api.greeting
        except (AttributeError, KeyError) as error:
            seen[n] = repr(error)

    workers = [threading.Thread(target=use, args=(n,)) for n in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    del sys.modules["lazyapi"]
    assert seen == {0: "hello", 1: "hello"}, "an attribute set up on first access was missing"
"""

LIBRARY = "apipkg"
SYMPTOM = "an attribute set up on first access was missing"


def test_buggy_release_is_found_and_replays(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "buggy")
    pytester.makepyfile(test_user_apipkg=USER_TEST)
    found = expect_found(pytester, SYMPTOM)
    save_token(LIBRARY, found.token)
    expect_replay_fails(pytester, found, SYMPTOM)
    print(f"realcode apipkg buggy: found after {found.schedules} ({found.strategy})")


def test_buggy_release_is_flagged_by_the_detector_alone(pytester: pytest.Pytester) -> None:
    """Assertion removed, apipkg traced: both threads find the hook, both take it."""
    require_pin(LIBRARY, "buggy")
    pytester.makepyfile(test_user_apipkg=without_assertions(USER_TEST))
    output = expect_detector_finding(pytester, "apipkg", "stale check")
    assert "self.__map__['__onfirstaccess__']" in output, output
    assert "__init__.py:146" in output and "__init__.py:147" in output, output


def test_buggy_release_is_found_with_the_detector_on(pytester: pytest.Pytester) -> None:
    """Assertion kept, detector on: watching the library must not make its race go away."""
    require_pin(LIBRARY, "buggy")
    pytester.makepyfile(test_user_apipkg=USER_TEST)
    result = run_user_test(pytester, *detector_args("apipkg"))
    result.assert_outcomes(failed=1)


def test_fixed_release_runs_clean(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_apipkg=USER_TEST)
    print(expect_clean(pytester))


def test_fixed_release_does_not_fail_on_the_buggy_token(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_apipkg=USER_TEST)
    print(
        "realcode apipkg fixed, buggy token:", expect_replay_after_fix(pytester, LIBRARY, SYMPTOM)
    )


def test_fixed_release_is_clean_under_the_detector(pytester: pytest.Pytester) -> None:
    """No false alarm on the fixed release: the look-up under the import-time RLock."""
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_apipkg=USER_TEST)
    expect_detector_clean(pytester, "apipkg")
