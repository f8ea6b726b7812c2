"""The stress campaign: run the real target many times, uncontrolled, and count.

Isolation (what was chosen, and why): each run executes in a fresh **daemon
thread** of this process, supervised by the calling thread with a deadline.
That works with any callable (closures, pytest test bodies with their fixture
values), costs microseconds per run, and lets racecheck walk away from a run
that blocks in C, since the supervisor never blocks on it. What a thread
cannot do is stop: a timed-out run is dumped (every thread's stack, every task
of its loop), an asyncio run is cancelled and given a second to unwind, and
whatever still runs is *abandoned*: named in the report. It does not keep the
process alive: the run thread is a daemon, and so are the threads it starts
unless the target asks for ``daemon=False`` (for those, the CLI exits without
waiting). Each hang costs a timeout, so a campaign stops after
:data:`MAX_HANGS` of them. A run that hangs holding the GIL, or crashes the
interpreter, needs ``isolate="process"`` (:mod:`racecheck.stress.process`).

Parallel copies: ``parallel=K`` starts K copies of the target at once in every
run, released together by a barrier (threads for a plain function, tasks on
one loop for a coroutine function), so races *between* copies (module globals,
caches, singletons, C libraries' shared state) are hit as well as races inside
one. On a free-threaded build the copies run truly in parallel.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import sysconfig
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from racecheck.sources import is_user_file
from racecheck.stress.aio import loop_factory
from racecheck.stress.dump import hang_dump
from racecheck.stress.jitter import Jitter, thread_jitter
from racecheck.stress.report import FailureGroup, StressReport
from racecheck.textsafe import safe_str

#: hangs after which a campaign stops (each one costs a full timeout)
MAX_HANGS = 3
#: seconds a cancelled asyncio run gets to unwind before it is abandoned
CANCEL_GRACE = 1.0
_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def threading_mode() -> tuple[bool, str]:
    """(free-threaded and the GIL is off, a sentence for the report)."""
    gil_enabled = getattr(sys, "_is_gil_enabled", None)
    built_free = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    if gil_enabled is not None and not gil_enabled():
        return True, (
            "free-threaded build, GIL disabled: copies and their threads run truly in parallel"
        )
    if built_free:
        return False, (
            "free-threaded build with the GIL enabled again (PYTHON_GIL=1 or an extension that"
            " needs it): threads interleave as on a GIL build"
        )
    return False, (
        "GIL build: threads interleave where the GIL is handed over; a tiny switch interval"
        " and injected pauses make that happen far more often"
    )


@dataclass
class _Run:
    done: threading.Event = field(default_factory=threading.Event)
    errors: list[BaseException] = field(default_factory=list)
    loop: asyncio.AbstractEventLoop | None = None


def _run_sync(target: Callable[[], Any], parallel: int, run: _Run, rng: random.Random) -> None:
    try:
        if parallel == 1:
            try:
                target()
            except BaseException as exc:
                run.errors.append(exc)
            return
        barrier = threading.Barrier(parallel)
        offsets = [rng.random() * 200e-6 if rng.random() < 0.5 else 0.0 for _ in range(parallel)]

        def copy(offset: float) -> None:
            try:
                barrier.wait()
                if offset:
                    time.sleep(offset)
                target()
            except BaseException as exc:
                run.errors.append(exc)

        threads = [
            threading.Thread(target=copy, args=(o,), name=f"stress-copy-{i + 1}", daemon=True)
            for i, o in enumerate(offsets)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        run.done.set()


def _run_async(target: Callable[[], Any], parallel: int, run: _Run, rng: random.Random) -> None:
    async def one() -> None:
        try:
            await target()
        except BaseException as exc:
            run.errors.append(exc)

    async def main() -> None:
        await asyncio.gather(*(one() for _ in range(parallel)))

    try:
        with asyncio.Runner(loop_factory=loop_factory(rng)) as runner:
            run.loop = runner.get_loop()
            runner.run(main())
    except BaseException as exc:
        run.errors.append(exc)
    finally:
        run.done.set()


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    for task in asyncio.all_tasks(loop):
        task.cancel()


def _user_tb(tb: TracebackType | None) -> TracebackType | None:
    """The traceback without racecheck's own runner frames at its head."""
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_HERE):
        tb = tb.tb_next
    return tb


def _location(exc: BaseException) -> str:
    """The innermost user-code frame of ``exc`` (else the innermost frame)."""
    frames = traceback.extract_tb(_user_tb(exc.__traceback__))
    chosen = next((f for f in reversed(frames) if is_user_file(f.filename)), None)
    if chosen is None and frames:
        chosen = frames[-1]
    if chosen is None:
        return ""
    return f"{os.path.basename(chosen.filename)}:{chosen.lineno} in {chosen.name}"


def _message(exc: BaseException) -> str:
    text = safe_str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return first[:300]


def describe_jitter(is_async: bool, lines_on: bool) -> str:
    """The perturbation a campaign applies, in one line of the report."""
    from racecheck.stress.jitter import MAX_PAUSE, PAUSE_RATES, SWITCH_INTERVALS

    low, high = min(SWITCH_INTERVALS), max(SWITCH_INTERVALS)
    parts = [f"switch interval drawn per run from {low:g}-{high:g} s"]
    if lines_on:
        parts.append(
            f"pauses (GIL yield or up to {MAX_PAUSE * 1e6:g} us) at up to"
            f" {max(PAUSE_RATES):.0%} of user-code lines"
        )
    if is_async:
        parts.append("ready queue shuffled per task, task steps held back up to 0.5 ms")
    return "; ".join(parts)


class Tally:
    """Failures grouped by (kind, exception type, location) into a report."""

    def __init__(self, report: StressReport) -> None:
        self.report = report
        self.groups: dict[tuple[str, str, str], FailureGroup] = {}

    def count(
        self, kind: str, exc_type: str, location: str, message: str, example: str, n: int = 1
    ) -> None:
        key = (kind, exc_type, location)
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = FailureGroup(
                kind=kind,
                exc_type=exc_type,
                location=location,
                count=0,
                message=message,
                example=example,
            )
            self.report.groups.append(group)
        elif example and not group.example:
            group.example = example
        group.count += n


def new_report(
    *, is_async: bool, runs: int, parallel: int, timeout: float, seed: int, label: str
) -> StressReport:
    """An empty report for a campaign, naming the build's threading mode."""
    free, mode = threading_mode()
    return StressReport(
        label=label,
        backend="asyncio" if is_async else "threads",
        runs=0,
        runs_requested=runs,
        parallel=parallel,
        timeout=timeout,
        seconds=0.0,
        seed=seed,
        threading_mode=mode,
        free_threaded=free,
    )


class Campaign:
    """One call of :func:`racecheck.stress`: the runs, their tallies, the groups."""

    def __init__(
        self,
        target: Callable[[], Any],
        *,
        is_async: bool,
        runs: int,
        parallel: int,
        timeout: float,
        seed: int,
        label: str,
    ) -> None:
        self.target = target
        self.is_async = is_async
        self.parallel = parallel
        self.timeout = timeout
        self.rng = random.Random(seed)
        self.jitter = Jitter(self.rng.getrandbits(64))
        self.report = new_report(
            is_async=is_async, runs=runs, parallel=parallel, timeout=timeout, seed=seed, label=label
        )
        self.tally = Tally(self.report)
        #: called after every run with (hung, the failures of that run); the
        #: process isolation's worker streams them to its parent
        self.on_run: Callable[[bool, list[dict[str, Any]]], None] | None = None
        #: end the campaign after a hang (a worker process does: it is replaced)
        self.stop_after_hang = False
        #: (runs done, runs requested, runs failed) after every run
        self.progress: Callable[[int, int, int], None] | None = None
        self._this_run: list[dict[str, Any]] = []

    # -- tallies ---------------------------------------------------------------

    def _count(self, kind: str, exc_type: str, location: str, message: str, example: str) -> None:
        self.tally.count(kind, exc_type, location, message, example)
        self._this_run.append(
            {
                "kind": kind,
                "exc_type": exc_type,
                "location": location,
                "message": message,
                "example": example,
            }
        )

    def _failure(self, exc: BaseException) -> None:
        kind = type(exc)
        name = kind.__qualname__
        if kind.__module__ != "builtins":
            name = f"{kind.__module__}.{name}"
        location = _location(exc)
        key = ("exception", name, location)
        example = ""
        if key not in self.tally.groups:  # format one traceback per group, not per failure
            example = "".join(traceback.format_exception(kind, exc, _user_tb(exc.__traceback__)))
        self._count("exception", name, location, _message(exc), example)

    # -- runs ------------------------------------------------------------------

    def run(self) -> StressReport:
        report = self.report
        t0 = time.perf_counter()
        with thread_jitter(self.jitter) as notes:
            report.notes += notes
            try:
                for _ in range(report.runs_requested):
                    going = self._one_run()
                    if self.progress is not None:
                        self.progress(report.runs, report.runs_requested, report.failed_runs)
                    if not going:
                        break
            except KeyboardInterrupt:
                report.interrupted = True
        report.seconds = time.perf_counter() - t0
        report.jitter = describe_jitter(self.is_async, self.jitter.lines_on)
        return report

    def _one_run(self) -> bool:
        """One run; False when the campaign must stop."""
        report = self.report
        self.jitter.draw()
        run = _Run()
        worker = _run_async if self.is_async else _run_sync
        before = {t.ident for t in threading.enumerate()}
        thread = threading.Thread(
            target=worker,
            args=(self.target, self.parallel, run, random.Random(self.rng.getrandbits(64))),
            name=f"racecheck-stress-run-{report.runs + 1}",
            daemon=True,
        )
        thread.start()
        try:
            finished = run.done.wait(self.timeout)
        except KeyboardInterrupt:
            self._stop(run, thread, before, hung=False)
            raise
        self._this_run = []
        if finished:
            thread.join()
            report.runs += 1
            if run.errors:
                report.failed_runs += 1
                for exc in run.errors:
                    self._failure(exc)
            if self.on_run is not None:
                self.on_run(False, self._this_run)
            return True
        # hung: dump first, while it is still stuck where it hung
        dump = hang_dump({threading.get_ident()}, run.loop)
        report.runs += 1
        report.failed_runs += 1
        report.hangs += 1
        self._count(
            "hang",
            "Timeout",
            "",
            f"no result within {self.timeout:g} s; stacks of every thread and task:",
            dump,
        )
        if self.on_run is not None:
            self.on_run(True, self._this_run)
        if self.stop_after_hang:
            return False
        self._stop(run, thread, before, hung=True)
        if report.hangs >= MAX_HANGS:
            report.notes.append(
                f"stopped after {MAX_HANGS} hung runs: each costs the full timeout, and their"
                " threads cannot be stopped in this process"
            )
            return False
        return True

    def _stop(self, run: _Run, thread: threading.Thread, before: set[Any], *, hung: bool) -> None:
        """Cancel what can be cancelled; name what must be abandoned."""
        loop = run.loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(_cancel_all, loop)
            except RuntimeError:  # closed in the meantime
                pass
        # a thread cannot be cancelled: give it only a moment to finish by itself
        run.done.wait(CANCEL_GRACE if loop is not None else 0.1)
        if run.done.is_set():
            thread.join(CANCEL_GRACE)
        left = [
            t.name
            for t in threading.enumerate()
            if t.ident not in before and t.is_alive() and t is not threading.current_thread()
        ]
        for name in left:
            if name not in self.report.abandoned_threads:
                self.report.abandoned_threads.append(name)
