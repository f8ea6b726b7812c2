"""A flag or a check returned by a helper and tested by its caller (issue 14).

``def answered(self): with self._lock: return self._answered`` is how a
library spells "is the answer there?": the read is in the helper, the branch
in the caller. The detector follows the value back into the caller: a flag
found set through the helper hands over the answerer's publishing step (as a
flag checked in place does), and a check made through a helper outside the
lock decides the write its caller then makes under it (a race when another
thread writes in between, or unordered).

Lines that the detector must name carry a ``# <- marker``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any


def _run(*targets: Any) -> None:
    workers = [threading.Thread(target=t) for t in targets]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


class Exchange:
    """A one-slot request/response box: the question, then the answer, in one slot."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._v: Any = None
        self._answered = False

    def answered(self) -> bool:
        with self._lock:
            return self._answered

    def state(self) -> str:
        with self._lock:
            return "answered" if self._answered else "waiting"

    def asked(self) -> bool:
        with self._lock:
            return self._v is not None

    def ask(self, question: str) -> None:
        with self._lock:
            self._v = question  # <- ask

    def answer(self, value: str) -> None:
        with self._lock:
            self._v = value
            self._answered = True

    def take(self) -> Any:
        with self._lock:
            return self._v  # <- take


def _answered_through_helper(late: bool, compare: bool) -> None:
    box = Exchange()

    def asker() -> None:
        box.ask("question")
        # polls through the helper: never waits on anything but the lock
        if compare:
            while box.state() != "answered":
                time.sleep(0.001)
        else:
            while not box.answered():
                time.sleep(0.001)
        answer = box.take()
        assert answer in ("answer", "late")

    def answerer() -> None:
        while not box.asked():
            time.sleep(0.001)
        box.answer("answer")
        if late:
            box._v = "late"  # <- late

    _run(asker, answerer)


def answer_polled_through_a_helper() -> None:
    _answered_through_helper(late=False, compare=False)


def answer_state_compared_through_a_helper() -> None:
    _answered_through_helper(late=False, compare=True)


def answer_overwritten_after_a_helper_flag() -> None:
    """The answerer writes the slot again after publishing, outside the lock: a real bug."""
    _answered_through_helper(late=True, compare=False)


class Pool:
    """A pool whose room is checked by a helper, outside the lock, and taken under it."""

    def __init__(self, size: int) -> None:
        self._lock = threading.Lock()
        self.size = size
        self.opened = 0

    def has_room(self) -> bool:
        return self.opened < self.size  # <- room

    def open_one(self) -> None:
        with self._lock:
            self.opened += 1  # <- open


def _open(recheck: bool) -> None:
    pool = Pool(1)

    def user() -> None:
        if pool.has_room():
            if recheck:
                with pool._lock:
                    if pool.opened < pool.size:
                        pool.opened += 1
            else:
                pool.open_one()

    _run(user, user)


def room_checked_through_a_helper() -> None:
    """Two threads each see room through the helper, then both open: a pool of one holds two."""
    _open(recheck=False)


def room_rechecked_under_the_lock() -> None:
    """The helper's answer is checked again under the lock before opening: correct."""
    _open(recheck=True)


def room_checked_under_the_lock_through_a_helper() -> None:
    """The check and the act hold the lock, the check through a locked helper: correct."""
    pool = Pool(1)

    def user() -> None:
        with pool._lock:
            if pool.has_room():
                pool.opened += 1

    _run(user, user)


class RelayedExchange(Exchange):
    """The answer flag reaches the asker through two helpers: ``done`` returns ``_is_set``."""

    def done(self) -> bool:
        return self._is_set()

    def _is_set(self) -> bool:
        with self._lock:
            return self._answered

    def settled(self) -> bool:
        # four calls between the read and the test of its value
        return self._relay3()

    def _relay3(self) -> bool:
        return self._relay2()

    def _relay2(self) -> bool:
        return self._is_set()


def _answered_through_two_helpers(late: bool, deep: bool = False) -> None:
    box = RelayedExchange()

    def asker() -> None:
        box.ask("question")
        if deep:
            while not box.settled():
                time.sleep(0.001)
        else:
            while not box.done():
                time.sleep(0.001)
        answer = box.take()
        assert answer in ("answer", "late")

    def answerer() -> None:
        while not box.asked():
            time.sleep(0.001)
        box.answer("answer")
        if late:
            box._v = "late"  # <- relayed late

    _run(asker, answerer)


def answer_polled_through_two_helpers() -> None:
    _answered_through_two_helpers(late=False)


def answer_polled_through_four_calls() -> None:
    _answered_through_two_helpers(late=False, deep=True)


def answer_overwritten_after_a_flag_relayed_by_two_helpers() -> None:
    """The answerer writes the slot again after publishing, outside the lock: a real bug."""
    _answered_through_two_helpers(late=True)


class RelayedPool(Pool):
    """A pool whose room check is two helpers deep: ``has_room`` returns ``_room``."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.max = size

    def has_room(self) -> bool:
        return self._room()

    def _room(self) -> bool:
        return self.opened < self.max  # <- relayed room


def _open_relayed(recheck: bool) -> None:
    pool = RelayedPool(1)

    def user() -> None:
        if pool.has_room():
            if recheck:
                with pool._lock:
                    if pool.has_room():
                        pool.opened += 1
            else:
                pool.open_one()

    _run(user, user)


def room_checked_through_two_helpers() -> None:
    """Both threads see room through two helpers, then both open: a pool of one holds two."""
    _open_relayed(recheck=False)


def room_rechecked_under_the_lock_through_two_helpers() -> None:
    """The relayed answer is checked again, through the helpers, under the lock: correct."""
    _open_relayed(recheck=True)


class AsyncPool:
    """An asyncio pool whose room is a coroutine's answer: ``if await pool.has_room():``."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.opened = 0

    async def has_room(self) -> bool:
        return self.opened < self.size  # <- awaited room

    async def has_room_relayed(self) -> bool:
        return await self.has_room()

    async def open_one(self) -> None:
        await asyncio.sleep(0)  # connecting
        self.opened += 1  # <- awaited open


def _open_awaited(relayed: bool, recheck: bool) -> Callable[[], Coroutine[Any, Any, None]]:
    async def main() -> None:
        pool = AsyncPool(1)

        async def user() -> None:
            room = pool.has_room_relayed if relayed else pool.has_room
            if await room():
                if recheck:
                    await asyncio.sleep(0)
                    if not await room():
                        return
                    pool.opened += 1
                else:
                    await pool.open_one()

        await asyncio.gather(user(), user())

    return main


room_awaited_from_a_helper = _open_awaited(relayed=False, recheck=False)
room_awaited_through_two_helpers = _open_awaited(relayed=True, recheck=False)
room_awaited_and_rechecked_before_opening = _open_awaited(relayed=True, recheck=True)


class Counter:
    """A counter whose getter and setter each take the lock: ``c.value += 1`` does not."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = 0

    @property
    def value(self) -> int:
        with self._lock:
            return self._value  # <- locked get

    @value.setter
    def value(self, v: int) -> None:
        with self._lock:
            self._value = v  # <- locked set


def locked_accessors_unlocked_update() -> None:
    """Two threads bump a counter through its locked property: one bump is lost."""
    counter = Counter()

    def bump() -> None:
        counter.value += 1

    _run(bump, bump)


def marked(marker: str) -> int:
    """The line carrying ``# <- marker`` in this file."""
    with open(__file__, encoding="utf-8") as source:
        for number, line in enumerate(source, 1):
            if line.rstrip().endswith(f"# <- {marker}"):
                return number
    raise LookupError(marker)
