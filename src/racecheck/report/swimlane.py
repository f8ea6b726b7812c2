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

Every row holds exactly one block, so when many lanes would not fit a screen,
lanes shrink to narrow columns and blocks overflow into the neighbouring
lanes' empty space ("compact" layout) instead of scrolling sideways. Past
``max_lanes`` actors, the least telling ones share one last lane.

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
TARGET_WIDTH = 1240.0  # wider than this (a 1400px window), switch to the compact layout
MIN_PITCH = 148.0  # compact: lane + gap
COMPACT_GAP = 14.0
MAX_LINES_PER_STEP = 8
MAX_FAILURE_LINES = 10
MAX_TEXT = 4000  # a failure message past this is cut (a repr of a huge dict, say)
DEFAULT_MAX_STEPS = 60
DEFAULT_MAX_LANES = 8
COLOURS = ("#1565c0", "#2e7d32", "#6a1b9a", "#00838f", "#ad1457", "#5d4037", "#283593", "#ef6c00")
MONO = "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', monospace"
SANS = "system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', Arial, sans-serif"


# -- what to draw -----------------------------------------------------------------------


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


def _accessed(access: str) -> str:
    """The engine writes accesses as "w:balance" / "r:balance"; the name is what races."""
    kind, sep, name = access.partition(":")
    return name if sep and kind in ("r", "w") else access


def racing(steps: Sequence[Step]) -> dict[int, tuple[str, ...]]:
    """Position -> the names it shares with another actor's step, one of them writing."""
    actors_of: dict[str, set[int]] = {}
    written: set[str] = set()
    for step in steps:
        for access in step.accesses:
            name = _accessed(access)
            actors_of.setdefault(name, set()).add(step.actor)
            if not access.startswith("r:"):
                written.add(name)
    shared = {name for name, actors in actors_of.items() if len(actors) > 1 and name in written}
    found: dict[int, tuple[str, ...]] = {}
    for pos, step in enumerate(steps):
        names = tuple(dict.fromkeys(_accessed(a) for a in step.accesses))
        hits = tuple(n for n in names if n in shared)
        if hits:
            found[pos] = hits
    return found


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


def _shown(count: int, limit: int) -> tuple[list[int], int]:
    """Positions to draw, and the position the "… N more steps" note goes before (-1: none)."""
    if count <= limit:
        return list(range(count)), -1
    head = max(limit // 3, 1)
    tail = limit - head
    return list(range(head)) + list(range(count - tail, count)), count - tail


@dataclass
class _Lanes:
    """Which lane each actor is drawn in; ``merged`` is the shared lane, if any."""

    lane_of: dict[int, int]
    names: list[tuple[str, str]]  # (name, kind)
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
    top = set(ranked[: max_lanes - 1])
    chosen = [a for a in order if a in top]
    lane_of = {a: i for i, a in enumerate(chosen)}
    merged = len(chosen)
    lane_of.update({a: merged for a in order if a not in lane_of})
    others = (f"{len(order) - len(chosen)} other actors", "one shared lane")
    return _Lanes(lane_of, [*(order[a] for a in chosen), others], merged)


# -- geometry -------------------------------------------------------------------------


@dataclass
class _Block:
    """One drawn step (or the failure): its text lines and its rectangle."""

    pos: int
    lane: int
    lines: list[tuple[str, str, str]]  # (css class, where, text)
    title: str
    x: float = 0.0
    y: float = 0.0
    w: float = 0.0

    @property
    def height(self) -> float:
        return 2 * PAD + len(self.lines) * LINE - 4

    @property
    def chars(self) -> int:
        return max(len(w) + 2 + len(t) if w else len(t) for _, w, t in self.lines)


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
    # The tooltip has what the block had to cut: every line, in full.
    full = [who] if who else []
    full += [f"{line.where}  {_cut(line.text.strip(), 300)}" for line in step.lines[:200]]
    full += [t for cls, _, t in lines if cls in ("op", "race")]
    return _Block(pos, lane, lines, "\n".join(full) or "(no user code)")


def _px(chars: int) -> float:
    return chars * CHAR + 2 * PAD + 10


class _Layout:
    """Lane geometry, and where a block of a lane goes.

    Normal: each lane is as wide as its widest block, blocks fill their lane.
    Compact (too wide for a screen): narrow lanes at a fixed pitch; a block
    starts at its lane and runs right over empty neighbouring lanes (or ends
    at its lane when it would run off the picture).
    """

    def __init__(self, natural: list[int]) -> None:
        n = len(natural)
        widths = [_px(c) for c in natural]
        normal_total = GUTTER + sum(widths) + GAP * (n - 1) + 12
        self.compact = n > 2 and normal_total > TARGET_WIDTH
        self.x: list[float] = []
        if self.compact:
            pitch = max(MIN_PITCH, (TARGET_WIDTH - GUTTER - 12) / n)
            self.widths = [pitch - COMPACT_GAP] * n
            self.x = [GUTTER + i * pitch for i in range(n)]
            self.block_max = _px(min(max(natural), MAX_CHARS))
            self.total = max(GUTTER + n * pitch - COMPACT_GAP, GUTTER + self.block_max) + 12
        else:
            self.widths = widths
            x = GUTTER
            for w in widths:
                self.x.append(x)
                x += w + GAP
            self.block_max = max(widths)
            self.total = x - GAP + 12

    def place(self, lane: int, chars: int) -> tuple[float, float]:
        """Left x and width of a block with ``chars`` columns of text in ``lane``."""
        lane_x, lane_w = self.x[lane], self.widths[lane]
        if not self.compact:
            return lane_x + 5, lane_w - 10
        w = max(min(_px(chars), self.block_max), lane_w - 10)
        x = lane_x + 5
        if x + w > self.total - 12:
            x = max(GUTTER, lane_x + lane_w - 5 - w)
        return x, w


def _natural_chars(blocks: list[_Block], lanes: int, extra: dict[int, int]) -> list[int]:
    chars = [MIN_CHARS] * lanes
    for b in blocks:
        chars[b.lane] = max(chars[b.lane], b.chars)
    for lane, wide in extra.items():
        chars[lane] = max(chars[lane], wide)
    return [min(c, MAX_CHARS) for c in chars]


# -- drawing --------------------------------------------------------------------------

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
.rc-hand {{ font: 11px {MONO}; fill: #57606a; }}
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


def _e(text: object) -> str:
    return escape(printable(str(text)), quote=True)


def _cut(text: str, width: int) -> str:
    text = text.replace("\t", "    ")
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _source_text(x: float, y: float, where: str, text: str, width: float) -> str:
    """``file.py:12  code`` with the location greyed and the code aligned after it."""
    chars = int(width / CHAR)
    code_x = x + (len(where) + 2) * CHAR
    return (
        f'<text x="{x:.1f}" y="{y}"><tspan class="rc-where">{_e(_cut(where, chars))}</tspan>'
        f'<tspan class="rc-src" x="{code_x:.1f}">'
        f"{_e(_cut(text, max(chars - len(where) - 2, 4)))}</tspan></text>"
    )


def _draw_block(b: _Block, preempted: bool) -> str:
    racing_cls = " rc-racing" if any(cls == "race" for cls, _, _ in b.lines) else ""
    colour = COLOURS[b.lane % len(COLOURS)]
    parts = [
        f'<g class="step" data-step="{b.pos}" data-lane="{b.lane}"><title>{_e(b.title)}</title>',
        f'<rect class="rc-block{racing_cls}" x="{b.x:.1f}" y="{b.y}" width="{b.w:.1f}"'
        f' height="{b.height}" rx="4"/>',
        f'<rect x="{b.x:.1f}" y="{b.y}" width="3" height="{b.height}" fill="{colour}"/>',
        f'<text class="rc-step" x="{GUTTER - 10}" y="{b.y + PAD + 9}" text-anchor="end">'
        f"{b.pos + 1}</text>",
    ]
    if preempted:
        parts.append(
            f'<text class="rc-pre-label" x="{b.x + b.w - 6:.1f}" y="{b.y - 9}"'
            f' text-anchor="end">preempted</text>'
        )
    ty = b.y + PAD + 9
    chars = int((b.w - 2 * PAD) / CHAR)
    for cls, where, text in b.lines:
        if cls == "src":
            parts.append(_source_text(b.x + PAD, ty, where, text, b.w - 2 * PAD))
        else:
            text = _e(_cut(text, chars))
            parts.append(f'<text class="rc-{cls}" x="{b.x + PAD:.1f}" y="{ty}">{text}</text>')
        ty += LINE
    parts.append("</g>")
    return "".join(parts)


def _draw_arrow(src: _Block, dst: _Block, resource: str, prefix: str) -> str:
    """A curve from ``src`` to ``dst``: side to side, or bottom to top when they overlap."""
    marker = f'marker-end="url(#{_e(prefix)}-arrow)"'
    if src.x + src.w <= dst.x or dst.x + dst.w <= src.x:
        rightwards = src.x < dst.x
        x1 = src.x + src.w if rightwards else src.x
        x2 = dst.x if rightwards else dst.x + dst.w
        y1, y2 = src.y + src.height - 8, dst.y + 10
        bend = 40 if rightwards else -40
        path = (
            f"M{x1:.1f},{y1:.1f} C{x1 + bend:.1f},{y1:.1f}"
            f" {x2 - bend:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
        )
        # The label sits beside the source block, in its own row: a row holds one
        # block, and a block starts at most one hand-off, so labels never collide.
        lx, ly, anchor = x1 + (6 if rightwards else -6), y1 - 5, "start" if rightwards else "end"
    else:
        x1 = x2 = (max(src.x, dst.x) + min(src.x + src.w, dst.x + dst.w)) / 2
        y1, y2 = src.y + src.height, dst.y
        path = f"M{x1:.1f},{y1:.1f} L{x2:.1f},{y2:.1f}"
        lx, ly, anchor = x1 + 6, y1 + 12, "start"
    return (
        f'<g class="handoff"><title>hand-off on {_e(resource)}</title>'
        f'<path class="rc-arrow" d="{path}" {marker}/>'
        f'<text class="rc-arrow-label" x="{lx:.1f}" y="{ly:.1f}"'
        f' text-anchor="{anchor}">{_e(_cut(resource, 24))}</text></g>'
    )


def _draw_failure(trace: Trace, layout: _Layout, lane: int | None, y: float) -> tuple[str, float]:
    """The red ✗ block (in the failing lane, or across all); returns markup and height."""
    assert trace.failure is not None
    failure = trace.failure
    text = _cut(failure.message, MAX_TEXT)
    message = [ln for ln in printable(text).splitlines() if ln.strip()] or ["failed"]
    src = _source(failure.line) if failure.line is not None else None
    if lane is None:
        x, w = GUTTER, layout.total - GUTTER - 12
    else:
        wanted = max(
            max(len(ln) for ln in message) + 2, len(src[0]) + 2 + len(src[1]) if src else 0
        )
        x, w = layout.place(lane, wanted)
    span = int((w - 2 * PAD) / CHAR)
    lines: list[str] = []
    for ln in message:
        lines += textwrap.wrap(ln, max(span - 2, 10), subsequent_indent="  ") or [""]
    if len(lines) > MAX_FAILURE_LINES:
        lines = [*lines[: MAX_FAILURE_LINES - 1], "…"]
    lines[0] = "✗ " + lines[0]
    height = 2 * PAD + (len(lines) + (1 if src else 0)) * LINE - 4
    parts = [
        f'<g class="rc-failure"><title>{_e(text)}</title>'
        f'<rect class="rc-failbox" x="{x:.1f}" y="{y}" width="{w:.1f}" height="{height}" rx="5"/>'
        f'<text class="rc-x" x="{GUTTER - 10}" y="{y + PAD + 12}" text-anchor="end">✗</text>'
    ]
    ty = y + PAD + 11
    for i, ln in enumerate(lines):
        head = " rc-fail-head" if i == 0 else ""
        parts.append(f'<text class="rc-fail{head}" x="{x + PAD:.1f}" y="{ty}">{_e(ln)}</text>')
        ty += LINE
    if src:
        parts.append(_source_text(x + PAD, ty, src[0], src[1], w - 2 * PAD))
    parts.append("</g>")
    return "".join(parts), height


def _draw_lane(
    lane: int, name: str, kind: str, layout: _Layout, height: float, failed: bool
) -> str:
    x, w = layout.x[lane], layout.widths[lane]
    chars = int((w - 2 * PAD) / (13 * 0.6))
    if len(name) > chars and " · " in name:  # narrow lane: "Task-3" over "deposit(5)"
        name, kind = name.split(" · ", 1)
    mark = ' <tspan class="rc-x-mark">✗</tspan>' if failed else ""
    return (
        f'<g class="lane" data-lane="{lane}"><title>{_e(name)}</title>'
        f'<rect class="rc-lane-bg" x="{x:.1f}" y="0" width="{w:.1f}" height="{height:.1f}"'
        f' rx="6"/><rect x="{x:.1f}" y="0" width="{w:.1f}" height="4" rx="2"'
        f' fill="{COLOURS[lane % len(COLOURS)]}"/>'
        f'<text class="rc-name lane-name" x="{x + PAD:.1f}" y="24">'
        f"{_e(_cut(name, chars - (2 if mark else 0)))}{mark}</text>"
        f'<text class="rc-kind" x="{x + PAD:.1f}" y="40">{_e(_cut(kind, int(chars * 1.15)))}'
        "</text></g>"
    )


def _link(
    blocks: list[_Block], drawn: dict[int, _Block], found: list[Handoff], compact: bool
) -> list[Handoff]:
    """The hand-offs to draw as arrows; the others become a line of text in both blocks.

    In the compact layout blocks overlap other lanes, so an arrow spanning
    several rows would cut through the blocks between; only arrows between
    neighbouring rows are drawn there, the rest say "→ Lock#1 to step 12".
    """
    row = {b.pos: i for i, b in enumerate(blocks)}
    curves = []
    for h in found:
        if h.source not in drawn or h.target not in drawn:
            continue
        if not compact or row[h.target] - row[h.source] == 1:
            curves.append(h)
            continue
        drawn[h.source].lines.append(("hand", "", f"→ {h.resource} to step {h.target + 1}"))
        drawn[h.target].lines.append(("hand", "", f"← {h.resource} from step {h.source + 1}"))
    return curves


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
    actor_names = {a.id: a.name for a in trace.actors}
    blocks = []
    for p in shown:
        step = trace.steps[p]
        lane = lanes.lane_of[step.actor]
        who = actor_names.get(step.actor, f"actor {step.actor}") if lane == lanes.merged else None
        blocks.append(_block(p, lane, step, races.get(p, ()), who))
    fail_lane = lanes.lane_of.get(culprit) if culprit is not None else None
    extra = {}
    if trace.failure is not None and fail_lane is not None:
        message = _cut(trace.failure.message, MAX_TEXT)
        extra[fail_lane] = max(len(ln) for ln in f" {message}".splitlines()) + 2
    layout = _Layout(_natural_chars(blocks, len(lanes.names), extra))

    drawn = {b.pos: b for b in blocks}
    curves = _link(blocks, drawn, handoffs(trace.steps), layout.compact)
    body: list[str] = []
    y = HEADER + 12
    for b in blocks:
        if b.pos == gap_at:
            omitted = len(trace.steps) - len(shown)
            body.append(
                f'<rect x="{GUTTER}" y="{y}" width="{layout.total - GUTTER - 12:.1f}" height="26"'
                f' rx="4" fill="#ffffff" stroke="#d0d7de" stroke-dasharray="3 3"/>'
                f'<text class="rc-note" x="{GUTTER + PAD}" y="{y + 17}">… {omitted} more steps'
                f" (steps {gap_at - omitted + 1}–{gap_at} not drawn)</text>"
            )
            y += 26 + ROW_GAP
        preempted = trace.steps[b.pos].preempted
        if preempted:  # room for the dashed line and its label above the block
            y += 10
            body.append(
                f'<line class="rc-pre" x1="6" x2="{layout.total - 12:.1f}" y1="{y - 6}"'
                f' y2="{y - 6}"/>'
            )
        b.x, b.w = layout.place(b.lane, b.chars)
        b.y = y
        body.append(_draw_block(b, preempted))
        y += b.height + ROW_GAP
    arrows = [_draw_arrow(drawn[h.source], drawn[h.target], h.resource, id_prefix) for h in curves]
    if trace.failure is not None:
        markup, box = _draw_failure(trace, layout, fail_lane, y + 4)
        body.append(markup)
        y += 4 + box
    height = y + 14

    header = [
        _draw_lane(lane, name, kind, layout, height, lane == fail_lane)
        for lane, (name, kind) in enumerate(lanes.names)
    ]
    ns = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""
    label = (
        f"Interleaving of {len(actor_names) or len(lanes.names)} actors, {len(trace.steps)} steps"
    )
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
        + "".join(arrows)
        + "</svg>"
    )
