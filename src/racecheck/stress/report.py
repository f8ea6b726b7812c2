"""What a stress campaign found: rates with a confidence interval, failures grouped.

A stress run is not replayable: the interleaving came from the OS scheduler,
the switch interval and random jitter, none of which racecheck records. So the
report says how *often* the target failed, with a 95% Wilson score interval
(sound at 0 failures and at tiny rates, where the normal approximation claims
an interval of zero width), and *where*: failures are grouped by exception type
and the innermost user-code frame, each group with a count and one example
traceback. What makes it actionable is the controlled re-check
(:mod:`racecheck.stress.reproduce`): a token when the scheduler can replay the
bug, or a plain statement that it cannot reach it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from racecheck.textsafe import terminal_safe

#: z for a two-sided 95% interval
Z95 = 1.959963984540054


def wilson(failures: int, runs: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion, as fractions in [0, 1].

    Chosen over the normal ("Wald") interval because stress rates are often 0
    or tiny: Wald gives [0, 0] for 0 of 1,000, which claims certainty the runs
    never gave; Wilson's upper bound (about 3.8/n at zero) is the honest answer
    to "how rare could this bug still be?".
    """
    if runs <= 0:
        return (0.0, 1.0)
    p = failures / runs
    z2 = z * z
    denom = 1.0 + z2 / runs
    centre = (p + z2 / (2 * runs)) / denom
    half = z * math.sqrt(p * (1 - p) / runs + z2 / (4 * runs * runs)) / denom
    low = 0.0 if failures == 0 else max(0.0, centre - half)
    high = 1.0 if failures == runs else min(1.0, centre + half)
    return (low, high)


def _digits(value: float) -> int:
    """Decimals that show a percentage with one significant digit at least."""
    if value <= 0 or value >= 1:
        return 1
    return max(1, min(6, -math.floor(math.log10(value))))


def percent(value: float, digits: int | None = None) -> str:
    """``value`` (a fraction) as a percentage without the sign: 0.0003 -> "0.03"."""
    pct = value * 100
    return f"{pct:.{_digits(pct) if digits is None else digits}f}"


def rate_line(failures: int, runs: int) -> str:
    """ "failed 3 of 10,000 runs (0.03%); 95% CI 0.01–0.09%"."""
    low, high = wilson(failures, runs)
    digits = max(_digits(low * 100), _digits(high * 100))
    noun = "run" if runs == 1 else "runs"
    head = f"failed {failures:,} of {runs:,} {noun}"
    if runs:
        head += f" ({percent(failures / runs)}%)"
    return f"{head}; 95% CI {percent(low, digits)}–{percent(high, digits)}%"


@dataclass
class FailureGroup:
    """Every failure with the same kind, exception type and location."""

    kind: str  # "exception" | "hang" | "crash"
    exc_type: str
    location: str  # "file.py:12 in func", or "" when none is known
    count: int
    message: str
    example: str  # one traceback (or, for a hang, the stack dump)

    def headline(self) -> str:
        where = f" at {self.location}" if self.location else ""
        what = {"hang": "hang (timed out)", "crash": "crash"}.get(self.kind, self.exc_type)
        text = f"{what}{where}"
        if self.message:
            text += f": {self.message}"
        return text


@dataclass
class Reproduction:
    """What the controlled scheduler made of the target after stress saw a failure.

    ``status``: "reproduced" (``token`` replays it), "out-of-reach" (the
    scheduler could not control the target: StuckError, blind spots, warnings),
    "not-reproduced" (it explored ``schedules`` cleanly and saw nothing it could
    not control: the bug needs real timing, I/O or C code), "skipped" or "error".
    """

    status: str
    detail: str = ""
    token: str | None = None
    schedules: int = 0
    replay: str = ""

    def lines(self) -> list[str]:
        if self.status == "reproduced":
            out = [
                f"controlled scheduler: reproduced after {self.schedules} schedules;"
                f" this token replays it deterministically: {self.token}"
            ]
            if self.replay:
                out.append(f"  replay: {self.replay}")
            if self.detail:
                out.append(f"  {self.detail}")
            return out
        if self.status == "out-of-reach":
            return [f"controlled scheduler: out of reach: {self.detail}"]
        if self.status == "not-reproduced":
            return [
                f"controlled scheduler: no failure in {self.schedules} schedules"
                f"{': ' + self.detail if self.detail else ''}"
            ]
        if self.status == "error":
            return [f"controlled scheduler: could not run: {self.detail}"]
        return [f"controlled scheduler: not tried{': ' + self.detail if self.detail else ''}"]


@dataclass
class StressReport:
    """The result of :func:`racecheck.stress`. NOT replayable: see :attr:`replayable`."""

    label: str
    backend: str
    runs: int  # runs completed (a run starts ``parallel`` copies together)
    runs_requested: int
    parallel: int
    timeout: float
    seconds: float
    seed: int
    failed_runs: int = 0
    hangs: int = 0
    #: runs that killed their worker process (isolate="process" only)
    crashes: int = 0
    groups: list[FailureGroup] = field(default_factory=list)
    #: "free-threaded build, GIL disabled: ..." or the GIL build's mode
    threading_mode: str = ""
    free_threaded: bool = False
    jitter: str = ""
    notes: list[str] = field(default_factory=list)
    interrupted: bool = False
    #: names of threads a timed-out run left running (they could not be stopped)
    abandoned_threads: list[str] = field(default_factory=list)
    reproduction: Reproduction | None = None
    #: stress results are statistics, never a schedule: there is no token to replay
    replayable: bool = False

    @property
    def ok(self) -> bool:
        """No run failed (or hung). Says nothing about runs that were not made."""
        return self.failed_runs == 0

    @property
    def failure_rate(self) -> float:
        return self.failed_runs / self.runs if self.runs else 0.0

    @property
    def confidence_interval(self) -> tuple[float, float]:
        """The 95% Wilson interval of the failure rate, as fractions."""
        return wilson(self.failed_runs, self.runs)

    def summary(self) -> str:
        return rate_line(self.failed_runs, self.runs)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data: every field, plus the rate and its 95% interval."""
        data = asdict(self)
        low, high = self.confidence_interval
        data.update(failure_rate=self.failure_rate, ci95=[low, high], ok=self.ok)
        return data

    def render(self, examples: bool = True) -> str:
        copies = f"{self.parallel} copies per run" if self.parallel > 1 else "1 copy per run"
        partial = ""
        if self.interrupted:
            partial = f" (interrupted after {self.runs:,} of {self.runs_requested:,} runs)"
        elif self.runs < self.runs_requested:
            partial = f" (stopped after {self.runs:,} of {self.runs_requested:,} runs)"
        lines = [
            f"racecheck stress: {self.label} [{self.backend}] -- NON-REPLAYABLE"
            " (real scheduling, statistics only)",
            f"  {self.summary()}{partial}",
            f"  {copies} · timeout {self.timeout:g} s per run · {self.seconds:.2f} s"
            f" · seed {self.seed} (jitter settings only; interleavings are not recorded)",
        ]
        if self.threading_mode:
            lines.append(f"  {self.threading_mode}")
        if self.jitter:
            lines.append(f"  jitter: {self.jitter}")
        if self.hangs:
            lines.append(f"  hangs: {self.hangs} run(s) timed out (stack dump below)")
        if self.crashes:
            lines.append(f"  crashes: {self.crashes} run(s) killed their worker process")
        if self.groups:
            lines.append(f"  distinct failures: {len(self.groups)}")
            for group in sorted(self.groups, key=lambda g: -g.count):
                lines.append(f"    [{group.count}x] {group.headline()}")
                if examples and group.example:
                    lines += ["        " + line for line in group.example.rstrip().splitlines()]
        if self.reproduction is not None:
            lines += ["  " + line for line in self.reproduction.lines()]
        if self.abandoned_threads:
            lines.append(
                "  abandoned threads still running (a timed-out run cannot be stopped in"
                f" this process): {', '.join(self.abandoned_threads)}"
            )
        lines += [f"  note: {note}" for note in self.notes]
        return terminal_safe("\n".join(lines))

    def __str__(self) -> str:
        return self.render()
