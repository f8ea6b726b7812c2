"""The marsys #40 runtime shape as upstream writes it: the shared per-instance value
is read with ``getattr(self, "_current_instance", None)``, not ``self._current_instance``.

Lines that the detector and the lint must name carry a ``# <- write`` / ``# <- read``
marker; the tests look them up instead of hard-coding numbers.
"""

from __future__ import annotations

import asyncio
from typing import Any


class Agent:
    def __init__(self, name: str) -> None:
        self.name = name


class Runtime:
    """One runtime object serves every branch, as in marsys."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def _execute(self, agent: Agent) -> str:
        await asyncio.sleep(0)
        return f"{agent.name}-done"

    async def step(self, agent: Agent) -> None:
        setattr(self, "_current_instance", agent)  # noqa: B010  # <- write
        result = await self._execute(agent)
        await self._translate(result)

    async def _translate(self, result: str) -> None:
        current: Any = getattr(self, "_current_instance", None)  # <- read
        self.seen.append((result, current.name if current is not None else "?"))


class RuntimeFixed(Runtime):
    async def step(self, agent: Agent) -> None:
        result = await self._execute(agent)
        await self._translate_for(result, agent)

    async def _translate_for(self, result: str, agent: Agent) -> None:
        self.seen.append((result, agent.name))


async def branches(runtime: Runtime) -> None:
    await asyncio.gather(runtime.step(Agent("a")), runtime.step(Agent("b")))


async def buggy() -> None:
    await branches(Runtime())


async def fixed() -> None:
    await branches(RuntimeFixed())


def marked(marker: str) -> int:
    """The line carrying ``# <- marker`` in this file."""
    with open(__file__, encoding="utf-8") as source:
        for number, line in enumerate(source, 1):
            if line.rstrip().endswith(f"# <- {marker}"):
                return number
    raise LookupError(marker)
