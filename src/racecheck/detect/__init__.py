"""Race detection without assertions: ``racecheck.check(target, detect=True)``.

:mod:`racecheck.detect.detector` keeps the shadow state and makes the calls;
:mod:`racecheck.detect.operands` works out, per instruction, which object and
key an access touches. Backends feed it: the threads tracer at every access
point, the asyncio loop one task step at a time through :class:`detecting`,
and the controlled primitives at every hand-off that orders two threads.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

from racecheck.detect.detector import Access, Detector, Finding, RaceDetected
from racecheck.detect.operands import detect_lines, recipes
from racecheck.linetrace import chain_call
from racecheck.sources import is_user_file

if TYPE_CHECKING:
    from racecheck.engine import Controller

__all__ = [
    "Access",
    "Detector",
    "Finding",
    "RaceDetected",
    "detecting",
    "new_detector",
]


def new_detector(
    controller: Controller,
    *,
    happens_before: bool,
    hot_lines: dict[Any, frozenset[int] | None] | None = None,
) -> Detector:
    """A detector for one run that fails ``controller``'s run on its first finding.

    ``hot_lines`` is shared by the runs of one exploration: which code is user
    code, and where its accesses are, does not change between runs.
    """
    from racecheck.engine import Failure

    def on_finding(finding: Finding, actor: int) -> None:
        failure = Failure(finding.kind, RaceDetected(finding), finding.message(), actor)
        if controller.failure is None:
            controller.fail(failure)

    return Detector(on_finding, happens_before=happens_before, hot_lines=hot_lines)


def finding_of(exc: BaseException) -> dict[str, Any] | None:
    """A RaceFound's detector finding as plain data (reports), or None."""
    cause = getattr(exc, "cause", None)
    if not isinstance(cause, RaceDetected):
        return None
    finding = cause.finding
    return {
        "kind": finding.kind,
        "pattern": finding.pattern,
        "accesses": [
            {
                "actor": a.actor,
                "action": a.action,
                "target": a.target,
                "file": a.filename,
                "line": a.lineno,
                "source": a.line,
                "locks": list(a.locks),
            }
            for a in finding.accesses
        ],
    }


_UNSEEN: Any = object()

TraceFn = Callable[[FrameType, Any, Any], Any]


class detecting:
    """``with detecting(detector, actor):`` feeds one asyncio task step to the detector.

    Chains any tracer already installed (coverage's, the trace recorder's), and
    forwards opcode events to it too. Installed for the step and taken out
    after it: kept installed between steps (to spare 3.12+ the re-instrumenting
    ``sys.settrace`` does), it changed what the first schedule of an
    exploration saw on 3.12, so a measured 10% was not worth it.
    """

    def __init__(self, detector: Detector, actor: int, hb: int = 0) -> None:
        self.detector = detector
        self.actor = actor
        self.hb = hb
        self.feed: _StepFeed | None = None

    def __enter__(self) -> None:
        if self.detector.access_log is not None:
            self.detector.access_log.running(self.actor)
        feed = _StepFeed(self.detector, sys.gettrace())
        feed.actor, feed.hb, feed.active = self.actor, self.hb, True
        self.feed = feed
        sys.settrace(feed)

    def __exit__(self, *exc: object) -> None:
        feed = self.feed
        if feed is not None:
            feed.active = False
            sys.settrace(feed.previous)


class _StepFeed:
    """The detector's trace function for task steps: hands user-code accesses over.

    Objects, not closures: a closure that returns itself is a reference
    cycle, one per traced frame, piling up while the collector is off.
    """

    __slots__ = (
        "active",
        "actor",
        "detector",
        "hb",
        "hot_lines",
        "on_instruction",
        "on_recipe",
        "previous",
    )

    def __init__(self, detector: Detector, previous: TraceFn | None) -> None:
        self.detector = detector
        self.previous = previous
        self.hot_lines = detector.hot_lines
        self.on_instruction = detector.on_instruction
        self.on_recipe = detector.on_recipe
        self.actor = 0
        self.hb = 0
        self.active = False

    def __call__(self, frame: FrameType, event: Any, arg: Any) -> Any:
        prev_local = None
        if self.previous is not None:  # coverage's CTracer would take over: see linetrace
            prev_local, self.previous = chain_call(self.previous, self, frame, arg)
        if not self.active:
            return prev_local
        code = frame.f_code
        hot_lines = self.hot_lines
        hot = hot_lines.get(code, _UNSEEN)
        if hot is _UNSEEN:
            hot = hot_lines[code] = detect_lines(code) if is_user_file(code.co_filename) else None
        if hot is None:
            return prev_local
        frame.f_trace_opcodes = frame.f_lineno in hot
        return _FrameFeed(self, code, hot, recipes(code), prev_local)


class _FrameFeed:
    """The local trace function of one user frame during a task step."""

    __slots__ = ("code", "feed", "hot", "inner", "table")
    #: the recorder's line collector forwards opcode events to a chained detector
    wants_opcodes = True

    def __init__(
        self,
        feed: _StepFeed,
        code: Any,
        hot: frozenset[int],
        table: dict[int, Any],
        inner: TraceFn | None,
    ) -> None:
        self.feed = feed
        self.code = code
        self.hot = hot
        #: the code's access recipes: most instructions of a hot line have none,
        #: and the detector would only look that up and return
        self.table = table
        self.inner = inner

    def __call__(self, frame: FrameType, event: Any, arg: Any) -> Any:
        if event == "opcode":
            feed = self.feed
            if feed.active:
                recipe = self.table.get(frame.f_lasti)
                if recipe is not None:  # handed over: on_instruction would look it up again
                    feed.on_recipe(frame, recipe, feed.actor, feed.hb)
        elif event == "line":
            # opcode events only on lines that hold an access: the rest is free
            frame.f_trace_opcodes = frame.f_lineno in self.hot
        inner = self.inner
        if inner is not None:
            self.inner = inner(frame, event, arg)
        return self
