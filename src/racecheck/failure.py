"""What ended a run badly, and stable names for the objects it involved.

The lowest layer of a run's facts: the engine records a :class:`Failure`, the
recorder and the backends' wait descriptions read it, and all of them name
objects through one :class:`ResourceNames`. Living here, below all of them,
they let every import point downward (the engine no longer has to be imported
by the recorder, nor a backend by the recorder).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Failure:
    kind: str  # "exception" | "deadlock" | "step-limit" | "stuck"
    cause: BaseException | None
    detail: str = ""
    actor: int | None = None


class ResourceNames:
    """Stable, readable names for objects ("Lock#1") in order of first mention."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._counts: dict[str, int] = {}
        self._keep: list[Any] = []

    def name(self, obj: Any) -> str:
        key = id(obj)
        found = self._names.get(key)
        if found is None:
            where = getattr(obj, "_rc_where", None)  # a lock made before the run
            if isinstance(where, str) and where:
                found = self._names[key] = where
                self._keep.append(obj)
                return found
            kind = type(obj).__name__
            self._counts[kind] = n = self._counts.get(kind, 0) + 1
            found = self._names[key] = f"{kind}#{n}"
            self._keep.append(obj)  # ids stay unique while named
        return found
