"""A progress display: schedules done, rate and ETA.

On a terminal it is one line redrawn in place (``\\r``), at most ten times a
second. Elsewhere (CI logs, pipes) a redrawn line would pile up as garbage, so
it prints a whole line every ``interval`` seconds instead, and a last line when
the exploration ends, so a long run shows a sign of life in any log.

``racecheck.check(progress=True)`` uses it on stderr; ``racecheck run`` uses it
for its status line.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from racecheck.textsafe import terminal_safe

DEFAULT_INTERVAL = 10.0


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class ProgressDisplay:
    """Callable as ``(done, total)``: the engine's progress callback."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        tty: bool | None = None,
        interval: float = DEFAULT_INTERVAL,
        prefix: str = "",
        label: str = "",
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty and isatty())
        self.tty = tty
        self.interval = interval
        self.prefix = prefix
        self.label = terminal_safe(label, one_line=True)
        self._started = time.monotonic()
        self._last = 0.0
        self._shown = False
        self._done = 0
        self._total = 0

    @property
    def done(self) -> int:
        """Schedules done at the last update (an interrupted run's count)."""
        return self._done

    def start(self, label: str) -> None:
        self.label = terminal_safe(label, one_line=True)
        self._started = self._last = time.monotonic()
        self._done = self._total = 0

    def text(self, done: int, total: int) -> str:
        elapsed = max(time.monotonic() - self._started, 1e-9)
        rate = done / elapsed
        parts = [f"{done}/{total} schedules" if total else f"{done} schedules"]
        parts.append(f"{rate:.1f}/s" if rate < 10 else f"{rate:.0f}/s")
        if total and done < total:
            parts.append(f"ETA {_duration((total - done) / rate)}" if rate > 0 else "ETA ?")
        # a redrawn status reads like a table cell; a log line like a message
        sep = "  " if self.tty else ": "
        head = f"{self.prefix}{self.label}{sep}" if self.label else self.prefix
        return head + ", ".join(parts)

    def __call__(self, done: int, total: int) -> None:
        self.update(done, total)

    def update(self, done: int, total: int) -> None:
        self._done, self._total = done, total
        now = time.monotonic()
        if self.tty:
            if now - self._last < 0.1 and done != total:
                return
            self._last = now
            self.stream.write(f"\r\033[K  {self.text(done, total)}")
            self._shown = True
        else:
            if self.interval <= 0 or now - self._last < self.interval or done == 0:
                return
            self._last = now
            self.stream.write(self.text(done, total) + "\n")
        self.stream.flush()

    def finish(self, *, final_line: bool = True) -> None:
        """Clear a terminal's line; elsewhere print the last count (when asked to)."""
        if self.tty:
            if self._shown:
                self.stream.write("\r\033[K")
                self.stream.flush()
                self._shown = False
        elif final_line and self._done:
            self.stream.write(self.text(self._done, self._total) + "\n")
            self.stream.flush()
