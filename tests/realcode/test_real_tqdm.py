"""tqdm 4.32.1: progress bars made from two threads race on the class's set of bars.

A disabled bar (``disable=True``, what libraries pass when output is off)
computes its position by iterating ``tqdm._instances`` without the class lock,
while another thread's ``tqdm.__new__`` adds its bar under the lock: the
iteration fails with ``RuntimeError: Set changed size during iteration``.
4.32.2 takes the lock around the position lookup.
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest, FlaggedByTheDetector

pytest.importorskip("tqdm")

USER_TEST = """
import threading

import pytest
from tqdm import tqdm


def crunch(items):
    return sum(x for x in tqdm(items, disable=True))


@pytest.mark.racecheck
def test_bars_from_worker_threads():
    results = []
    workers = [
        threading.Thread(target=lambda: results.append(crunch(range(3)))) for _ in range(2)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert results == [3, 3]
"""


class TestTqdm(FailsItsUserTest, FlaggedByTheDetector):
    library = "tqdm"
    module = "tqdm"
    user_test = USER_TEST
    symptom = "Set changed size during iteration"
    finding = "data race"
    finding_shows = ("_tqdm.py:",)
    # A known gap, not hidden: a failing tqdm run leaves half-built bars in
    # tqdm._instances (their __del__ raises), so later runs iterate more bars.
    # racecheck.replay in a fresh process reproduces the token, but the pytest
    # replay diverges ("needs another decision"). See docs/realcode.md.
    replay_diverges = "the fresh-process pytest replay of a tqdm token diverges (known gap)"
