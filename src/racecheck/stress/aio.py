"""A real asyncio loop that runs ready tasks in a random order, with small real delays.

:class:`JitterLoop` is a ``SelectorEventLoop`` with one override: before each
iteration it reorders the ready queue and holds some tasks back for a fraction
of a millisecond. It is made per run (``asyncio.Runner(loop_factory=...)``)
and closed with it, so nothing is patched and nothing outlives the run.

What may be reordered: the ready queue holds callbacks, not actors, and
asyncio promises FIFO order for ``call_soon``. Some code relies on it. Only
callbacks of *different tasks* are interleaved at random (a uniformly random
merge that keeps each task's callbacks, and all non-task callbacks, in their
own order); that is an order the real loop could produce had the tasks become
ready in another order, so a failure seen here is one a user can meet.

Why delays: with real sockets, subprocesses and executor threads, the order
in which I/O completes depends on how long the loop takes to come back to it.
Holding a task's next step back with ``call_later`` (a real delay at an await)
lets the I/O and the other tasks overtake it.
"""

from __future__ import annotations

import asyncio
import collections
import random
from typing import Any

#: fractions of task steps held back per iteration; 0 keeps only the reordering
DEFER_RATES = (0.0, 0.05, 0.2)
#: the longest hold, in seconds
MAX_DELAY = 500e-6


class JitterLoop(asyncio.SelectorEventLoop):
    """An event loop whose ready queue is shuffled per task and sometimes delayed."""

    def __init__(self, rng: random.Random, defer_rate: float) -> None:
        super().__init__()
        self._rc_rng = rng
        self._rc_defer = defer_rate

    def _run_once(self) -> None:
        ready: collections.deque[Any] = self._ready  # type: ignore[attr-defined]
        if ready:
            self._rc_reorder(ready)
        super()._run_once()  # type: ignore[misc]

    def _rc_reorder(self, ready: collections.deque[Any]) -> None:
        groups: dict[int, list[Any]] = {}
        for handle in ready:
            owner = getattr(getattr(handle, "_callback", None), "__self__", None)
            key = id(owner) if isinstance(owner, asyncio.Task) else 0
            groups.setdefault(key, []).append(handle)
        rng = self._rc_rng
        if self._rc_defer:
            for key in [k for k in groups if k != 0]:
                if rng.random() < self._rc_defer:
                    held = groups.pop(key)
                    # one callback re-queues the task's handles in order (equal
                    # timer deadlines would not keep it)
                    self.call_later(rng.random() * MAX_DELAY, ready.extend, held)
        if len(groups) < 2 and len(ready) == sum(len(g) for g in groups.values()):
            return
        queues = [collections.deque(g) for g in groups.values()]
        remaining = sum(len(q) for q in queues)
        ready.clear()
        while remaining:
            # pick a queue with probability proportional to its length: every
            # merge of the queues is equally likely
            pick = rng.randrange(remaining)
            for q in queues:
                if pick < len(q):
                    ready.append(q.popleft())
                    break
                pick -= len(q)
            remaining -= 1


def loop_factory(rng: random.Random) -> Any:
    """A zero-argument factory for ``asyncio.Runner``: each run draws its own intensity."""

    def make() -> JitterLoop:
        return JitterLoop(random.Random(rng.random()), rng.choice(DEFER_RATES))

    return make
