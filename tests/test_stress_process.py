"""racecheck.stress(isolate="process"): real worker processes, real hangs and crashes.

What in-process isolation cannot survive: a run that hangs *holding the GIL*
(here, catastrophic backtracking in the C regex engine) and a run that kills
the interpreter (here, a segfault through ctypes).
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import time

import pytest

import racecheck


def holds_the_gil() -> None:
    re.match(r"(a+)+$", "a" * 64 + "b")  # the regex engine never lets go


def segfaults() -> None:
    ctypes.string_at(0)


def always_fails() -> None:
    raise LookupError(f"from worker {os.getpid()}")


def passes() -> None:
    pass


def test_a_run_holding_the_gil_is_dumped_by_faulthandler_and_racecheck_returns() -> None:
    t0 = time.monotonic()
    report = racecheck.stress(holds_the_gil, runs=1, timeout=0.5, isolate="process", seed=1)
    assert time.monotonic() - t0 < 120  # generous: it returned
    assert report.runs == 1 and report.hangs == 1 and report.failed_runs == 1
    [group] = report.groups
    assert group.kind == "hang"
    assert "Timeout (" in group.example  # faulthandler's dump
    assert "in holds_the_gil" in group.example and "line" in group.example
    assert report.reproduction is not None and report.reproduction.status == "skipped"


def test_a_segfault_is_a_crash_with_its_stack_and_the_worker_is_replaced() -> None:
    report = racecheck.stress(segfaults, runs=2, isolate="process", seed=2)
    assert report.runs == 2 and report.crashes == 2 and report.hangs == 0
    [group] = report.groups
    assert group.kind == "crash" and group.count == 2
    assert "SIGSEGV" in group.message
    assert "Segmentation fault" in group.example and "in segfaults" in group.example
    assert "crashes: 2 run(s) killed their worker process" in report.render()


def test_several_worker_processes_share_the_runs() -> None:
    report = racecheck.stress(always_fails, runs=12, processes=2, seed=3, reproduce=0)
    assert report.runs == 12 and report.failed_runs == 12
    # one group per location, whatever the worker: the messages differ by pid
    [group] = report.groups
    assert group.exc_type == "LookupError" and group.count == 12
    assert "2 at a time" in report.render()


def test_a_passing_target_in_processes_has_an_upper_bound() -> None:
    report = racecheck.stress(passes, runs=30, isolate="process", seed=4)
    assert report.ok and report.runs == 30
    assert "failed 0 of 30 runs (0.0%); 95% CI 0.0–11.4%" in report.render()


def test_process_isolation_needs_a_module_level_function() -> None:
    def local() -> None:
        pass

    for target in (local, lambda: None, functools.partial(passes)):
        with pytest.raises(racecheck.UsageError, match="isolate='process'"):
            racecheck.stress(target, runs=1, isolate="process")


def test_bad_isolation_options() -> None:
    with pytest.raises(racecheck.UsageError, match="isolate must be 'thread' or 'process'"):
        racecheck.stress(passes, isolate="fork")
    with pytest.raises(racecheck.UsageError, match="processes must be a positive integer"):
        racecheck.stress(passes, processes=0)
