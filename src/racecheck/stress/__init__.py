"""Stress mode: for what the controlled scheduler cannot reach.

racecheck's scheduler controls Python-level scheduling points. Code whose
interleavings happen elsewhere (C extensions that release the GIL, real
sockets and pipes, subprocesses, free-threaded builds where threads truly run
at once) is out of its reach: such a target stalls it (StuckError) or runs
with parts it cannot see. Stress mode runs the **real** target many times,
uncontrolled, perturbed so rare interleavings become common::

    report = racecheck.stress(target, runs=1000, parallel=2, timeout=10)
    print(report)          # failed 3 of 1,000 runs (0.3%); 95% CI 0.10-0.88% ...
    assert report.ok

* threads: a switch interval drawn per run down to 1 us, and random pauses at
  user-code lines (:mod:`racecheck.stress.jitter`); on a free-threaded build
  with the GIL off, real parallelism (detected and reported);
* asyncio: a real loop per run whose ready queue is shuffled per task, with
  small real delays at task steps (:mod:`racecheck.stress.aio`);
* hangs: a timeout per run, with every thread's stack and every task's await
  chain in the report (:mod:`racecheck.stress.dump`); the hung run is
  abandoned, never waited for (:mod:`racecheck.stress.runner`);
* the report: failure rate with a 95% Wilson interval, distinct failures by
  exception type and location (:mod:`racecheck.stress.report`), clearly
  labelled non-replayable, plus a controlled re-check that prints a token when
  the scheduler can reproduce the failure, or says why it cannot
  (:mod:`racecheck.stress.reproduce`).

This package is engine-level: it knows nothing of pytest or the CLI.
"""

from __future__ import annotations

import inspect
import math
import random
from collections.abc import Callable
from typing import Any

from racecheck.errors import UsageError
from racecheck.stress.report import FailureGroup, Reproduction, StressReport, wilson
from racecheck.stress.reproduce import copies

__all__ = ["FailureGroup", "Reproduction", "StressReport", "copies", "stress", "wilson"]

#: schedules the controlled re-check of a failure may use
DEFAULT_REPRODUCE = 200


def _is_async(target: Callable[[], Any]) -> bool:
    if inspect.iscoroutinefunction(target):
        return True
    call = getattr(target, "__call__", None)  # noqa: B004 - callable objects
    return call is not None and inspect.iscoroutinefunction(call)


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"stress: {name} must be a positive integer, not {value!r}")
    return value


def _label(target: Callable[[], Any]) -> str:
    func = getattr(target, "func", target)
    return str(getattr(func, "__qualname__", None) or type(func).__name__)


def stress(
    target: Callable[[], Any],
    *,
    runs: int = 1000,
    parallel: int = 1,
    timeout: float = 10.0,
    backend: str | None = None,
    seed: int | None = None,
    reproduce: int = DEFAULT_REPRODUCE,
    label: str | None = None,
    isolate: str = "thread",
    processes: int = 1,
    progress: Callable[[int, int, int], None] | None = None,
) -> StressReport:
    """Run ``target`` ``runs`` times for real, ``parallel`` copies at once; count failures.

    ``backend``: "threads" for a plain function, "asyncio" for a coroutine
    function (the default follows the target's shape). ``timeout``: seconds
    per run before it counts as a hang and is abandoned. ``seed`` fixes the
    jitter *settings* drawn per run, not the interleavings (nothing here is
    replayable). ``reproduce``: when a run fails, schedules the controlled
    scheduler may spend trying to reproduce it (0: do not try). ``isolate``:
    "thread" (the default: each run in a daemon thread of this process) or
    "process" (runs in worker processes, for targets that may hang holding
    the GIL or crash the interpreter; the target must be a module-level
    function); ``processes`` > 1 runs that many workers at once (implies
    "process"). ``progress``: called as ``(runs done, runs requested, runs
    failed)`` after every run. Returns a :class:`StressReport`; a Ctrl-C
    returns the partial one (``interrupted``).
    """
    if not callable(target):
        raise UsageError(f"stress: the target must be callable, not {type(target).__name__}")
    runs = _positive_int("runs", runs)
    parallel = _positive_int("parallel", parallel)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise UsageError(f"stress: timeout must be a number of seconds, not {timeout!r}")
    if not (timeout > 0 and math.isfinite(timeout)):
        raise UsageError(f"stress: timeout must be a positive number of seconds, not {timeout!r}")
    if isinstance(reproduce, bool) or not isinstance(reproduce, int) or reproduce < 0:
        raise UsageError(f"stress: reproduce must be 0 or a positive integer, not {reproduce!r}")
    is_async = _is_async(target)
    shape = "asyncio" if is_async else "threads"
    if backend is None:
        backend = shape
    if backend not in ("threads", "asyncio"):
        raise UsageError(f"stress: backend must be 'threads' or 'asyncio', not {backend!r}")
    if backend != shape:
        kind = "a coroutine function" if is_async else "a plain function"
        raise UsageError(f"stress: backend {backend!r} does not fit {kind}; use {shape!r}")
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    elif isinstance(seed, bool) or not isinstance(seed, int):
        raise UsageError(f"stress: seed must be an integer, not {seed!r}")
    processes = _positive_int("processes", processes)
    if isolate not in ("thread", "process"):
        raise UsageError(f"stress: isolate must be 'thread' or 'process', not {isolate!r}")
    name = label or _label(target)
    if isolate == "process" or processes > 1:
        from racecheck.stress.process import run_in_processes

        report = run_in_processes(
            target,
            is_async=is_async,
            runs=runs,
            parallel=parallel,
            timeout=float(timeout),
            seed=seed,
            label=name,
            processes=processes,
            progress=progress,
        )
    else:
        from racecheck.stress.runner import Campaign

        campaign = Campaign(
            target,
            is_async=is_async,
            runs=runs,
            parallel=parallel,
            timeout=float(timeout),
            seed=seed,
            label=name,
        )
        campaign.progress = progress
        report = campaign.run()
    if report.failed_runs and not report.interrupted:
        if reproduce and report.failed_runs > report.hangs + report.crashes:
            from racecheck.stress.reproduce import reproduce as controlled

            try:
                report.reproduction = controlled(
                    target, parallel=parallel, schedules=reproduce, backend=backend, label=label
                )
            except KeyboardInterrupt:
                # the statistics are complete: return them rather than lose them
                report.reproduction = Reproduction("skipped", "interrupted")
                report.interrupted = True
        elif reproduce:
            report.reproduction = Reproduction(
                "skipped",
                "every failure was a hang or a crash: a controlled run would meet it the same way",
            )
        else:
            report.reproduction = Reproduction("skipped", "reproduce=0")
    return report
