"""Race detection without assertions: ``racecheck.check(target, detect=True)``.

:mod:`racecheck.detect.detector` keeps the shadow state and makes the calls;
:mod:`racecheck.detect.operands` works out, per instruction, which object and
key an access touches. Backends feed it: the threads tracer at every access
point, the asyncio loop one task step at a time through :class:`detecting`,
and the controlled primitives at every hand-off that orders two threads.

Cost. A detected run pays per task step (a trace function on 3.11, nothing
on 3.12+, where :mod:`racecheck.detect.stepmon` uses ``sys.monitoring``),
per access (the checks), and once per run: a new :class:`Detector`, and the
collection ``Session.run`` makes after every schedule, which walks whatever
the detector keeps for the whole exploration. So what it keeps are answers
(lines with accesses, recipes, the use of each read, what a class is), never
the material they came from (instruction listings), and one shared entry for
every code without accesses.
"""

from __future__ import annotations

import asyncio
import dis
import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

from racecheck.detect.detector import Access, Detector, Finding, RaceDetected
from racecheck.detect.operands import STEP_LOG_OPS, detect_lines, recipes
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
        self.feed = self.detector.running_feed = feed
        sys.settrace(feed)

    def __exit__(self, *exc: object) -> None:
        feed = self.feed
        if feed is not None:
            feed.active = False
            self.detector.running_feed = None
            sys.settrace(feed.previous)


def run_traced_step(
    detector: Detector, actor: int, hb: int, run: Callable[[], Any], outer: Any = None
) -> None:
    """``with detecting(detector, actor, hb): run()``, with no Python call around ``run``.

    On 3.11 every Python call made while the step's trace function is
    installed is a traced call event, ``detecting.__exit__`` included: here
    the trace function is taken out by the same frame that put it in.

    ``outer``: the frame of the task's own coroutine, when the caller knows
    it. Once that frame has suspended (or ended) no traced code runs in the
    step again, so the trace function goes there (see ``_PrunedFrameFeed``).
    """
    if detector.access_log is not None:
        detector.access_log.running(actor)
    feed = detector.spare_feed
    if feed is None or feed.active:  # (a step inside a step keeps a feed of its own)
        feed = detector.spare_feed = _StepFeed(detector, sys.gettrace())
    else:
        # One feed for the run's steps: a frame that still holds an earlier
        # step's local trace function finds it running, with this step's
        # actor, exactly as _step_now would hand it the running feed
        feed.previous = sys.gettrace()
    detector.running_feed = feed
    feed.actor, feed.hb, feed.active = actor, hb, True
    feed.outer = outer
    sys.settrace(feed)
    try:
        run()
    finally:
        feed.active = False
        detector.running_feed = None
        feed.outer = None  # the spare feed keeps no frame (nor its locals) alive
        sys.settrace(feed.previous)


class _StepFeed:
    """The detector's trace function for task steps: hands user-code accesses over.

    Objects, not closures: a closure that returns itself is a reference
    cycle, one per traced frame, piling up while the collector is off.
    """

    __slots__ = (
        "active",
        "actor",
        "by_id",
        "detector",
        "hb",
        "hot_lines",
        "on_recipe",
        "outer",
        "previous",
        "step_log",
    )

    def __init__(self, detector: Detector, previous: TraceFn | None) -> None:
        self.detector = detector
        self.previous = previous
        hot_lines = self.hot_lines = detector.hot_lines
        #: does the run record DPOR's steps (else operands.STEP_LOG_OPS are left out)
        self.step_log = detector.access_log is not None
        self.by_id = _code_table(hot_lines, self.step_log)
        self.on_recipe = detector.on_recipe
        self.actor = 0
        self.hb = 0
        self.active = False
        self.outer: Any = None

    def __call__(self, frame: FrameType, event: Any, arg: Any) -> Any:
        prev_local = None
        if self.previous is not None:  # coverage's CTracer would take over: see linetrace
            prev_local, self.previous = chain_call(self.previous, self, frame, arg)
        if not self.active:
            return prev_local
        code = frame.f_code
        # every Python call of the step lands here (asyncio's own included):
        # looked up by identity, as hashing a code object rehashes its bytecode
        info = self.by_id.get(id(code))
        if info is None:
            info = _code_info(self.hot_lines, self.by_id, code, self.step_log)
        if info.hot is None:
            return prev_local
        outermost = sys.gettrace() is self
        if outermost:
            # the outermost tracer: opcode events only where an access is still ahead
            lasti = frame.f_lasti
            frame.f_trace_opcodes = (
                lasti in info.wanted if lasti >= 0 else frame.f_lineno in info.hot
            )
            return _PrunedFrameFeed(self, info, prev_local)
        # chained under another tracer (the trace recorder's line collector, which
        # wants every opcode of a user frame): opcode events on every hot line, as ever
        frame.f_trace_opcodes = frame.f_lineno in info.hot
        return _FrameFeed(self, code, info.hot, info.table, prev_local)


class _CodeInfo:
    """What a step's trace function needs of one code object, worked out once."""

    __slots__ = ("code", "going", "hot", "table", "wanted")

    def __init__(self, code: Any, hot: frozenset[int] | None, step_log: bool = True) -> None:
        #: kept alive: the table is keyed by its id
        self.code = code
        self.hot = hot
        self.table: dict[int, Any] = {}
        self.wanted: frozenset[int] = frozenset()
        self.going: frozenset[int] = frozenset()
        if hot is None:
            return
        self.table = recipes(code)
        if not step_log and any(r.op in STEP_LOG_OPS for r in self.table.values()):
            self.table = {o: r for o, r in self.table.items() if r.op not in STEP_LOG_OPS}
        # per line, the offset of its last access: an opcode event past it can
        # reach no access before the next line event (see _PrunedFrameFeed)
        line_of: dict[int, int] = {}
        last: dict[int, int] = {}
        for instr in dis.get_instructions(code):
            line = instr.positions.lineno if instr.positions is not None else None
            if not line:
                continue
            line_of[instr.offset] = line
            if instr.offset in self.table and instr.offset > last.get(line, -1):
                last[line] = instr.offset
        #: offsets at or before their line's last access: opcode events wanted
        self.wanted = frozenset(o for o, line in line_of.items() if o <= last.get(line, -1))
        #: offsets before their line's last access: opcode events still wanted after them
        self.going = frozenset(o for o, line in line_of.items() if o < last.get(line, -1))


#: the keys under which an exploration's ``hot_lines`` keeps its by-id tables: for
#: runs that record DPOR's steps, and for runs that do not
_BY_ID: Any = object()
_RACE_BY_ID: Any = object()


def _code_table(hot_lines: dict[Any, Any], step_log: bool) -> dict[int, _CodeInfo]:
    """The exploration's id(code) -> _CodeInfo table, kept in its ``hot_lines``.

    There, it lives exactly as long as the exploration's own cache.
    """
    key = _BY_ID if step_log else _RACE_BY_ID
    table = hot_lines.get(key)
    if table is None:
        table = hot_lines[key] = {}
    return table


#: what every code without an access shares: ``hot_lines`` (whose key it is)
#: keeps such a code alive, so its id is not reused while the entry stands,
#: and one object per code was only more for the collector to walk per run
_COLD = _CodeInfo(None, None)


def _code_info(
    hot_lines: dict[Any, Any], by_id: dict[int, _CodeInfo], code: Any, step_log: bool
) -> _CodeInfo:
    hot = hot_lines.get(code, _UNSEEN)
    if hot is _UNSEEN:
        hot = hot_lines[code] = detect_lines(code) if is_user_file(code.co_filename) else None
    if hot is not None and not step_log:
        hot = detect_lines(code, step_log)
    info = by_id[id(code)] = _CodeInfo(code, hot, step_log) if hot is not None else _COLD
    return info


class _PrunedFrameFeed:
    """The local trace function of one user frame, when nothing else traces it.

    Opcode events (one Python call per instruction, the bulk of a detected
    3.11 step) are on only from a line's start up to its last access: past
    that offset no access of the line can run before the next line event.
    CPython 3.11 reports a line event at every new line and at every jump
    backwards except into an ``await``'s ``SEND`` loop (which holds no
    access), and a resumed frame's call event sets the flag again; an
    access later in the same line (reached by a forward jump or an exception
    handler) keeps the events on up to it. So exactly the same accesses
    reach the detector, instruction by instruction, as with opcode events on
    for the whole line.
    """

    __slots__ = ("feed", "info", "inner")
    wants_opcodes = True

    def __init__(self, feed: _StepFeed, info: _CodeInfo, inner: TraceFn | None) -> None:
        self.feed = feed
        self.info = info
        self.inner = inner

    def __call__(self, frame: FrameType, event: Any, arg: Any) -> Any:
        if event == "opcode":
            lasti = frame.f_lasti
            info = self.info
            feed = self.feed
            if feed.active or (feed := _step_now(self)).active:
                recipe = info.table.get(lasti)
                if recipe is not None:
                    feed.on_recipe(frame, recipe, feed.actor, feed.hb)
            if lasti not in info.going:
                frame.f_trace_opcodes = False
        elif event == "line":
            if not self.feed.active:
                _step_now(self)
            frame.f_trace_opcodes = frame.f_lasti in self.info.wanted
        elif event == "return" and frame is self.feed.outer and type(arg) in _C_AWAITED:
            # The task's own coroutine suspends (or ends): what runs next in the
            # step is asyncio's C bookkeeping and the loop's call_soon, never
            # traced code (a yielded None or a C future has no Python method to
            # call). Tracing it cost every instruction its slow road and every
            # Python call a call event; run_traced_step puts it back anyway.
            if self.inner is None and sys.gettrace() is self.feed:
                sys.settrace(None)
                return None
        inner = self.inner
        if inner is not None:
            self.inner = inner(frame, event, arg)
        return self


#: what a task's coroutine may suspend on with no Python code run before the step
#: ends: a bare yield (``sleep(0)``), or asyncio's C future or task
_C_AWAITED = frozenset((type(None), asyncio.Future, asyncio.Task))


def _step_now(local: _PrunedFrameFeed | _FrameFeed) -> _StepFeed:
    """The feed of the step running now, for a frame whose trace function outlived its own.

    Each step installs its own feed, and a frame gets the step's local trace
    function at its call event, which every resumption of a coroutine frame
    reports - except on 3.11 a frame resumed past an ``await`` after a throw
    (a task cancelled inside ``await helper()``, which catches the cancellation
    and returns): CPython throws into the innermost frame directly and then
    resumes the awaiting frame without a call event. That frame still holds the
    local trace function of the step it last ran in, whose feed is over; its
    accesses reached nobody (tests/detect/test_detector_throw_resumed.py). Its
    events are handed to the running step's feed instead, from then on.
    """
    feed = local.feed
    current = feed.detector.running_feed
    if current is not None and current.active:
        local.feed = current
        return current
    return feed


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
            if feed.active or (feed := _step_now(self)).active:
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
