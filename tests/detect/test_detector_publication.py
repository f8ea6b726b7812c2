"""A container changed only before it is published does not race with its readers.

loguru 0.7.3's copy-on-write handlers were reported as a data race: the
writer's ``pop`` on a fresh copy, unordered with the reader's loop over that
same copy. But the reader got the copy by loading the attribute the writer
stored it in, after the ``pop``: a load that finds a store orders everything
the storing thread did to the object before it first stored it anywhere. The
partners change the container after its first store, or let the reader reach
it some other way than through the store. ``publication_models.py`` holds the
shapes.

Under it, a wrong object: ``for h in core.handlers.values()`` loads the dict,
and the call on it is a later scheduling point. The detector rebuilt the
call's receiver from the attribute at the call, so a new dict stored in
between took the blame for a loop over the old one (what loguru 0.7.3 showed
under random and PCT schedules). The receiver is now what the load found.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import racecheck

sys.path.insert(0, str(Path(__file__).parent))
import publication_models as models


def _finding(target: Callable[[], Any], schedules: int = 300) -> Any:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(target, detect=True, schedules=schedules, seed=0, backend="threads")
    return info.value.cause.finding


@pytest.mark.parametrize(
    "target",
    [
        models.copy_changed_then_stored,
        models.list_built_then_stored,
        models.dict_built_then_stored_in_an_item,
    ],
    ids=lambda t: t.__name__,
)
def test_a_container_changed_before_it_is_stored_is_clean(target: Callable[[], None]) -> None:
    report = racecheck.check(target, detect=True, schedules=300, seed=0, backend="threads")
    assert report.schedules_run == 300 or report.exhausted


def test_a_copy_changed_after_it_is_stored_is_still_a_data_race() -> None:
    finding = _finding(models.copy_changed_after_it_is_stored)
    assert finding.kind == "data-race", finding
    lines = sorted(access.lineno for access in finding.accesses)
    assert lines == sorted([models.marked("loop"), models.marked("pop")]), finding


@pytest.mark.parametrize(
    "target",
    [
        models.list_changed_after_it_is_stored,
        models.changed_where_the_reader_reaches_it_without_the_store,
    ],
    ids=lambda t: t.__name__,
)
def test_a_container_the_reader_may_hold_while_it_changes_is_still_a_data_race(
    target: Callable[[], None],
) -> None:
    assert _finding(target).kind == "data-race"


@pytest.mark.parametrize("strategy", ["random", "pct"])
def test_a_call_acts_on_the_object_its_receiver_load_found(strategy: str) -> None:
    report = racecheck.check(
        models.replaced_while_the_reader_holds_the_old_one,
        detect=True,
        schedules=300,
        seed=0,
        backend="threads",
        strategy=strategy,
    )
    assert report.schedules_run == 300 or report.exhausted


@pytest.mark.parametrize("strategy", ["random", "pct"])
def test_the_old_object_changed_in_place_is_still_a_data_race(strategy: str) -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(
            models.old_one_changed_in_place_then_replaced,
            detect=True,
            schedules=300,
            seed=0,
            backend="threads",
            strategy=strategy,
        )
    finding = info.value.cause.finding
    assert finding.kind == "data-race", finding
    lines = sorted(access.lineno for access in finding.accesses)
    assert lines == sorted([models.marked("old loop"), models.marked("old pop")]), finding
