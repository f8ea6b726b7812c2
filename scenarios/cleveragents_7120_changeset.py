"""cleveragents #7120: plan steps on several threads share one PlanExecutionContext.

Two plan-step threads each start a changeset, record one change and end it.
``buggy`` records into "the most recent active changeset" of a shared list, so
a step's change lands in the other step's changeset, and two concurrent ends
can both pick the same id and crash in ``list.remove``. ``as_proposed`` (a lock
around each method) removes the crash but not the misattribution. ``correct``
passes the id ``start_changeset`` returned to ``record_change``/``end_changeset``.

The report's ``IndexError`` in ``record_change`` is not reachable here: the
caller's own id is in the list for as long as it records (see
:mod:`racecheck.reference.changeset`).

Components: :mod:`racecheck.reference.changeset`.
"""

from __future__ import annotations

from collections.abc import Callable

from racecheck import Scenario, Variant
from racecheck.reference.changeset import (
    INVARIANT_NO_ERROR,
    INVARIANT_OWN_CHANGESET,
    plan_steps,
)


def make_target(variant: str) -> Callable[[], None]:
    def target() -> None:
        plan_steps(variant)

    target.__qualname__ = target.__name__ = f"cleveragents_7120_{variant}"
    return target


SCENARIO = Scenario(
    name="cleveragents-7120-changeset",
    issue="cleveragents#7120",
    description="record_change/end_changeset act on whichever changeset another thread started",
    invariants=(INVARIANT_NO_ERROR, INVARIANT_OWN_CHANGESET),
    variants={
        "buggy": Variant(
            make_target("buggy"),
            expect="race",
            summary="an unlocked list; record/end use its last id ([-1])",
        ),
        "as_proposed": Variant(
            make_target("as_proposed"),
            expect="race",
            summary="a threading.Lock around each method: no crash, changes still misattributed",
        ),
        "correct": Variant(
            make_target("correct"),
            expect="safe",
            summary="record_change/end_changeset take the id start_changeset returned",
        ),
    },
)
