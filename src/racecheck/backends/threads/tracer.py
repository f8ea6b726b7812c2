"""Scheduling points inside user code.

Primitive operations are not enough: ``self.value += 1`` races with no lock in
sight. So in user code (not the stdlib or site-packages) racecheck also offers
a switch before instructions that touch shared state — attribute, subscript,
global and closure writes, attribute reads, calls, and loop steps. That is the
``"access"`` granularity, the default: it finds the lost ``+=`` (a switch
between its read and its write) without paying for a point at every bytecode.
``"line"`` switches at each new line; ``"opcode"`` at every instruction.

Two mechanisms, one table of points:
- Python 3.12+: ``sys.monitoring`` INSTRUCTION events, enabled only on user
  code objects; offsets that are not points are DISABLEd after their first hit,
  so the steady-state cost is one callback per real point. It does not touch
  ``sys.settrace``, so coverage keeps its tracer.
- Python 3.11: ``sys.settrace`` with per-frame opcode events, chained to any
  tracer already installed (coverage's) rather than replacing it.
"""

from __future__ import annotations

import dis
import sys
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

from racecheck.backends.threads.primitives import STATE
from racecheck.backends.threads.runtime import PLAIN_TRACES, Actor, ThreadRuntime, get_ident
from racecheck.detect.operands import detect_lines, recipes
from racecheck.engine import TEARDOWN_STEPS, Controller, RunAborted
from racecheck.gctrack import keep_tracked
from racecheck.linetrace import chain_call, inheritable_trace
from racecheck.operations import TABLES, access_of, points
from racecheck.sources import is_user_file

#: code -> the lines holding a point, and code -> the offsets of each line's
#: last point, as dicts of None: not tuples of frozensets, which the collector
#: tracks (see _Tables). Kept tracked from install (racecheck.gctrack).
_point_lines: dict[CodeType, dict[int, None]] = {}
_last_points: dict[CodeType, dict[int, None]] = {}


def _keep_caches_tracked() -> None:
    """The process-wide code tables the first runs fill: tracked before the freeze.

    Empty, a dict is untracked by the exploration's first, whole-heap
    collection; its first entry of a points table would track it again as a
    young object, which the collection after the run moves into generation 2
    (racecheck.gctrack).
    """
    for table in (_point_lines, _last_points, *TABLES.values()):
        keep_tracked(table)


def traced(code: CodeType) -> bool:
    """Does this code get scheduling points? User code, except finalizers.

    A ``__del__`` runs whenever the last reference goes, wherever that is:
    a switch inside it would make the schedule depend on when a previous
    statement dropped an object, so finalizers run without points.
    """
    return code.co_name != "__del__" and is_user_file(code.co_filename)


# Caches below are keyed by ``id(code)``, not by the code object. A code
# object hashes by value (its bytecode, constants and names, recomputed at every
# lookup), about 1 us on 3.12+, and these lookups run at every traced call and
# scheduling point. And equality leaves the file out: the same function at the
# same line in two files is one key by value, though only one of them may be
# user code. Each entry keeps its code object alive, so the id cannot be
# reused by another code object while the entry exists.


def point_lines(code: CodeType) -> frozenset[int]:
    """Lines of ``code`` holding at least one access point (3.11's opcode filter)."""
    return frozenset(_point_layout(code)[0])


def last_points(code: CodeType) -> frozenset[int]:
    """Offsets of the access points that are the last of their line in ``code``.

    3.11 sends an opcode event for every instruction of a watched line; once
    the line's last point has run, the rest of the line cannot reach another
    point of it: a forward jump only meets higher offsets (none is a point of
    this line), and a backward jump or a move to another line sends a line
    event first, which watches the opcodes again. So the tracer stops the
    line's opcode events there (the ``with`` exit's ``POP_TOP``, the
    ``STORE_FAST`` after a call): the same points, fewer Python calls.
    """
    return frozenset(_point_layout(code)[1])


def _point_layout(code: CodeType) -> tuple[dict[int, None], dict[int, None]]:
    """(:func:`point_lines`, :func:`last_points`) of ``code``, as dicts of None."""
    lines = _point_lines.get(code)
    if lines is None:
        table = points(code, "access")
        last: dict[int, int] = {}  # line -> its highest point offset
        current = code.co_firstlineno
        for instr in dis.get_instructions(code):
            if instr.starts_line is not None:
                current = instr.starts_line
            if instr.offset in table:
                last[current] = max(instr.offset, last.get(current, -1))
        lines = _point_lines[code] = dict.fromkeys(last)
        _last_points[code] = dict.fromkeys(last.values())
    return lines, _last_points[code]


class MonitoringTracer:
    """Python 3.12+: sys.monitoring, process-wide, filtered to actor threads."""

    def __init__(self, granularity: str) -> None:
        self.granularity = granularity
        self.tool: int | None = None
        #: id(code) -> code, for the user code objects given local events. By
        #: id: an equal code object from another file is another code to trace.
        self.instrumented: dict[int, CodeType] = {}
        self.recording = False
        #: the race detector needs instructions that are not scheduling points
        self.detecting = False
        #: what this exploration could not see (see :meth:`disable_thread`)
        self.warnings: list[str] = []
        #: another sys.monitoring tool is active (coverage's sysmon core)
        self.shared = False
        #: id(code) -> its points, and id(code) -> code (kept alive so that its
        #: id stays its own): by id, see the note above point_lines. Two tables
        #: rather than one of (code, points) pairs: a code object and a points
        #: table are not tracked by the collector, a tuple is, and the tuples
        #: made in a first run sat in generation 2 for the whole exploration,
        #: so every collection between runs was a full one
        #: (Session._collect_between_runs); both are kept tracked from install
        #: (racecheck.gctrack), so their own insertions move nothing either
        self._tables: dict[int, dict[int, str]] = {}
        self._tabled: dict[int, CodeType] = {}

    def install(self) -> None:
        self.warnings = []
        # filled in the first runs, kept for the exploration (see __init__)
        keep_tracked(self._tables)
        keep_tracked(self._tabled)
        _keep_caches_tracked()
        monitoring = sys.monitoring  # type: ignore[attr-defined]
        # Before claiming an id: any tool in use is someone else's.
        self.shared = any(monitoring.get_tool(tool) is not None for tool in range(6))
        # 3 and 4 are unassigned; 5 (optimizer) and 2 (profiler) only if free.
        for tool in (4, 3, 5, 2):
            if monitoring.get_tool(tool) is None:
                monitoring.use_tool_id(tool, "racecheck")
                self.tool = tool
                break
        else:
            from racecheck.errors import UnsupportedError

            taken = ", ".join(f"{i}={monitoring.get_tool(i)}" for i in (2, 3, 4, 5))
            raise UnsupportedError(
                f"every sys.monitoring tool id racecheck can use is taken ({taken})"
            )
        events = monitoring.events
        monitoring.register_callback(self.tool, events.PY_START, self._on_start)
        monitoring.register_callback(self.tool, events.PY_RESUME, self._on_start)
        monitoring.register_callback(self.tool, events.INSTRUCTION, self._on_instruction)
        monitoring.register_callback(self.tool, events.LINE, self._on_line)
        monitoring.set_events(self.tool, events.PY_START | events.PY_RESUME)
        monitoring.restart_events()

    def uninstall(self) -> None:
        if self.tool is None:
            return
        monitoring = sys.monitoring  # type: ignore[attr-defined]
        tool, self.tool = self.tool, None
        if monitoring.get_tool(tool) != "racecheck":
            # Freed and taken by another tool mid-run: its events are not ours to clear.
            self.instrumented.clear()
            return
        monitoring.set_events(tool, 0)
        for code in self.instrumented.values():
            monitoring.set_local_events(tool, code, 0)
        self.instrumented.clear()
        self._tables.clear()
        self._tabled.clear()
        events = monitoring.events
        for event in (events.PY_START, events.PY_RESUME, events.INSTRUCTION, events.LINE):
            monitoring.register_callback(tool, event, None)
        monitoring.free_tool_id(tool)

    def set_recording(self, recording: bool) -> None:
        if recording == self.recording:
            return
        self.recording = recording
        if self.tool is None:
            return
        monitoring = sys.monitoring  # type: ignore[attr-defined]
        for code in self.instrumented.values():
            monitoring.set_local_events(self.tool, code, self._local_events())
        monitoring.restart_events()

    def _local_events(self) -> int:
        events = sys.monitoring.events  # type: ignore[attr-defined]
        wanted = events.LINE if self.granularity == "line" else events.INSTRUCTION
        if self.recording or self.shared:
            # CPython 3.12/3.13: when another tool's LINE callback returns
            # DISABLE and no tool keeps LINE on that line, the INSTRUCTION
            # event of the line's first instruction is lost, once, for every
            # tool: the first run of each line would lose its point (a "next
            # item" of a loop) and exploration turn nondeterministic under
            # coverage's sysmon core. Keeping racecheck's own LINE events on
            # (never disabled) keeps the line instrumented.
            wanted |= events.LINE
        return int(wanted)

    def enable_thread(self, runtime: ThreadRuntime) -> None:
        pass  # process-wide: actor threads are told apart in the callbacks

    def disable_thread(self, unwinding: bool = False) -> None:
        # Process-wide, so one look at the end of each actor suffices: is the
        # tool id still racecheck's? If another tool freed and took it, its
        # callbacks replaced racecheck's and the run saw nothing after that.
        tool = self.tool
        if tool is not None and sys.monitoring.get_tool(tool) != "racecheck":  # type: ignore[attr-defined]
            _warn(
                self.warnings,
                f"sys.monitoring tool id {tool} was taken from racecheck during the run"
                " (by the code under test or another tool): racecheck stopped seeing"
                " the code, so races after that point were not explored",
            )

    def _on_start(self, code: CodeType, offset: int) -> Any:
        disable = sys.monitoring.DISABLE  # type: ignore[attr-defined]
        if id(code) in self.instrumented or not traced(code):
            return disable
        self.instrumented[id(code)] = code
        assert self.tool is not None
        sys.monitoring.set_local_events(self.tool, code, self._local_events())  # type: ignore[attr-defined]
        return disable

    def _on_instruction(self, code: CodeType, offset: int) -> Any:
        table = self._tables.get(id(code))
        if table is None:
            self._tabled[id(code)] = code
            table = self._tables[id(code)] = points(code, self.granularity)
        operation = table.get(offset)
        if operation is None and not (self.detecting and offset in recipes(code)):
            return sys.monitoring.DISABLE  # type: ignore[attr-defined]
        runtime = STATE.runtime
        if runtime is None:
            return None
        me = runtime.by_ident.get(get_ident())
        if me is None or me.passthrough or me.finished:
            return None
        controller = runtime.controller
        if controller.aborting:
            _teardown(controller)
            return None
        if operation is not None:
            if len(runtime.live) == 1 and controller.steps < controller.max_steps:
                # point() of an actor alone, inline: nobody else can run, so
                # the step is only counted (what point() and tick() would do)
                me.points += 1
                controller.steps += 1
            else:
                runtime.point(me, operation)
        detector = controller.detector
        if detector is not None:
            _detect(detector, sys._getframe(1), code, offset, me)
        if operation is None:
            return None
        if me.lines is not None:  # after the point: the access happens in the step that follows
            _note_access(me, operation)
        log = controller.accesses
        if log is not None:
            _log_access(log, me, operation)
        return None

    def _on_line(self, code: CodeType, line: int) -> Any:
        if not self.recording and self.granularity != "line":
            return None  # on only to keep the line instrumented (see _local_events)
        runtime = STATE.runtime
        if runtime is None:
            return None
        me = runtime.by_ident.get(get_ident())
        if me is None or me.passthrough or me.finished:
            return None
        if me.lines is not None:
            me.lines.append((code.co_filename, line))
        if self.granularity == "line":
            if runtime.controller.aborting:
                _teardown(runtime.controller)
                return None
            runtime.point(me, "next line")
        return None


def _note_access(me: Actor, operation: str) -> None:
    access = access_of(operation)
    if access is not None:
        me.accesses.append(access)


def _log_access(log: list[tuple[int, str]], me: Actor, operation: str) -> None:
    access = access_of(operation)
    if access is not None:
        task = me.running_task
        log.append((me.id if task is None else task, access))


def _detect(detector: Any, frame: FrameType, code: CodeType, offset: int, me: Actor) -> None:
    """Hand one instruction to the race detector, after its scheduling point.

    The happens-before actor is the OS thread; the atomicity actor is the
    asyncio task the thread is running, if it hosts a loop.
    """
    task = me.running_task
    actor = me.id if task is None else task
    names = detector.names
    if actor not in names:
        names[actor] = me.name if task is None else f"Task-{task}"
    detector.on_instruction(frame, code, offset, actor, me.id)


def _teardown(controller: Controller) -> None:
    """A point reached while the run unwinds.

    Raising here would be an asynchronous exception at an arbitrary bytecode:
    it can skip a ``with`` block's ``__exit__`` or the rest of a ``finally``
    and leave a real lock held for good. So unwinding code runs freely, and
    only an actor that keeps going for thousands of points (a spin loop that
    will never reach a blocking call) is stopped.
    """
    controller.teardown_steps += 1
    if controller.teardown_steps > TEARDOWN_STEPS:
        raise RunAborted()


class SettraceTracer:
    """Python 3.11: sys.settrace per actor thread, chained to the previous tracer."""

    def __init__(self, granularity: str) -> None:
        self.granularity = granularity
        self.recording = False
        self.detecting = False
        self._inherited: Any = None
        #: per actor thread: (racecheck's trace function, the thread's own
        #: tracer before it, the chain cell, what the chain started with, actor name)
        self._threads: dict[int, tuple[Any, Any, list[Any], Any, str]] = {}
        #: what this exploration could not see (see :meth:`disable_thread`)
        self.warnings: list[str] = []
        #: per id(code): its tables (see _Tables); for runs that record DPOR's
        #: steps, and for runs that do not (whose detector has no use for
        #: operands.STEP_LOG_OPS: fewer lines to watch)
        self._infos = _Tables()
        self._race_infos = _Tables()
        #: the code objects _infos describes, kept alive so their ids stay theirs
        self._codes: list[CodeType] = []

    def install(self) -> None:
        # Actor threads are pooled workers that may predate the caller's
        # tracer: chain the one the exploration started under, if it may be
        # shared with another thread (never coverage's per-thread CTracer).
        self._inherited = inheritable_trace()
        self.warnings = []
        # Filled in the first runs and kept for the exploration (see _Tables);
        # _threads is filled and emptied by every run (racecheck.gctrack).
        keep_tracked(self._threads)
        _keep_caches_tracked()
        for tables in (self._infos, self._race_infos):
            for table in (tables.points, tables.watched, tables.hot, tables.ends):
                keep_tracked(table)

    def uninstall(self) -> None:
        for entry in self._threads.values():  # threads that never got to disable_thread
            PLAIN_TRACES.discard(entry[0])
        self._threads.clear()

    def set_recording(self, recording: bool) -> None:
        self.recording = recording

    def enable_thread(self, runtime: ThreadRuntime) -> None:
        ident = get_ident()
        previous = sys.gettrace()
        chained = previous if previous is not None else self._inherited
        chain = [chained]
        trace = self._make_tracer(runtime, chain)
        self._threads[ident] = (trace, previous, chain, chained, runtime.by_ident[ident].name)
        sys.settrace(trace)

    def disable_thread(self, unwinding: bool = False) -> None:
        """Put back the thread's own tracer; say so if someone else's replaced racecheck's.

        ``unwinding``: the run is over and its actors unwind. racecheck's
        abort can then surface inside its own trace function (a step bound, a
        daemon unwound at the program's end), and CPython drops a trace
        function that raises: no trace function at all is then racecheck's
        doing, not the code's.
        """
        entry = self._threads.pop(get_ident(), None)
        if entry is None:
            sys.settrace(None)
            return
        trace, previous, chain, chained, name = entry
        PLAIN_TRACES.discard(trace)
        current = sys.gettrace()
        if current is not trace and not (unwinding and current is None):
            # Replaced by someone else's sys.settrace (a chained tracer that
            # re-installs itself is put back behind racecheck's at once): from
            # then on racecheck saw none of this thread's code.
            _warn(
                self.warnings,
                f"the trace function of thread {name!r} was replaced during the run"
                " (sys.settrace by the code under test or another tool): racecheck"
                " stopped seeing its code, so races after that point were not explored",
            )
        # What the chain adopted installed itself on this thread: keep it.
        sys.settrace(chain[0] if chain[0] is not chained else previous)

    def _make_tracer(self, runtime: ThreadRuntime, chain: list[Any]) -> Callable[..., Any]:
        """The per-thread trace function: the hot path on 3.11, so kept lean.

        sys.settrace calls it for *every* frame the thread enters, racecheck's
        own included, so the common case — not user code, no chained tracer —
        is a single dict lookup. Each user frame gets a local trace function
        holding its code's tables; opcode events are switched on per line,
        only on lines holding a point and only while another actor is alive
        to switch to.
        """
        granularity = self.granularity
        by_opcode = granularity != "line"
        recording = self.recording
        controller = runtime.controller
        point = runtime.point
        live = runtime.live
        me = runtime.by_ident[get_ident()]
        step_log = controller.steplog is not None
        tables = self._infos if step_log else self._race_infos
        infos = tables.points
        watched_of, hot_of, ends_of = tables.watched, tables.hot, tables.ends
        codes = self._codes
        missing: Any = _MISSING
        _id = id

        detecting = self.detecting
        #: coverage and the detector want every access, even of an actor running alone
        watch_alone = controller.accesses is not None or detecting

        def info_for(code: CodeType) -> dict[int, str] | None:
            codes.append(code)
            key = _id(code)
            if not traced(code):
                infos[key] = None
                return None
            hot, ends = _point_layout(code) if granularity == "access" else (None, None)
            watched = hot
            if detecting and hot is not None:
                watched = dict.fromkeys(hot.keys() | detect_lines(code, step_log))
            watched_of[key] = watched
            hot_of[key] = hot
            ends_of[key] = ends
            found = infos[key] = points(code, granularity)
            return found

        def make_local(key: int, table: dict[int, str], frame: FrameType) -> Callable[..., Any]:
            """The local trace function of one user frame, its code's tables at hand.

            It returns None: CPython 3.11 installs only what the "call" event
            returns and keeps a frame's local function when a later event
            returns None, so the function need not name itself (which would
            make a reference cycle per traced frame).

            ``armed`` (decided here for the frame's line, see :func:`_arm_frame`)
            is whether a plain run would have opcode events on at
            this line (see :func:`_arm`): only then is a point a decision.
            With the access feed or the detector, opcode events stay on while
            an actor runs alone, and a thread started mid-line would otherwise
            make decisions at the rest of that line that a plain run (a
            replay) never makes: its token would diverge.
            """
            hot, point_hot, ends = watched_of[key], hot_of[key], ends_of[key]
            armed = _arm_frame(frame, hot, point_hot, live, by_opcode, watch_alone)
            if watch_alone:
                ends = None  # the access feed and the detector watch every opcode

            def local(frame: FrameType, event: str, arg: Any) -> None:
                nonlocal armed
                if me.passthrough or me.finished:
                    return
                if event == "opcode":
                    offset = frame.f_lasti
                    operation = table.get(offset)
                    if operation is not None:
                        if controller.aborting:
                            _teardown(controller)
                        else:
                            # alone, a point changes nothing: skip it
                            if armed and len(live) > 1:
                                point(me, operation)
                            if recording:
                                _note_access(me, operation)
                            log = controller.accesses
                            if log is not None:
                                _log_access(log, me, operation)
                        if ends is not None and offset in ends:
                            frame.f_trace_opcodes = False  # see last_points
                    if detecting and not controller.aborting:
                        detector = controller.detector
                        if detector is not None:
                            _detect(detector, frame, frame.f_code, offset, me)
                elif event == "line":
                    if by_opcode:
                        # _arm, written out (one Python call less a traced line),
                        # and f_lineno read once (computed from the offset each time)
                        line = frame.f_lineno
                        holds_points = point_hot is None or line in point_hot
                        armed = holds_points and len(live) > 1
                        frame.f_trace_opcodes = (
                            armed if not watch_alone else hot is None or line in hot
                        )
                        if holds_points and not armed and not controller.aborting:
                            # alone: the line's points are no decisions, but they
                            # are steps, or a lone spin loop never reaches
                            # max_steps and the watchdog calls it "blocked in C"
                            # (3.12+ counts each lone point; here, once a line)
                            me.points += 1
                            controller.tick()
                    if recording and me.lines is not None:
                        me.lines.append((frame.f_code.co_filename, frame.f_lineno))
                    if not by_opcode:
                        if controller.aborting:
                            _teardown(controller)
                        else:
                            point(me, "next line")

            return local

        if chain[0] is None:

            def global_trace(frame: FrameType, event: str, arg: Any) -> Any:
                key = _id(frame.f_code)
                table: Any = infos.get(key, missing)
                if table is missing:
                    table = info_for(frame.f_code)
                if table is None:
                    return None
                return make_local(key, table, frame)

            PLAIN_TRACES.add(global_trace)
            return global_trace

        def chained_global(frame: FrameType, event: str, arg: Any) -> Any:
            # With a tracer already installed (coverage, a debugger) both run.
            previous = chain[0]
            prev_local = None
            if previous is not None:
                prev_local, chain[0] = chain_call(previous, chained_global, frame, arg)
            key = _id(frame.f_code)
            table: Any = infos.get(key, missing)
            if table is missing:
                table = info_for(frame.f_code)
            if table is None:
                return prev_local
            chained = [prev_local]
            local = make_local(key, table, frame)

            def both(frame: FrameType, event: str, arg: Any) -> Any:
                inner = chained[0]
                if inner is not None and event != "opcode":
                    chained[0] = inner(frame, event, arg)
                local(frame, event, arg)
                return both

            return both

        return chained_global


_MISSING = object()

#: a set of ints the collector does not track (see _Tables)
_Lines = dict[int, None]


class _Tables:
    """User code's tables on 3.11, each keyed by ``id(code)``.

    ``points``: its points by offset (None: code without points, not traced);
    ``watched``: the lines to watch opcodes on (its points' lines, plus the
    detector's); ``hot``: its points' lines (None: every line); ``ends``: the
    offsets after which a line's opcode events stop (see last_points; None:
    never).

    Four tables rather than one of tuples: what a first run puts in them
    (points tables, sets of lines as dicts of None) holds only ints, strings
    and None, so the collector does not track it, while a tuple or a
    frozenset is tracked whatever it holds. The tables themselves are made
    with the backend, before the exploration freezes the heap; entries made
    tracked in the first run sat in generation 2 for the whole exploration,
    and every collection between runs was a full one
    (``Session._collect_between_runs``).
    """

    __slots__ = ("ends", "hot", "points", "watched")

    def __init__(self) -> None:
        self.points: dict[int, dict[int, str] | None] = {}
        self.watched: dict[int, _Lines | None] = {}
        self.hot: dict[int, _Lines | None] = {}
        self.ends: dict[int, _Lines | None] = {}


def _arm(point_hot: _Lines | None, line: int, live: list[Actor]) -> bool:
    """Does a plain run watch this line's opcodes, so that its points are decisions?

    Decided at a frame's call and at each new line, as a plain run turns its
    opcode events on or off then: on a line holding a point, while another
    actor is alive. A run with the access feed or the detector watches more,
    and must decide exactly where a plain run (a replay) decides.
    """
    return (point_hot is None or line in point_hot) and len(live) > 1


def _arm_frame(
    frame: FrameType,
    hot: _Lines | None,
    point_hot: _Lines | None,
    live: list[Actor],
    by_opcode: bool,
    watch_alone: bool,
) -> bool:
    """A frame entered (or resumed): switch its opcode events, and say if it is armed.

    ``hot``: the lines to watch opcodes on; ``point_hot``: the lines holding points.
    """
    if not by_opcode:
        return True
    armed = _arm(point_hot, frame.f_lineno, live)
    frame.f_trace_opcodes = armed if not watch_alone else hot is None or frame.f_lineno in hot
    return armed


#: distinct warnings kept per exploration: the first few say it all
_MAX_WARNINGS = 5


def _warn(warnings: list[str], message: str) -> None:
    if message not in warnings and len(warnings) < _MAX_WARNINGS:
        warnings.append(message)


def make_tracer(granularity: str) -> MonitoringTracer | SettraceTracer:
    if sys.version_info >= (3, 12):
        return MonitoringTracer(granularity)
    return SettraceTracer(granularity)
