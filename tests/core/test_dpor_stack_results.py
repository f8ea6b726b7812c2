"""An instruction's result is not the operand it consumed.

The operand analysis follows the stack symbolically: each slot names where
its value came from (a local, a global, an attribute of another slot), so
that a store through it can be placed on the object it reaches. An
instruction it has no model for keeps its stack effect only, and one whose
effect is zero left the slot it consumed in place: its result was taken for
its operand. For ``x = yield item`` (the value sent in is another object
than the one yielded), a ``+obj`` on 3.12+ (``__pos__`` may return
anything), a name looked up in a class body's mapping, that names the wrong
object: ``(yield _first).value = 1`` was placed on ``_first`` while the
object written is whatever the caller sent, and DPOR called the order bug
between that write and another thread's read verified after two schedules
(a random walk found it). A result no model names is now unknown: a store
through it cannot be placed, which DPOR treats as it treats any such store.
Instructions that leave the stack alone (jumps, ``MAKE_CELL``...) or whose
result is immutable and harmless to name by its operand (a formatted
string, a function made from its code) keep the old reading.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Generator

from dpor_verdicts import assert_dpor_finds
from test_dpor_unseen_callbacks import _both

from racecheck.detect import operands


class _Box:
    def __init__(self) -> None:
        self.value = 0


_first, _sent = _Box(), _Box()
_seen: list[int] = []


def _store_into_what_is_sent() -> Generator[_Box, _Box, None]:
    (yield _first).value = 1


def _drive() -> None:
    steps = _store_into_what_is_sent()
    next(steps)
    try:
        steps.send(_sent)
    except StopIteration:
        pass


def _write_then_read() -> None:
    _first.value = _sent.value = 0
    _seen.clear()
    _both(_drive, lambda: _seen.append(_sent.value))
    assert _seen == [1], "the reader ran before the write"


def test_a_store_into_a_yields_result_is_not_placed_on_the_yielded_value() -> None:
    recipes = operands.recipes(_store_into_what_is_sent.__code__)
    (store,) = [r for r in recipes.values() if r.op == "write" and r.name == "value"]
    assert store.base != ("global", "_first"), store


def test_dpor_finds_the_order_bug_through_a_yields_result() -> None:
    assert_dpor_finds(_write_then_read)


async def _store_into_what_is_sent_async() -> AsyncGenerator[_Box, _Box]:
    (yield _first).value = 1


async def _drive_async() -> None:
    steps = _store_into_what_is_sent_async()
    await steps.__anext__()
    try:
        await steps.asend(_sent)
    except StopAsyncIteration:
        pass


async def _read_async() -> None:
    await asyncio.sleep(0)
    _seen.append(_sent.value)


async def _write_then_read_async() -> None:
    _first.value = _sent.value = 0
    _seen.clear()
    await asyncio.gather(_drive_async(), _read_async())
    assert _seen == [1], "the reader ran before the write"


def test_dpor_finds_the_order_bug_through_an_async_generators_yield() -> None:
    assert_dpor_finds(_write_then_read_async, backend="asyncio")


class _Pointer:
    """``+pointer`` is what it points at (a ``__pos__`` that returns another object)."""

    def __pos__(self) -> _Box:
        return _sent


_pointer = _Pointer()


def _store_through_unary_plus() -> None:
    (+_pointer).value = 1


def _plus_write_then_read() -> None:
    _sent.value = 0
    _seen.clear()
    _both(_store_through_unary_plus, lambda: _seen.append(_sent.value))
    assert _seen == [1], "the reader ran before the write"


def test_dpor_finds_the_order_bug_through_a_unary_plus() -> None:
    """3.12+ spells ``+x`` as CALL_INTRINSIC_1, which had no model (3.11's UNARY_POSITIVE
    had one): the store was placed on ``_pointer``."""
    assert_dpor_finds(_plus_write_then_read)


def test_a_format_and_a_jump_keep_their_reading() -> None:
    """The old reading stays where it is right: an f-string's value is a new str
    (read whole, never written), and a loop's jumps leave the stack alone, so the
    list a loop appends to is still the attribute it was loaded from."""

    def fill(box: _Box, items: list[int]) -> str:
        for item in items:
            box.log.append(item)  # type: ignore[attr-defined]
        return f"{box.value}"

    found = operands.recipes(fill.__code__)
    assert any(r.op == "whole-read" for r in found.values()), found
    assert any(r.base == ("attr", ("local", "box"), "log") for r in found.values() if r.base), found
