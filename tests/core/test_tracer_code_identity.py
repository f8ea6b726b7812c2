"""Equal code objects from different files are traced each in their own right.

Two functions with the same name, first line and body compare equal as code
objects (CPython leaves the file name out of code equality) and hash alike. A
tracer that keys what it knows about a code object by the object's value
treats the second file's copy as the first's: on 3.12+ the copy was taken
for "instrumented already" and ran with no scheduling point at all.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import racecheck

SOURCE = """\
def work(box):
    value = box.value
    box.value = value + 1
"""


class Box:
    def __init__(self) -> None:
        self.value = 0


def _load(path: Path, name: str) -> ModuleType:
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _two_threads(first: Any, second: Any) -> Any:
    def target() -> None:
        box = Box()
        threads = [
            threading.Thread(target=first, args=(box,)),
            threading.Thread(target=second, args=(box,)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    return target


def test_equal_functions_from_two_files_both_get_points(tmp_path: Path) -> None:
    one = _load(tmp_path / "copy_one.py", "rc_copy_one")
    two = _load(tmp_path / "copy_two.py", "rc_copy_two")
    try:
        assert one.work.__code__ == two.work.__code__  # the premise: equal, not identical
        assert one.work.__code__ is not two.work.__code__
        same = racecheck.check(
            _two_threads(one.work, one.work),
            strategy="exhaustive",
            schedules=5000,
            preemption_bound=2,
        )
        copies = racecheck.check(
            _two_threads(one.work, two.work),
            strategy="exhaustive",
            schedules=5000,
            preemption_bound=2,
        )
    finally:
        sys.modules.pop("rc_copy_one", None)
        sys.modules.pop("rc_copy_two", None)
    assert same.exhausted and copies.exhausted
    # The copy has as many points as the original, so as many interleavings.
    assert copies.schedules_run == same.schedules_run
