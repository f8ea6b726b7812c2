"""Building a :class:`Finding` from an AST node, in one place."""

from __future__ import annotations

import ast

from racecheck.lint.findings import Finding, Severity
from racecheck.lint.flow import Event
from racecheck.lint.module import Module
from racecheck.lint.registry import RULES


def at(
    module: Module,
    node: ast.AST,
    code: str,
    message: str,
    end: ast.AST | None = None,
    severity: Severity | None = None,
) -> Finding:
    line = getattr(node, "lineno", 1)
    end_line = getattr(end, "lineno", None) or getattr(node, "end_lineno", None) or line
    return Finding(
        path=module.path,
        line=line,
        col=getattr(node, "col_offset", 0) + 1,
        code=code,
        severity=severity or RULES[code].severity,
        message=message,
        end_line=max(line, end_line),
    )


def where(event: Event) -> ast.AST:
    """The node to point at in the analysed function: the call site for inlined events."""
    return event.node if event.via is None else event.site


def line_of(event: Event) -> str:
    """``line 12`` or ``line 40 in _translate()`` for an event from an inlined callee."""
    line = getattr(event.node, "lineno", 0)
    return f"line {line}" if event.via is None else f"line {line} in {event.via.name}()"


def show(key: str) -> str:
    """A key as the user wrote it: ``self._cache``, ``counter``."""
    return key.split(":", 1)[1] if ":" in key else key
