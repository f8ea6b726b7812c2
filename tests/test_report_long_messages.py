"""A 3 MB assertion message is cut in the HTML page and the terminal text, kept in JSON."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

import pytest

import racecheck
from racecheck.report import RunRecord
from racecheck.report.html import render_html
from racecheck.report.json_report import render_json

HUGE = "x" * 3_000_000


def racy() -> None:
    box = [0]

    def bump() -> None:
        v = box[0]
        box[0] = v + 1

    t = threading.Thread(target=bump)
    t.start()
    bump()
    t.join()
    assert box[0] == 2, HUGE


def _record(exc: racecheck.RaceFound, variant: str) -> RunRecord:
    return RunRecord(
        scenario="s",
        variant=variant,
        expect="race",
        verdict="race",
        kind=exc.kind,
        schedules_run=exc.schedules_run,
        exhausted=False,
        schedule=exc.schedule,
        seconds=0.1,
        ok=True,
        message=exc.summary,
        trace=exc.trace,
    )


def test_huge_messages_are_cut_in_html_and_text_but_kept_in_json() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(racy, schedules=100)
    exc = info.value
    assert exc.trace is not None
    records = [_record(exc, v) for v in ("a", "b", "c")]
    created = datetime.now(UTC)
    page = render_html(records, created)
    assert len(page) < 1_000_000, f"{len(page)} characters of HTML"
    assert "more characters" in page
    assert len(exc.render()) < 50_000
    assert len(exc.trace.render()) < 50_000
    data = json.loads(render_json(records[:1], created))
    assert HUGE in json.dumps(data)
