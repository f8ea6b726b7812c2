"""The detector's cheaper bookkeeping keeps what it stood for.

- A task step that starts from a handle its own actor stamped (its
  ``sleep(0)``, a future it resolved itself) skips the clock joins
  (``Detector.begin_task_step``): its clocks already hold that stamp. Each
  program below runs detected with every step checked against the full
  join of the stamp into both clocks.
- A site's line is worked out from its frame's code and offset when a report
  asks for it (``_line_at``), not read from ``f_lineno`` at every access: the
  two agree at every instruction of a function, multi-line statements
  included.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any

import pytest

import racecheck
from racecheck.bench.workloads import asyncio_deposits
from racecheck.detect import detector as detector_module
from racecheck.detect.detector import Detector


async def _event_handoff() -> None:
    ready = asyncio.Event()
    box = {"n": 0}

    async def producer() -> None:
        box["n"] += 1
        await asyncio.sleep(0)
        ready.set()

    async def consumer() -> None:
        await ready.wait()
        box["n"] += 1

    await asyncio.gather(producer(), consumer())


async def _queue_handoff() -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    seen: list[int] = []

    async def put() -> None:
        for i in range(3):
            await queue.put(i)
            await asyncio.sleep(0)

    async def get() -> None:
        for _ in range(3):
            seen.append(await queue.get())

    await asyncio.gather(put(), get())


PROGRAMS: list[Callable[[], Coroutine[Any, Any, None]]] = [
    asyncio_deposits,
    _event_handoff,
    _queue_handoff,
]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_a_step_s_clocks_are_the_full_join_of_its_stamp(
    program: Callable[[], Coroutine[Any, Any, None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = Detector.begin_task_step
    kinds = {"own": 0, "other": 0}

    def checked(self: Detector, actor: int, handle: Any) -> None:
        stamped = self.stamps.get(id(handle))
        stamper = stamped[2] if stamped is not None else None
        expected: tuple[dict[int, int], dict[int, int]] | None = None
        if stamped is not None and actor in self.clocks:
            clock, signals = dict(self.clocks[actor]), dict(self.signals[actor])
            for who, tick in stamped[1].items():
                clock[who] = max(clock.get(who, 0), tick)
                signals[who] = max(signals.get(who, 0), tick)
            expected = (clock, signals)
            kinds["own" if stamper is not None and stamper[0] == actor else "other"] += 1
        original(self, actor, handle)
        if expected is not None:
            assert (self.clocks[actor], self.signals[actor]) == expected

    monkeypatch.setattr(Detector, "begin_task_step", checked)
    report = racecheck.check(program, strategy="random", schedules=20, seed=0, detect=True)
    assert report.schedules_run > 0
    # both kinds of step ran: the skipped joins and the full ones
    assert kinds["own"] > 0 and kinds["other"] > 0


def _spread_out(box: dict[str, int]) -> list[FrameType]:
    frames = [sys._getframe()]
    total = (
        box["a"]
        + len(frames)
        + box.get(
            "b",
            0,
        )
    )
    frames.append(sys._getframe())
    if total > (
        box["a"]  # a condition over two lines
        - 1
    ):
        frames.append(sys._getframe())
    return frames


def test_a_site_s_line_is_the_frame_s_line_at_its_offset() -> None:
    lines: list[tuple[int, int]] = []

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code is _spread_out.__code__:
            frame.f_trace_opcodes = True
            if event == "opcode":
                computed = detector_module._line_at(frame.f_code, frame.f_lasti)
                lines.append((frame.f_lineno, computed))
            return tracer
        return None

    sys.settrace(tracer)
    try:
        _spread_out({"a": 1})
    finally:
        sys.settrace(None)
    assert len(lines) > 20
    assert len({line for line, _ in lines}) >= 5
    assert all(line == computed for line, computed in lines)
