"""Errors that mean "you gave racecheck something it cannot use".

They are distinct from :class:`racecheck.RaceFound`, which means "your code has a
bug". The CLI and the pytest plugin print a :class:`UsageError` as one line and
exit with code 2; they never dump a traceback for one.
"""

from __future__ import annotations


def one_line(exc: BaseException, *, named: bool = True) -> str:
    """The first line of an exception's message, prefixed by its type when ``named``.

    Front ends print errors as one line: a traceback is for racecheck's bugs,
    not for a user's bad input.
    """
    from racecheck.textsafe import safe_str

    text = safe_str(exc).strip()
    first = text.splitlines()[0] if text else ""
    if not first:
        return type(exc).__name__
    return f"{type(exc).__name__}: {first}" if named else first


class UsageError(Exception):
    """Bad input: a malformed token, a target of the wrong shape, a bad option."""


class TokenError(UsageError):
    """A schedule token that cannot be decoded, or was made for something else."""


class DivergenceError(UsageError):
    """Replay did not follow the recorded schedule.

    Raised when the program takes another path than the one the token recorded:
    the code changed, or it depends on something racecheck does not control
    (wall-clock time, randomness, I/O). ``step`` is the first decision that
    differed. ``reason`` says which way it left the schedule:

    * ``"needs-more"``: the run needed a decision past the token's last one;
    * ``"not-enabled"``: at a recorded decision another set of actors was
      enabled, so the recorded choice does not name the same actor (or none);
    * ``"traced-replay"``: racecheck's own traced re-run of a failure it had
      just found took another path (the target is not deterministic per run).

    A run that ends early *without failing* is not a divergence: it followed
    the schedule as far as it went, and did not fail.
    """

    def __init__(self, message: str, step: int, reason: str = "") -> None:
        super().__init__(message)
        self.step = step
        self.reason = reason


class StuckError(UsageError):
    """An actor blocked outside racecheck's control and the watchdog fired.

    Typical causes: a lock created before racecheck patched ``threading`` (at
    import time), or a call that blocks in C. Waiting any longer would hang, so
    the run is abandoned and the blocked thread is named.
    """


class UnsupportedError(UsageError):
    """The environment cannot be controlled (for example an untested trio version)."""


class StateLeakError(UsageError):
    """A failure that does not reproduce on its own replay: not reported as a race.

    Schedules must be independent: each starts from the state the first one
    saw. A target that keeps state from one schedule to the next (a mutable
    fixture shared by every schedule of a test, a module global never reset)
    can fail only because of what earlier schedules left behind, and replay
    from a fresh start cannot reproduce that. ``suspects`` names what changed
    between schedules, where racecheck could see it.
    """

    def __init__(self, message: str, suspects: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.suspects = suspects


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped an exploration: what it had explored by then.

    Still a ``KeyboardInterrupt``, so whoever stops on Ctrl-C still stops; the
    front ends read the counts to say what was explored rather than show the
    engine's frames. ``found`` is the failure seen before the interruption (the
    shrinker was still minimising it), with ``schedule``, its unminimised token.
    """

    def __init__(
        self,
        *,
        schedules_run: int,
        schedules: int,
        strategy: str = "",
        seed: int = 0,
        found: str | None = None,
        found_at: int = 0,
        schedule: str | None = None,
    ) -> None:
        self.schedules_run = schedules_run
        self.schedules = schedules
        self.strategy = strategy
        self.seed = seed
        self.found = found
        self.found_at = found_at
        self.schedule = schedule
        super().__init__(self.describe())

    def describe(self) -> str:
        """One line: how far the exploration got, and any failure it had seen."""
        how = f" ({self.strategy}, seed {self.seed})" if self.strategy else ""
        text = f"after {self.schedules_run} of {self.schedules} schedules{how}"
        if self.found is None:
            return f"{text}; no failure found so far"
        text += f"; a failure was found at schedule {self.found_at}: {self.found}"
        if self.schedule:
            text += f" (not yet minimised; schedule {self.schedule})"
        return text
