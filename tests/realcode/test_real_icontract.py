"""icontract 2.3.0: a precondition is not checked while another thread checks it.

A function's contract checker guarded itself against recursion (a condition
that calls the function it guards) with one flag per decorated function, a
closure variable, ``in_progress``: set while its contracts are being checked,
and any call that finds it set runs the function unchecked. The flag is shared
by every thread. While one thread checks ``withdraw(5)``'s precondition,
another thread's ``withdraw(-5)`` finds the flag set and runs with no check at
all: the contract is silently not enforced (upstream Parquery/icontract PR 137,
"fixed race conditions in endless recursion blockers", issue 136, released in
2.3.1; 2.3.1 kept its flags in a ``threading.local`` filled at import, so every
thread but the main one failed with ``AttributeError`` (issue 139), fixed in
2.3.2, the fixed pin here).
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest, FlaggedByTheDetector

pytest.importorskip("icontract")

USER_TEST = """
import threading

import icontract
import pytest


@icontract.require(lambda amount: amount > 0)
def withdraw(amount: int) -> int:
    return amount


@pytest.mark.racecheck
@pytest.mark.filterwarnings("ignore:visit_Num is deprecated:DeprecationWarning")
def test_every_thread_has_its_precondition_checked():
    refused = []

    def call(amount):
        try:
            withdraw(amount)
        except icontract.ViolationError:
            refused.append(amount)

    workers = [threading.Thread(target=call, args=(amount,)) for amount in (5, -5)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert refused == [-5], f"a negative withdrawal went through unchecked: refused={refused}"
"""


class TestIcontract(FailsItsUserTest, FlaggedByTheDetector):
    """The detector sees the two threads' writes of the shared flag: each checker
    clears ``in_progress`` when it is done, whatever the other is doing."""

    library = "icontract"
    module = "icontract"
    user_test = USER_TEST
    symptom = "a negative withdrawal went through unchecked: refused=[]"
    finding = "data race"
    finding_shows = ("data race on in_progress", "at _checkers.py:333")
