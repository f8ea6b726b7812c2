"""A file's timing counts the release of its syntax tree (``racecheck lint --timing``).

Issue 14's budget is 50 ms per file. Freeing a parsed module (one object and
one attribute dict per node) is part of what linting a file costs: about 8 ms
of CPU on redis-py's ``commands/core.py``. It used to happen when the lint's
inner function returned, after the last phase was timed, so no phase counted
it. These tests check that the tree is gone exactly when the ``free`` phase is
recorded, and still there when the phase before it is: a node with a marker
constant is looked for among the live objects. No time is asserted.
"""

from __future__ import annotations

import ast
import gc
import textwrap

from racecheck.lint.registry import resolve_codes
from racecheck.lint.run import PHASES, _lint

MARKER = "racecheck-release-marker-5f1c"

#: a file every check is run on (``async``, ``thread``, ``pool``, ``submit``)
CHECKED = textwrap.dedent(
    f"""
    import threading

    class Cache:
        def __init__(self, pool):
            self.seen = {{}}
            self.lock = threading.Lock()
            pool.submit(self.fill)

        def fill(self):
            self.seen["{MARKER}"] = 1

        async def get(self, key):
            if key not in self.seen:
                self.seen[key] = await self.load(key)
            return self.seen[key]
    """
)

#: a file no check needs: parsed (a syntax error is still an error), not indexed
UNCHECKED = f'TABLE = {{"{MARKER}": 1, "b": 2}}\n'


def _tree_alive() -> bool:
    """Is a node holding the marker among the live objects?"""
    return any(isinstance(obj, ast.Constant) and obj.value == MARKER for obj in gc.get_objects())


class _Probe(dict[str, float]):
    """The timing of one file, noting whether the tree was alive when each phase ended."""

    def __init__(self) -> None:
        super().__init__()
        self.alive: dict[str, bool] = {}

    def __setitem__(self, phase: str, seconds: float) -> None:
        self.alive[phase] = _tree_alive()
        super().__setitem__(phase, seconds)


def _timed(source: str) -> _Probe:
    gc.collect()
    assert not _tree_alive()
    probe = _Probe()
    _lint(source, "probe.py", resolve_codes(None, None), timing=probe)
    return probe


def test_the_free_phase_of_a_checked_file_releases_its_tree() -> None:
    probe = _timed(CHECKED)
    assert list(probe) == [p for p in PHASES if p not in ("read", "gc")]
    assert probe.alive["suppress"]  # the phase before still had the tree
    assert not probe.alive["free"]


def test_the_free_phase_of_a_file_no_check_needs_releases_its_tree() -> None:
    probe = _timed(UNCHECKED)
    assert list(probe) == ["parse", "free"]
    assert probe.alive["parse"]
    assert not probe.alive["free"]


def test_free_is_a_timing_phase_before_the_collection() -> None:
    assert PHASES[-2:] == ("free", "gc")
