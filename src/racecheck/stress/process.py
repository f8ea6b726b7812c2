"""Process isolation: stress runs in worker subprocesses (``isolate="process"``).

The default isolation (a daemon thread per run, :mod:`racecheck.stress.runner`)
can walk away from a run blocked in C only if that run released the GIL. A
run that hangs *holding* it (a catastrophic regular expression, a C loop that
never lets go) starves racecheck's supervisor too, and a run that crashes the
interpreter (a segfault in an extension) takes racecheck down with it. Here
the runs happen in worker processes (``python -m racecheck.stress.worker``),
each running the same campaign as in-process mode and streaming one JSON line
per run over a private pipe. Around each run the worker arms
``faulthandler.dump_traceback_later``, whose C watchdog thread needs no GIL:
a run that holds the GIL past its timeout gets every thread's stack written
and the worker exits. The parent counts what the lines said, turns a worker
that died mid-run into a failure (hang with the faulthandler dump, or crash
with its signal), and starts a fresh worker for the runs left; so nothing a
hung run leaves behind survives it. ``processes=P`` runs P workers at once:
real parallelism even on a GIL build, for races through shared resources
(files, sockets, databases) between processes.

The target must be importable by name in a fresh interpreter: a module-level
function of an importable module or of a file (scenario files are fine).
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from racecheck.errors import UsageError
from racecheck.stress.report import StressReport
from racecheck.stress.runner import MAX_HANGS, Tally

#: seconds a worker may take to start and import the target
STARTUP = 60.0
#: seconds past a run's timeout before the worker's faulthandler fires
DUMP_GRACE = 2.0
_MODULE_PREFIX = "_racecheck_scenario"


@dataclass
class TargetRef:
    """How a fresh interpreter finds the target: a module name or a file, and a qualname."""

    qualname: str
    module: str | None = None
    file: str | None = None


def ref_of(target: Callable[[], Any]) -> TargetRef:
    """The reference of a module-level function, or a UsageError saying why there is none."""
    func = getattr(target, "__func__", target)
    qualname = getattr(func, "__qualname__", None)
    module_name = getattr(func, "__module__", None)
    what = qualname or type(target).__name__
    if not qualname or not module_name or "<locals>" in qualname or "<lambda>" in qualname:
        raise UsageError(
            f"stress: isolate='process' needs a module-level function, not {what}"
            " (a worker process imports the target by name)"
        )
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if module_name == "__main__" or module_name.startswith(_MODULE_PREFIX):
        if not file:
            raise UsageError(f"stress: isolate='process': cannot locate the file defining {what}")
        return TargetRef(qualname, file=os.path.abspath(file))
    return TargetRef(qualname, module=module_name)


def resolve(ref: TargetRef) -> Callable[[], Any]:
    """The target a reference names (in the worker)."""
    if ref.module is not None:
        obj: Any = importlib.import_module(ref.module)
    else:
        from racecheck.loader import import_file

        assert ref.file is not None
        obj = import_file(ref.file)
    for part in ref.qualname.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"stress: {ref.qualname} is not callable")
    return obj


class _Slot:
    """One worker at a time, replaced when it dies, until its share of runs is done."""

    def __init__(self, pool: Pool, index: int, runs: int) -> None:
        self.pool = pool
        self.index = index
        self.left = runs
        self.proc: subprocess.Popen[bytes] | None = None
        self.spawned = 0

    def run(self) -> None:
        while self.left > 0 and not self.pool.stopping.is_set():
            self.spawned += 1
            if not self._one_worker():
                return

    def _one_worker(self) -> bool:
        """Run one worker; False when this slot must stop."""
        pool = self.pool
        read_fd, write_fd = os.pipe()
        config = {
            "ref": asdict(pool.ref),
            "runs": self.left,
            "parallel": pool.parallel,
            "timeout": pool.timeout,
            "seed": pool.seed + 7919 * self.index + 104729 * self.spawned,
            "label": pool.report.label,
            "sys_path": [p for p in sys.path if isinstance(p, str)],
            "fd": write_fd,
            "dump_after": pool.timeout + DUMP_GRACE,
        }
        with tempfile.TemporaryFile() as err:
            try:
                self.proc = proc = subprocess.Popen(
                    [sys.executable, "-m", "racecheck.stress.worker", json.dumps(config)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    pass_fds=(write_fd,),
                )
            finally:
                os.close(write_fd)
            last: dict[str, Any] | None = None
            try:
                last = self._read(read_fd, proc)
            finally:
                os.close(read_fd)
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
            err.seek(0, os.SEEK_END)
            size = err.tell()
            err.seek(max(0, size - 20_000))
            stderr = err.read().decode("utf-8", "replace")
        if last is not None and last.get("error"):
            pool.fail(str(last["error"]))
            return False
        if last is not None and last.get("done"):
            return True
        if pool.stopping.is_set():
            return False
        if last is not None and last.get("hung"):
            return True  # the worker reported its hang and left: a fresh one goes on
        # the worker died in the middle of a run
        code = proc.returncode
        if "Timeout (" in stderr:
            pool.died(
                "hang",
                "Timeout",
                f"the run held on past {pool.timeout:g} s (without letting the supervisor"
                " run: the GIL was held, or the process was frozen); faulthandler's dump:",
                stderr,
            )
            self.left -= 1
        else:
            name = ""
            if code is not None and code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"signal {-code}"
            what = f"killed by {name}" if name else f"exited with code {code}"
            pool.died("crash", "WorkerCrash", f"the worker process {what} during a run", stderr)
            self.left -= 1
        return not pool.too_many_hangs()

    def _read(self, fd: int, proc: subprocess.Popen[bytes]) -> dict[str, Any] | None:
        pool = self.pool
        buffer = b""
        last: dict[str, Any] | None = None
        deadline = time.monotonic() + STARTUP + pool.timeout + DUMP_GRACE
        while True:
            if pool.stopping.is_set():
                return last
            wait = min(0.2, max(0.0, deadline - time.monotonic()))
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                if time.monotonic() >= deadline:
                    return last  # beyond faulthandler's own deadline: kill it
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return last
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                last = message
                if "hung" in message:
                    self.left -= 1
                    pool.ran(bool(message["hung"]), message.get("failures", []))
                    deadline = time.monotonic() + pool.timeout + DUMP_GRACE + 5.0
                if message.get("done") or message.get("error"):
                    return message


class Pool:
    """The parent side: slots of workers, one tally, one report."""

    def __init__(
        self,
        ref: TargetRef,
        report: StressReport,
        *,
        parallel: int,
        timeout: float,
        seed: int,
        processes: int,
    ) -> None:
        self.ref = ref
        self.report = report
        self.tally = Tally(report)
        self.parallel = parallel
        self.timeout = timeout
        self.seed = seed
        self.processes = processes
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.progress: Callable[[int, int, int], None] | None = None
        self.error: str | None = None

    def ran(self, hung: bool, failures: list[dict[str, Any]]) -> None:
        with self.lock:
            self.report.runs += 1
            if hung or failures:
                self.report.failed_runs += 1
            if hung:
                self.report.hangs += 1
            for f in failures:
                self.tally.count(
                    f["kind"], f["exc_type"], f["location"], f["message"], f["example"]
                )
            if self.too_many_hangs():
                self.stopping.set()
        self._progress()

    def _progress(self) -> None:
        if self.progress is not None:
            report = self.report
            self.progress(report.runs, report.runs_requested, report.failed_runs)

    def died(self, kind: str, exc_type: str, message: str, stderr: str) -> None:
        with self.lock:
            self.report.runs += 1
            self.report.failed_runs += 1
            if kind == "hang":
                self.report.hangs += 1
            else:
                self.report.crashes += 1
            self.tally.count(kind, exc_type, "", message, stderr.strip())
            if self.too_many_hangs():
                self.stopping.set()
        self._progress()

    def fail(self, message: str) -> None:
        with self.lock:
            self.error = message
        self.stopping.set()

    def too_many_hangs(self) -> bool:
        return self.report.hangs + self.report.crashes >= MAX_HANGS

    def run(self) -> StressReport:
        runs = self.report.runs_requested
        shares = [
            runs // self.processes + (1 if i < runs % self.processes else 0)
            for i in range(self.processes)
        ]
        slots = [_Slot(self, i, n) for i, n in enumerate(shares) if n]
        threads = [
            threading.Thread(target=s.run, name=f"racecheck-stress-worker-{s.index}", daemon=True)
            for s in slots
        ]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        except KeyboardInterrupt:
            self.report.interrupted = True
            self.stopping.set()
            for s in slots:
                if s.proc is not None and s.proc.poll() is None:
                    s.proc.kill()
            for t in threads:
                t.join(5.0)
        self.report.seconds = time.perf_counter() - t0
        if self.error is not None:
            raise UsageError(self.error)
        if self.too_many_hangs() and self.report.runs < runs:
            self.report.notes.append(
                f"stopped after {MAX_HANGS} hung or crashed runs: each costs the full timeout"
            )
        return self.report


def run_in_processes(
    target: Callable[[], Any],
    *,
    is_async: bool,
    runs: int,
    parallel: int,
    timeout: float,
    seed: int,
    label: str,
    processes: int,
    progress: Callable[[int, int, int], None] | None = None,
) -> StressReport:
    ref = ref_of(target)
    from racecheck.stress.runner import describe_jitter, new_report

    report = new_report(
        is_async=is_async, runs=runs, parallel=parallel, timeout=timeout, seed=seed, label=label
    )

    report.jitter = describe_jitter(is_async, lines_on=True)
    report.notes.append(
        f"isolation: runs in worker processes ({processes} at a time); a run that hangs holding"
        " the GIL or crashes the interpreter is caught there and the worker replaced"
    )
    pool = Pool(ref, report, parallel=parallel, timeout=timeout, seed=seed, processes=processes)
    pool.progress = progress
    return pool.run()
