"""pycountry 18.5.20: two threads loading a database lazily both load it.

Every database (``pycountry.countries``, ``pycountry.historic_countries``...)
is made at import and reads its JSON file on first use: ``if not
self._is_loaded: self._load()``, and ``_load`` starts by resetting
``self.objects``, ``self.indices`` and the rest, then fills them. Two threads
asking for their first record at once both load, each resetting the index the
other is filling: a look-up sees a half-built index and raises ``KeyError``
(upstream #13398, "make lazy loading thread-safe"). 18.5.26 loads under a
per-database lock made at import (a lock racecheck adopts, not one made in the
run) and checks ``_is_loaded`` again under it: double-checked locking.

The user test puts the database back to "not loaded yet" first, as a fresh
process would have it: racecheck runs the test body once per schedule.
"""

from __future__ import annotations

import pytest
from realcode_support import FlaggedByTheDetector

pytest.importorskip("pycountry")

USER_TEST = """
import threading

import pycountry
import pytest


@pytest.mark.racecheck
def test_two_threads_look_up_historic_countries():
    db = pycountry.historic_countries
    db._is_loaded = False  # as in a fresh process: nobody has asked it yet
    names = {}

    def look_up(code):
        names[code] = db.get(alpha_4=code).name

    workers = [threading.Thread(target=look_up, args=(c,)) for c in ("BUMM", "CSHH")]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(names) == ["BUMM", "CSHH"], names
"""


class TestPycountry(FlaggedByTheDetector):
    """What the detector sees: both threads reset the database they load.
    The fixed release checks again under the import-time lock.
    """

    library = "pycountry"
    module = "pycountry"
    user_test = USER_TEST
    finding = "data race"
    finding_shows = ("data race on self.objects", "db.py:59")
