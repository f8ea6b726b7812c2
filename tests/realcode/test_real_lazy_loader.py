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
from realcode_support import FailsItsUserTest, FlaggedByTheDetector

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


class TestLazyLoader(FailsItsUserTest, FlaggedByTheDetector):
    """What the detector sees: the look-up decides a store another thread's store beat.
    The fixed release takes every step under the import-time lock.
    """

    library = "lazy_loader"
    module = "lazy_loader"
    user_test = USER_TEST
    symptom = "two module objects for one lazily loaded name"
    finding = "lost update"
    finding_shows = ("sys.modules['colorsys']", "__init__.py:206")
