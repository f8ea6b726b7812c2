"""``racecheck.check`` and ``racecheck.replay``: the public entry points.

Both are thin: they validate options, pick a backend and a strategy, and hand
the work to :mod:`racecheck.explore`. Keep this signature stable — suites
outside this repository are written against it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from racecheck.outcome import Report


def check(
    target: Callable[[], Any],
    *,
    strategy: str = "auto",
    schedules: int = 1000,
    seed: int = 0,
    **options: Any,
) -> Report:
    """Explore up to ``schedules`` interleavings of ``target``.

    Returns a :class:`Report` when none fails; raises :class:`RaceFound` (an
    ``AssertionError``) with a replayable schedule token on the first that does.

    Options: ``backend`` ("asyncio" | "threads" | "trio"; default from the
    target's shape), ``max_steps`` (scheduling steps per run; passing it is a
    ``step-limit`` failure), ``depth`` (PCT), ``preemption_bound``
    (exhaustive), ``granularity`` (threads: "access", "line", "opcode"),
    ``watchdog`` (seconds without progress before a blocked actor is reported),
    ``minimize`` (shrink failing schedules, default True), ``minimize_runs``
    (candidate runs the shrinker may spend, default 200), ``minimize_time``
    (a safety net in seconds, default 60), ``label`` (the name a token is bound to),
    ``progress`` (callable(done, total) for progress displays, or True for
    racecheck's own on stderr: schedules done, rate, ETA),
    ``trace_packages`` (extra directories to trace as user code),
    ``leak_check`` (default True: a failure that comes from state kept between
    schedules, not from an interleaving, raises :class:`StateLeakError`
    instead of RaceFound; False for a target that counts its runs on purpose),
    ``replay`` (a token or a list of them, replayed exactly before exploring,
    like the tokens of :func:`racecheck.pinned`; see :mod:`racecheck.pinning`),
    ``shard`` ("I/N": run only slice I of N of the exploration; the slice with
    the lowest failing schedule number has the run's verdict; see
    :mod:`racecheck.sharding`).
    """
    from racecheck.explore import explore

    display = None
    if options.get("progress") is True:
        from racecheck.progress import ProgressDisplay

        name = options.get("label") or getattr(target, "__qualname__", "target")
        display = options["progress"] = ProgressDisplay(label=str(name))
    elif options.get("progress") is False:
        del options["progress"]
    pinned = _pinned_first(target, options)
    try:
        report = explore(target, strategy=strategy, schedules=schedules, seed=seed, options=options)
    finally:
        if display is not None:
            display.finish()
    report.warnings[:0] = pinned
    return report


def _pinned_first(target: Callable[[], Any], options: dict[str, Any]) -> list[str]:
    """Replay the pinned tokens (raising their RaceFound); notes for those that do not apply."""
    import warnings

    from racecheck.pinning import PINNED_ATTR, normalize, replay_first

    tokens = normalize([*getattr(target, PINNED_ATTR, ()), *normalize(options.pop("replay", None))])
    if not tokens:
        return []
    notes = [
        r.note for r in replay_first(target, tokens, options, what="pinned schedule") if r.note
    ]
    for note in notes:
        warnings.warn(note, PinnedScheduleWarning, stacklevel=3)
    return notes


class PinnedScheduleWarning(UserWarning):
    """A pinned schedule token no longer applies to the code: it was not replayed."""


def replay(target: Callable[[], Any], schedule_token: str, **options: Any) -> None:
    """Run exactly the schedule in ``schedule_token``; raise RaceFound if it fails.

    An async target replays on the backend the token was recorded on (asyncio
    or trio) unless ``backend`` is given. Returns when the run follows the
    schedule as far as it goes and does not fail, even if it ends before the
    token's last decision (a buggy token on fixed code). Raises
    :class:`TokenError` for a malformed token or one recorded for another
    target, backend or Python version, and :class:`DivergenceError` when the run
    needs a decision the token does not hold or meets other enabled actors.
    """
    from racecheck.explore import replay_token

    replay_token(target, schedule_token, options=options)
