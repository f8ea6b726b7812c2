"""Severity by evidence, measured per (rule, evidence) cell on the held-out rounds (lint19).

Every error of the held-out rounds that today's rules still make (66 on the
sixteenth and seventeenth rounds' corpora and the earlier rounds' packages
that held an error) was classified by the evidence its message names and
joined with its round's hand verdict (docs/lint.md, "Precision per evidence
cell"). Where a cell was clearly under 90%, the evidence no longer makes an
error; where a test or a reference shape needed it, a narrower rule was
chosen instead of demoting the whole cell:

* RC106 on an ``asyncio.Lock`` (0 of 3 today): a thread that uses only what
  the lock guards - never the lock, nor a method taking it - is a warning
  that says so (uiprotect's joined thread, litellm's one build thread,
  livekit's encoder). The reference bridge's proposed fix, whose pool thread
  queues ``_add()`` that takes the lock, stays an error, as does an asyncio
  object used from a thread (``ensure_future``, ``Event.set``).
"""

from __future__ import annotations

from pathlib import Path

from test_lint_heldout14 import _BRIDGE
from test_lint_heldout16 import findings

_RECORDER = """
import asyncio
import threading


class Recorder:
    def __init__(self):
        self._lock = asyncio.Lock()
        self._frames = []

    def start(self):
        threading.Thread(target=self._encode, daemon=True).start()

    async def record(self, frame):
        async with self._lock:
            self._frames.append(frame)

    def _encode(self):
        while self._frames:
            self._frames.pop(0)
"""


def test_a_thread_using_only_the_guarded_state_is_a_warning(tmp_path: Path) -> None:
    ((line, severity, message),) = findings(tmp_path, {"rec": _RECORDER}, "RC106")
    assert (line, severity) == (8, "warning"), message
    assert "uses what the lock guards but neither the lock nor a method that takes it" in (
        message
    )


def test_a_thread_queueing_a_coroutine_that_takes_the_lock_stays_an_error(
    tmp_path: Path,
) -> None:
    lock_findings = [
        (line, severity)
        for line, severity, message in findings(tmp_path, {"bridge": _BRIDGE}, "RC106")
        if "asyncio lock cannot exclude" in message
    ]
    assert lock_findings == [(10, "error")]
