"""DPOR places what C code or a library does around a callback into traced code.

``shared.sort(key=by_rank)``, ``bisect.insort(shared, v, key=by_rank)``,
``x in members`` and ``members.remove(x)`` with a traced ``__eq__``,
``table[k]`` on a ``defaultdict`` whose factory is traced code, a
``functools.cached_property`` (3.12+ has no lock in it), and ``json.dump``
with a traced ``default`` each call traced code in the middle of an
operation. The callback reaches scheduling points, so the operation spans
several steps of its thread: the list is empty while it is sorted, a scan
goes on over a list that shifted, the insertion point is chosen before the
callback and used after it, the default is stored and the cached value
written after the factory returns, the document is half written. The step
log recorded each such access once, in the step where the operation began, so
DPOR only ever ordered another thread's step before the whole operation or
after it, never inside it: it called each of these bugs verified after a few
schedules, while a random walk found them.

An operation that calls traced code back now spans: what it recorded is
recorded in every later step of its thread until it is over, and again in the
step where it ends (StepLog.operation_starts, StepLog._called_back).
"""

from __future__ import annotations

import bisect
import collections
import functools
import io
import json
import threading
from collections.abc import Callable

import pytest
from dpor_verdicts import assert_dpor_finds, assert_dpor_verifies

import racecheck

_shared: list[int] = []
_looked: list[int] = []
_seen: list[object] = []


def _by_rank(value: int) -> int:
    _looked.append(value)  # shared state: a scheduling point inside the callback
    return value


def _both(first: Callable[[], None], second: Callable[[], None]) -> None:
    workers = [threading.Thread(target=first), threading.Thread(target=second)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def _sort_then_look() -> None:
    _shared[:] = [3, 1, 2]
    _looked.clear()
    _seen.clear()
    _both(lambda: _shared.sort(key=_by_rank), lambda: _seen.append(len(_shared)))
    assert _seen == [3], f"the list looked empty while it was sorted: {_seen}"


def _insort_meets_append() -> None:
    _shared[:] = [1, 5]
    _looked.clear()
    _both(lambda: bisect.insort(_shared, 3, key=_by_rank), lambda: _shared.insert(0, 0))
    assert _shared == sorted(_shared), f"inserted at a stale position: {_shared}"


_table: collections.defaultdict[str, list[int]] = collections.defaultdict(list)
_made: list[int] = []


def _new_bucket() -> list[int]:
    _made.append(1)
    return []


_table.default_factory = _new_bucket


def _add_to_bucket() -> None:
    _table["k"].append(1)


def _two_adds_to_one_bucket() -> None:
    _table.clear()
    _made.clear()
    _both(_add_to_bucket, _add_to_bucket)
    assert len(_table["k"]) == 2, f"one bucket replaced the other: {dict(_table)}"


class _Client:
    @functools.cached_property
    def connection(self) -> object:
        _made.append(1)
        return object()


_clients: dict[str, _Client] = {}


def _connect() -> None:
    _clients["c"].connection  # noqa: B018 (the property's computation is the point)


def _two_connects() -> None:
    _clients["c"] = _Client()
    _made.clear()
    _both(_connect, _connect)
    assert len(_made) == 1, f"the cached property was computed {len(_made)} times"


class _Named:
    """Equal by name: its ``__eq__`` is traced code that reads shared state."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        _looked.append(0)
        return isinstance(other, _Named) and other.name == self.name

    __hash__ = None  # type: ignore[assignment]


_first, _wanted = _Named("first"), _Named("wanted")
_members: list[_Named] = []


def _wanted_is_seen() -> None:
    _members[:] = [_first, _wanted]
    _looked.clear()
    _seen.clear()
    _both(lambda: _seen.append(_Named("wanted") in _members), lambda: _members.remove(_first))
    assert _seen == [True], "a member present all along was missed: the list shifted mid-scan"


def _remove_meets_insert() -> None:
    _members[:] = [_first, _wanted]
    _looked.clear()
    _both(lambda: _members.remove(_Named("wanted")), lambda: _members.insert(0, _Named("new")))
    assert [m.name for m in _members] == ["new", "first"], [m.name for m in _members]


class _Point:
    """Not JSON: ``json.dump`` hands it to the ``default`` callback."""


_out = io.StringIO()


def _as_json(value: object) -> object:
    _looked.append(0)
    return "point"


def _dump_meets_look() -> None:
    _out.seek(0)
    _out.truncate()
    _looked.clear()
    _seen.clear()
    document = {"first": _Point(), "second": _Point()}
    _both(
        lambda: json.dump(document, _out, default=_as_json),
        lambda: _seen.append(_out.getvalue()),
    )
    assert _seen[0] in ("", '{"first": "point", "second": "point"}'), f"half a document: {_seen}"


BUGS = {
    "list.sort(key=traced)": _sort_then_look,
    "bisect.insort(key=traced)": _insort_meets_append,
    "defaultdict, traced factory": _two_adds_to_one_bucket,
    "x in list, traced __eq__": _wanted_is_seen,
    "list.remove(x), traced __eq__": _remove_meets_insert,
    "json.dump(default=traced), through library frames": _dump_meets_look,
}


@pytest.mark.parametrize("name", list(BUGS))
def test_dpor_finds_a_step_inside_a_c_operation(name: str) -> None:
    assert_dpor_finds(BUGS[name])


def test_dpor_and_a_random_walk_agree_on_cached_property() -> None:
    """3.11's cached_property takes a lock and re-checks: no bug, and DPOR verifies.
    3.12 dropped the lock: two threads can both compute, and DPOR must find it."""
    try:
        racecheck.check(_two_connects, strategy="random", schedules=300, seed=0, minimize=False)
        found_by_random = False
    except racecheck.RaceFound:
        found_by_random = True
    if found_by_random:
        assert_dpor_finds(_two_connects)
    else:
        assert_dpor_verifies(_two_connects)


def _sort_alone() -> None:
    mine = [3, 1, 2]
    _looked.clear()
    _seen.clear()
    _both(lambda: mine.sort(key=_by_rank), lambda: _seen.append(len(_shared)))


def test_a_private_sort_still_verifies() -> None:
    """The span records the sort's own list, nothing more: a sort of a list no other
    thread sees leaves the program verified (the callback's appends still conflict)."""
    assert_dpor_verifies(_sort_alone)


def _sorted_fixed() -> None:
    _shared[:] = [3, 1, 2]
    _looked.clear()
    _seen.clear()
    lock = threading.Lock()

    def sort() -> None:
        with lock:
            _shared.sort(key=_by_rank)

    def look() -> None:
        with lock:
            _seen.append(len(_shared))

    _both(sort, look)
    assert _seen == [3], _seen


def test_the_fixed_sort_verifies() -> None:
    assert_dpor_verifies(_sorted_fixed)
