"""Per-code caches keyed by id: an entry keeps its code object, so the id stays its own."""

from __future__ import annotations

import gc
import weakref

from racecheck.codekeys import ByCode


def test_an_entry_keeps_its_code_object_alive_and_clear_lets_it_go() -> None:
    cache: ByCode[int] = ByCode()
    code = compile("x = 1", "<generated>", "exec")
    alive = weakref.ref(code)
    key = id(code)
    assert cache.put(code, 7) == 7
    del code
    gc.collect()
    # while the entry lives no other object can take the id it is found under
    assert alive() is not None and id(alive()) == key
    assert cache.get(key) == 7
    cache.clear()
    gc.collect()
    assert alive() is None
    assert cache.get(key) is None


def test_codes_with_equal_contents_are_different_entries() -> None:
    # two compilations of the same text compare (and hash) equal as code objects;
    # by id they are two entries, which a per-code verdict does not mind
    first = compile("y = 2", "<same>", "exec")
    second = compile("y = 2", "<same>", "exec")
    assert first == second and first is not second
    cache: ByCode[str] = ByCode()
    cache.put(first, "a")
    cache.put(second, "b")
    assert (cache.get(id(first)), cache.get(id(second))) == ("a", "b")


def test_a_library_copy_of_user_code_is_not_taken_for_user_code() -> None:
    """Code objects compare and hash equal whatever file they came from: keyed by code,
    the first file's verdict was the answer for an installed copy of the same function."""
    from racecheck.accesses import StepLog

    text = "def helper(box):\n    box.append(1)\n"
    mine = compile(text, "/home/me/project/helpers.py", "exec").co_consts[0]
    installed = compile(
        text, "/usr/lib/python3/site-packages/project/helpers.py", "exec"
    ).co_consts[0]
    assert mine == installed
    log = StepLog()
    assert log._is_user(mine)
    assert not log._is_user(installed)
