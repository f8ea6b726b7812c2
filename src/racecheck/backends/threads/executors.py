"""Thread pools made before the exploration: each schedule works on a twin of its own.

Libraries keep a module-level ``ThreadPoolExecutor``. Made at import time,
its work queue is a C ``SimpleQueue`` that racecheck cannot schedule (a
controlled worker blocked in its ``get`` stalls the run), and once it has
run work, its workers are real threads no strategy chooses for. Its worker
threads and queue also outlive any run, so whatever a schedule left in them
reached the next schedule, the next exploration, and ``threading``'s exit
hook (which joins every pool worker it knows).

Each schedule stands for a fresh process, in which such a pool has made no
thread yet. So while the threads backend is installed, a ``submit`` or
``shutdown`` made by an actor on a pool the exploration did not make goes
to a twin made inside the schedule on first use (same size, thread name
prefix and initializer): its queue and locks are racecheck's, its workers
are threads racecheck schedules line by line, and it goes with the
schedule (its idle workers are unwound like any thread left waiting). The
pool itself is never touched: usable after the exploration as before it.
``map`` and ``with`` go through ``submit`` and ``shutdown``.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

from racecheck.backends.threads.primitives import STATE, SimpleQueue

_POOL = concurrent.futures.ThreadPoolExecutor
_SUBMIT = _POOL.submit
_SHUTDOWN = _POOL.shutdown


def _twin(pool: Any) -> Any:
    """The schedule's own twin of a pool made before the exploration; None for others."""
    runtime = STATE.runtime
    if runtime is None or runtime.me() is None or type(pool._work_queue) is SimpleQueue:
        return None  # not an actor's call, or a pool made inside the exploration
    twins: dict[int, tuple[Any, Any]] = runtime.__dict__.setdefault("pool_twins", {})
    entry = twins.get(id(pool))
    if entry is None:
        twin = _POOL(
            max_workers=pool._max_workers,
            thread_name_prefix=pool._thread_name_prefix,
            initializer=pool._initializer,
            initargs=pool._initargs,
        )
        # the pool too, so that its id is not reused by another within the schedule
        entry = twins[id(pool)] = (pool, twin)
    return entry[1]


def _submit(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
    twin = _twin(self)
    if twin is None:
        return _SUBMIT(self, fn, *args, **kwargs)
    return _SUBMIT(twin, fn, *args, **kwargs)


def _shutdown(self: Any, wait: bool = True, *, cancel_futures: bool = False) -> None:
    twin = _twin(self)
    _SHUTDOWN(self if twin is None else twin, wait, cancel_futures=cancel_futures)


def executor_patches() -> list[tuple[Any, str, Any]]:
    """The patches for the backend's install list (undone with the rest)."""
    return [(_POOL, "submit", _submit), (_POOL, "shutdown", _shutdown)]
