"""Print a trace as one column per actor, or as one row per turn.

The reader wants the story: who ran, which lines, what they were waiting for,
and where it broke. So each turn of an actor is a block in its own column,
preempted turns are flagged, long runs of uneventful turns are folded, and the
failure line closes the picture.

Two rules bound the folding: a line that touches what the actors race on
(a name one writes and another reads or writes) is never elided, and
``elide=False`` (the HTML's text trace) shows everything.

The page is the terminal's width (``COLUMNS`` included). When the columns
would not fit in it, the trace is printed as rows, one turn each, with the
actor named on the row: a narrow terminal gets a readable list rather than
columns folded into slivers or lines that wrap.

This module sits below :mod:`racecheck.trace`: it formats anything shaped
like a trace (the protocols below) and imports none of racecheck, so
``Trace.render`` can call it without an import cycle.
"""

from __future__ import annotations

import os
import re
import shutil
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

MAX_BLOCKS = 40
LINES_PER_BLOCK = 4
#: lines shown of a trace's only turn
LONE_TURN_LINES = 40
#: a failure message past this is cut (an assertion that prints a huge repr, say);
#: RaceFound.cause and the JSON report keep it whole
MAX_MESSAGE = 2000
SUSPEND = "⇢"
#: narrowest column worth drawing; below it the rows layout reads better
MIN_COLUMN = 34
#: room for the turn number and its mark ("  12» ")
GUTTER = 5


class _Line(Protocol):
    @property
    def filename(self) -> str: ...
    @property
    def lineno(self) -> int: ...
    @property
    def text(self) -> str: ...


class _Actor(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def name(self) -> str: ...


class _Step(Protocol):
    @property
    def actor(self) -> int: ...
    @property
    def lines(self) -> Sequence[_Line]: ...
    @property
    def operation(self) -> str: ...
    @property
    def resource(self) -> str | None: ...
    @property
    def preempted(self) -> bool: ...
    @property
    def accesses(self) -> Sequence[str]: ...


class _Failure(Protocol):
    @property
    def actor(self) -> int | None: ...
    @property
    def message(self) -> str: ...
    @property
    def line(self) -> _Line | None: ...


class _Trace(Protocol):
    @property
    def actors(self) -> Sequence[_Actor]: ...
    @property
    def steps(self) -> Sequence[_Step]: ...
    @property
    def failure(self) -> _Failure | None: ...


@dataclass
class _Turn:
    """One or more consecutive steps of one actor, as printed."""

    actor: int
    lines: list[_Line]
    operation: str
    resource: str | None
    preempted: bool
    accesses: list[str]


def terminal_width() -> int:
    """The terminal's columns (``COLUMNS`` wins), never under 40."""
    return max(shutil.get_terminal_size((120, 24)).columns, 40)


def render_columns(trace: _Trace, width: int | None = None, *, elide: bool = True) -> str:
    if width is None:
        width = terminal_width()
    actors = list(trace.actors)
    if not actors:
        return "  (no steps recorded)"
    turns = _merge_turns(trace.steps)
    page = _Page(trace, elide)
    if len(turns) == 1:
        # one turn is the whole story (a loop run inside one thread): show it
        page.lines_per_block = LONE_TURN_LINES
    natural = {a.id: len(a.name) + 2 for a in actors}
    for each in turns:
        for text in page.block_lines(each, 200):
            natural[each.actor] = max(natural.get(each.actor, 0), len(text) + 2)
    budget = width - GUTTER
    widest = 64 if len(actors) > 1 else budget
    widths = [min(natural.get(a.id, 30), widest) for a in actors]
    while sum(widths) > budget and max(widths) > MIN_COLUMN:
        widths[widths.index(max(widths))] -= 1
    if len(actors) > 4 or sum(widths) > budget:
        return _render_rows(trace, turns, page, width)
    offsets = {a.id: sum(widths[:i]) for i, a in enumerate(actors)}
    column_of = {a.id: widths[i] for i, a in enumerate(actors)}
    out = page.header()
    out.append(
        " " * GUTTER
        + "".join(
            _fit(a.name, w - 2).ljust(w) for a, w in zip(actors, widths, strict=True)
        ).rstrip()
    )
    for number, turn in page.fold(turns):
        if turn is None:
            out.append(f"  ⋮  ({number} uneventful turns folded)")
            continue
        indent = " " * offsets.get(turn.actor, 0)
        body = page.block_lines(turn, column_of.get(turn.actor, 30) - 2)
        mark = "»" if turn.preempted else " "
        for i, text in enumerate(body):
            prefix = f"{number:>3}{mark} " if i == 0 else " " * GUTTER
            out.append((prefix + indent + text).rstrip())
    out.extend(page.failure_lines(offsets, width))
    return "\n".join(out)


def _render_rows(trace: _Trace, turns: list[_Turn], page: _Page, width: int) -> str:
    names = {a.id: a.name for a in trace.actors}
    out = page.header()
    for number, turn in page.fold(turns):
        if turn is None:
            out.append(f"  ⋮  ({number} uneventful turns folded)")
            continue
        mark = "»" if turn.preempted else " "
        who = _fit(f"[{names.get(turn.actor, turn.actor)}]", max(width - GUTTER, 10))
        out.append(f"{number:>3}{mark} {who}")
        out.extend("       " + line for line in page.block_lines(turn, width - 7))
    out.extend(page.failure_lines({}, width))
    return "\n".join(out)


def cut_message(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def operation_label(operation: str, resource: str | None) -> str:
    """``write .processed Lock#1`` → ``write .processed [Lock#1]``: what was done, on what.

    Backends name the step's resource inside its operation; run together the
    two read as one name.
    """
    if resource and operation.endswith(resource):
        base = operation[: -len(resource)].rstrip()
        return f"{base} [{resource}]" if base else f"[{resource}]"
    if resource and resource not in operation:
        return f"{operation} [{resource}]" if operation else f"[{resource}]"
    return operation


def _accessed(access: str) -> str:
    kind, sep, name = access.partition(":")
    return name if sep and kind in ("r", "w") else access


def racing_names(steps: Sequence[_Step]) -> set[str]:
    """Names that two actors touch, one of them writing: the conflict's evidence."""
    actors_of: dict[str, set[int]] = {}
    written: set[str] = set()
    for step in steps:
        for access in step.accesses:
            name = _accessed(access)
            actors_of.setdefault(name, set()).add(step.actor)
            if not access.startswith("r:"):
                written.add(name)
    return {name for name, who in actors_of.items() if len(who) > 1 and name in written}


def _merge_turns(steps: Sequence[_Step]) -> list[_Turn]:
    """Join consecutive steps of the same actor into one turn."""
    merged: list[_Turn] = []
    for step in steps:
        if merged and merged[-1].actor == step.actor and not step.preempted:
            last = merged[-1]
            last.lines += list(step.lines)
            last.operation = step.operation or last.operation
            last.resource = step.resource or last.resource
            last.accesses += list(step.accesses)
        else:
            merged.append(
                _Turn(
                    step.actor,
                    list(step.lines),
                    step.operation,
                    step.resource,
                    step.preempted,
                    list(step.accesses),
                )
            )
    return merged


class _Page:
    """What one rendering shares: the main file, the racing names, elision."""

    def __init__(self, trace: _Trace, elide: bool) -> None:
        self.trace = trace
        self.elide = elide
        self.main_file = _only_file(trace)
        self.names = racing_names(trace.steps)
        self.lines_per_block = LINES_PER_BLOCK

    def header(self) -> list[str]:
        if self.main_file:
            return [f"     (line numbers are in {os.path.basename(self.main_file)})"]
        return []

    def loc(self, line: _Line) -> str:
        """Bare line number when every step is in one file, ``file.py:12`` otherwise."""
        if line.filename == self.main_file:
            return str(line.lineno)
        return f"{os.path.basename(line.filename)}:{line.lineno}"

    def _holds_conflict(self, turn: _Turn, line: _Line) -> bool:
        here = {_accessed(a).lstrip(".") for a in turn.accesses if _accessed(a) in self.names}
        return any(re.search(rf"\b{re.escape(name)}\b", line.text) for name in here if name)

    def block_lines(self, turn: _Turn, width: int) -> list[str]:
        lines = turn.lines
        shown: list[_Line | None] = list(lines)
        limit = self.lines_per_block
        if self.elide and len(lines) > limit:
            keep = {0, *range(len(lines) - (limit - 2), len(lines))}
            keep |= {i for i, line in enumerate(lines) if self._holds_conflict(turn, line)}
            shown = []
            for i, line in enumerate(lines):
                if i in keep:
                    shown.append(line)
                elif not shown or shown[-1] is not None:
                    shown.append(None)  # one ⋯ for each run of hidden lines
        out = []
        for item in shown:
            if item is None:
                out.append(_fit("  ⋯", width))
            else:
                out.append(_fit(f"{self.loc(item):>4}  {item.text}", width))
        if turn.operation:
            op = f"{SUSPEND} {operation_label(turn.operation, turn.resource)}"
            awaited = turn.operation[6:]
            if turn.operation.startswith("await ") and lines and awaited in lines[-1].text:
                op = SUSPEND  # the awaited expression is already on the line
            if out and len(out[-1]) + len(op) + 2 <= width:
                out[-1] = f"{out[-1]}  {op}"
            else:
                out.append(_fit(f"{'':4}  {op}", width))
        return out or [""]

    def fold(self, turns: list[_Turn]) -> list[tuple[int, _Turn | None]]:
        """Number the turns; fold long stretches away from preemptions and the end."""
        numbered: list[tuple[int, _Turn | None]] = [(i + 1, t) for i, t in enumerate(turns)]
        if not self.elide or len(turns) <= MAX_BLOCKS:
            return numbered
        keep = set(range(len(turns) - 10, len(turns))) | set(range(3))
        conflict: set[int] = set()
        for i, turn in enumerate(turns):
            if turn.preempted:
                keep.update((i - 1, i, i + 1))
            if any(self._holds_conflict(turn, line) for line in turn.lines):
                keep.add(i)
                conflict.add(i)
        if len(keep) > 2 * MAX_BLOCKS:
            # Preempted nearly everywhere (a random walk over a spin loop that ran
            # into max_steps): the beginning, the end and the latest turns of the
            # conflict tell the story.
            ordered = sorted(k for k in keep if 0 <= k < len(turns))
            keep = (
                set(ordered[: MAX_BLOCKS // 2])
                | set(ordered[-MAX_BLOCKS:])
                | set(sorted(conflict)[-MAX_BLOCKS:])
            )
        out: list[tuple[int, _Turn | None]] = []
        folded = 0
        for i, item in enumerate(numbered):
            if i in keep:
                if folded:
                    out.append((folded, None))
                    folded = 0
                out.append(item)
            else:
                folded += 1
        if folded:
            out.append((folded, None))
        return out

    def failure_lines(self, offsets: dict[int, int], width: int) -> list[str]:
        failure = self.trace.failure
        if failure is None:
            return []
        indent = " " * offsets.get(failure.actor, 0) if failure.actor is not None else ""
        line = failure.line
        near = ""
        if line is None:
            # No user frame in the failure's traceback: name the last user line
            # the failing actor ran, so the ✗ row still points somewhere.
            line = self._last_line_of(failure.actor)
            near = "near " if line is not None else ""
        where = (
            f"{near}{os.path.basename(line.filename)}:{line.lineno}  {line.text.strip()}  "
            if line is not None
            else ""
        )
        text = f"{where}— {cut_message(failure.message)}"
        if len(indent) + len(text) + GUTTER <= width:
            return [f"  ✗  {indent}{text}"]
        # too long for its column: wrapped from the left edge, within the page
        pieces = textwrap.wrap(text, max(width - GUTTER, 20), break_on_hyphens=False) or [""]
        return ["  ✗  " + pieces[0], *(" " * GUTTER + piece for piece in pieces[1:])]

    def _last_line_of(self, actor: int | None) -> _Line | None:
        for step in reversed(self.trace.steps):
            if (actor is None or step.actor == actor) and step.lines:
                return step.lines[-1]
        return None


def _only_file(trace: _Trace) -> str | None:
    """The one file every step ran in, or None when they span several."""
    files = {line.filename for step in trace.steps for line in step.lines}
    return files.pop() if len(files) == 1 else None


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"
