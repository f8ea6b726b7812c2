"""An actor's gate: where its thread sleeps while another actor holds the baton.

Every baton pass opens the next actor's gate and waits on one's own. With a
raw ``_thread`` lock as the gate, the release that wakes the next thread runs
*with the GIL held*: the woken thread, scheduled at once on the other core,
finds the GIL taken, sleeps again on the GIL's condition variable, and is
woken a second time when the passer drops the GIL to wait on its own gate.
On Linux a gate is an ``eventfd`` instead: ``os.eventfd_write`` and
``os.eventfd_read`` drop the GIL around the system call, so the woken thread
meets a free GIL. A two-thread ping-pong here costs 1.1 voluntary context
switches and 9 us of CPU a round trip with eventfds, against 3.0 and 20 us
with locks (3.11-3.13 alike; see docs/architecture.md, "Threads, third pass").
Elsewhere (no ``os.eventfd``, or the process is out of descriptors) a gate is
a raw lock, as before.

A gate counts no more than "open": opening an open gate leaves it open once
(the eventfd's counter is read whole), like releasing an unlocked lock would,
minus the ``RuntimeError`` (callers that may open twice catch it for the lock:
only the aborts' :meth:`Gate.force_open` may).
"""

from __future__ import annotations

import _thread
import os
import select
from collections.abc import Callable
from functools import partial
from typing import Any

_eventfd: Callable[..., int] | None = getattr(os, "eventfd", None)
_EFD_CLOEXEC: int = getattr(os, "EFD_CLOEXEC", 0)


def _shut() -> None:
    """A closed gate's open and wait: nothing to wake, nothing to wait for."""


class Gate:
    """Closed when made. ``open()`` lets its owner run; ``wait()`` sleeps until opened.

    Both are C callables stored on the gate (no Python frame on the hot
    path), and ``wait()`` consumes every ``open()`` before it.
    """

    __slots__ = ("_fd", "_lock", "open", "stray", "wait")

    def __init__(self) -> None:
        self._fd = -1
        self._lock: Any = None
        #: opened outside the baton's order since the last drain (see force_open)
        self.stray = False
        self.open: Callable[[], Any]
        self.wait: Callable[[], Any]
        if _eventfd is not None:
            try:
                self._fd = _eventfd(0, _EFD_CLOEXEC)
            except OSError:  # out of descriptors: a lock still works
                pass
        if self._fd >= 0:
            self.open = partial(os.eventfd_write, self._fd, 1)
            self.wait = partial(os.eventfd_read, self._fd)
        else:
            lock = self._lock = _thread.allocate_lock()
            lock.acquire()
            self.open = lock.release
            self.wait = lock.acquire

    def force_open(self) -> None:
        """Open it outside the baton's order (an abort wakes every parked actor).

        Its owner may be running and never wait on it again in this run:
        :meth:`drain` closes it before the gate's next use.
        """
        self.stray = True
        self.open()

    def drain(self) -> None:
        """Close it again if a :meth:`force_open` is still pending.

        Every other open is taken by its owner's wait, so only a forced one
        costs a look (a system call for an eventfd).
        """
        if not self.stray:
            return
        self.stray = False
        if self.is_open():
            self.wait()  # returns at once: takes the pending open

    def is_open(self) -> bool:
        """An open is pending: the next :meth:`wait` would return at once."""
        if self._lock is not None:
            return not self._lock.locked()
        if self._fd < 0:
            return False
        pending = select.poll()
        pending.register(self._fd, select.POLLIN)
        return bool(pending.poll(0))

    def close(self) -> None:
        """Give its descriptor back; only once no thread can wait on it or open it."""
        self.open = self.wait = _shut
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)
