"""multimethod 1.9: two threads dispatching new argument types break each other's lookup.

A multimethod is a dict from type signatures to functions, and it doubles as
its own dispatch cache: a call with argument types it has not seen finds the
applicable methods (``parents``, which iterates the dict and compares each
registered signature with the new one) and stores the answer under the new
types. Two threads making their first call with different types at once: one
stores its answer while the other is still iterating, and the iteration fails
with ``RuntimeError: dictionary changed size during iteration`` (upstream
issue 77, "Thread safety fix"; fixed in commit be8564a, released as 1.9.1).
1.9.1 iterates a snapshot, ``list(self)``, made in one C call.

The user test forgets the types dispatched by the schedules before it
(``clean()``), as a fresh process would have none: racecheck runs the test
body once per schedule.
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest, FlaggedByTheDetector

pytest.importorskip("multimethod")

USER_TEST = """
import threading

import pytest
from multimethod import multimethod


@multimethod
def describe(value: object) -> str:
    return "something"


@multimethod
def describe(value: int) -> str:
    return "a number"


@pytest.mark.racecheck
def test_first_calls_from_two_threads():
    describe.clean()  # as in a fresh process: nothing dispatched yet
    answers = []
    workers = [
        threading.Thread(target=lambda v=v: answers.append(describe(v))) for v in (True, 2.5)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(answers) == ["a number", "something"]
"""


class TestMultimethod(FailsItsUserTest, FlaggedByTheDetector):
    """What the detector sees: ``parents`` iterating the multimethod (``for key in
    self``) and another thread's ``self.setdefault(types, *funcs)``, unordered. Both
    were invisible before this round: the class redefines ``__setitem__`` in Python,
    so every access to it was skipped, though neither operation calls it; and a
    call with unpacked arguments was no access at all.
    """

    library = "multimethod"
    module = "multimethod"
    user_test = USER_TEST
    symptom = "dictionary changed size during iteration"
    finding = "data race"
    finding_shows = (
        "data race on self",
        "called .setdefault() on self at __init__.py:305",
        "iterated self at __init__.py:248",
    )
