"""DPOR reads what 3.12 and 3.13 compile right: inlined comprehensions, fused stores.

3.12 inlines a comprehension into the function that spells it (PEP 709): its
loop runs in the middle of an expression, with the expression's operands below
it on the stack. The operand analysis took the stack at every loop's head for
unknown, so ``t |= {k: v for ...}`` on a local alias of shared state lost its
in-place recipe, and DPOR called the lost update verified on 3.12 and 3.13. A
loop's head now keeps the stack it was entered with, and the assumption is
checked at each back edge: a loop whose back edge disagrees (an exception
handler the analysis does not model) is analysed again with its head unknown.

3.13 fuses a store and the next load on one line into ``STORE_FAST_LOAD_FAST``
(``found = box.value = compute()``). The analysis took it for an instruction
that leaves the stack as it is, so the attribute store that follows was placed
on the stored value instead of on ``box``: the write to ``box.value`` was
recorded on another object (or on none), and DPOR called the order bug verified.
"""

from __future__ import annotations

from dpor_verdicts import assert_dpor_finds
from test_dpor_unseen_callbacks import _both

from racecheck.detect import operands

_table: dict[int, int] = {}


def _merge_rows(count: int) -> None:
    rows = _table
    rows |= {i: count for i in range(count)}


_seen: list[int] = []


def _read_after_merge() -> None:
    _table.clear()
    _seen.clear()
    _both(lambda: _merge_rows(1), lambda: _seen.append(len(_table)))
    assert _seen == [1], "the reader ran before the merge"


def test_an_inplace_merge_after_a_comprehension_is_seen() -> None:
    assert_dpor_finds(_read_after_merge)


def test_the_inplace_merge_has_its_recipe() -> None:
    found = operands.recipes(_merge_rows.__code__)
    assert any(recipe.op == "inplace" for recipe in found.values()), found


def test_a_back_edge_that_disagrees_is_analysed_again() -> None:
    """``for m in maps: try: return m[k] except KeyError: pass``: the handler's path
    back to the loop's head is not modelled, so the head is analysed as unknown
    (what every head was before), and the item read is still rebuilt."""

    def first_hit(maps: list[dict[str, int]], key: str) -> int | None:
        for mapping in maps:
            try:
                return mapping[key]
            except KeyError:
                pass
        return None

    found = operands.recipes(first_hit.__code__)
    assert any(r.op == "read" and r.key == ("local", "key") for r in found.values()), found


class _Box:
    value: object = None


_box = _Box()
_token = _Box()
_reader_saw: list[object] = []


def _publish() -> None:
    box, token = _box, _token
    found = box.value = token
    _reader_saw.append(found)


def _read_value() -> None:
    _reader_saw.append(_box.value)


def _publish_then_read() -> None:
    _box.value = None
    _reader_saw.clear()
    _both(_publish, _read_value)
    assert _reader_saw[-1] is _token, "the reader ran before the publish"


def test_a_chained_store_is_placed_on_its_own_object() -> None:
    assert_dpor_finds(_publish_then_read)


def test_a_fused_store_and_load_leaves_the_loaded_local_on_top() -> None:
    found = operands.recipes(_publish.__code__)
    writes = [r for r in found.values() if r.op == "write" and r.name == "value"]
    assert writes and all(r.base == ("local", "box") for r in writes), writes
