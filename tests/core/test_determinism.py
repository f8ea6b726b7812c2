"""A schedule means the same thing whatever ran before it in the process."""

from __future__ import annotations

import asyncio
import threading

import pytest

import racecheck


async def graph() -> int:
    await asyncio.sleep(0.001)
    return 1


def loop_worker_and_condition() -> None:
    """A Condition made in a worker thread, notified from the loop thread."""
    loop = asyncio.new_event_loop()
    loop_thread = threading.Thread(target=loop.run_forever, name="event-loop")
    loop_thread.start()
    box: list[tuple[threading.Condition, list[int]]] = []

    def job() -> None:
        condition = threading.Condition()
        done: list[int] = []

        def spawn() -> None:
            task = loop.create_task(graph())

            def finished(_: object) -> None:
                with condition:
                    done.append(1)
                    condition.notify_all()

            task.add_done_callback(finished)

        loop.call_soon_threadsafe(spawn)
        box.append((condition, done))

    worker = threading.Thread(target=job, name="pool-0")
    worker.start()
    worker.join()
    condition, done = box[0]
    with condition:
        while not done:
            condition.wait()
    loop.call_soon_threadsafe(loop.stop)
    loop_thread.join()
    loop.close()


@pytest.mark.parametrize("seed", range(6))
def test_a_token_from_late_in_an_exploration_replays(seed: int) -> None:
    runs = [0]

    def planted() -> None:
        runs[0] += 1
        loop_worker_and_condition()
        assert runs[0] < 30, "planted failure on the 30th run"

    with pytest.raises(racecheck.RaceFound) as info:
        # the plant counts runs on purpose: a state leak the health check would refuse
        racecheck.check(
            planted, strategy="pct", schedules=35, seed=seed, minimize=False, leak_check=False
        )
    assert info.value.schedules_run == 30
    with pytest.raises(racecheck.RaceFound):
        racecheck.replay(planted, info.value.schedule)  # run 31+: fails by the plant too
