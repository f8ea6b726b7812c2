"""What an exploration returns: a :class:`Report`, or raises :class:`RaceFound`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from racecheck.trace import Trace

#: Failure kinds. "exception": the target (or any actor) raised; "deadlock":
#: nothing can run and not everything finished; "step-limit": the run passed
#: ``max_steps`` decisions (a livelock or a spin loop).
KINDS = ("exception", "deadlock", "step-limit", "atomicity-violation", "data-race")

#: the verdict a failure kind stands for in tables and reports
VERDICTS = {
    "exception": "race",
    "deadlock": "deadlock",
    "step-limit": "step-limit",
    "atomicity-violation": "race",
    "data-race": "race",
}


@dataclass
class Report:
    """The result of an exploration in which no schedule failed."""

    schedules_run: int
    exhausted: bool
    strategy: str
    seed: int
    backend: str
    seconds: float = 0.0
    #: distinct schedules (decision sequences) seen
    distinct_schedules: int = 0
    #: distinct orderings of conflicting operations seen (interleaving coverage)
    distinct_orderings: int = 0
    notes: list[str] = field(default_factory=list)
    #: True when the exploration stopped early (Ctrl-C); results so far.
    interrupted: bool = False
    #: reasons this green run may prove less than it seems (code racecheck
    #: could not see, a tracer that was replaced); never empty when it matters
    warnings: list[str] = field(default_factory=list)
    #: True when the exploration stopped before its budget because the strategy
    #: kept repeating itself (racecheck.saturation); the notes say what it measured
    saturated: bool = False
    #: True only when every non-equivalent interleaving ran with no bound and
    #: every conflict was observed (strategy "dpor"): a proof for this program
    verified: bool = False

    @property
    def verified_note(self) -> str:
        """What was verified, in DPOR's words ("verified: all N ..."); empty when not verified."""
        return next((note for note in self.notes if note.startswith("verified: ")), "")

    def __str__(self) -> str:
        done = "exhausted the bounded space" if self.exhausted else "no failure"
        if self.verified:
            done = "verified"
        elif self.saturated and not self.exhausted:
            done = "no failure; saturated, stopped early (see the notes)"
        lines = [
            f"racecheck: {self.schedules_run} schedules ({self.strategy}, seed {self.seed},"
            f" {self.backend}): {done}"
        ]
        lines += [f"  {note}" for note in self.notes]
        lines += [f"  warning: {warning}" for warning in self.warnings]
        return "\n".join(lines)


class RaceFound(AssertionError):
    """A schedule made the target fail. Carries everything needed to replay it.

    Subclasses ``AssertionError`` so that a plain ``pytest`` run shows it as a
    test failure, not an error.
    """

    def __init__(
        self,
        *,
        kind: str,
        schedule: str,
        schedules_run: int,
        cause: BaseException | None,
        trace: Trace | None,
        strategy: str = "",
        seed: int = 0,
        original_schedule: str | None = None,
        preemptions: int = 0,
        original_preemptions: int | None = None,
        detail: str = "",
        replay_hint: str | None = None,
        distinct_schedules: int = 0,
        distinct_orderings: int = 0,
        note: str = "",
    ) -> None:
        self.kind = kind
        self.schedule = schedule
        self.schedules_run = schedules_run
        self.cause = cause
        self.trace = trace
        self.strategy = strategy
        self.seed = seed
        self.original_schedule = original_schedule or schedule
        self.preemptions = preemptions
        self.original_preemptions = (
            preemptions if original_preemptions is None else original_preemptions
        )
        self.detail = detail
        self.replay_hint = replay_hint
        #: interleaving coverage up to and including the failing schedule
        self.distinct_schedules = distinct_schedules
        self.distinct_orderings = distinct_orderings
        #: why there is no trace, when there is none
        self.note = note
        super().__init__(self.render())

    @property
    def summary(self) -> str:
        """One line: what failed and why."""
        if self.kind == "exception" and self.cause is not None:
            from racecheck.textsafe import safe_str

            message = safe_str(self.cause)
            what = (
                f"{type(self.cause).__name__}: {message}" if message else type(self.cause).__name__
            )
            shown = getattr(getattr(self.trace, "failure", None), "message", None)
            if shown and shown.startswith(type(self.cause).__name__):
                what = shown  # with the trace's task names (the recorder renames asyncio's)
        else:
            what = self.detail or self.kind
        return what.splitlines()[0] if what else self.kind

    def render(self) -> str:
        from racecheck.render import cut_message

        head = (
            f"racecheck: {self.kind if self.kind != 'exception' else 'race'} found after "
            f"{self.schedules_run} schedule{'s' if self.schedules_run != 1 else ''}"
            f"{f' ({self.strategy}, seed {self.seed})' if self.strategy else ''}:"
            f" {cut_message(self.summary)}"
        )
        parts = [head]
        if self.trace is not None:
            parts.append(self.trace.render())
        elif self.note:
            parts.append(self.note)
        if self.kind != "exception" and self.detail and "\n" in self.detail:
            parts.append(self.detail)
        shrink = (
            f"preemptions: {self.original_preemptions} -> {self.preemptions}"
            if self.original_preemptions != self.preemptions
            else f"preemptions: {self.preemptions}"
        )
        parts.append(shrink)
        parts.append(f"schedule: {self.schedule}")
        if self.original_schedule != self.schedule:
            parts.append(f"original schedule: {self.original_schedule}")
        parts.append(
            "replay: " + (self.replay_hint or f'racecheck.replay(target, "{self.schedule}")')
        )
        from racecheck.textsafe import terminal_safe

        # This text goes to terminals (pytest, the CLI, tracebacks): names and
        # messages from the code under test must not carry live control codes.
        return terminal_safe("\n".join(parts))

    def __str__(self) -> str:
        # Rendered on demand: front ends set replay_hint after construction.
        return self.render()

    def __reduce__(self) -> tuple[Any, ...]:
        # pytest-xdist ships failures between processes; keep it picklable as a
        # plain AssertionError carrying the rendered text.
        return (AssertionError, (self.render(),))
