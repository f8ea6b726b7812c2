"""``racecheck report merge DIR...``: the slices of a CI matrix, back into one report.

Each slice (``racecheck run --shard I/N`` or ``pytest --racecheck-shard=I/N
--racecheck-report-dir DIR``) writes its own ``racecheck.json`` whose records
carry a ``shard`` entry: which slice, how many schedules it ran, and the
number of its first failure. Records of the same scenario and variant are put
together by :func:`racecheck.sharding.merge`: the failure with the lowest
schedule number wins, which is the one a single run would have reported,
token included. A missing or repeated slice is an input error: without every
slice, no one can say which failure came first.

The merged report is written in every format (JSON, JUnit, HTML). The winning
slice's trace is read back from its ``racecheck.json``, so the merged HTML
draws the same swimlane a single run would. A trace that cannot be read back
(an edited or foreign file) costs only the drawing: the record keeps its
verdict and token, and replaying the token draws the trace again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from racecheck.errors import UsageError
from racecheck.report import RunRecord
from racecheck.report.json_report import trace_from_dict
from racecheck.sharding import Merged, ShardResult, merge, merged_proof
from racecheck.trace import Trace


def read_slice(path: str | Path) -> list[dict[str, Any]]:
    """The records of one slice's report: ``DIR/racecheck.json``, or that file itself."""
    path = Path(path)
    file = path / "racecheck.json" if path.is_dir() else path
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{file}: no such report (give the --report-dir of a slice)") from None
    except OSError as exc:
        raise UsageError(f"{file}: cannot read it: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{file}: not JSON ({exc})") from None
    records = data.get("records") if isinstance(data, dict) else data
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise UsageError(f"{file}: not a racecheck report (no list of records)")
    for record in records:
        if not isinstance(record.get("shard"), dict):
            name = record.get("scenario", "?")
            raise UsageError(
                f"{file}: record {name!r} is not one slice of a sharded run (run with --shard I/N)"
            )
    return records


_KNOWN = {f.name for f in fields(RunRecord)}


def _record(data: dict[str, Any]) -> RunRecord:
    values = {k: v for k, v in data.items() if k in _KNOWN and k not in ("trace", "shard")}
    coverage = data.get("coverage") or {}
    values.setdefault("distinct_schedules", coverage.get("distinct_schedules", 0))
    values.setdefault("distinct_orderings", coverage.get("distinct_orderings", 0))
    values["trace"] = _trace(data.get("trace"))
    try:
        return RunRecord(**values)
    except TypeError as exc:
        raise UsageError(f"malformed record {data.get('scenario')!r}: {exc}") from None


def _trace(data: object) -> Trace | None:
    if not isinstance(data, dict):
        return None
    try:
        return trace_from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def merge_slices(paths: Sequence[str | Path]) -> list[tuple[RunRecord, Merged | None]]:
    """One record per scenario variant, in the order they first appear."""
    if not paths:
        raise UsageError("report merge needs the report directories of the slices")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for path in paths:
        for data in read_slice(path):
            key = (str(data.get("scenario")), str(data.get("variant")))
            groups.setdefault(key, []).append(data)
    out: list[tuple[RunRecord, Merged | None]] = []
    for (scenario, variant), slices in groups.items():
        slices.sort(key=lambda d: int(d["shard"].get("index", 0)))
        name = f"{scenario}[{variant}]" if variant else scenario
        try:
            results = [ShardResult.from_dict(d["shard"], d["shard"].get("failure")) for d in slices]
            merged = merge(results)
        except UsageError as exc:
            raise UsageError(f"{name}: {exc}") from None
        broken = [d for d in slices if d.get("verdict") == "error"]
        if broken:
            # A slice that could not explore: the merge cannot vouch for anything.
            out.append((_record(broken[0]), None))
            continue
        distinct = sum(int((d.get("coverage") or {}).get("distinct_schedules", 0)) for d in slices)
        seconds = max(float(d.get("seconds", 0.0)) for d in slices)
        if merged.winner is not None:
            record = replace(
                _record(slices[merged.winner]),
                # a split exhaustive search's slice counts its own runs; the merge
                # knows the single-process number (racecheck.sharding_tree)
                schedules_run=merged.schedules_run,
                seconds=seconds,
                distinct_schedules=distinct,
            )
        else:
            first = _record(slices[0])
            warnings = list(dict.fromkeys(w for d in slices for w in d.get("warnings") or ()))
            record = replace(
                first,
                schedules_run=merged.schedules_run,
                exhausted=bool(merged.exhausted) or any(bool(d.get("exhausted")) for d in slices),
                **merged_proof(first.verified, first.verified_note, merged, len(slices)),
                seconds=seconds,
                distinct_schedules=distinct,
                warnings=warnings,
                ok=first.expect == "safe",
            )
        out.append((record, merged))
    return out
