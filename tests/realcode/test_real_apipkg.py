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
    FailsItsUserTest,
    FlaggedByTheDetector,
    detector_args,
    require_pin,
    run_user_test,
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


class TestApipkg(FailsItsUserTest, FlaggedByTheDetector):
    """What the detector sees: both threads find the hook, and both take it.
    The fixed release looks the hook up under the import-time RLock.
    """

    library = "apipkg"
    module = "apipkg"
    user_test = USER_TEST
    symptom = "an attribute set up on first access was missing"
    finding = "stale check"
    finding_shows = ("self.__map__['__onfirstaccess__']", "__init__.py:146", "__init__.py:147")

    def test_buggy_release_is_found_with_the_detector_on(self, pytester: pytest.Pytester) -> None:
        """Assertion kept, detector on: watching the library must not make its race go away."""
        require_pin(self.library, "buggy")
        self.write_user_test(pytester)
        result = run_user_test(pytester, *detector_args(self.module))
        result.assert_outcomes(failed=1)
