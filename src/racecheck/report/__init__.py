"""Reports of a ``racecheck run``: JSON, JUnit XML and a self-contained HTML page.

The CLI builds one :class:`RunRecord` per scenario/variant and hands the list to
:func:`write_reports`; the pytest plugin builds one per marked test (``origin``
"pytest"), whose trace travels as plain data (``trace_to_dict``) from xdist
workers and is rebuilt with ``trace_from_dict``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from racecheck.trace import Trace


@dataclass
class RunRecord:
    """The outcome of exploring one variant of one scenario."""

    scenario: str
    variant: str
    expect: str  # "race" | "deadlock" | "safe"
    verdict: str  # "race" | "deadlock" | "step-limit" | "safe" | "error"
    kind: str | None  # RaceFound.kind, or None when safe
    schedules_run: int
    exhausted: bool
    schedule: str | None  # (minimised) token, or None
    seconds: float
    strategy: str = ""
    seed: int = 0
    ok: bool = False  # verdict meets expectation
    message: str | None = None  # one-line failure summary
    original_schedule: str | None = None
    preemptions: int | None = None
    original_preemptions: int | None = None
    replay_command: str | None = None
    distinct_schedules: int = 0
    distinct_orderings: int = 0
    trace: Trace | None = field(default=None, repr=False)
    #: multi-line explanation beyond ``message`` (RaceFound.detail: a deadlock's
    #: who-holds-what/who-waits-for-what report); shown in full by every format
    detail: str | None = None
    #: the race detector's finding (kind, pattern, the accesses), when it made the verdict
    race: dict[str, Any] | None = None
    #: Report.warnings: what racecheck could not see, so a "safe" verdict proves less
    warnings: list[str] = field(default_factory=list)
    #: one slice of a sharded exploration (racecheck.sharding): index, count, ran,
    #: budget, failure (the schedule number of its first failure) ...; None when whole
    shard: dict[str, Any] | None = None
    #: "scenario" (racecheck run: scenario × variant) or "pytest" (``scenario`` is
    #: the test's node id, ``variant`` is "test"): the reports lay each out its way
    origin: str = "scenario"
    #: Report.verified, and the note that says what was verified (strategy "dpor")
    verified: bool = False
    verified_note: str = ""


def write_reports(
    records: list[RunRecord],
    directory: str | Path,
    *,
    formats: tuple[str, ...] = ("json", "junit", "html"),
) -> list[Path]:
    """Write the reports atomically into ``directory``; return the paths written."""
    from racecheck.report.writers import write_all

    return write_all(records, Path(directory), formats)
