"""Perturb real threads: a tiny switch interval and random pauses in user code.

Two knobs, both process-wide and both put back by :func:`thread_jitter`:

* ``sys.setswitchinterval``: on a GIL build the interpreter hands the GIL over
  only every 5 ms by default, so a read-modify-write a few bytecodes long is
  almost never split. A microsecond interval splits it often.
* a trace hook (``threading.settrace`` for threads started during the run,
  ``sys.settrace`` for the copies racecheck runs itself) that, at a random
  fraction of **line events in user code**, yields the GIL (``time.sleep(0)``)
  or sleeps for tens of microseconds. Library and stdlib frames are not traced
  at all (the call event returns no local tracer), so the cost stays in the
  code under test.

Why lines and not lock operations: patching ``threading.Lock`` would miss the
locks made before the run and C-level locks, and would leave something to
unpatch; a pause at the user line before or after a lock call perturbs the
order in which threads reach it just as well, with nothing to undo but the
hook. The intensity (the fraction of lines that pause, and the switch
interval) is drawn per run from a seeded RNG, so a campaign mixes light and
heavy perturbation, the way PCT mixes priority-change depths.

The hook is inert outside a run: it checks a flag and returns ``None``, so a
thread that outlives its run (a hung run that was abandoned) stops pausing.
An already installed tracer (coverage on 3.11) is never replaced: the line
jitter is skipped and the report says so.
"""

from __future__ import annotations

import contextlib
import random
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

from racecheck.codekeys import ByCode
from racecheck.sources import is_user_file

#: switch intervals (seconds) a run may draw; CPython's default is 0.005
SWITCH_INTERVALS = (1e-6, 5e-6, 2e-5, 1e-4, 0.005)
#: fractions of user-code lines that pause; 0 leaves only the switch interval
PAUSE_RATES = (0.0, 0.01, 0.05, 0.2)
#: the longest pause injected at a line, in seconds
MAX_PAUSE = 100e-6


class Jitter:
    """The per-run intensity, read by the trace hook of every traced thread."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.active = False
        self.rate = 0.0
        self.interval = SWITCH_INTERVALS[-1]
        self.lines_on = True
        self._user: ByCode[bool] = ByCode()  # by id: racecheck.codekeys

    def draw(self) -> None:
        """New intensity for the next run (seeded: the settings repeat, the timing does not)."""
        self.rate = self.rng.choice(PAUSE_RATES) if self.lines_on else 0.0
        self.interval = self.rng.choice(SWITCH_INTERVALS)
        sys.setswitchinterval(self.interval)

    def pause(self) -> None:
        """Yield the GIL, or sleep a few tens of microseconds (half the time each)."""
        roll = self.rng.random()
        time.sleep(0 if roll < 0.5 else roll * MAX_PAUSE)

    # -- the trace hook ------------------------------------------------------

    def global_trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        if not self.active or event != "call":
            return None
        code = frame.f_code
        user = self._user.get(id(code))
        if user is None:
            user = self._user.put(code, is_user_file(code.co_filename))
        return self.local_trace if user else None

    def local_trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        if not self.active:
            return None
        if event == "line" and self.rate and self.rng.random() < self.rate:
            self.pause()
        return self.local_trace


@contextlib.contextmanager
def thread_jitter(jitter: Jitter) -> Iterator[list[str]]:
    """Install the switch interval and the trace hook; restore both, always.

    Yields a list of notes for the report (why a part of the jitter is off).
    """
    notes: list[str] = []
    old_interval = sys.getswitchinterval()
    old_thread_trace = threading.gettrace()
    old_trace = sys.gettrace()
    if old_thread_trace is not None or old_trace is not None:
        jitter.lines_on = False
        notes.append(
            "another tracer is installed (coverage or a debugger): jitter at user-code lines"
            " is off, only the switch interval varies"
        )
    else:
        threading.settrace(jitter.global_trace)
    jitter.active = True
    try:
        yield notes
    finally:
        jitter.active = False
        sys.setswitchinterval(old_interval)
        if jitter.lines_on:
            threading.settrace(old_thread_trace)
