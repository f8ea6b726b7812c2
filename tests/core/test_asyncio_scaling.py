"""The controlled asyncio loop's cost per decision grows (at most) linearly with the ready tasks.

Each decision scans the ready queue once to list the ready tasks. A membership
test in a list inside that scan made it quadratic per decision (cubic per
schedule): 400 tasks cost 80 times 25 tasks per schedule. The test compares
the CPU time per decision of two sizes, measured in one process, against a
very generous bound; no absolute timing is asserted.
"""

from __future__ import annotations

import asyncio
import time

from racecheck.session import Session, make_settings
from racecheck.strategies import make_chooser

SMALL, LARGE = 25, 800


def _cpu_per_decision(tasks: int, runs: int) -> float:
    async def target() -> None:
        async def worker() -> None:
            for _ in range(3):
                await asyncio.sleep(0)

        await asyncio.gather(*(worker() for _ in range(tasks)))

    session = Session(make_settings(target, {}))
    # Random choices cost O(1) each, so the loop's own scan is what is measured.
    chooser = make_chooser("random", seed=0, options={})
    decisions = 0
    started = time.process_time()
    for run in range(1, runs + 1):
        controller = session.run(chooser, run)
        assert controller.failure is None
        chooser.end(tuple(controller.decisions), False, controller.scheduling_steps)
        decisions += controller.scheduling_steps
    assert decisions >= runs * tasks * 3
    return (time.process_time() - started) / decisions


def test_a_decision_costs_at_most_linear_time_in_the_ready_tasks() -> None:
    _cpu_per_decision(SMALL, 2)  # warm-up: imports, code caches
    small = min(_cpu_per_decision(SMALL, 8) for _ in range(3))
    large = _cpu_per_decision(LARGE, 1)
    ratio = large / small
    # Linear would be at most LARGE / SMALL = 32 (in practice ~12); the
    # quadratic scan measured ~160.
    assert ratio < 1.5 * LARGE / SMALL, f"{LARGE} tasks cost {ratio:.0f}x {SMALL} per decision"


def test_many_ready_tasks_keep_their_actor_numbers_in_queue_order() -> None:
    """The scan's bookkeeping changes nothing a schedule means: natural order, ids 1..n+1."""
    from racecheck.backends.asyncio_loop import ControlledLoop, StandaloneHost
    from racecheck.engine import Controller

    seen: list[list[int]] = []

    class Recording:
        name = "record"

        def begin(self, run: int) -> None:
            pass

        def choose(self, candidates: list[int], step: int) -> int:
            seen.append(list(candidates))
            return 0

    async def main() -> None:
        async def worker() -> None:
            await asyncio.sleep(0)

        await asyncio.gather(*(worker() for _ in range(50)))

    controller = Controller(Recording(), 10_000)  # type: ignore[arg-type]
    with asyncio.Runner(loop_factory=lambda: ControlledLoop(StandaloneHost(controller))) as r:
        r.run(main())
    first_multi = next(c for c in seen if len(c) > 1)
    assert first_multi == list(range(2, 52))  # the workers, in creation (queue) order
    assert all(len(set(c)) == len(c) for c in seen)  # never a task offered twice
