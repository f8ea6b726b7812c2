"""``racecheck.json``: the machine-readable report (schema in docs/report-schema.md).

The JSON report is the one other tools build on (dashboards, regression diffs),
so it carries a ``schema`` identifier that changes only on incompatible
changes; adding keys keeps ``racecheck-report/1``. It is also where the values
that every format shows are derived once (:func:`replay_command`,
:func:`outcome_text`), so the HTML, the JUnit XML and the JSON never disagree.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from racecheck.report import RunRecord
    from racecheck.trace import SourceLine, Trace

SCHEMA = "racecheck-report/1"

_EXPECT_WORDS = {"race": "a race", "deadlock": "a deadlock", "safe": "no failure"}
_VERDICT_WORDS = {
    "race": "a race",
    "deadlock": "a deadlock",
    "step-limit": "a step-limit failure",
    "atomicity-violation": "an atomicity violation (race detector)",
    "data-race": "a data race (race detector)",
    "safe": "no failure",
    "error": "an error",
    "interrupted": "an interruption",
}


#: characters XML 1.0 forbids (and lone surrogates, which UTF-8 cannot encode)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def printable(text: str) -> str:
    """``text`` with characters that would break XML/HTML replaced by U+FFFD.

    Exception messages and source lines are user data: a NUL byte or an ANSI
    escape in one must not make the JUnit file unparseable. Escaping ``<&>``
    is the renderers' job; this only removes what no escaping can represent.
    """
    return _NOT_XML.sub("\ufffd", text)


def tool_version() -> str:
    """racecheck's version, read lazily (importing the package is cheap, but not free)."""
    try:
        from racecheck import __version__
    except ImportError:  # pragma: no cover - partially installed package
        return "unknown"
    return str(__version__)


def replay_command(record: RunRecord) -> str | None:
    """The shell command that replays the record's failing schedule, if it has one.

    The CLI knows the scenario's file and sets ``record.replay_command``; the
    fallback names the scenario, which ``racecheck replay`` also accepts.
    """
    if record.replay_command:
        return record.replay_command
    if not record.schedule:
        return None
    target = f"{record.scenario}[{record.variant}]" if record.variant else record.scenario
    return f"racecheck replay {shlex.quote(target)} {shlex.quote(record.schedule)}"


def outcome_text(record: RunRecord) -> str:
    """One line saying what was expected and what happened, for people."""
    got = _VERDICT_WORDS.get(record.verdict, record.verdict)
    want = _EXPECT_WORDS.get(record.expect, record.expect)
    runs = f"{record.schedules_run} schedule{'s' if record.schedules_run != 1 else ''}"
    if record.verdict == "interrupted":
        # Ctrl-C: neither a verdict nor a pass; the message says how far it got
        return f"interrupted: {record.message or runs}"
    if record.verdict == "safe":
        space = ", bounded space exhausted" if record.exhausted else ""
        if record.verified:  # a proof, not a sample: every non-equivalent interleaving ran
            space = ", verified: every non-equivalent interleaving explored"
        found = f"no failure in {runs}{space}"
    else:
        found = f"found {got} after {runs}"
    verdict = "as expected" if record.ok else f"expected {want}"
    line = f"{found} ({verdict})"
    return f"{line}: {record.message}" if record.message and record.verdict != "safe" else line


def _line(line: SourceLine | None) -> dict[str, Any] | None:
    if line is None:
        return None
    return {"file": line.filename, "where": line.where, "line": line.lineno, "text": line.text}


def trace_to_dict(trace: Trace) -> dict[str, Any]:
    """The trace as plain data (the shape documented under ``trace`` in the schema)."""
    failure = trace.failure
    return {
        "actors": [{"id": a.id, "name": a.name, "kind": a.kind} for a in trace.actors],
        "steps": [
            {
                "index": s.index,
                "actor": s.actor,
                "lines": [_line(line) for line in s.lines],
                "operation": s.operation,
                "resource": s.resource,
                "preempted": s.preempted,
                "accesses": list(s.accesses),
            }
            for s in trace.steps
        ],
        "failure": None
        if failure is None
        else {"actor": failure.actor, "message": failure.message, "line": _line(failure.line)},
    }


def _line_from(data: dict[str, Any] | None) -> SourceLine | None:
    from racecheck.trace import SourceLine

    if data is None:
        return None
    return SourceLine(str(data["file"]), int(data["line"]), str(data["text"]))


def trace_from_dict(data: dict[str, Any]) -> Trace:
    """The inverse of :func:`trace_to_dict` (a pytest-xdist worker's trace, rebuilt)."""
    from racecheck.trace import ActorInfo, FailurePoint, Step, Trace

    failure = data.get("failure")
    return Trace(
        actors=[ActorInfo(int(a["id"]), str(a["name"]), str(a["kind"])) for a in data["actors"]],
        steps=[
            Step(
                index=int(s["index"]),
                actor=int(s["actor"]),
                lines=tuple(line for line in map(_line_from, s["lines"]) if line is not None),
                operation=str(s.get("operation") or ""),
                resource=s.get("resource"),
                preempted=bool(s.get("preempted")),
                accesses=tuple(s.get("accesses") or ()),
            )
            for s in data["steps"]
        ],
        failure=None
        if failure is None
        else FailurePoint(
            failure.get("actor"), str(failure["message"]), _line_from(failure.get("line"))
        ),
    )


def record_to_dict(record: RunRecord) -> dict[str, Any]:
    """One scenario/variant as plain data (the shape documented under ``records``)."""
    data = _record_dict(record)
    if record.shard is not None:  # only in a slice's report (racecheck report merge)
        data["shard"] = dict(record.shard)
    return data


def _record_dict(record: RunRecord) -> dict[str, Any]:
    return {
        "scenario": record.scenario,
        "variant": record.variant,
        "origin": record.origin,
        "expect": record.expect,
        "verdict": record.verdict,
        "kind": record.kind,
        "ok": record.ok,
        "message": record.message,
        "detail": record.detail,
        "race": record.race,
        "warnings": list(record.warnings),
        "outcome": outcome_text(record),
        "strategy": record.strategy,
        "seed": record.seed,
        "schedules_run": record.schedules_run,
        "exhausted": record.exhausted,
        "verified": record.verified,
        "verified_note": record.verified_note,
        "seconds": round(record.seconds, 6),
        "schedule": record.schedule,
        "original_schedule": record.original_schedule,
        "preemptions": record.preemptions,
        "original_preemptions": record.original_preemptions,
        "replay_command": replay_command(record),
        "coverage": {
            "distinct_schedules": record.distinct_schedules,
            "distinct_orderings": record.distinct_orderings,
        },
        "trace": None if record.trace is None else trace_to_dict(record.trace),
    }


def _shared(values: Sequence[Any]) -> Any:
    """The value every record shares, or None when they differ (or there are none)."""
    distinct = set(values)
    return values[0] if len(distinct) == 1 else None


def build_report(records: Sequence[RunRecord], created: datetime) -> dict[str, Any]:
    """The whole JSON document as a dict."""
    failed = [r for r in records if not r.ok]
    verdicts: dict[str, int] = {}
    for r in records:
        verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
    return {
        "schema": SCHEMA,
        "tool": {"name": "racecheck", "version": tool_version()},
        "created": created.isoformat().replace("+00:00", "Z"),
        "strategy": _shared([r.strategy for r in records]),
        "seed": _shared([r.seed for r in records]),
        "ok": not failed,
        "summary": {
            "records": len(records),
            "ok": len(records) - len(failed),
            "failed": len(failed),
            "verdicts": verdicts,
        },
        "records": [record_to_dict(r) for r in records],
    }


def render_json(records: Sequence[RunRecord], created: datetime) -> str:
    """``racecheck.json``'s text: UTF-8, indented so that diffs between runs read well."""
    text = json.dumps(build_report(records, created), indent=2, ensure_ascii=False)
    return text + "\n"
