"""The readable interleaving of one schedule.

A :class:`Trace` is recorded on a dedicated replay of a failing schedule, never
during exploration: exploration only records decisions, which keeps it fast,
and determinism makes the replay show exactly what the failing run did.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from racecheck.render import render_columns


@dataclass(frozen=True)
class SourceLine:
    filename: str
    lineno: int
    text: str

    @property
    def where(self) -> str:
        import os

        return f"{os.path.basename(self.filename)}:{self.lineno}"


@dataclass(frozen=True)
class ActorInfo:
    """An actor as shown to people: ``id`` is its creation order in the run."""

    id: int
    name: str  # "Task-2 · deposit(10)", "Thread-1 · worker"
    kind: str  # "task" | "thread" | "callback"


@dataclass(frozen=True)
class Step:
    """What one actor did between two scheduling decisions."""

    index: int
    actor: int  # ActorInfo.id
    #: user-code lines the step ran, in order (already de-duplicated/collapsed)
    lines: tuple[SourceLine, ...]
    #: the operation the step ended on: "await sleep(0)", "acquire Lock#1", ...
    operation: str = ""
    #: the object the operation is about ("Lock#1"), used to draw hand-offs
    resource: str | None = None
    #: True when racecheck chose something other than the natural order here
    preempted: bool = False
    #: attributes/objects written or read in this step (for conflict highlighting)
    accesses: tuple[str, ...] = ()


@dataclass(frozen=True)
class FailurePoint:
    actor: int | None
    message: str
    line: SourceLine | None


@dataclass
class Trace:
    actors: list[ActorInfo] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    failure: FailurePoint | None = None

    def render(self, width: int | None = None, *, elide: bool = True) -> str:
        """One column per actor (rows when they do not fit ``width``, the terminal's)."""
        return render_columns(self, width=width, elide=elide)

    def __str__(self) -> str:
        return self.render()
