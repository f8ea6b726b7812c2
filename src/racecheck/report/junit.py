"""``racecheck.xml``: JUnit XML, so CI systems list one test case per scenario/variant.

The de-facto JUnit schema (Jenkins, GitLab, GitHub test reporters) is loose;
this sticks to the part all of them read: ``testsuites > testsuite > testcase``
with ``classname`` = scenario and ``name`` = variant, a ``<failure>`` when the
variant did not meet its expectation (an expected race is a pass), an
``<error>`` when racecheck could not explore it, and the schedule token as a
property so a failing CI job can be replayed locally.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from racecheck.report.json_report import outcome_text, printable, replay_command, tool_version

if TYPE_CHECKING:
    from racecheck.report import RunRecord
    from racecheck.trace import Trace


def trace_text(trace: Trace, width: int = 120, *, elide: bool = True) -> str:
    """The trace as plain text: the terminal's column view, or a listing if that fails.

    The column renderer lives with the engine; a report must still be written
    if it is missing or raises on an odd trace, so fall back to one step a line.
    """
    try:
        return trace.render(width=width, elide=elide)
    except Exception:
        return _listing(trace)


def _listing(trace: Trace) -> str:
    names = {a.id: a.name for a in trace.actors}
    out: list[str] = []
    for n, step in enumerate(trace.steps, 1):
        mark = "  (preempted)" if step.preempted else ""
        out.append(f"{n:>3}  {names.get(step.actor, f'actor {step.actor}')}{mark}")
        out += [f"       {line.where}  {line.text}" for line in step.lines]
        if step.operation:
            out.append(f"       ⇢ {step.operation}")
    if trace.failure is not None:
        who = names.get(trace.failure.actor, "") if trace.failure.actor is not None else ""
        out.append(f"  ✗  {who + ': ' if who else ''}{trace.failure.message}")
        if trace.failure.line is not None:
            out.append(f"       {trace.failure.line.where}  {trace.failure.line.text}")
    return "\n".join(out)


def _details(record: RunRecord) -> str:
    """The body of a testcase's failure/output: outcome, trace, how to replay."""
    parts = [outcome_text(record)]
    if record.detail and record.detail.strip() != (record.message or "").strip():
        parts.append(record.detail)
    if record.trace is not None:
        parts.append(trace_text(record.trace))
    if record.preemptions is not None:
        before = record.original_preemptions
        shrunk = f"{before} -> " if before is not None and before != record.preemptions else ""
        parts.append(f"preemptions: {shrunk}{record.preemptions}")
    if record.schedule:
        parts.append(f"schedule: {record.schedule}")
    if record.original_schedule and record.original_schedule != record.schedule:
        parts.append(f"original schedule: {record.original_schedule}")
    command = replay_command(record)
    if command:
        parts.append(f"replay: {command}")
    return "\n".join(parts)


def _sub(parent: ET.Element, tag: str, **attrs: str) -> ET.Element:
    return ET.SubElement(parent, tag, {k: printable(v) for k, v in attrs.items()})


def _testcase(suite: ET.Element, record: RunRecord) -> None:
    classname, name = record.scenario, record.variant
    if record.origin == "pytest":
        # CI lists pytest's own cases as file/class + test: so do these
        classname, _, name = record.scenario.rpartition("::")
    case = _sub(
        suite,
        "testcase",
        classname=classname,
        name=name,
        time=f"{record.seconds:.3f}",
    )
    props = _sub(case, "properties")
    values = {
        "expect": record.expect,
        "verdict": record.verdict,
        "kind": record.kind or "",
        "schedules_run": str(record.schedules_run),
        "exhausted": str(record.exhausted).lower(),
        "verified": str(record.verified).lower(),
        "strategy": record.strategy,
        "seed": str(record.seed),
        "schedule": record.schedule or "",
        "replay_command": replay_command(record) or "",
    }
    for key, value in values.items():
        if value:
            _sub(props, "property", name=key, value=value)
    details = printable(_details(record))
    if record.verdict == "error":
        tag = _sub(case, "error", message=record.message or "error", type="error")
        tag.text = details
    elif not record.ok:
        message = outcome_text(record).splitlines()[0]
        tag = _sub(case, "failure", message=message, type=record.verdict)
        tag.text = details
    else:
        _sub(case, "system-out").text = details


def render_junit(records: Sequence[RunRecord], created: datetime) -> str:
    """``racecheck.xml``'s text: one ``<testsuite>`` per scenario, in run order."""
    stamp = created.replace(tzinfo=None).isoformat()
    root = ET.Element("testsuites", {"name": "racecheck"})
    suites: dict[str, list[RunRecord]] = {}
    for record in records:
        # pytest's records: one suite per test file, as pytest's own JUnit has it
        key = record.scenario.split("::")[0] if record.origin == "pytest" else record.scenario
        suites.setdefault(key, []).append(record)
    for name, members in suites.items():
        suite = _sub(
            root,
            "testsuite",
            name=name,
            tests=str(len(members)),
            failures=str(sum(not r.ok and r.verdict != "error" for r in members)),
            errors=str(sum(r.verdict == "error" for r in members)),
            skipped="0",
            time=f"{sum(r.seconds for r in members):.3f}",
            timestamp=stamp,
        )
        _sub(_sub(suite, "properties"), "property", name="racecheck", value=tool_version())
        for record in members:
            _testcase(suite, record)
    root.set("tests", str(len(records)))
    root.set("failures", str(sum(int(s.get("failures", "0")) for s in root)))
    root.set("errors", str(sum(int(s.get("errors", "0")) for s in root)))
    root.set("time", f"{sum(r.seconds for r in records):.3f}")
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
