"""Print a :class:`~racecheck.trace.Trace` as one column per actor.

The reader wants the story: who ran, which lines, what they were waiting for,
and where it broke. So each turn of an actor is a block in its own column,
preempted turns are flagged, long runs of uneventful turns are folded, and the
failure line closes the picture.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from racecheck.trace import SourceLine, Step, Trace

MAX_BLOCKS = 40
LINES_PER_BLOCK = 4
#: a failure message past this is cut (an assertion that prints a huge repr, say);
#: RaceFound.cause and the JSON report keep it whole
MAX_MESSAGE = 2000
SUSPEND = "⇢"


def render_columns(trace: Trace, width: int | None = None) -> str:
    if width is None:
        # Not narrower than 110: a trace folded into slivers is worse than one that wraps.
        width = max(min(shutil.get_terminal_size((120, 24)).columns, 160), 110)
    actors = trace.actors
    blocks = _merge_turns(trace.steps)
    if not actors:
        return "  (no steps recorded)"
    global _main_file
    _main_file = _most_common_file(trace)
    # Each column as wide as its actor's longest line, within the page.
    natural = {a.id: len(a.name) + 2 for a in actors}
    for block in blocks:
        for text in _block_lines(block, 200):
            natural[block.actor] = max(natural.get(block.actor, 0), len(text) + 2)
    widths = [min(natural.get(a.id, 30), 64) for a in actors]
    budget = max(width, 130) - 5
    while sum(widths) > budget and max(widths) > 30:
        widest = widths.index(max(widths))
        widths[widest] -= 1
    if len(actors) > 4 or sum(widths) > budget:
        return _render_rows(trace, blocks)
    offsets = {a.id: sum(widths[:i]) for i, a in enumerate(actors)}
    column_of = {a.id: widths[i] for i, a in enumerate(actors)}
    out = []
    if _main_file:
        out.append(f"     (line numbers are in {os.path.basename(_main_file)})")
    out.append(
        "     "
        + "".join(
            _fit(a.name, w - 2).ljust(w) for a, w in zip(actors, widths, strict=True)
        ).rstrip()
    )
    for number, turn in _fold(blocks):
        if turn is None:
            out.append(f"  ⋮  ({number} uneventful turns folded)")
            continue
        block = turn
        indent = " " * offsets.get(block.actor, 0)
        body = _block_lines(block, column_of.get(block.actor, 30) - 2)
        mark = "»" if block.preempted else " "
        for i, text in enumerate(body):
            prefix = f"{number:>3}{mark} " if i == 0 else "     "
            out.append((prefix + indent + text).rstrip())
    out.extend(_failure_lines(trace, offsets))
    return "\n".join(out)


def _render_rows(trace: Trace, blocks: list[Step]) -> str:
    names = {a.id: a.name for a in trace.actors}
    out = [f"     (line numbers are in {os.path.basename(_main_file)})"] if _main_file else []
    for number, block in _fold(blocks):
        if block is None:
            out.append(f"  ⋮  ({number} uneventful turns folded)")
            continue
        mark = "»" if block.preempted else " "
        body = _block_lines(block, 90)
        out.append(f"{number:>3}{mark} [{names.get(block.actor, block.actor)}] {body[0]}")
        out.extend("       " + line for line in body[1:])
    out.extend(_failure_lines(trace, {}))
    return "\n".join(out)


def _failure_lines(trace: Trace, offsets: dict[int, int]) -> list[str]:
    failure = trace.failure
    if failure is None:
        return []
    indent = " " * offsets.get(failure.actor, 0) if failure.actor is not None else ""
    where = (
        f"{os.path.basename(failure.line.filename)}:{failure.line.lineno}  {failure.line.text}  "
        if failure.line
        else ""
    )
    return [f"  ✗  {indent}{where}— {cut_message(failure.message)}"]


def cut_message(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def _merge_turns(steps: list[Step]) -> list[Step]:
    """Join consecutive steps of the same actor into one turn."""
    from dataclasses import replace

    merged: list[Step] = []
    for step in steps:
        if merged and merged[-1].actor == step.actor and not step.preempted:
            last = merged[-1]
            merged[-1] = replace(
                last,
                lines=last.lines + step.lines,
                operation=step.operation or last.operation,
                resource=step.resource or last.resource,
                accesses=last.accesses + step.accesses,
            )
        else:
            merged.append(step)
    return merged


def _fold(blocks: list[Step]) -> list[tuple[int, Step | None]]:
    """Number the turns; fold long stretches away from preemptions and the end."""
    numbered: list[tuple[int, Step | None]] = [(i + 1, b) for i, b in enumerate(blocks)]
    if len(blocks) <= MAX_BLOCKS:
        return numbered
    keep = set(range(len(blocks) - 10, len(blocks))) | set(range(3))
    for i, block in enumerate(blocks):
        if block.preempted:
            keep.update((i - 1, i, i + 1))
    if len(keep) > 2 * MAX_BLOCKS:
        # Preempted nearly everywhere (a random walk over a spin loop that ran
        # into max_steps): the beginning and the end tell the story.
        ordered = sorted(k for k in keep if 0 <= k < len(blocks))
        keep = set(ordered[: MAX_BLOCKS // 2]) | set(ordered[-MAX_BLOCKS:])
    out: list[tuple[int, Step | None]] = []
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


def _block_lines(step: Step, width: int) -> list[str]:
    lines = list(step.lines)
    shown: list[SourceLine | None]
    if len(lines) > LINES_PER_BLOCK:
        shown = [lines[0], None, *lines[-(LINES_PER_BLOCK - 2) :]]
    else:
        shown = list(lines)
    out = []
    for line in shown:
        if line is None:
            out.append(_fit("  ⋯", width))
        else:
            out.append(_fit(f"{_loc(line):>4}  {line.text}", width))
    if step.operation:
        op = f"{SUSPEND} {step.operation}"
        if step.operation.startswith("await ") and lines and step.operation[6:] in lines[-1].text:
            op = SUSPEND  # the awaited expression is already on the line
        if out and len(out[-1]) + len(op) + 2 <= width:
            out[-1] = f"{out[-1]}  {op}"
        else:
            out.append(_fit(f"{'':4}  {op}", width))
    return out or [""]


_main_file: str | None = None


def _most_common_file(trace: Trace) -> str | None:
    counts: dict[str, int] = {}
    for step in trace.steps:
        for line in step.lines:
            counts[line.filename] = counts.get(line.filename, 0) + 1
    return max(counts, key=lambda f: counts[f]) if counts else None


def _loc(line: SourceLine) -> str:
    """Bare line number in the trace's main file, ``file.py:12`` elsewhere."""
    if line.filename == _main_file:
        return str(line.lineno)
    return f"{os.path.basename(line.filename)}:{line.lineno}"


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"
