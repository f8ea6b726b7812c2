"""The report files change as one set: old or new, never a mix; stale temps go away."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from racecheck.report import RunRecord, write_reports, writers


def records(message: str) -> list[RunRecord]:
    return [
        RunRecord(
            scenario="s",
            variant="v",
            expect="race",
            verdict="race",
            kind="exception",
            schedules_run=3,
            exhausted=False,
            schedule="rc1:threads:access:py311:abcd:eNpjZGIEAAALAAU",
            seconds=0.1,
            ok=True,
            message=message,
        )
    ]


def messages(directory: Path) -> tuple[bool, bool, bool]:
    doc = json.loads((directory / "racecheck.json").read_text())
    return (
        doc["records"][0]["message"] == "new",
        "new" in (directory / "racecheck.xml").read_text(),
        "new" in (directory / "index.html").read_text(),
    )


def test_a_write_error_on_a_later_file_keeps_the_whole_old_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_reports(records("old"), tmp_path)
    before = {
        n: (tmp_path / n).read_bytes() for n in ("racecheck.json", "racecheck.xml", "index.html")
    }
    calls = []
    real = writers.os.fsync

    def disk_full_on_the_second_file(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(fd)

    monkeypatch.setattr(writers.os, "fsync", disk_full_on_the_second_file)
    with pytest.raises(OSError):
        write_reports(records("new"), tmp_path)
    after = {n: (tmp_path / n).read_bytes() for n in before}
    assert after == before
    leftovers = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert not leftovers
    assert len([n for n in os.listdir(tmp_path) if n.startswith(".racecheck-set-")]) == 1


def test_plain_files_from_an_older_racecheck_are_adopted(tmp_path: Path) -> None:
    for name in ("racecheck.json", "racecheck.xml", "index.html"):
        (tmp_path / name).write_text(f"old {name}")
    (tmp_path / "notes.txt").write_text("the user's")
    (tmp_path / ".racecheck.json.abc123.tmp").write_bytes(b"x" * 1000)  # killed writer
    (tmp_path / ".index.html.zz.tmp").write_bytes(b"x")
    write_reports(records("new"), tmp_path)
    assert messages(tmp_path) == (True, True, True)
    assert (tmp_path / "notes.txt").read_text() == "the user's"
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_writing_one_format_keeps_the_others(tmp_path: Path) -> None:
    write_reports(records("old"), tmp_path)
    html = (tmp_path / "index.html").read_text()
    write_reports(records("new"), tmp_path, formats=("json",))
    assert json.loads((tmp_path / "racecheck.json").read_text())["records"][0]["message"] == "new"
    assert (tmp_path / "index.html").read_text() == html


def test_repeated_writes_keep_at_most_two_sets(tmp_path: Path) -> None:
    for i in range(5):
        write_reports(records(f"run {i}"), tmp_path)
    sets = [n for n in os.listdir(tmp_path) if n.startswith(".racecheck-set-")]
    assert len(sets) == 2
    doc = json.loads((tmp_path / "racecheck.json").read_text())
    assert doc["records"][0]["message"] == "run 4"
