"""cleveragents #7105: an Rx stream's pool threads create asyncio tasks for a loop thread.

``RxPyLangGraphBridge`` tracks graph tasks in ``_active_tasks``: pool threads
add (``flat_map`` -> ``create_future_task``), the loop thread discards (done
callbacks), and shutdown cleans up. The target shuts the bridge down twice
while two messages are in flight: once with the sync ``cleanup_tasks`` from
the main thread, once with ``cleanup_tasks_async`` on the loop.

``buggy`` iterates the live set ("Set changed size during iteration") and its
async cleanup forgets tasks added after its snapshot-difference. ``as_proposed``
(an ``asyncio.Lock``) cannot be taken by the pool threads or the sync cleanup,
and the adds it defers onto the loop land after cleanup's ``clear()``.
``correct`` creates tasks on the loop (``call_soon_threadsafe``), tracks them
under a ``threading.Lock`` with a closing flag, and cleans up until none is left.

Components: :mod:`racecheck.reference.bridge`.
"""

from __future__ import annotations

from collections.abc import Callable

from racecheck import Scenario, Variant
from racecheck.reference.bridge import (
    INVARIANT_ALL_COMPLETE,
    INVARIANT_CLEANUP_ALL,
    INVARIANT_NO_LEAK,
    INVARIANT_NO_SET_CHANGED,
    shutdown_scenario,
)


def make_target(variant: str) -> Callable[[], None]:
    def target() -> None:
        shutdown_scenario(variant)

    target.__qualname__ = target.__name__ = f"cleveragents_7105_{variant}"
    return target


SCENARIO = Scenario(
    name="cleveragents-7105-bridge",
    issue="cleveragents#7105",
    description="_active_tasks shared by pool threads, loop callbacks and cleanup",
    invariants=(
        INVARIANT_NO_SET_CHANGED,
        INVARIANT_NO_LEAK,
        INVARIANT_CLEANUP_ALL,
        INVARIANT_ALL_COMPLETE,
    ),
    variants={
        "buggy": Variant(
            make_target("buggy"),
            expect="race",
            summary="ensure_future on pool threads; cleanup iterates the live set",
        ),
        "as_proposed": Variant(
            make_target("as_proposed"),
            expect="race",
            summary="an asyncio.Lock, which no pool thread or sync cleanup can take",
        ),
        "correct": Variant(
            make_target("correct"),
            expect="safe",
            summary="create on the loop via call_soon_threadsafe; threading.Lock + closing flag",
        ),
    },
)
