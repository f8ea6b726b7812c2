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
from realcode_support import FlaggedByTheDetector

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


class TestPythonDateutil(FlaggedByTheDetector):
    """What the detector sees: the unlocked size check decides a ``popitem``."""

    library = "python-dateutil"
    module = "dateutil"
    user_test = USER_TEST
    finding = "data race"
    finding_shows = ("_factories.py:44", "_factories.py:45")
