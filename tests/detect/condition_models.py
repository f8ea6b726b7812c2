"""``threading.Condition`` hand-offs for the race detector (issue 14).

A ``notify`` that wakes a waiter is a happens-before edge *and* a signal: the
waiter waited for the notifier, so the notifier's writes before the notify
are ordered before whatever the waiter does after its wait returns, and a
value the notifier left is the one the waiter expects to see. What the
notifier does after the notify, outside the lock, is ordered with nothing.
An answer found already published (the flag set, checked under the same
lock, no wait needed) hands over the answerer's publishing step the same way.

Lines that the detector must name carry a ``# <- marker``.
"""

from __future__ import annotations

import bisect
import threading
import time
from typing import Any


def _run(*targets: Any) -> None:
    workers = [threading.Thread(target=t) for t in targets]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


# -- a race across a Condition is still a race ---------------------------------------------


def write_after_notify() -> None:
    """The notifier writes the slot after its notify, outside the lock: unordered."""
    cond = threading.Condition()
    box: dict[str, Any] = {"ready": False, "v": 0}

    def notifier() -> None:
        with cond:
            box["ready"] = True
            cond.notify()
        box["v"] = 1  # <- late write

    def waiter() -> None:
        with cond:
            while not box["ready"]:
                cond.wait()
        box["v"] = 2  # <- waiter write

    _run(waiter, notifier)


def read_decides_after_notify() -> None:
    """The waiter decides on a value the notifier writes after the notify."""
    cond = threading.Condition()
    box: dict[str, Any] = {"ready": False, "budget": 5}

    def notifier() -> None:
        with cond:
            box["ready"] = True
            cond.notify_all()
        box["budget"] = 0  # <- late budget

    def waiter() -> None:
        with cond:
            while not box["ready"]:
                cond.wait()
        if box["budget"] > 0:  # <- check budget
            with cond:
                box["budget"] -= 1  # <- spend

    _run(waiter, notifier)


# -- correct Condition-guarded code --------------------------------------------------------


def producer_consumer() -> None:
    """Items put and taken under the condition, the consumer re-checking with ``while``."""
    cond = threading.Condition()
    items: list[int] = []
    taken: list[int] = []

    def producer() -> None:
        for n in range(3):
            with cond:
                items.append(n)
                cond.notify()

    def consumer() -> None:
        for _ in range(3):
            with cond:
                while not items:
                    cond.wait()
                taken.append(items.pop(0))

    _run(consumer, producer)
    assert sorted(taken) == [0, 1, 2]


def bounded_buffer() -> None:
    """Two producers, two consumers, one slot: ``notify_all`` and ``while`` re-checks."""
    cond = threading.Condition()
    slot: list[int] = []
    taken: list[int] = []

    def producer(n: int) -> None:
        with cond:
            while slot:
                cond.wait()
            slot.append(n)
            cond.notify_all()

    def consumer() -> None:
        with cond:
            while not slot:
                cond.wait()
            taken.append(slot.pop())
            cond.notify_all()

    _run(consumer, consumer, lambda: producer(1), lambda: producer(2))
    assert sorted(taken) == [1, 2]


def result_written_before_notify() -> None:
    """The result is written outside the lock, then published under it: ordered."""
    cond = threading.Condition()
    state: dict[str, Any] = {"done": False}
    out: dict[str, int] = {}

    def worker() -> None:
        out["v"] = 41  # before the lock: ordered before the notify through it
        with cond:
            state["done"] = True
            cond.notify()

    def waiter() -> None:
        with cond:
            while not state["done"]:
                cond.wait()
        out["v"] += 1  # the worker's write is ordered before this update

    _run(waiter, worker)
    assert out["v"] == 42


def overwritten_by_whom_one_waited_for() -> None:
    """A thread writes a slot, waits for the other to answer into it, reads the answer.

    Seeing the other thread's value instead of its own is the point: the
    waiter waited for it (a request/response hand-off through a Condition).
    The answer is read in a later critical section, so the lock alone does not
    say the asker expected it (see docs/detect.md, Limits, for the same hand-off
    through a flag when no wait happens).
    """
    cond = threading.Condition()
    slot: dict[str, Any] = {"v": None, "answered": False}

    def asker() -> None:
        with cond:
            slot["v"] = "question"
            cond.notify()
            # the answer cannot come before this wait releases the lock: it always waits
            while not slot["answered"]:
                cond.wait()
        with cond:
            answer = slot["v"]
        assert answer == "answer"

    def answerer() -> None:
        with cond:
            while slot["v"] is None:
                cond.wait()
            slot["v"] = "answer"
            slot["answered"] = True
            cond.notify()

    _run(asker, answerer)


# -- a position handed back through a Condition --------------------------------------------

ITEMS = [9.0, 5.0, 3.0, 1.0]  # newest first; everything below 2.0 has expired


def _cut(items: list[float]) -> int:
    return bisect.bisect_left(items, -2.0, key=lambda x: -x)  # <- measure


def _handed_back(locate_under_lock: bool) -> None:
    items = list(ITEMS)
    lock = threading.Lock()
    cond = threading.Condition()
    out: dict[str, int] = {}

    def worker() -> None:
        with lock:
            cut = _cut(items)
        with cond:
            out["cut"] = cut
            cond.notify()

    def trim() -> None:
        threading.Thread(target=worker).start()
        with cond:
            while "cut" not in out:
                cond.wait()
        with lock:
            cut = _cut(items) if locate_under_lock else out["cut"]
            del items[cut:]  # <- act

    def add() -> None:
        with lock:
            items[:0] = [10.0]  # <- insert

    _run(trim, add)


def handed_back_stale() -> None:
    _handed_back(locate_under_lock=False)


def handed_back_relocated() -> None:
    _handed_back(locate_under_lock=True)


def marked(marker: str) -> int:
    """The line carrying ``# <- marker`` in this file."""
    with open(__file__, encoding="utf-8") as source:
        for number, line in enumerate(source, 1):
            if line.rstrip().endswith(f"# <- {marker}"):
                return number
    raise LookupError(marker)


def answered_before_asked_for() -> None:
    """The answer is published under the lock with a flag; the asker may never wait.

    When the answerer runs first, the asker's ``while`` sees the flag already
    set and does not wait: nothing but the lock orders the two, and the lock
    alone does not say that the asker expected the answerer's value.
    """
    cond = threading.Condition()
    slot: dict[str, Any] = {"v": None, "answered": False}

    def asker() -> None:
        with cond:
            slot["v"] = "question"
            cond.notify()
        with cond:
            while not slot["answered"]:
                cond.wait()
        with cond:
            answer = slot["v"]
        assert answer == "answer"

    def answerer() -> None:
        with cond:
            while slot["v"] is None:
                cond.wait()
            slot["v"] = "answer"
            slot["answered"] = True
            cond.notify()

    _run(asker, answerer)


# -- an answer published through a flag under the lock, found without waiting -----------


def answer_polled_under_the_lock() -> None:
    """The asker polls the answer flag under the lock: it never waits on the Condition.

    Every schedule is the "already answered" one of ``answered_before_asked_for``:
    the asker reads, under the lock, the flag the answerer set under it, so the
    answer stored with the flag is the one it expects to read back.
    """
    cond = threading.Condition()
    slot: dict[str, Any] = {"v": None, "answered": False}

    def asker() -> None:
        with cond:
            slot["v"] = "question"
        while True:  # polls: never waits on the Condition
            with cond:
                if slot["answered"]:
                    break
            time.sleep(0.001)
        with cond:
            answer = slot["v"]
        assert answer == "answer"

    def answerer() -> None:
        while True:
            with cond:
                if slot["v"] is not None:
                    break
            time.sleep(0.001)
        with cond:
            slot["v"] = "answer"
            slot["answered"] = True

    _run(asker, answerer)


def answer_overwritten_after_publishing() -> None:
    """The answerer writes the slot again after publishing, outside the lock: a real bug.

    The flag orders the asker after the publish only: the later write is not
    part of what was handed over, and the asker may read it instead.
    """
    cond = threading.Condition()
    slot: dict[str, Any] = {"v": None, "answered": False}

    def asker() -> None:
        with cond:
            slot["v"] = "question"  # <- question
        while True:  # polls: never waits on the Condition
            with cond:
                if slot["answered"]:
                    break
            time.sleep(0.001)
        with cond:
            answer = slot["v"]  # <- read answer
        assert answer in ("answer", "late")

    def answerer() -> None:
        while True:
            with cond:
                if slot["v"] is not None:
                    break
            time.sleep(0.001)
        with cond:
            slot["v"] = "answer"
            slot["answered"] = True
        slot["v"] = "late"  # <- late answer

    _run(asker, answerer)


def _published_position(relocate: bool) -> None:
    """A worker locates a position and publishes it with a flag; the trimmer polls it.

    The trimmer never waits: it finds the flag set under the Condition's lock
    and takes the position stored with it. The position is the worker's
    hand-back; another thread inserting at the front in between makes it
    stale (the bug), unless the trimmer locates it again under the list's lock.
    """
    items = list(ITEMS)
    lock = threading.Lock()
    cond = threading.Condition()
    out: dict[str, Any] = {"ready": False, "cut": 0}

    def worker() -> None:
        with lock:
            cut = _cut(items)
        with cond:
            out["cut"] = cut
            out["ready"] = True

    def trim() -> None:
        threading.Thread(target=worker).start()
        while True:
            with cond:
                if out["ready"]:
                    break
            time.sleep(0.001)
        with cond:
            cut = out["cut"]
        with lock:
            if relocate:
                cut = _cut(items)
            del items[cut:]  # <- polled act

    def add() -> None:
        with lock:
            items[:0] = [10.0]  # <- polled insert

    _run(trim, add)


def published_position_stale() -> None:
    _published_position(relocate=False)


def published_position_relocated() -> None:
    _published_position(relocate=True)


def cross_talk_past_a_flag() -> None:
    """Two threads share one scratch slot; each checks the other's flag before reading it.

    Each writes its own value into the slot (under the lock), later marks itself
    done and checks the other's mark (under the lock), then reads the slot
    back expecting its own value: cross-talk. The mark it found set was
    written in a later critical section than the other's scratch write, so it
    hands that write over to nobody.
    """
    lock = threading.Lock()
    box: dict[str, Any] = {"scratch": None}
    done: dict[str, bool] = {"a": False, "b": False}
    met: list[str] = []

    def worker(me: str, other: str) -> None:
        with lock:
            box["scratch"] = me  # <- scratch write
        with lock:
            done[me] = True
            if done[other]:
                met.append(me)
        with lock:
            mine = box["scratch"]  # <- scratch read
        assert mine in ("a", "b")

    _run(lambda: worker("a", "b"), lambda: worker("b", "a"))
