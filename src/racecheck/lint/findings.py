"""What a check reports: one :class:`Finding` per suspicious place in a file.

A finding is plain data so that the text and JSON front ends, the tests and
the suppression filter can all work on the same list without knowing which
check produced it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Finding:
    """One diagnostic. Fields are ordered so that sorting gives path, line, col order."""

    path: str
    line: int
    col: int  # 1-based, like ruff and most editors
    code: str
    severity: Severity
    message: str
    end_line: int = 0  # the last line the finding is about (for example the racing read)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if not data["end_line"]:
            data["end_line"] = self.line
        return data

    def to_text(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"
