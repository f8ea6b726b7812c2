"""Python 3.12+: asyncio and trio task steps fed to the race detector through ``sys.monitoring``.

:class:`racecheck.detect.detecting` installs a ``sys.settrace`` function for
each task step. On 3.12+ that is the slow road: ``sys.settrace`` is itself
built on instrumentation, every Python call inside the step (asyncio's own
``call_soon``, racecheck's hooks) becomes a Python-level call event, and
every instruction of a line that holds an access an opcode event; a
detected asyncio run cost 20-27x an undetected one, a detected trio run
about 5x (trio's own steps carry more uninstrumented work).

Here the events come from ``sys.monitoring`` instead, with the same
instructions reaching :meth:`Detector.on_instruction`:

- ``PY_START``/``PY_RESUME`` see each code object once (then ``DISABLE``):
  user code with accesses gets local ``INSTRUCTION`` events, nothing else
  gets any event again;
- an ``INSTRUCTION`` event at an offset without an access recipe is
  ``DISABLE``d for good, so each remaining event is an access the detector
  reads, the same set the 3.11 road hands over (the lines holding a recipe,
  instruction by instruction, filtered by recipe);
- events outside a task step (a plain callback, the loop's own code) or on
  another thread are ignored, as the per-step trace function never saw them;
- a call's ``callee`` recipe in a race-detection run (no DPOR step log) is
  judged at the ``CALL`` event that follows the instruction's, which hands
  over the callable itself. A function or method written in Python, or a
  class whose ``__init__`` or ``__new__`` is, runs traced code: the detector
  would rebuild the callable (several thousand instructions) to find nothing
  to do, so the event ends there when no write waits to be settled and the
  actor is the one the detector last saw; anything else goes to the
  detector as before, from the same frame at the same instruction.

The tool id is claimed at the first detected step of an exploration and
freed when the backend (asyncio's or trio's) uninstalls (:func:`release`), so
nothing outlives the exploration. No tool id free: the caller falls back to ``sys.settrace``.
"""

from __future__ import annotations

import dis
import sys
import threading
from collections.abc import Callable
from types import CodeType, FunctionType, MethodType
from typing import Any

from racecheck.detect import run_traced_step
from racecheck.detect.detector import _CLOSES as CLOSES
from racecheck.detect.detector import Detector
from racecheck.detect.detector import _made_in_python as made_in_python
from racecheck.detect.operands import STEP_LOG_OPS, detect_lines, recipes
from racecheck.detect.operands import _recipes as _RECIPES
from racecheck.sources import is_user_file

AVAILABLE = sys.version_info >= (3, 12)

_UNSEEN: Any = object()
_get_ident = threading.get_ident
#: the opcodes whose CALL event always follows their INSTRUCTION event (3.12 fires
#: none at a CALL_FUNCTION_EX of a Python function: those stay on the INSTRUCTION road)
_CALL_OPCODES = frozenset(dis.opmap[name] for name in ("CALL", "CALL_KW") if name in dis.opmap)
#: callables whose call runs traced code: their callee recipe finds nothing to do
_PYTHON_CALLABLES = (FunctionType, MethodType)


class StepMonitor:
    """The process's one monitoring tool for detected task steps."""

    def __init__(self) -> None:
        self.tool: int | None = None
        self.instrumented: set[CodeType] = set()
        #: another sys.monitoring tool is active (coverage's sysmon core)
        self.shared = False
        self.failed = False
        #: the exploration's per-code cache of lines holding an access (Detector.hot_lines)
        self.hot_lines: dict[Any, frozenset[int] | None] = {}
        #: id(code) -> the offsets whose callee recipe the CALL event judges (see
        #: _on_call); codes are kept alive by ``instrumented``
        self.call_offsets: dict[int, frozenset[int]] = {}
        #: INSTRUCTION events a step-log-free run switched off at recipes only a
        #: step log needs (see _on_instruction): a step that logs turns them on again
        self.dropped = False
        # the step being fed: set by :class:`monitored_step`
        self.detector: Detector | None = None
        self.actor = 0
        self.hb = 0
        self.thread = 0

    def claim(self) -> bool:
        """Take a tool id for this exploration; False when none is free."""
        if self.tool is not None:
            return True
        if self.failed:
            return False
        monitoring = sys.monitoring  # type: ignore[attr-defined]
        self.shared = any(monitoring.get_tool(tool) is not None for tool in range(6))
        for tool in (3, 4, 5, 2):
            if monitoring.get_tool(tool) is None:
                monitoring.use_tool_id(tool, "racecheck-detect")
                break
        else:
            self.failed = True
            return False
        self.tool = tool
        events = monitoring.events
        monitoring.register_callback(tool, events.PY_START, self._on_start)
        monitoring.register_callback(tool, events.PY_RESUME, self._on_start)
        monitoring.register_callback(tool, events.INSTRUCTION, self._on_instruction)
        monitoring.register_callback(tool, events.LINE, _on_line)
        monitoring.register_callback(tool, events.CALL, self._on_call)
        monitoring.set_events(tool, events.PY_START | events.PY_RESUME)
        monitoring.restart_events()
        return True

    def release(self) -> None:
        """Give the tool id back: the exploration is over."""
        self.failed = False
        self.dropped = False  # the next claim restarts every event anyway
        self.detector = None
        self.hot_lines = {}
        tool, self.tool = self.tool, None
        if tool is None:
            return
        monitoring = sys.monitoring  # type: ignore[attr-defined]
        if monitoring.get_tool(tool) != "racecheck-detect":
            self.instrumented.clear()  # freed and taken by another tool: not ours to clear
            self.call_offsets.clear()
            return
        monitoring.set_events(tool, 0)
        for code in self.instrumented:
            monitoring.set_local_events(tool, code, 0)
        self.instrumented.clear()
        self.call_offsets.clear()
        events = monitoring.events
        for event in (
            events.PY_START,
            events.PY_RESUME,
            events.INSTRUCTION,
            events.LINE,
            events.CALL,
        ):
            monitoring.register_callback(tool, event, None)
        monitoring.free_tool_id(tool)

    def _on_start(self, code: CodeType, offset: int) -> Any:
        disable = sys.monitoring.DISABLE  # type: ignore[attr-defined]
        if code in self.instrumented:
            return disable
        hot_lines = self.hot_lines
        hot = hot_lines.get(code, _UNSEEN)
        if hot is _UNSEEN:
            # the cache the settrace road fills: the same answer for the same code
            hot = hot_lines[code] = detect_lines(code) if is_user_file(code.co_filename) else None
        if hot:
            self.instrumented.add(code)
            events = sys.monitoring.events  # type: ignore[attr-defined]
            wanted = events.INSTRUCTION
            if self.shared:
                # CPython 3.12/3.13 lose a line's first INSTRUCTION event once when
                # another tool's LINE callback DISABLEs it (see threads.tracer):
                # a LINE event of our own keeps the line instrumented.
                wanted |= events.LINE
            else:
                # (not beside another tool: its quirks with CALL events are not known)
                bytecode = code.co_code
                offsets = frozenset(
                    offset
                    for offset, recipe in recipes(code).items()
                    if recipe.op == "callee" and bytecode[offset] in _CALL_OPCODES
                )
                if offsets:
                    self.call_offsets[id(code)] = offsets
                    wanted |= events.CALL
            assert self.tool is not None
            sys.monitoring.set_local_events(self.tool, code, wanted)  # type: ignore[attr-defined]
        return disable

    def _on_instruction(self, code: CodeType, offset: int) -> Any:
        entry = _RECIPES.get(id(code))  # recipes(code), without the call
        recipe = (entry[1] if entry is not None else recipes(code)).get(offset)
        if recipe is None:
            return sys.monitoring.DISABLE  # type: ignore[attr-defined]
        detector = self.detector
        if detector is None or _get_ident() != self.thread:
            return None  # between steps, or another thread: the trace function never saw it
        if detector.access_log is None:
            op = recipe.op
            # read by DPOR's step log only (on_recipe would return at once), or a
            # call whose CALL event right after this one hands it over (_on_call):
            # nothing to do here without a step log, and in an exploration none of
            # whose runs records one, never (a step that does record one after all
            # turns the events on again first: see _log_steps)
            if op in STEP_LOG_OPS or (
                op == "callee" and offset in self.call_offsets.get(id(code), ())
            ):
                if detector.log_free:
                    self.dropped = True
                    return sys.monitoring.DISABLE  # type: ignore[attr-defined]
                return None
        # the recipe found above: on_instruction would look it up again
        detector.on_recipe(sys._getframe(1), recipe, self.actor, self.hb)
        return None

    def _on_call(self, code: CodeType, offset: int, callable: Any, first: Any) -> Any:
        """A call in instrumented code: a callee recipe's, in a race-detection run.

        Fires right after the call's INSTRUCTION event, which left its callee
        recipe to this one; nothing ran in between, and the frame stands at
        the same instruction. A callable written in Python (a function, a
        method, a class whose ``__init__`` or ``__new__`` is) runs traced code:
        the detector's answer would be to do nothing after settling a write
        made just before and taking note of an actor switch, so it is asked
        only when one of those has something to do.
        """
        offsets = self.call_offsets.get(id(code))
        if offsets is None or offset not in offsets:
            return sys.monitoring.DISABLE  # type: ignore[attr-defined]
        detector = self.detector
        if detector is None or _get_ident() != self.thread or detector.access_log is not None:
            return None  # between steps, another thread, or DPOR's (the INSTRUCTION road)
        if (
            not detector.unsettled
            and detector.last_actor == self.actor
            and (
                type(callable) in _PYTHON_CALLABLES
                # a class whose __init__ or __new__ is traced code (as _access finds)
                or (isinstance(callable, type) and made_in_python(callable))
            )
            # a channel end's close hands its clock over (Detector._channel_closed)
            # (3.12+ hands over the function here, and the channel end as ``first``)
            and not (type(callable) in _PYTHON_CALLABLES and callable.__name__ in CLOSES)
        ):
            return None
        detector.on_recipe(sys._getframe(1), _RECIPES[id(code)][1][offset], self.actor, self.hb)
        return None


def _log_steps(monitor: StepMonitor) -> None:
    """A step that records DPOR's steps: every event a step-log-free run switched off, on again.

    (``restart_events`` turns on every ``DISABLE``d event, the ones at
    instructions without a recipe too: they are switched off again at their
    next hit.)
    """
    monitor.dropped = False
    sys.monitoring.restart_events()  # type: ignore[attr-defined]


def _on_line(code: CodeType, line: int) -> Any:
    return None  # on only to keep lines instrumented (see StepMonitor._on_start)


MONITOR = StepMonitor()


class monitored_step:
    """``with monitored_step(detector, actor, hb):`` the 3.12+ twin of ``detecting``."""

    __slots__ = ("actor", "detector", "hb")

    def __init__(self, detector: Detector, actor: int, hb: int = 0) -> None:
        self.detector = detector
        self.actor = actor
        self.hb = hb

    def __enter__(self) -> None:
        monitor = MONITOR
        if self.detector.access_log is not None:
            if monitor.dropped:
                _log_steps(monitor)
            self.detector.access_log.running(self.actor)
        monitor.actor, monitor.hb, monitor.thread = self.actor, self.hb, _get_ident()
        monitor.hot_lines = self.detector.hot_lines
        monitor.detector = self.detector

    def __exit__(self, *exc: object) -> None:
        MONITOR.detector = None


def step_feed(detector: Detector, actor: int, hb: int = 0, *, recorded: bool = False) -> Any:
    """The context that feeds one task step to ``detector``: monitoring when it can.

    Not while a ``sys.settrace`` function runs (the trace recorder's line
    collector in a ``recorded`` step, coverage's or a debugger's tracer): on
    CPython 3.12 the steps of a traced replay then saw no INSTRUCTION event
    at all, so the detector found nothing in the replay of its own finding.
    Those steps take the settrace road, as every step did before.
    """
    if (
        AVAILABLE
        and not recorded
        and sys.gettrace() is None
        and (MONITOR.tool is not None or MONITOR.claim())
    ):
        return monitored_step(detector, actor, hb)
    from racecheck.detect import detecting

    return detecting(detector, actor, hb)


def run_step(
    detector: Detector, actor: int, hb: int, run: Callable[[], Any], outer: Any = None
) -> None:
    """``with step_feed(detector, actor, hb): run()``, for the loop's hot path.

    The same choice of road as :func:`step_feed`; no context object, and on
    the settrace road no traced call around ``run`` (see
    :func:`racecheck.detect.run_traced_step`).
    """
    monitor = MONITOR
    # claim() is a call at every step; once the tool is held, its first test says yes
    if AVAILABLE and sys.gettrace() is None and (monitor.tool is not None or monitor.claim()):
        if detector.access_log is not None:
            if monitor.dropped:
                _log_steps(monitor)
            detector.access_log.running(actor)
        monitor.actor, monitor.hb, monitor.thread = actor, hb, _get_ident()
        monitor.hot_lines = detector.hot_lines
        monitor.detector = detector
        try:
            run()
        finally:
            monitor.detector = None
        return
    # (imported with the module: an import statement here ran importlib's
    # Python _handle_fromlist at every step)
    run_traced_step(detector, actor, hb, run, outer)


def release() -> None:
    """End of an exploration: free the monitoring tool, if a step claimed it."""
    if AVAILABLE:
        MONITOR.release()


__all__ = ["AVAILABLE", "MONITOR", "monitored_step", "release", "run_step", "step_feed"]
