"""A standalone asyncio loop stamps its handles in place, as ``Detector.stamp`` does.

``DetectingLoop.call_soon`` writes ``Detector.stamp`` out when the host adds
nothing to it (an ``async def`` target's own loop): on 3.11 each call made
there, inside a detected task step, is one more traced call event. A plain
callback's hook goes straight to the detector too. Each program below runs
on that road and with it closed (every stamp through ``Detector.stamp``, every
callback through the host): every stamp a step or callback takes over (its
clock and who made it, in order) must be the same, and so must the verdict,
the finding and the schedule.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

import racecheck
from racecheck.backends.asyncio_loop import ControlledLoop
from racecheck.bench.workloads import asyncio_deposits
from racecheck.detect.detector import Detector


async def _event_and_timer() -> None:
    ready = asyncio.Event()
    box = {"n": 0}

    async def producer() -> None:
        box["n"] += 1
        await asyncio.sleep(0.01)  # a timer: call_at's road, unchanged
        ready.set()

    async def consumer() -> None:
        await ready.wait()
        box["n"] += 1

    await asyncio.gather(producer(), consumer())


async def _queue_and_callback() -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    seen: list[int] = []
    loop = asyncio.get_running_loop()

    async def put() -> None:
        for i in range(3):
            await queue.put(i)
            loop.call_soon(seen.append, -i)  # a plain callback of the user's
            await asyncio.sleep(0)

    async def get() -> None:
        for _ in range(3):
            seen.append(await queue.get())

    await asyncio.gather(put(), get())


async def _lost_update() -> None:
    box = {"n": 0}

    async def bump() -> None:
        n = box["n"]
        await asyncio.sleep(0)
        box["n"] = n + 1

    await asyncio.gather(bump(), bump())


PROGRAMS: list[Callable[[], Coroutine[Any, Any, None]]] = [
    asyncio_deposits,
    _event_and_timer,
    _queue_and_callback,
    _lost_update,
]


def _run(
    program: Callable[[], Coroutine[Any, Any, None]],
    monkeypatch: pytest.MonkeyPatch,
    in_place: bool,
) -> tuple[list[Any], str, int]:
    """The stamps taken over, in order, and the outcome, with the in-place road open or closed."""
    taken: list[Any] = []
    calls = {"stamp": 0}
    step, callback, stamp = Detector.begin_task_step, Detector.begin_callback, Detector.stamp
    rebind = ControlledLoop._rc_rebind

    def begin_task_step(self: Detector, actor: int, handle: Any) -> None:
        stamped = self.stamps.get(id(handle))
        taken.append(("step", actor, None if stamped is None else stamped[1:]))
        step(self, actor, handle)

    def begin_callback(self: Detector, handle: Any) -> None:
        stamped = self.stamps.get(id(handle))
        taken.append(("callback", None if stamped is None else stamped[1:]))
        callback(self, handle)

    def counted_stamp(self: Detector, handle: Any) -> None:
        calls["stamp"] += 1
        stamp(self, handle)

    def closed(self: ControlledLoop, host: Any) -> None:
        rebind(self, host)
        self._rc_own_detector = None
        if self._rc_stamp is not None:
            self._rc_stamp = self._rc_controller.detector.stamp

    with monkeypatch.context() as patch:
        patch.setattr(Detector, "begin_task_step", begin_task_step)
        patch.setattr(Detector, "begin_callback", begin_callback)
        patch.setattr(Detector, "stamp", counted_stamp)
        if not in_place:
            patch.setattr(ControlledLoop, "_rc_rebind", closed)
        try:
            report = racecheck.check(
                program, strategy="random", schedules=12, seed=0, detect=True, minimize=False
            )
            outcome = f"clean after {report.schedules_run}"
        except racecheck.RaceFound as exc:
            outcome = f"{exc.schedule}: {str(exc).splitlines()[0]}"
    return taken, outcome, calls["stamp"]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_stamps_in_place_are_detector_stamps(
    program: Callable[[], Coroutine[Any, Any, None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    taken, outcome, stamped_by_method = _run(program, monkeypatch, in_place=True)
    taken_closed, outcome_closed, stamped_closed = _run(program, monkeypatch, in_place=False)
    assert outcome == outcome_closed
    assert taken == taken_closed
    # the steps took stamps, from tasks and from callbacks, and the road was taken
    assert any(kind == "step" and entry is not None for kind, *_, entry in taken)
    assert stamped_closed > stamped_by_method


def test_the_lost_update_is_still_found(monkeypatch: pytest.MonkeyPatch) -> None:
    _, outcome, _ = _run(_lost_update, monkeypatch, in_place=True)
    assert "lost update" in outcome
