"""Keep a long-lived table in the heap an exploration freezes.

The collection after every run is a young one only while generation 2 is
empty (``Session._collect_between_runs``). A dict that holds nothing the
collector tracks (empty, or only strings, ints and such tuples) is untracked
by a full collection, and tracked again, as a young object, by the next
insertion of a tracked key or value; the next young collection then moves it
into generation 2 and the collection after that is a full one. A table that
lives through the whole exploration and is filled every run (the asyncio
loop's task numbering, asyncio's running-task table, the saturation watch's
fingerprint counts) is therefore made tracked after the exploration's first,
whole-heap collection and before the heap is frozen for the first run: frozen,
it is never examined, so never untracked, and its insertions move nothing.
"""

from __future__ import annotations

from typing import Any


class _Tracked:
    """A hashable object the collector tracks, held by no one else."""


def keep_tracked(table: Any) -> None:
    """Have the collector track ``table`` (a dict) from now on, empty or not.

    CPython tracks a dict once it holds a tracked key or value, and nothing
    but a full collection that finds it holding none untracks it again, so
    inserting such a key and taking it out leaves the dict tracked.
    """
    import gc

    if not isinstance(table, dict) or gc.is_tracked(table):
        return
    key = _Tracked()
    table[key] = None
    del table[key]


def make_thread_state() -> None:
    """Make the calling thread's CPython state dict now, tracked, with repr's guard.

    Each thread has a dict of its own in CPython (``PyThreadState_GetDict``),
    where ``repr`` of a container keeps its recursion guard (a list, made at
    the thread's first such ``repr``) and 3.11/3.12 keep thread-locals. Made or
    first given that list inside an exploration's first run, the dict and the
    list are younger than the heap frozen before that run, sit in generation
    2 from then on, and every collection between runs is a full one. Called
    on the explorer thread at install, before that freeze: the ``repr`` makes
    the dict and the list (the guard is emptied again, never dropped), and a
    dict holding a list is tracked.
    """
    repr([[]])
