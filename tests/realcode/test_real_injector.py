"""injector 0.20.1: two threads asking for one singleton get two objects.

``Injector.get`` finds the scope of the class asked for (``SingletonScope`` for a
``@singleton`` class) through the binder, which binds a scope the first time it
is asked for it: ``get_binding`` misses, then ``bind(scope, to=scope(injector))``.
Only ``SingletonScope.get`` held the module's lock, not ``Injector.get``: two
threads making the injector's first request both miss the scope's binding, each
binds a ``SingletonScope`` of its own, and each scope builds its own "singleton"
(upstream python-injector/injector PR 215, "Fix an Injector.get() thread safety
regression", seen as ``test_singleton_scope_is_thread_safe`` failing on PyPy;
released in 0.21.0, which holds the lock across ``Injector.get``).
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest, FlaggedByTheDetector

pytest.importorskip("injector")

USER_TEST = """
import threading

import pytest
from injector import Injector, singleton


@singleton
class Settings:
    pass


@pytest.mark.racecheck
def test_a_singleton_is_one_object_across_threads():
    injector = Injector()
    got = []
    workers = [
        threading.Thread(target=lambda: got.append(injector.get(Settings))) for _ in range(2)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert got[0] is got[1], "two Settings singletons"
"""


class TestInjector(FailsItsUserTest, FlaggedByTheDetector):
    """What the detector sees first: both threads' auto-binding of ``Settings``
    (``self._bindings[interface] = binding`` in ``Binder.get_binding``), unordered
    writes to one key of the binder's dict, outside the lock."""

    library = "injector"
    module = "injector"
    user_test = USER_TEST
    symptom = "two Settings singletons"
    finding = "data race"
    finding_shows = ("data race on self._bindings[", "at __init__.py:647")
