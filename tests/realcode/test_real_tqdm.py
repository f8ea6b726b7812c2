"""tqdm 4.32.1: progress bars made from two threads race on the class's set of bars.

A disabled bar (``disable=True``, what libraries pass when output is off)
computes its position by iterating ``tqdm._instances`` without the class lock,
while another thread's ``tqdm.__new__`` adds its bar under the lock: the
iteration fails with ``RuntimeError: Set changed size during iteration``.
4.32.2 takes the lock around the position lookup.
"""

from __future__ import annotations

import pytest
from realcode_support import (
    expect_clean,
    expect_detector_clean,
    expect_detector_finding,
    expect_found,
    expect_replay_after_fix,
    expect_replay_fails,
    require_pin,
    save_token,
    without_assertions,
)

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

SYMPTOM = "Set changed size during iteration"


def test_buggy_release_is_found_and_replays(pytester: pytest.Pytester) -> None:
    require_pin("tqdm", "buggy")
    pytester.makepyfile(test_user_tqdm=USER_TEST)
    found = expect_found(pytester, SYMPTOM)
    save_token("tqdm", found.token)
    print(f"realcode tqdm buggy: found after {found.schedules} ({found.strategy})")
    try:
        expect_replay_fails(pytester, found, SYMPTOM)
    except AssertionError:
        # A known gap, not hidden: a failing tqdm run leaves half-built bars in
        # tqdm._instances (their __del__ raises), so later runs iterate more
        # bars. racecheck.replay in a fresh process reproduces the token, but
        # the pytest replay diverges ("needs another decision"). docs/realcode.md.
        pytest.xfail("the fresh-process pytest replay of a tqdm token diverges (known gap)")


def test_fixed_release_runs_clean(pytester: pytest.Pytester) -> None:
    require_pin("tqdm", "fixed")
    pytester.makepyfile(test_user_tqdm=USER_TEST)
    print(expect_clean(pytester))


def test_fixed_release_does_not_fail_on_the_buggy_token(pytester: pytest.Pytester) -> None:
    require_pin("tqdm", "fixed")
    pytester.makepyfile(test_user_tqdm=USER_TEST)
    print("realcode tqdm fixed, buggy token:", expect_replay_after_fix(pytester, "tqdm", SYMPTOM))


def test_buggy_release_is_flagged_by_the_detector_alone(pytester: pytest.Pytester) -> None:
    """Assertion removed, tqdm traced: the detector names the race itself."""
    require_pin("tqdm", "buggy")
    pytester.makepyfile(test_user_tqdm=without_assertions(USER_TEST))
    output = expect_detector_finding(pytester, "tqdm", "data race")
    assert "_tqdm.py:" in output, output


def test_fixed_release_is_clean_under_the_detector(pytester: pytest.Pytester) -> None:
    """No false alarm on the fixed release, tqdm traced as code under test."""
    require_pin("tqdm", "fixed")
    pytester.makepyfile(test_user_tqdm=USER_TEST)
    expect_detector_clean(pytester, "tqdm")
