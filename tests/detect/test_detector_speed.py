"""What keeps the detector cheap, pinned without timing anything.

The collector walks every object that is alive and not frozen after each
detected run (``Session.run`` collects once per schedule). What the detector
keeps for a whole exploration is walked again at every schedule, so it must
stay small: answers, not the material they were worked out from.
"""

from __future__ import annotations

import dis
import gc
import importlib.util
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import racecheck

# Clean code (every access under the lock) with reads whose use the detector
# asks: a branch on a shared counter, a value carried into a store.
SOURCE = textwrap.dedent(
    """
    import asyncio


    class Pool:
        def __init__(self):
            self.opened = 0
            self.limit = 2
            self.lock = asyncio.Lock()

        async def open(self):
            async with self.lock:
                if self.opened < self.limit:
                    await asyncio.sleep(0)
                    current = self.opened
                    self.opened = current + 1


    async def main():
        pool = Pool()
        await asyncio.gather(pool.open(), pool.open(), pool.open())
    """
)


def _load(directory: Path, name: str) -> ModuleType:
    path = directory / f"{name}.py"
    path.write_text(SOURCE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _live_instructions() -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if type(obj) is dis.Instruction)


@pytest.fixture
def pool_module(tmp_path: Path) -> Iterator[ModuleType]:
    name = f"speed_pool_{tmp_path.name.replace('-', '_')}"
    try:
        yield _load(tmp_path, name)
    finally:
        sys.modules.pop(name, None)


def test_a_detected_check_keeps_no_instruction_listing(pool_module: ModuleType) -> None:
    """The use of each read (branch, flow, display) is kept; the listing it came from is not."""
    before = _live_instructions()
    report = racecheck.check(pool_module.main, detect=True, strategy="random", schedules=20)
    assert report.schedules_run == 20  # clean code: nothing found, every schedule ran
    assert _live_instructions() == before


def test_the_same_finding_when_the_uses_were_worked_out_by_an_earlier_check(
    pool_module: ModuleType,
) -> None:
    """Answers kept from one exploration to the next decide the same way as fresh ones.

    The race: the check under the lock, the act after leaving it.
    """

    async def racy_open(self: object) -> None:
        async with self.lock:  # type: ignore[attr-defined]
            ready = self.opened < self.limit  # type: ignore[attr-defined]
        if ready:
            await pool_module.asyncio.sleep(0)
            self.opened += 1  # type: ignore[attr-defined]

    def findings() -> str:
        with pytest.raises(racecheck.RaceFound) as info:
            racecheck.check(pool_module.main, detect=True, strategy="random", schedules=50)
        return f"{info.value.schedules_run}: {info.value.cause}"

    pool_module.Pool.open = racy_open
    first = findings()
    assert "opened" in first
    assert findings() == first
