"""Turn a (replayed) run into a :class:`~racecheck.trace.Trace`.

Backends report each step to the recorder; it keeps who ran, which user lines
ran, and the operation the step ended on. Consecutive steps of one actor are
merged: a story is told in turns, not in scheduler ticks.
"""

from __future__ import annotations

import collections
import os
import re
import traceback
from typing import TYPE_CHECKING, Any

from racecheck.failure import Failure, ResourceNames
from racecheck.sources import is_user_file, source_line
from racecheck.trace import ActorInfo, FailurePoint, SourceLine, Step, Trace

if TYPE_CHECKING:
    import asyncio

_DEFAULT_NAME = re.compile(r"^(Task|Thread)-\d+")
_DEFAULT_NAME_ANYWHERE = re.compile(r"\bTask-\d+\b")


#: steps a trace keeps from the start of a run, and from its end; a run of a
#: million steps (a spin loop up to max_steps) would otherwise need gigabytes
#: to tell a story whose middle nobody reads
KEEP_FIRST = 200
KEEP_LAST = 5_000


class Recorder:
    def __init__(self) -> None:
        self.actors: dict[int, ActorInfo] = {}
        self.steps: list[Step] = []
        #: steps recorded in all; ``steps`` holds the first KEEP_FIRST of them
        #: and the KEEP_LAST latest (``_tail``, once the head is full)
        self.count = 0
        self._tail: collections.deque[Step] = collections.deque(maxlen=KEEP_LAST)
        self.names: ResourceNames | None = None  # created on first use
        self._hidden: set[int] = set()
        #: asyncio's process-wide task names -> the trace's ("Task-12" -> "Task-5")
        self.renamed: dict[str, str] = {}

    def resources(self) -> ResourceNames:
        if self.names is None:
            self.names = ResourceNames()
        return self.names

    def actor(self, actor: int, name: str, kind: str) -> None:
        if actor not in self.actors:
            self.actors[actor] = ActorInfo(actor, name, kind)

    def add_step(
        self,
        actor: int,
        lines: list[tuple[str, int]],
        operation: str,
        resource: str | None,
        preempted: bool,
        accesses: tuple[str, ...] = (),
    ) -> None:
        source = tuple(
            SourceLine(filename, lineno, source_line(filename, lineno))
            for filename, lineno in _dedupe(lines)
        )
        self.count += 1
        step = Step(self.count, actor, source, operation, resource, preempted, accesses)
        if self.count <= KEEP_FIRST:
            self.steps.append(step)
        else:
            self._tail.append(step)

    # -- the end -----------------------------------------------------------
    def finish(self, failure: Failure | None) -> Trace:
        point = None
        if failure is not None:
            message = _failure_message(failure)
            if self.renamed:
                # the message names tasks as asyncio did; the trace's columns, by actor
                message = _DEFAULT_NAME_ANYWHERE.sub(
                    lambda m: self.renamed.get(m.group(0), m.group(0)), message
                )
            point = FailurePoint(failure.actor, message, _failure_line(failure))
        steps = self.steps + list(self._tail)
        left_out = self.count - len(steps)
        if left_out:
            first_kept = self._tail[0]
            gap = Step(
                first_kept.index - 1,
                first_kept.actor,
                (),
                f"… {left_out:,} steps left out of the trace (it keeps the first"
                f" {KEEP_FIRST:,} and the last {KEEP_LAST:,}) …",
            )
            steps.insert(KEEP_FIRST, gap)
        return Trace(
            actors=_told_apart(sorted(self.actors.values(), key=lambda a: a.id)),
            steps=_shared_accesses_only(steps),
            failure=point,
        )


def _told_apart(actors: list[ActorInfo]) -> list[ActorInfo]:
    """Equal names get ``#1``, ``#2``... in creation order: two "worker" columns are useless."""
    from collections import Counter
    from dataclasses import replace

    counts = Counter(a.name for a in actors)
    seen: Counter[str] = Counter()
    out = []
    for actor in actors:
        if counts[actor.name] < 2:
            out.append(actor)
            continue
        seen[actor.name] += 1
        name, sep, rest = actor.name.partition(" · ")
        out.append(replace(actor, name=f"{name}#{seen[actor.name]}{sep}{rest}"))
    return out


def _shared_accesses_only(steps: list[Step]) -> list[Step]:
    """Keep the accesses that can conflict: names some step writes.

    Reads of ``asyncio.gather`` or ``threading.Thread`` are attribute reads
    too, but nobody writes them; they would only drown the real races.
    """
    from dataclasses import replace

    written = {a[2:] for step in steps for a in step.accesses if a.startswith("w:")}
    return [
        replace(step, accesses=tuple(a for a in step.accesses if a[2:] in written))
        if step.accesses
        else step
        for step in steps
    ]


def task_label(task: asyncio.Task[Any], actor: int) -> str:
    """The task's name, with asyncio's process-wide counter replaced by the actor id."""
    name = task.get_name()
    return f"Task-{actor}" if _DEFAULT_NAME.match(name) else name


def task_display_name(task: asyncio.Task[Any], actor: int) -> str:
    name = task_label(task, actor)
    coro = task.get_coro()
    frame = getattr(coro, "cr_frame", None)
    qualname = getattr(coro, "__qualname__", "?").rsplit(".", 1)[-1]
    return f"{name} · {qualname}({_arguments(frame)})"


def _arguments(frame: Any) -> str:
    if frame is None:
        return ""
    code = frame.f_code
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    shown = []
    for name in names:
        if name in ("self", "cls"):
            continue
        value = frame.f_locals.get(name)
        try:
            text = repr(value)
        except Exception:  # a user __repr__ that raises must not lose the trace
            text = f"<{type(value).__name__}>"
        shown.append(text if len(text) <= 16 else text[:13] + "...")
    return ", ".join(shown)


def _dedupe(lines: list[tuple[str, int]]) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for item in lines:
        if not out or out[-1] != item:
            out.append(item)
    return out


def _failure_message(failure: Failure) -> str:
    if failure.cause is not None:
        from racecheck.textsafe import safe_str

        text = f"{type(failure.cause).__name__}: {safe_str(failure.cause)}".rstrip(": ")
        return text.splitlines()[0] if text else type(failure.cause).__name__
    return (failure.detail or failure.kind).splitlines()[0]


def _failure_line(failure: Failure) -> SourceLine | None:
    cause = failure.cause
    if cause is None:
        return None
    flagged = _flagged_access(cause)
    if flagged is not None:
        return flagged
    if cause.__traceback__ is None:
        return None
    frames = traceback.extract_tb(cause.__traceback__)
    for frame in reversed(frames):
        if is_user_file(frame.filename) and frame.lineno is not None:
            return SourceLine(frame.filename, frame.lineno, (frame.line or "").strip())
    return None


def _flagged_access(cause: BaseException) -> SourceLine | None:
    """Where a detector finding's failing actor made the access it flags.

    A finding is raised in no user frame: its last access (the failing actor's,
    which completed the race) is the place to point at.
    """
    accesses = getattr(getattr(cause, "finding", None), "accesses", None)
    if not accesses:
        return None
    last = accesses[-1]
    filename, lineno = getattr(last, "filename", None), getattr(last, "lineno", None)
    if not isinstance(filename, str) or not isinstance(lineno, int):
        return None
    return SourceLine(filename, lineno, str(getattr(last, "line", "")).strip())


def short(filename: str) -> str:
    return os.path.basename(filename)
