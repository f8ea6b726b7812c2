"""python-dateutil 2.8.0: the ``tzoffset``/``tzstr`` strong cache is updated without a lock.

2.8.0 added a small LRU ("strong cache") behind ``tz.tzoffset(...)``: move the
key to the end, then, if the cache is over its size, drop the oldest entry.
Two threads doing that at once check the size and pop an item each, with no
lock between the check and the pop; on Python 2.7, whose ``OrderedDict`` is
written in Python, that raised ``KeyError`` from ``parse()`` (gh issue 901).
2.8.1 takes a lock around the update.

On Python 3 each ``OrderedDict`` call is one C call, so the user-visible crash
does not happen and no assertion fails: this module checks only what the
detector says, the buggy release flagged (the size check outside any lock
decides another thread's ``popitem``), the fixed one clean.
"""

from __future__ import annotations

import pytest
from realcode_support import (
    expect_clean,
    expect_detector_clean,
    expect_detector_finding,
    require_pin,
    without_assertions,
)

pytest.importorskip("dateutil")

USER_TEST = """
import threading

import pytest
from dateutil import tz


@pytest.mark.racecheck
def test_offsets_made_in_two_threads_are_cached():
    made = {}

    def make(hours):
        made[hours] = tz.tzoffset("X", hours * 3600)

    for hours in range(8):
        tz.tzoffset("X", hours * 3600)  # the strong cache is full
    workers = [threading.Thread(target=make, args=(h,)) for h in (20, 21)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert made[20] is tz.tzoffset("X", 20 * 3600)
"""

LIBRARY = "python-dateutil"


def test_buggy_release_is_flagged_by_the_detector_alone(pytester: pytest.Pytester) -> None:
    """Assertion removed, dateutil traced: the unlocked size check decides a popitem."""
    require_pin(LIBRARY, "buggy")
    pytester.makepyfile(test_user_dateutil=without_assertions(USER_TEST))
    output = expect_detector_finding(pytester, "dateutil", "data race")
    assert "_factories.py:44" in output and "_factories.py:45" in output, output


def test_fixed_release_runs_clean(pytester: pytest.Pytester) -> None:
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_dateutil=USER_TEST)
    print(expect_clean(pytester))


def test_fixed_release_is_clean_under_the_detector(pytester: pytest.Pytester) -> None:
    """No false alarm on the fixed release, dateutil traced as code under test."""
    require_pin(LIBRARY, "fixed")
    pytester.makepyfile(test_user_dateutil=USER_TEST)
    expect_detector_clean(pytester, "dateutil")
