"""``index.html``: one self-contained page with the matrix and a picture per failure.

The page is opened from CI artifacts, mail attachments and air-gapped machines,
so it references nothing: CSS is inline, there is no script at all, and a
Content-Security-Policy forbids every fetch (even if a future change added a
URL by mistake, the browser would refuse it). Everything that comes from the
program under test or the user (scenario and actor names, exception messages,
source lines, tokens) goes through :func:`_e`; the CSP also blocks scripts, so
an unescaped ``<script>`` could not run either.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape
from typing import TYPE_CHECKING

from racecheck.report.json_report import outcome_text, printable, replay_command, tool_version
from racecheck.report.junit import trace_text
from racecheck.report.swimlane import MAX_LINES_PER_STEP, render_swimlane

if TYPE_CHECKING:
    from racecheck.report import RunRecord
    from racecheck.trace import Trace

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'"

CSS = """
:root { --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --bg: #ffffff; --soft: #f6f8fa;
  --ok: #1a7f37; --bad: #cf222e; --race: #cf222e; --deadlock: #8250df; --limit: #bc4c00;
  --safe: #1a7f37; --error: #57606a;
  --mono: 'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', monospace; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; color: var(--fg); background: var(--bg);
  font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', Arial, sans-serif; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 0; }
code, pre, .mono { font-family: var(--mono); font-size: 12.5px; }
.meta { color: var(--muted); margin: 0 0 16px; }
.status { display: inline-block; padding: 3px 10px; border-radius: 999px; font-weight: 600;
  color: #fff; margin-right: 8px; }
.status.ok { background: var(--ok); } .status.bad { background: var(--bad); }
table.matrix { border-collapse: separate; border-spacing: 0; margin: 12px 0 8px;
  border: 1px solid var(--line); border-radius: 8px; overflow: hidden; }
.matrix th, .matrix td { border-bottom: 1px solid var(--line); padding: 8px 12px;
  text-align: left; vertical-align: top; }
.matrix tr:last-child td { border-bottom: 0; }
.matrix thead th { background: var(--soft); font-weight: 600; white-space: nowrap; }
.matrix th.scenario { font-family: var(--mono); font-weight: 600; background: var(--soft);
  max-width: 280px; overflow-wrap: anywhere; }
.cell { min-width: 190px; }
.cell.ok { background: #f3fbf5; }
.cell.bad { background: #fff1f0; box-shadow: inset 3px 0 var(--bad); }
.cell.none { color: var(--muted); text-align: center; }
.cell .head { display: flex; align-items: center; gap: 8px; font-weight: 600; }
.cell .small { color: var(--muted); font-size: 12.5px; }
.tick { font-weight: 700; } .ok .tick { color: var(--ok); } .bad .tick { color: var(--bad); }
.verdict { display: inline-block; padding: 1px 8px; border-radius: 4px; color: #fff;
  font-size: 12.5px; font-weight: 600; }
.v-race { background: var(--race); } .v-deadlock { background: var(--deadlock); }
.v-step-limit { background: var(--limit); } .v-safe { background: var(--safe); }
.v-error { background: var(--error); } .v-interrupted { background: var(--limit); }
.tag { display: inline-block; border: 1px solid var(--line); border-radius: 4px; padding: 0 5px;
  font-size: 11.5px; color: var(--muted); margin-left: 4px; }
a { color: #0969da; text-decoration: none; } a:hover { text-decoration: underline; }
section.record { border: 1px solid var(--line); border-radius: 8px; margin: 22px 0;
  overflow: hidden; }
section.record > header { display: flex; flex-wrap: wrap; align-items: center; gap: 10px;
  padding: 12px 16px; background: var(--soft); border-bottom: 1px solid var(--line); }
section.record.bad > header { box-shadow: inset 4px 0 var(--bad); }
.record .body { padding: 12px 16px 16px; }
.message { font-family: var(--mono); font-size: 13px; color: var(--bad); white-space: pre-wrap;
  overflow-wrap: anywhere; margin: 0 0 10px; }
pre.detail { background: #fff8f7; border: 1px solid #ffcecb; border-radius: 6px; padding: 8px 10px;
  margin: 0 0 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 3px 14px; margin: 0 0 12px; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
pre.cmd { background: #0d1117; color: #e6edf3; padding: 10px 12px; border-radius: 6px;
  margin: 4px 0 14px; white-space: pre-wrap; overflow-wrap: anywhere; user-select: all; }
.lanes { overflow-x: auto; border: 1px solid var(--line); border-radius: 6px; padding: 10px;
  background: #fff; }
.legend { color: var(--muted); font-size: 12.5px; margin: 6px 0 0; }
.legend span { margin-right: 14px; white-space: nowrap; }
.sw { display: inline-block; width: 11px; height: 11px; vertical-align: -1px;
  border-radius: 2px; margin-right: 4px; }
table.tests { border-collapse: separate; border-spacing: 0; margin: 12px 0 8px; width: 100%;
  border: 1px solid var(--line); border-radius: 8px; overflow: hidden; table-layout: fixed; }
.tests th, .tests td { border-bottom: 1px solid var(--line); padding: 8px 12px; text-align: left;
  vertical-align: top; }
.tests tr:last-child > * { border-bottom: 0; }
.tests thead th { background: var(--soft); font-weight: 600; }
.tests th.nodeid { font-family: var(--mono); font-weight: 500; overflow-wrap: anywhere;
  width: 55%; }
.tests tr.ok > th.nodeid { box-shadow: inset 3px 0 var(--ok); }
.tests tr.bad > th.nodeid { box-shadow: inset 3px 0 var(--bad); background: #fff1f0; }
h2 .nodeid { overflow-wrap: anywhere; }
details { margin-top: 10px; } summary { cursor: pointer; color: var(--muted); }
details pre { background: var(--soft); padding: 10px; border-radius: 6px; overflow-x: auto; }
"""


def _e(value: object) -> str:
    """Escape any value for HTML text and attributes (quotes included)."""
    return escape(printable(str(value)), quote=True)


def _long(text: str, limit: int = 20_000) -> str:
    """A message cut to a size a page can hold (the JSON report keeps it whole)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters in racecheck.json)"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _has_detail(record: RunRecord) -> bool:
    return record.trace is not None or not record.ok or record.verdict != "safe"


def _verdict(record: RunRecord) -> str:
    label = record.verdict
    if record.kind and record.kind not in ("exception", record.verdict):
        label = f"{label} ({record.kind})"
    return f'<span class="verdict v-{_e(record.verdict)}">{_e(label)}</span>'


def _space_tag(record: RunRecord) -> str:
    """What a safe verdict covered, when it is more than a sample."""
    if record.verified:
        return '<span class="tag">verified</span>'
    return '<span class="tag">exhausted</span>' if record.exhausted else ""


def _cell(record: RunRecord, anchor: str | None) -> str:
    state = "ok" if record.ok else "bad"
    tick = "✓" if record.ok else "✗"
    exhausted = _space_tag(record)
    link = f' · <a href="#{anchor}">details ↓</a>' if anchor else ""
    return (
        f'<td class="cell {state}"><div class="head"><span class="tick">{tick}</span>'
        f"{_verdict(record)}{exhausted}</div>"
        f'<div class="small">expect <b>{_e(record.expect)}</b>{link}</div>'
        f'<div class="small">{_e(_plural(record.schedules_run, "schedule"))}'
        f" · {record.seconds:.2f} s</div>"
        f'<div class="small">{_e(_coverage(record))}</div></td>'
    )


def _coverage(record: RunRecord) -> str:
    if not (record.distinct_schedules or record.distinct_orderings):
        return "coverage: not measured"
    parts = [_plural(record.distinct_schedules, "distinct schedule")]
    if record.distinct_orderings:
        parts.append(_plural(record.distinct_orderings, "ordering"))
    return "coverage: " + " · ".join(parts)


def _matrix(records: Sequence[RunRecord], anchors: dict[int, str]) -> str:
    scenarios: dict[str, dict[str, list[int]]] = {}
    variants: dict[str, None] = {}
    for i, r in enumerate(records):
        scenarios.setdefault(r.scenario, {}).setdefault(r.variant, []).append(i)
        variants.setdefault(r.variant, None)
    # The story reads left to right: the bug, the attempted fixes, the fix.
    order = sorted(variants, key=lambda v: {"buggy": 0, "correct": 2}.get(v, 1))
    head = "".join(f'<th scope="col" class="mono">{_e(v)}</th>' for v in order)
    rows = []
    for name, cells in scenarios.items():
        tds = []
        for variant in order:
            found = cells.get(variant)
            if not found:
                tds.append('<td class="cell none">—</td>')
                continue
            tds += [_cell(records[i], anchors.get(i)) for i in found]
        rows.append(f'<tr><th scope="row" class="scenario">{_e(name)}</th>{"".join(tds)}</tr>')
    return (
        f'<table class="matrix"><thead><tr><th scope="col">scenario \\ variant</th>{head}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _node_id(text: str) -> str:
    """A pytest node id, escaped, that may break after ``/`` and ``::`` and before ``[``.

    Node ids are long and have no spaces: without break opportunities a
    browser either overflows the cell or breaks mid-word anywhere.
    """
    out = _e(text)
    for sep, broken in (("::", "::<wbr>"), ("/", "/<wbr>"), ("[", "<wbr>[")):
        out = out.replace(sep, broken)
    return out


def _tests(records: Sequence[RunRecord], anchors: dict[int, str]) -> str:
    """pytest's records: one row per test id, not a scenario × variant matrix."""
    rows = []
    for i, r in enumerate(records):
        if r.origin != "pytest":
            continue
        state = "ok" if r.ok else "bad"
        tick = "✓" if r.ok else "✗"
        link = f' · <a href="#{anchors[i]}">details ↓</a>' if i in anchors else ""
        exhausted = _space_tag(r)
        rows.append(
            f'<tr class="{state}"><th scope="row" class="nodeid">{_node_id(r.scenario)}</th>'
            f'<td><span class="tick">{tick}</span> {_verdict(r)}{exhausted}{link}</td>'
            f"<td>{_e(_plural(r.schedules_run, 'schedule'))}"
            f' <span class="small">({_e(r.strategy)}, seed {_e(r.seed)})</span></td>'
            f'<td class="small">{_e(_coverage(r))}</td><td>{r.seconds:.2f} s</td></tr>'
        )
    return (
        '<table class="tests"><thead><tr><th scope="col" class="nodeid">test id</th>'
        '<th scope="col">verdict</th><th scope="col">schedules</th>'
        '<th scope="col">coverage</th><th scope="col">time</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


LEGEND = (
    '<p class="legend"><span><i class="sw" style="background:#fff4e5;border:1px solid #e8590c">'
    "</i>racing access (shared with another actor)</span>"
    '<span><i class="sw" style="height:0;width:18px;vertical-align:3px;'
    'border-top:2px dashed #d4a72c"></i>preemption</span>'
    "<span>→ hand-off on a lock, event or queue</span>"
    '<span><b style="color:#cf222e">✗</b> failure</span></p>'
)


def _facts(record: RunRecord) -> str:
    rows = [("outcome", outcome_text(record).split(": ", 1)[0])]
    if record.kind:
        rows.append(("kind", record.kind))
    if record.strategy:
        rows.append(("strategy", f"{record.strategy}, seed {record.seed}"))
    rows.append(("schedules", f"{record.schedules_run} run in {record.seconds:.2f} s"))
    if record.preemptions is not None:
        before = record.original_preemptions
        if before is not None and before != record.preemptions:
            rows.append(("preemptions", f"{before} → {record.preemptions} (minimised)"))
        else:
            rows.append(("preemptions", str(record.preemptions)))
    if record.schedule:
        rows.append(("schedule", record.schedule))
    if record.original_schedule and record.original_schedule != record.schedule:
        rows.append(("original schedule", record.original_schedule))
    items = "".join(
        f'<dt>{_e(k)}</dt><dd class="{"mono" if k.endswith("schedule") else ""}">{_e(v)}</dd>'
        for k, v in rows
    )
    return f'<dl class="facts">{items}</dl>'


def _picture(record: RunRecord, anchor: str) -> str:
    """The swimlane, or a note: one odd trace must not cost the whole report."""
    assert record.trace is not None
    try:
        svg = render_swimlane(record.trace, id_prefix=f"{anchor}-sw")
    except Exception as exc:  # a drawing bug; the text trace below still shows it all
        return f'<p class="message">the picture could not be drawn: {_e(repr(exc))}</p>'
    return f'<div class="lanes">{svg}</div>{LEGEND}'


def _title(record: RunRecord) -> str:
    if record.origin == "pytest":
        return f'<span class="mono nodeid">{_node_id(record.scenario)}</span>'
    return (
        f'<span class="mono">{_e(record.scenario)}</span> · '
        f'<span class="mono">{_e(record.variant)}</span>'
    )


def _elided(trace: Trace) -> str:
    """Every line of each step the picture cut short, one ``<details>`` per step.

    The page has no script (its CSP forbids them); ``<details>`` opens without one.
    """
    names = {a.id: a.name for a in trace.actors}
    parts = []
    for number, step in enumerate(trace.steps, 1):
        hidden = len(step.lines) - (MAX_LINES_PER_STEP - 1)
        if len(step.lines) <= MAX_LINES_PER_STEP:
            continue
        text = "\n".join(f"{line.where:>16}  {line.text}" for line in step.lines)
        parts.append(
            f'<details class="elided"><summary>step {number} · '
            f"{_e(names.get(step.actor, step.actor))}: {hidden} more lines</summary>"
            f"<pre>{_e(text)}</pre></details>"
        )
    return "".join(parts)


def _record(record: RunRecord, anchor: str) -> str:
    state = "ok" if record.ok else "bad"
    if record.origin == "pytest":
        tick = "✓ passed" if record.ok else "✗ failed"
    else:
        tick = "✓ expectation met" if record.ok else "✗ expectation not met"
    parts = [
        f'<section class="record {state}" id="{anchor}"><header>'
        f"<h2>{_title(record)}</h2>{_verdict(record)}"
        f'<span class="tick">{tick}</span><span class="small">expect {_e(record.expect)}'
        f'</span></header><div class="body">'
    ]
    if record.message:
        parts.append(f'<p class="message">{_e(_long(record.message))}</p>')
    if record.detail and record.detail.strip() != (record.message or "").strip():
        parts.append(f'<pre class="detail">{_e(_long(record.detail))}</pre>')
    parts.append(_facts(record))
    command = replay_command(record)
    if command:
        parts.append(f'<div><b>Replay</b></div><pre class="cmd">{_e(command)}</pre>')
    if record.trace is not None:
        parts.append(_picture(record, anchor))
        parts.append(_elided(record.trace))
        parts.append(
            "<details><summary>trace as text (every line)</summary>"
            f"<pre>{_e(trace_text(record.trace, elide=False))}</pre></details>"
        )
    parts.append("</div></section>")
    return "".join(parts)


def _kept(records: Sequence[RunRecord], anchors: dict[int, str]) -> dict[int, str]:
    """``anchors`` renumbered for the scenario records alone."""
    kept: dict[int, str] = {}
    position = 0
    for i, r in enumerate(records):
        if r.origin == "pytest":
            continue
        if i in anchors:
            kept[position] = anchors[i]
        position += 1
    return kept


def render_html(records: Sequence[RunRecord], created: datetime) -> str:
    """``index.html``'s text."""
    failed = sum(not r.ok for r in records)
    if all(r.origin == "pytest" for r in records) and records:
        # marked tests pass or fail; "expectations" belong to scenario variants
        counted = _plural(len(records), "test")
        if failed:
            status = f'<span class="status bad">{failed} of {counted} failed</span>'
        else:
            status = f'<span class="status ok">all {counted} passed</span>'
    else:
        expectations = _plural(len(records), "expectation")
        if failed:
            status = f'<span class="status bad">{failed} of {expectations} not met</span>'
        else:
            status = f'<span class="status ok">all {expectations} met</span>'
    strategies = sorted({f"{r.strategy} (seed {r.seed})" for r in records if r.strategy})
    meta = f"racecheck {tool_version()} · {created.strftime('%Y-%m-%d %H:%M:%S UTC')}"
    if strategies:
        meta += f" · strategy {', '.join(strategies)}"
    anchors = {i: f"r{i}" for i, r in enumerate(records) if _has_detail(r)}
    details = "".join(_record(records[i], a) for i, a in anchors.items())
    title = f"racecheck report: {failed} failed" if failed else "racecheck report: all met"
    scenarios = [r for r in records if r.origin != "pytest"]
    tests = len(records) - len(scenarios)
    sections = ""
    if scenarios or not tests:
        # the matrix reads positions in ``records``: the pytest ones leave gaps
        matrix = (
            _matrix([r for r in records if r.origin != "pytest"], _kept(records, anchors))
            if scenarios
            else "<p>No scenarios were run.</p>"
        )
        sections += (
            f"<h2>Scenarios × variants</h2>{matrix}"
            '<p class="legend">✓ the variant met its expectation (an expected race that was'
            " found is a pass) · ✗ it did not</p>"
        )
    if tests:
        sections += (
            f"<h2>Tests</h2>{_tests(records, anchors)}"
            '<p class="legend">✓ no schedule failed · ✗ a schedule failed the test</p>'
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
        f'<h1>racecheck report</h1><p class="meta">{status}{_e(meta)}</p>'
        f"{sections}"
        + (f'<h2 style="margin-top:28px">Failures and traces</h2>{details}' if details else "")
        + "</body></html>\n"
    )
