"""Item access through a container subclass's own methods: ``super().__setitem__``.

async-cache 1.1.1 (a held-out library of issue 14) was a miss: its LRU is an
``OrderedDict`` subclass whose Python ``__setitem__``/``__contains__`` reach
the storage through ``super().__setitem__(key, value)`` and ``key in
self.keys()``, calls the detector did not read. ``subclass_models.py`` holds
the shape, buggy and fixed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import racecheck

sys.path.insert(0, str(Path(__file__).parent))
import subclass_models as models


def test_stampede_through_a_subclass_lru_is_a_stale_check() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(models.stampede_buggy, detect=True, schedules=100, seed=0)
    assert info.value.kind == "atomicity-violation", info.value
    finding = info.value.cause.finding
    assert finding.pattern == "stale check", finding
    check, other, act = finding.accesses
    assert check.lineno == models.marked("check"), finding
    assert other.lineno == act.lineno == models.marked("store"), finding
    assert check.actor == act.actor != other.actor, finding


@pytest.mark.parametrize(
    "target", [models.stampede_fixed, models.hits_only], ids=lambda t: t.__name__
)
def test_single_flight_or_hits_through_a_subclass_lru_are_clean(
    target: Callable[[], Any],
) -> None:
    report = racecheck.check(target, detect=True, schedules=100, seed=0)
    assert report.schedules_run >= 1


def test_membership_of_a_plain_dicts_keys_view_is_a_check() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(models.keys_view_check_buggy, detect=True, schedules=100, seed=0)
    finding = info.value.cause.finding
    assert finding.pattern == "stale check", finding
    check, other, act = finding.accesses
    assert check.lineno == models.marked("keys check"), finding
    assert other.lineno == act.lineno == models.marked("keys store"), finding
