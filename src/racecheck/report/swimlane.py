"""The swimlane picture of an interleaving, as inline SVG.

One column ("lane") per actor, time flowing down, one block per step: the same
shape as the terminal's column view, so a trace reads the same in both. On top
of the text the picture adds what a terminal cannot show well:

* hand-off arrows between consecutive steps of different actors on the same
  ``resource`` (a release feeding an acquire, a ``set`` feeding a ``wait``),
  which is how a deadlock's wait-for cycle becomes visible;
* racing accesses: steps whose ``accesses`` overlap another actor's steps;
* preemptions: a dashed line where racecheck departed from the natural order;
* the failure, as a red block in the lane of the actor that failed.

SVG has no text layout, so widths are estimated from a monospace advance and
long text is cut with "…" (the full text is in each block's ``<title>``).
Long traces keep their head and tail (where the failure is) and say how many
steps were left out. All text is escaped; nothing references anything outside.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

from racecheck.report.json_report import printable

if TYPE_CHECKING:
    from racecheck.trace import SourceLine, Step, Trace

FONT = 12.0
CHAR = FONT * 0.61  # monospace advance, a little generous so text never overflows
LINE = 16.0
PAD = 8.0
GUTTER = 44.0
GAP = 44.0  # between lanes: room for hand-off arrows
HEADER = 50.0
ROW_GAP = 10.0
MIN_CHARS, MAX_CHARS = 26, 72
MAX_LINES_PER_STEP = 8
MAX_FAILURE_LINES = 10
DEFAULT_MAX_STEPS = 60
DEFAULT_MAX_LANES = 10
COLOURS = ("#1565c0", "#2e7d32", "#6a1b9a", "#00838f", "#ad1457", "#5d4037", "#283593", "#ef6c00")
MONO = "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', monospace"
SANS = "system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', Arial, sans-serif"


@dataclass(frozen=True)
class Handoff:
    """An arrow from ``steps[source]`` to ``steps[target]`` (positions, not indices)."""

    source: int
    target: int
    resource: str


def handoffs(steps: Sequence[Step]) -> list[Handoff]:
    """Consecutive steps on the same resource taken by different actors."""
    last: dict[str, int] = {}
    found: list[Handoff] = []
    for pos, step in enumerate(steps):
        if not step.resource:
            continue
        prev = last.get(step.resource)
        if prev is not None and steps[prev].actor != step.actor:
            found.append(Handoff(prev, pos, step.resource))
        last[step.resource] = pos
    return found


def racing(steps: Sequence[Step]) -> dict[int, tuple[str, ...]]:
    """Position -> the accesses it shares with some other actor's step."""
    actors_of: dict[str, set[int]] = {}
    for step in steps:
        for name in step.accesses:
            actors_of.setdefault(name, set()).add(step.actor)
    shared = {name for name, actors in actors_of.items() if len(actors) > 1}
    return {
        pos: tuple(dict.fromkeys(n for n in step.accesses if n in shared))
        for pos, step in enumerate(steps)
        if shared.intersection(step.accesses)
    }


def _e(text: object) -> str:
    return escape(printable(str(text)), quote=True)


def _cut(text: str, width: int) -> str:
    text = text.replace("\t", "    ")
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _shown(count: int, limit: int) -> tuple[list[int], int]:
    """Positions to draw, and the position the "… N more steps" note goes before (-1: none)."""
    if count <= limit:
        return list(range(count)), -1
    head = max(limit // 3, 1)
    tail = limit - head
    return list(range(head)) + list(range(count - tail, count)), count - tail


@dataclass
class _Block:
    """One drawn step: its text lines and where it landed."""

    pos: int
    lane: int
    lines: list[tuple[str, str, str]]  # (css class, where, text)
    title: str
    y: float = 0.0

    @property
    def height(self) -> float:
        return 2 * PAD + len(self.lines) * LINE - 4


def _source(line: SourceLine) -> tuple[str, str]:
    return line.where, line.text.strip()


def _block(pos: int, lane: int, step: Step, races: tuple[str, ...], who: str | None) -> _Block:
    """The text of one step; ``who`` names the actor when the lane is shared."""
    lines: list[tuple[str, str, str]] = [("src", *_source(s)) for s in step.lines]
    if len(lines) > MAX_LINES_PER_STEP:
        # Keep where the step resumed and, above all, where it suspended.
        head, tail = 3, MAX_LINES_PER_STEP - 4
        more = ("more", "", f"… {len(lines) - head - tail} more lines")
        lines = [*lines[:head], more, *lines[-tail:]]
    if who is not None:
        lines.insert(0, ("who", "", who))
    if step.operation:
        lines.append(("op", "", f"⇢ {step.operation}"))
    if races:
        lines.append(("race", "", f"⚠ races on {', '.join(races)}"))
    if not lines:
        lines.append(("more", "", "(no user code)"))
    full = [f"{w}  {t}" if w else t for _, w, t in lines]
    return _Block(pos, lane, lines, "\n".join(full))


class _Layout:
    """Lane geometry: widths from content, x positions left to right."""

    def __init__(self, widths: list[int]) -> None:
        self.chars = widths
        self.x: list[float] = []
        x = GUTTER
        for lane in range(len(widths)):
            self.x.append(x)
            x += self.width(lane) + GAP
        self.total = x - GAP + 12

    def width(self, lane: int) -> float:
        return self.chars[lane] * CHAR + 2 * PAD + 10

    def inner(self, lane: int) -> tuple[float, float]:
        """Left x and width of a block inside the lane."""
        return self.x[lane] + 5, self.width(lane) - 10


def _lane_chars(blocks: list[_Block], lanes: int, extra: dict[int, int]) -> list[int]:
    chars = [MIN_CHARS] * lanes
    for b in blocks:
        wide = max(len(w) + 2 + len(t) if w else len(t) for _, w, t in b.lines)
        chars[b.lane] = max(chars[b.lane], wide)
    for lane, wide in extra.items():
        chars[lane] = max(chars[lane], wide)
    # Many lanes share a screen: narrower lanes (down to 40 columns) scroll less.
    cap = max(40, min(MAX_CHARS, 320 // max(lanes, 1)))
    return [min(c, cap) for c in chars]


STYLE = f"""
.rc-lane-bg {{ fill: #f6f7f9; }}
.rc-name {{ font: 600 13px {SANS}; fill: #1f2328; }}
.rc-kind {{ font: 11px {SANS}; fill: #656d76; }}
.rc-step {{ font: 11px {MONO}; fill: #8c959f; }}
.rc-block {{ fill: #ffffff; stroke: #d0d7de; }}
.rc-block.rc-racing {{ fill: #fff4e5; stroke: #e8590c; stroke-width: 1.6; }}
.rc-src, .rc-where, .rc-op, .rc-race, .rc-more, .rc-fail, .rc-note {{ font: 12px {MONO}; }}
.rc-src {{ fill: #1f2328; }}
.rc-where {{ fill: #6e7781; }}
.rc-op {{ fill: #0b5cad; }}
.rc-race {{ fill: #c2410c; font-weight: 700; }}
.rc-more, .rc-note {{ fill: #6e7781; font-style: italic; }}
.rc-who {{ font: 600 12px {SANS}; fill: #1f2328; }}
.rc-pre {{ stroke: #d4a72c; stroke-width: 1.2; stroke-dasharray: 5 4; }}
.rc-pre-label {{ font: 700 10px {SANS}; fill: #9a6700; }}
.rc-arrow {{ fill: none; stroke: #57606a; stroke-width: 1.5; }}
.rc-arrow-label {{ font: 10px {MONO}; fill: #57606a; paint-order: stroke;
  stroke: #ffffff; stroke-width: 3px; }}
.rc-failbox {{ fill: #ffebe9; stroke: #cf222e; stroke-width: 2; }}
.rc-fail {{ fill: #a40e26; }}
.rc-fail-head {{ font-weight: 700; }}
.rc-x-mark {{ fill: #cf222e; }}
.rc-x {{ font: 700 18px {SANS}; fill: #cf222e; }}
"""


def failing_actor(trace: Trace) -> int | None:
    """The actor the failure belongs to; None means no single actor (a deadlock).

    When the trace does not name the failing actor but does name the failing
    line, the actor whose last step ran that line is the one that failed.
    """
    failure = trace.failure
    if failure is None:
        return None
    if failure.actor is not None or failure.line is None:
        return failure.actor
    at = (failure.line.filename, failure.line.lineno)
    for step in reversed(trace.steps):
        if any((line.filename, line.lineno) == at for line in step.lines):
            return step.actor
    return None


@dataclass
class _Lanes:
    """Which lane each actor is drawn in; ``merged`` is the shared lane, if any."""

    lane_of: dict[int, int]
    names: list[tuple[str, str]]  # (header, sub-header)
    merged: int | None = None


def _lanes(trace: Trace, shown: Sequence[int], keep: set[int], max_lanes: int) -> _Lanes:
    """One lane per actor, or, past ``max_lanes``, the telling ones plus one shared lane.

    Real runs can have dozens of actors (a task per queue read); forty lanes are
    unreadable. The ones kept are those in ``keep`` (failing, racing), then the
    busiest in the drawn steps; the rest share a last lane whose blocks name
    their actor.
    """
    order: dict[int, tuple[str, str]] = {}
    for actor in trace.actors:
        order.setdefault(actor.id, (actor.name, f"{actor.kind} #{actor.id}"))
    for step in trace.steps:  # an actor the trace forgot to list still gets a lane
        order.setdefault(step.actor, (f"actor {step.actor}", f"#{step.actor}"))
    if not order:
        return _Lanes({}, [("(no actors)", "")])
    if len(order) <= max_lanes:
        return _Lanes({a: i for i, a in enumerate(order)}, list(order.values()))
    busy: dict[int, int] = dict.fromkeys(order, 0)
    for pos in shown:
        busy[trace.steps[pos].actor] += 1
    ranked = sorted(order, key=lambda a: (a not in keep, -busy[a]))
    chosen = [a for a in order if a in set(ranked[: max_lanes - 1])]
    lane_of = {a: i for i, a in enumerate(chosen)}
    others = len(order) - len(chosen)
    merged = len(chosen)
    lane_of.update({a: merged for a in order if a not in lane_of})
    names = [order[a] for a in chosen] + [(f"{others} other actors", "one shared lane")]
    return _Lanes(lane_of, names, merged)


def render_swimlane(
    trace: Trace,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_lanes: int = DEFAULT_MAX_LANES,
    id_prefix: str = "rc",
    standalone: bool = False,
) -> str:
    """The SVG markup of ``trace``.

    ``id_prefix`` keeps marker ids unique when several pictures share a page;
    ``standalone`` adds the XML namespace needed outside an HTML document.
    """
    races = racing(trace.steps)
    shown, gap_at = _shown(len(trace.steps), max_steps)
    culprit = failing_actor(trace)
    keep = {trace.steps[p].actor for p in races} | ({culprit} if culprit is not None else set())
    lanes = _lanes(trace, shown, keep, max_lanes)
    lane_of, names = lanes.lane_of, lanes.names
    actor_names = {a.id: a.name for a in trace.actors}
    blocks = []
    for p in shown:
        step = trace.steps[p]
        lane = lane_of[step.actor]
        who = actor_names.get(step.actor, f"actor {step.actor}") if lane == lanes.merged else None
        blocks.append(_block(p, lane, step, races.get(p, ()), who))
    failure = trace.failure
    fail_lane = lane_of.get(culprit) if culprit is not None else None
    fail_lines: list[str] = []
    extra: dict[int, int] = {}
    if failure is not None:
        message = [ln for ln in printable(failure.message).splitlines() if ln.strip()] or ["failed"]
        if fail_lane is not None:
            extra[fail_lane] = max(len(ln) for ln in message) + 2
    layout = _Layout(_lane_chars(blocks, len(names), extra))
    if failure is not None:
        span = (
            layout.chars[fail_lane]
            if fail_lane is not None
            else int((layout.total - GUTTER - 2 * PAD) / CHAR)
        )
        for ln in message:
            fail_lines += textwrap.wrap(ln, max(span - 2, 10), subsequent_indent="  ") or [""]
        if len(fail_lines) > MAX_FAILURE_LINES:
            fail_lines = [*fail_lines[: MAX_FAILURE_LINES - 1], "…"]
        fail_lines[0] = "✗ " + fail_lines[0]

    body: list[str] = []
    y = HEADER + 12
    ids = {b.pos: b for b in blocks}
    for b in blocks:
        if b.pos == gap_at:
            omitted = len(trace.steps) - len(shown)
            first, last = gap_at - omitted + 1, gap_at
            body.append(
                f'<rect x="{GUTTER}" y="{y}" width="{layout.total - GUTTER - 12:.1f}" height="26"'
                f' rx="4" fill="#ffffff" stroke="#d0d7de" stroke-dasharray="3 3"/>'
                f'<text class="rc-note" x="{GUTTER + PAD}" y="{y + 17}">… {omitted} more steps'
                f" (steps {first}–{last} not drawn)</text>"
            )
            y += 26 + ROW_GAP
        step = trace.steps[b.pos]
        if step.preempted:  # room for the dashed line and its label above the block
            y += 10
            body.append(
                f'<line class="rc-pre" x1="6" x2="{layout.total - 12:.1f}" y1="{y - 6}"'
                f' y2="{y - 6}"/>'
            )
        b.y = y
        body.append(_draw_block(b, layout, step.preempted))
        y += b.height + ROW_GAP

    arrows = [h for h in handoffs(trace.steps) if h.source in ids and h.target in ids]
    arrow_svg = [
        _draw_arrow(ids[h.source], ids[h.target], h.resource, layout, id_prefix) for h in arrows
    ]

    if failure is not None:
        y += 4
        if fail_lane is not None:
            fx, fw = layout.inner(fail_lane)
        else:
            fx, fw = GUTTER, layout.total - GUTTER - 12
        src = _source(failure.line) if failure.line is not None else None
        height = 2 * PAD + (len(fail_lines) + (1 if src else 0)) * LINE - 4
        body.append(
            f'<g class="rc-failure"><title>{_e(failure.message)}</title>'
            f'<rect class="rc-failbox" x="{fx:.1f}" y="{y}" width="{fw:.1f}" height="{height}"'
            f' rx="5"/><text class="rc-x" x="{GUTTER - 10}" y="{y + PAD + 12}"'
            f' text-anchor="end">✗</text>'
        )
        ty = y + PAD + 11
        for i, ln in enumerate(fail_lines):
            head = " rc-fail-head" if i == 0 else ""
            body.append(f'<text class="rc-fail{head}" x="{fx + PAD:.1f}" y="{ty}">{_e(ln)}</text>')
            ty += LINE
        if src:
            body.append(_source_text(fx + PAD, ty, src[0], src[1], fw - 2 * PAD))
        body.append("</g>")
        y += height
    height = y + 14

    header = []
    for lane, (name, kind) in enumerate(names):
        x, w = layout.x[lane], layout.width(lane)
        colour = COLOURS[lane % len(COLOURS)]
        mark = ' <tspan class="rc-x-mark">✗</tspan>' if lane == fail_lane else ""
        chars = int((w - 2 * PAD) / (13 * 0.6))
        header.append(
            f'<g class="lane" data-lane="{lane}"><title>{_e(name)}</title>'
            f'<rect class="rc-lane-bg" x="{x:.1f}" y="0" width="{w:.1f}" height="{height:.1f}"'
            f' rx="6"/><rect x="{x:.1f}" y="0" width="{w:.1f}" height="4" rx="2"'
            f' fill="{colour}"/><text class="rc-name lane-name" x="{x + PAD:.1f}" y="24">'
            f"{_e(_cut(name, chars - (2 if mark else 0)))}{mark}</text>"
            f'<text class="rc-kind" x="{x + PAD:.1f}" y="40">{_e(kind)}</text></g>'
        )
    ns = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""
    label = f"Interleaving of {len(names)} actors over {len(trace.steps)} steps"
    return (
        f'<svg{ns} class="swimlane" role="img" aria-label="{_e(label)}"'
        f' width="{layout.total:.0f}" height="{height:.0f}"'
        f' viewBox="0 0 {layout.total:.0f} {height:.0f}">'
        f"<style>{STYLE}</style>"
        f'<defs><marker id="{_e(id_prefix)}-arrow" viewBox="0 0 10 10" refX="9" refY="5"'
        f' markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        f'<path d="M0,0 L10,5 L0,10 z" fill="#57606a"/></marker></defs>'
        + "".join(header)
        + "".join(body)
        + "".join(arrow_svg)
        + "</svg>"
    )


def _source_text(x: float, y: float, where: str, text: str, width: float) -> str:
    """``file.py:12  code`` with the location greyed and the code aligned after it."""
    chars = int(width / CHAR)
    code_x = x + (len(where) + 2) * CHAR
    return (
        f'<text x="{x:.1f}" y="{y}"><tspan class="rc-where">{_e(_cut(where, chars))}</tspan>'
        f'<tspan class="rc-src" x="{code_x:.1f}">'
        f"{_e(_cut(text, max(chars - len(where) - 2, 4)))}</tspan></text>"
    )


def _draw_block(b: _Block, layout: _Layout, preempted: bool) -> str:
    x, w = layout.inner(b.lane)
    racing_cls = " rc-racing" if any(cls == "race" for cls, _, _ in b.lines) else ""
    colour = COLOURS[b.lane % len(COLOURS)]
    parts = [
        f'<g class="step" data-step="{b.pos}" data-lane="{b.lane}"><title>{_e(b.title)}</title>',
        f'<rect class="rc-block{racing_cls}" x="{x:.1f}" y="{b.y}" width="{w:.1f}"'
        f' height="{b.height}" rx="4"/>',
        f'<rect x="{x:.1f}" y="{b.y}" width="3" height="{b.height}" fill="{colour}"/>',
        f'<text class="rc-step" x="{GUTTER - 10}" y="{b.y + PAD + 9}" text-anchor="end">'
        f"{b.pos + 1}</text>",
    ]
    if preempted:
        parts.append(
            f'<text class="rc-pre-label" x="{x + w - 6:.1f}" y="{b.y - 9}"'
            f' text-anchor="end">preempted</text>'
        )
    ty = b.y + PAD + 9
    chars = int((w - 2 * PAD) / CHAR)
    for cls, where, text in b.lines:
        if cls == "src":
            parts.append(_source_text(x + PAD, ty, where, text, w - 2 * PAD))
        else:
            parts.append(
                f'<text class="rc-{cls}" x="{x + PAD:.1f}" y="{ty}">{_e(_cut(text, chars))}</text>'
            )
        ty += LINE
    parts.append("</g>")
    return "".join(parts)


def _draw_arrow(src: _Block, dst: _Block, resource: str, layout: _Layout, prefix: str) -> str:
    """A curve from the side of ``src`` facing ``dst`` to the side of ``dst`` facing back."""
    sx, sw = layout.inner(src.lane)
    dx, dw = layout.inner(dst.lane)
    rightwards = src.lane < dst.lane
    x1 = sx + sw if rightwards else sx
    x2 = dx if rightwards else dx + dw
    y1 = src.y + src.height - 8
    y2 = dst.y + 10
    bend = 40 if rightwards else -40
    # The label sits beside the source block, in its own row: a row holds one
    # block, and a block starts at most one hand-off, so labels never collide.
    label_x = x1 + (6 if rightwards else -6)
    anchor = "start" if rightwards else "end"
    return (
        f'<g class="handoff"><title>hand-off on {_e(resource)}</title>'
        f'<path class="rc-arrow" d="M{x1:.1f},{y1:.1f} C{x1 + bend:.1f},{y1:.1f}'
        f' {x2 - bend:.1f},{y2:.1f} {x2:.1f},{y2:.1f}" marker-end="url(#{_e(prefix)}-arrow)"/>'
        f'<text class="rc-arrow-label" x="{label_x:.1f}" y="{y1 - 5:.1f}"'
        f' text-anchor="{anchor}">{_e(_cut(resource, 24))}</text></g>'
    )
