"""Shard workers in sessions of their own, so that Linux gives each its own share of the CPUs.

Linux's autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``,
on by default in most distributions) puts the processes of one *session*
(one terminal, one ``setsid``) in one group and shares the CPUs fairly
between groups first, then within a group. Shard workers started from one
pytest or ``racecheck run`` inherit its session, so whenever anything else on
the machine is busy, K workers together get the CPU time of one process: the
critical path of a sharded exploration shrinks K-fold, its wall time does not.
Measured on the 2-core machine this was written on, with other sessions busy:
two processes in one session got 0.06-0.24 of a core between them, exactly
what one process alone got; two processes each in its own session got 1.2 to
2.5 times that. On idle cores nothing changes: every process gets a core
either way.

So a shard worker starts a session of its own (:func:`own_session`). That
also takes it out of the terminal's foreground process group, and Ctrl-C and
hang-up no longer reach it. Two things make up for that: the parent forwards
an interrupt to its workers (:func:`interrupt`), and the worker asks the
kernel to stop it when its parent dies (``PR_SET_PDEATHSIG``), so no worker
outlives the run that started it.

``RACECHECK_WORKER_SESSION=inherit`` keeps workers in the caller's session
(for a machine where they should not take more than one share, or a process
supervisor that tracks the session).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterable

#: prctl option: the signal this process gets when its parent dies (linux/prctl.h)
_PR_SET_PDEATHSIG = 1
_AUTOGROUP = "/proc/sys/kernel/sched_autogroup_enabled"


def wanted() -> bool:
    """Autogroup is on (so a session of its own changes the worker's share) and not turned off."""
    if os.environ.get("RACECHECK_WORKER_SESSION", "").strip().lower() == "inherit":
        return False
    if not sys.platform.startswith("linux"):
        return False
    try:
        with open(_AUTOGROUP) as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def own_session() -> bool:
    """In a worker: start a session of its own, ending with the parent. True when it did."""
    if not wanted():
        return False
    parent = os.getppid()
    try:
        os.setsid()
    except OSError:  # already a session or process group leader: leave it as it is
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        # The parent died before the kernel was told: nothing would stop this worker.
        os.kill(os.getpid(), signal.SIGTERM)
    return True


def interrupt(pids: Iterable[int]) -> None:
    """In the parent: pass Ctrl-C on to workers that no longer share the terminal."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGINT)
        except (ProcessLookupError, PermissionError):
            pass
