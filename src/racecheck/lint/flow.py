"""One function body as a sequence of events, in the order Python evaluates them.

The await checks ask questions of the form "is there a write, then an await,
then a read of the same thing, on one path through the function?". This module
answers the "on one path" part without building a control-flow graph: every
event remembers which arm of each ``if``/``match``/``except`` it sits in, and
whether that arm ends in ``return``/``raise``. Two events in different arms of
one ``if`` are never on one path; an event in an arm that returns never reaches
code after the ``if``. Loop back edges are ignored, which can only hide
findings, never invent them.

Keys name the shared things the checks care about:

* ``self.x`` -- an attribute of the method's instance;
* ``global:x`` -- a module-level name;
* ``free:x`` -- a name from an enclosing function (a closure variable);
* ``root:x`` -- a parameter the caller marked as shared (see :mod:`.fanout`);
* ``local:...`` -- anything else; the checks ignore these.

Calls to methods of the same class (``self.m(...)``) and to functions of the
same module are *inlined*: their events appear at the call site, because their
body runs there (for an ``async def``, only when the call is awaited directly).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import MISSING, dataclass, field, fields

from racecheck.lint import module as nodes  # `nodes.children`: the counted walk
from racecheck.lint.module import (
    MUTATORS,
    ClassInfo,
    FunctionNode,
    Module,
    dotted,
    global_names,
    is_locklike,
    iter_own,
    last_name,
    local_names,
    params,
)

MAX_INLINE_DEPTH = 3
#: No call is inlined once a function's flow holds this many events: a coroutine
#: reaching many helpers through many call sites (redis-py's
#: ``on_connect_check_health``: 4,913 events, most of them inlined) otherwise costs
#: its callees' size times its call sites. Calls past the budget are opaque,
#: which hides findings, never invents one.
MAX_FLOW_EVENTS = 1_000
#: awaits that never let another task run and then resume
_NO_SUSPEND = frozenset({"checkpoint_if_cancelled"})
#: calls naming the running task or thread: a key built from them is this task's own
_IDENTITY_CALLS = frozenset({"current_task", "current_thread", "get_ident", "get_native_id"})
_ITER_VIEWS = frozenset({"items", "keys", "values"})


@dataclass(frozen=True)
class Arm:
    """One arm of a branching statement, as seen from the events inside it."""

    node: tuple[int, int]  # (frame, id(statement)): inlined twice means two statements
    index: int
    ends: str  # "return" or "raise" when the arm ends so: nothing after the statement runs


@dataclass
class Event:
    kind: str  # read write mutate await check escape iterate index
    key: str
    order: int
    node: ast.AST  # where it happens (possibly inside an inlined callee)
    site: ast.AST  # the statement-level node in the analysed function
    path: tuple[Arm, ...]
    locks: frozenset[int]  # lock regions held: `with` and `async with`
    sync_locks: frozenset[int]  # only `with` regions: what excludes other threads
    via: FunctionNode | None = None  # the inlined callee the event comes from
    sources: frozenset[int] = frozenset()  # orders of shared reads flowing into a write
    percall: bool = False  # a write whose value is per-call data (a local, an await)
    detail: str = ""  # mutator name, "pos" for x[0]/x[-1], "local-key" for x[local] = ...
    guard: bool = False  # a check whose if-statement has an arm that returns/raises
    #: a check in an inlined callee whose if-statement has an arm that leaves the
    #: callee: it guards the rest of that call (``close()``'s ``if self._closed: return``)
    exits_call: bool = False
    scope: tuple[int, int] = (0, 0)  # a check's if-statement (frame, id)
    end: int = 0  # a check: the order just after its if-statement
    looping: bool = False  # inside a `while` loop of the analysed function
    tolerant: bool = False  # a mutation that does not rely on the key: pop(k, default)
    #: fail-fast sections held (a second task entering one fails instead of waiting)
    busy: frozenset[int] = frozenset()
    loops: tuple[int, ...] = ()  # the loop statements (any frame) the event is inside
    #: a check: the slots whose being set makes the ``if`` raise (``if self._con is not
    #: None: raise``), i.e. a single-use method's guard against being used again
    reuse: frozenset[str] = frozenset()
    #: a write's value; for an augmented write, what it adds (`self.n += operand`)
    operand: ast.expr | None = None
    frames: tuple[int, ...] = ()  # the inlined calls the event is inside, outermost first


#: every field of an :class:`Event` with its default (``None`` where it has none)
_EVENT_DEFAULTS: dict[str, object] = {
    f.name: None if f.default is MISSING else f.default for f in fields(Event)
}
assert all(f.default_factory is MISSING for f in fields(Event))  # shared defaults only


def reaches(a: Event, b: Event) -> bool:
    """Can ``b`` run after ``a`` in one execution (ignoring loop back edges)?"""
    if a.order >= b.order:
        return False
    arms = {arm.node: arm.index for arm in b.path}
    for arm in a.path:
        other = arms.get(arm.node)
        if other is not None and other != arm.index:
            return False
        if arm.ends and other is None:
            return False
    return True


def common_lock(*events: Event, sync_only: bool = False) -> bool:
    held = [e.sync_locks if sync_only else e.locks for e in events]
    return bool(frozenset.intersection(*held))


def ending(block: list[ast.stmt]) -> str:
    """``"raise"``/``"return"`` when every path through ``block`` ends that way, else ``""``."""
    if not block:
        return ""
    last = block[-1]
    if isinstance(last, ast.Raise):
        return "raise"
    if isinstance(last, ast.Return):
        return "return"
    if isinstance(last, ast.If):
        body, orelse = ending(last.body), ending(last.orelse)
        if body and orelse:
            return "raise" if body == orelse == "raise" else "return"
    return ""


def terminates(block: list[ast.stmt]) -> bool:
    return bool(ending(block))


@dataclass
class _Frame:
    id: int
    func: FunctionNode
    self_name: str | None
    mapping: dict[str, str]
    locals: frozenset[str]
    globals: frozenset[str]
    taint: dict[str, frozenset[int]] = field(default_factory=dict)
    #: locals holding a condition (`first = self._prev is None`): testing them tests it
    conditions: dict[str, ast.expr] = field(default_factory=dict)
    #: locks this frame took with `await x.acquire()` and still holds: name -> region
    acquired: dict[str, int] = field(default_factory=dict)


class Flow:
    """Walks one function (with inlined callees) and records its :class:`Event` list."""

    def __init__(
        self,
        module: Module,
        func: FunctionNode,
        klass: ClassInfo | None = None,
        mapping: dict[str, str] | None = None,
        inline: bool = True,
        closure: frozenset[str] = frozenset(),
    ) -> None:
        self.module = module
        self.klass = klass if klass is not None else module.class_of(func)
        self.inline = inline
        self.closure = closure  # names bound by enclosing functions
        self.events: list[Event] = []
        self._next_id = 1
        self._next_order = 0
        #: inlined calls being recorded as templates, innermost last
        self._recording: list[_Recording] = []
        self._path: list[Arm] = []
        self._locks: list[tuple[int, bool]] = []
        self._busy: list[int] = []
        self._loops: list[int] = []
        self._frames: list[_Frame] = []
        self._site: ast.AST = func
        self._whiles = 0
        #: the context tuples every event copies, rebuilt only when a stack changes
        self._context: (
            tuple[tuple[Arm, ...], frozenset[int], frozenset[int], frozenset[int], tuple[int, ...]]
            | None
        ) = None
        self._frame_ids: tuple[int, ...] = ()
        self._module_names = module.module_names
        self._root = self._frame(func, module.self_name(func), dict(mapping or {}))

    # ── driving ────────────────────────────────────────────────────────────

    def run(self) -> list[Event]:
        self._frames.append(self._root)
        self._block(self._root.func.body)
        self._let_go(self._root)
        self._frames.pop()
        return self.events

    def _let_go(self, frame: _Frame) -> None:
        """A frame's ``acquire()``-d locks stop counting when it returns (the caller
        does not know them; held longer than that only hides findings, never adds)."""
        for region in frame.acquired.values():
            self._release(region)
        frame.acquired.clear()

    def _release(self, region: int) -> None:
        self._locks = [entry for entry in self._locks if entry[0] != region]
        self._context = None

    def _frame(self, func: FunctionNode, self_name: str | None, mapping: dict[str, str]) -> _Frame:
        return _Frame(
            self._new_id(), func, self_name, mapping, local_names(func), global_names(func)
        )

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _new_order(self) -> int:
        self._next_order += 1
        return self._next_order - 1

    @property
    def _top(self) -> _Frame:
        return self._frames[-1]

    @property
    def _depth(self) -> int:
        return len(self._frames) - 1

    def _emit(self, kind: str, key: str, node: ast.AST, **extra: object) -> Event:
        context = self._context
        if context is None:
            context = self._context = (
                tuple(self._path),
                frozenset(region for region, _ in self._locks),
                frozenset(region for region, is_sync in self._locks if is_sync),
                frozenset(self._busy),
                tuple(self._loops),
            )
        path, locks, sync_locks, busy, loops = context
        # Event(...) without the dataclass __init__ and its 25 arguments: a large
        # module's flows make tens of thousands (the defaults are all immutable)
        event = object.__new__(Event)
        fields = event.__dict__
        fields.update(_EVENT_DEFAULTS)
        fields["kind"] = kind
        fields["key"] = key
        fields["order"] = self._new_order()
        fields["node"] = node
        fields["site"] = self._site
        fields["path"] = path
        fields["locks"] = locks
        fields["sync_locks"] = sync_locks
        if len(self._frames) > 1:
            fields["via"] = self._frames[-1].func
        fields["looping"] = self._whiles > 0
        fields["busy"] = busy
        fields["loops"] = loops
        fields["frames"] = self._frame_ids
        if extra:
            fields.update(extra)
        self.events.append(event)
        return event

    # ── keys ───────────────────────────────────────────────────────────────

    def name_key(self, name: str) -> str:
        frame = self._top
        if name in frame.mapping:
            return frame.mapping[name]
        if name in frame.globals:
            return f"global:{name}"
        if name in frame.locals or name == frame.self_name:
            return f"local:{frame.id}:{name}"
        if self._depth == 0 and name in self.closure:
            return f"free:{name}"
        if name in self._module_names:
            return f"global:{name}"
        return f"local:0:{name}"  # a builtin or an unknown: not shared state we track

    def key_of(self, expr: ast.AST) -> str | None:
        """The key of the shared object ``expr`` denotes or reaches into, if any.

        ``self.x``, ``self.x[k]``, ``self.x[k].y`` and ``self.x.get(k)`` all lead
        to ``self.x``: a mutation of anything reachable from it changes it.
        """
        while True:
            if isinstance(expr, ast.Attribute):
                me = self._top.self_name
                if me and isinstance(expr.value, ast.Name) and expr.value.id == me:
                    return f"self.{expr.attr}"
                expr = expr.value
            elif isinstance(expr, ast.Subscript):
                expr = expr.value
            elif isinstance(expr, ast.Call) and self._named_attribute(expr, "getattr"):
                expr = self._named_attribute(expr, "getattr")  # type: ignore[assignment]
            elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
                if expr.func.attr not in {"get", "copy", *_ITER_VIEWS}:
                    return None
                expr = expr.func.value
            elif isinstance(expr, ast.Name):
                return self.name_key(expr.id)
            else:
                return None

    @staticmethod
    def shared(key: str | None) -> bool:
        return key is not None and not key.startswith("local:")

    # ── statements ─────────────────────────────────────────────────────────

    def _block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if self._depth == 0:
                self._site = stmt
            self._stmt(stmt)
            if isinstance(stmt, ast.Return | ast.Raise) or (
                isinstance(stmt, ast.If) and terminates(stmt.body) and terminates(stmt.orelse)
            ):
                break  # the rest of the block is unreachable

    def _arm(self, owner: ast.AST, index: int, body: list[ast.stmt]) -> None:
        ends = ending(body)
        if self._depth and ends == "return":
            ends = ""  # a callee's return ends the callee, not the caller
        self._path.append(Arm((self._top.id, id(owner)), index, ends))
        self._context = None
        self._block(body)
        self._path.pop()
        self._context = None

    def _stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Expr | ast.Return):
            if stmt.value is not None:
                self._expr(stmt.value)
        elif isinstance(stmt, ast.Assign):
            start = len(self.events)
            self._expr(stmt.value)
            sources = self._sources(stmt.value, start)
            for target in stmt.targets:
                self._store(target, stmt.value, sources | self._tainted(stmt.value), sources)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                start = len(self.events)
                self._expr(stmt.value)
                sources = self._sources(stmt.value, start)
                self._store(stmt.target, stmt.value, sources | self._tainted(stmt.value), sources)
        elif isinstance(stmt, ast.AugAssign):
            start = len(self.events)
            self._load_target(stmt.target)
            own = frozenset(
                e.order
                for e in self.events[start:]
                if e.kind in {"read", "index"} and self.shared(e.key)
            )
            for event in self.events[start:]:
                if event.kind == "read" and not event.detail:
                    event.detail = "augmented"  # the read half of a relative update
            start = len(self.events)
            self._expr(stmt.value)
            sources = self._sources(stmt.value, start) | own
            start = len(self.events)
            self._store(stmt.target, stmt.value, sources | self._tainted(stmt.value), sources)
            for event in self.events[start:]:
                if event.kind == "write" and not event.detail:
                    event.detail = "augmented"  # `+= 1` after a capacity check is the act
                    event.operand = stmt.value
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                self._store(target, None, frozenset())
        elif isinstance(stmt, ast.If):
            self._if(stmt)
        elif isinstance(stmt, ast.While):
            self._expr(stmt.test)
            self._whiles += self._depth == 0
            self._loops.append(id(stmt))
            self._context = None
            self._block(stmt.body)
            self._loops.pop()
            self._context = None
            self._whiles -= self._depth == 0
            if not _breaks(stmt.body):
                # The loop is left only when its test, evaluated after the body's last
                # await, fails: `while not self.idle: await cond.wait()` re-checks.
                scope = (self._top.id, id(stmt))
                for key in sorted(set(self.checked_keys(stmt.test))):
                    self._emit("check", key, stmt.test, scope=scope, detail="recheck")
            self._block(stmt.orelse)
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            self._expr(stmt.iter)
            self._iterate(stmt.iter)
            if isinstance(stmt, ast.AsyncFor):
                self._emit("await", "", stmt)
            self._store(stmt.target, None, frozenset())
            self._loops.append(id(stmt))
            self._context = None
            self._block(stmt.body)
            self._loops.pop()
            self._context = None
            if isinstance(stmt, ast.AsyncFor):
                self._emit("await", "", stmt)
            self._block(stmt.orelse)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            self._with(stmt)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            self._block(stmt.body)
            for index, handler in enumerate(stmt.handlers):
                self._arm(stmt, index, handler.body)
            self._block(stmt.orelse)
            self._block(stmt.finalbody)
        elif isinstance(stmt, ast.Match):
            self._expr(stmt.subject)
            for index, case in enumerate(stmt.cases):
                self._arm(stmt, index, case.body)
        elif isinstance(stmt, ast.Raise):
            for part in (stmt.exc, stmt.cause):
                if part is not None:
                    self._expr(part)
        elif isinstance(stmt, ast.Assert):
            self._expr(stmt.test)
        # defs, classes, imports, pass, global: nothing runs that we track

    def _if(self, stmt: ast.If) -> None:
        self._expr(stmt.test)
        scope = (self._top.id, id(stmt))
        leaves = terminates(stmt.body) or terminates(stmt.orelse)
        guard = self._depth == 0 and leaves
        members = set(self.membership_keys(stmt.test))
        bounds = set(self.bound_keys(stmt.test))
        reuse = (
            frozenset(self._set_keys(stmt.test)) if ending(stmt.body) == "raise" else frozenset()
        )
        checks = [
            self._emit(
                "check",
                key,
                stmt.test,
                guard=guard,
                exits_call=leaves and not guard,
                scope=scope,
                detail="membership" if key in members else "capacity" if key in bounds else "",
                reuse=reuse,
            )
            for key in sorted(set(self.checked_keys(stmt.test)))
        ]
        self._arm(stmt, 0, stmt.body)
        self._arm(stmt, 1, stmt.orelse)
        end = self._new_order()
        for check in checks:
            check.end = end

    def _with(self, stmt: ast.With | ast.AsyncWith) -> None:
        is_async = isinstance(stmt, ast.AsyncWith)
        mine: list[int] = []  # the regions this statement holds, released by id
        busy = 0
        # asyncio's, trio's and anyio's locks, semaphores and conditions release in
        # `__aexit__` without suspending: leaving the block lets no other task run
        # (grpclib's connect lock: the connection stored inside is read after it)
        releases_only = all(is_locklike(item.context_expr) for item in stmt.items)
        for item in stmt.items:
            self._expr(item.context_expr)
            if is_async:
                self._emit("await", "", item.context_expr)  # __aenter__ may suspend
            if not is_async and self._fail_fast(item.context_expr):
                # entered without suspending, and refuses a second task: the second
                # one fails here instead of waiting (asyncpg's exclusive section)
                region = self._new_id()
                self._emit("enter", f"busy:{region}", item.context_expr)
                self._busy.append(region)
                self._locks.append((region, False))
                self._context = None
                mine.append(region)
                busy += 1
            elif is_locklike(item.context_expr) or self._locking_helper(item.context_expr):
                region = self._new_id()
                self._locks.append((region, not is_async))
                self._context = None
                mine.append(region)
            if item.optional_vars is not None:
                self._store(item.optional_vars, None, frozenset())
        self._block(stmt.body)
        self._locks = [entry for entry in self._locks if entry[0] not in mine]
        for _ in range(busy):
            self._busy.pop()
        self._context = None
        if is_async and not releases_only:
            self._emit("await", "", stmt)  # __aexit__ may suspend too

    def _locking_helper(self, expr: ast.expr) -> bool:
        """``with self.send_context():`` where that context manager takes a lock."""
        if not isinstance(expr, ast.Call) or not isinstance(expr.func, ast.Attribute):
            return False
        if self._self_key(expr.func) is None or self.klass is None:
            return False
        helper = self.module.resolve_method(self.klass, expr.func.attr)
        if helper is None or not {"contextmanager", "asynccontextmanager"} & {
            last_name(d) for d in helper.decorator_list
        }:
            return False
        return _takes_lock(helper)

    def _fail_fast(self, expr: ast.expr) -> bool:
        """``with self._section:`` where the section's class refuses a second entry."""
        if not isinstance(expr, ast.Attribute) or self._self_key(expr) is None:
            return False
        if self.klass is None:
            return False
        return expr.attr in self.module.fail_fast_attrs(self.klass)

    def _set_keys(self, test: ast.expr) -> Iterator[str]:
        """Slots that ``test`` is true for when they are set: ``self.x is not None``, ``self.x``."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            for value in test.values:
                yield from self._set_keys(value)
        elif isinstance(test, ast.Compare) and len(test.ops) == 1:
            right = test.comparators[0]
            if (
                isinstance(test.ops[0], ast.IsNot | ast.NotEq)
                and isinstance(right, ast.Constant)
                and right.value is None
                and isinstance(test.left, ast.Attribute)
            ):
                key = self._self_key(test.left)
                if key is not None:
                    yield key
        elif isinstance(test, ast.Attribute):
            key = self._self_key(test)
            if key is not None:
                yield key

    def bound_keys(self, test: ast.expr) -> Iterator[str]:
        """The keys a condition compares with ``<``/``>``: ``len(self.q) >= self.maxsize``."""
        if isinstance(test, ast.BoolOp):
            for value in test.values:
                yield from self.bound_keys(value)
        elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            yield from self.bound_keys(test.operand)
        elif isinstance(test, ast.Compare) and len(test.ops) == 1:
            if isinstance(test.ops[0], ast.Lt | ast.LtE | ast.Gt | ast.GtE):
                yield from self.checked_keys(test)

    def membership_keys(self, test: ast.expr) -> Iterator[str]:
        """The containers a condition tests only for membership (``k in self.d``)."""
        if isinstance(test, ast.BoolOp):
            for value in test.values:
                yield from self.membership_keys(value)
        elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            yield from self.membership_keys(test.operand)
        elif isinstance(test, ast.NamedExpr):
            yield from self.membership_keys(test.value)
        elif (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.In | ast.NotIn)
        ):
            yield from self._tested(test.comparators[0])

    def checked_keys(
        self, test: ast.expr, expanding: frozenset[str] = frozenset()
    ) -> Iterator[str]:
        """Shared keys a condition tests: ``k in self.d``, ``self.x is None``, ``not self.f``.

        ``expanding``: the local condition names being expanded; two locals can
        name each other (``a = b or x`` after ``b = a or y``), and a name met
        again adds nothing new.
        """
        if isinstance(test, ast.BoolOp):
            for value in test.values:
                yield from self.checked_keys(value, expanding)
        elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            yield from self.checked_keys(test.operand, expanding)
        elif isinstance(test, ast.NamedExpr):
            yield from self.checked_keys(test.value, expanding)  # `if pending := k in self.d:`
        elif isinstance(test, ast.Name) and test.id in self._top.conditions:
            if test.id not in expanding:
                yield from self.checked_keys(self._top.conditions[test.id], expanding | {test.id})
        elif isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, right = test.ops[0], test.comparators[0]
            if isinstance(op, ast.In | ast.NotIn):
                if self._own_identity(test.left):
                    return  # keyed by the running task or thread: no other one adds it
                yield from self._tested(right)
            elif isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq) and isinstance(
                right, ast.Constant
            ):
                yield from self._tested(test.left)
            elif isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE):
                # `self.opened < self.max_size`, `self.tokens > 0`: a capacity check;
                # `self.used + n <= self.limit` counts what the caller adds
                for side in (test.left, right):
                    for term in _terms(side):
                        yield from self._tested(term)
        else:
            yield from self._tested(test)

    def _own_identity(self, expr: ast.expr) -> bool:
        """Does ``expr`` involve the running task's (or thread's) identity?"""
        names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
        if any(
            isinstance(n, ast.Call) and last_name(n.func) in _IDENTITY_CALLS for n in ast.walk(expr)
        ):
            return True
        if not names:
            return False
        return not names.isdisjoint(_identity_locals(self._top.func))

    def _tested(self, expr: ast.expr) -> Iterator[str]:
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Name)
            and expr.func.id == "len"
            and expr.args
        ):
            expr = expr.args[0]
        if isinstance(expr, ast.Call) and not (
            (isinstance(expr.func, ast.Attribute) and expr.func.attr == "get")
            or self._named_attribute(expr, "getattr") is not None
        ):
            return
        key = self.key_of(expr)
        if self.shared(key) and key is not None:
            yield key

    # ── stores ─────────────────────────────────────────────────────────────

    def _sources(self, value: ast.expr, start: int) -> frozenset[int]:
        """Shared reads that flow into ``value``: direct ones, and via tainted locals."""
        orders = {
            e.order
            for e in self.events[start:]
            if e.kind in {"read", "index"} and self.shared(e.key) and e.via is self._via()
        }
        return frozenset(orders)

    def _tainted(self, value: ast.expr) -> frozenset[int]:
        """Shared reads behind the locals ``value`` uses (one hop: ``v = self.x``)."""
        orders: set[int] = set()
        taint = self._top.taint
        for name in _names_in(value)[1]:
            if name in taint:
                orders |= taint[name]
        return frozenset(orders)

    def _via(self) -> FunctionNode | None:
        return self._top.func if self._depth else None

    def _percall(self, value: ast.expr | None) -> bool:
        if value is None:
            return False
        frame = self._top
        awaits, names = _names_in(value)
        if awaits:
            return True
        for name in names:
            if name != frame.self_name:
                key = self.name_key(name)
                if key.startswith(("local:", "root:")) and not key.startswith("local:0:"):
                    return True
        return False

    def _load_target(self, target: ast.expr) -> None:
        """The read half of ``target op= value``."""
        if isinstance(target, ast.Name):
            self._emit("read", self.name_key(target.id), target)
        else:
            self._expr(_as_load(target))

    def _store(
        self,
        target: ast.expr,
        value: ast.expr | None,
        sources: frozenset[int],
        direct: frozenset[int] = frozenset(),
    ) -> None:
        """Store into ``target``; ``direct`` are the reads a local becomes tainted by."""
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._store(element, None, sources)
            return
        if isinstance(target, ast.Starred):
            self._store(target.value, None, sources)
            return
        percall = self._percall(value)
        if isinstance(target, ast.Name):
            if isinstance(value, ast.Compare | ast.BoolOp | ast.UnaryOp):
                # `ok = ok and ...` stands for the condition `ok` held before: no cycle
                self._top.conditions[target.id] = _substitute(
                    value, target.id, self._top.conditions.get(target.id)
                )
            else:
                self._top.conditions.pop(target.id, None)
            key = self.name_key(target.id)
            self._emit("write", key, target, sources=sources, percall=percall)
            if value is not None:
                self._top.taint[target.id] = direct
            else:
                self._top.taint.pop(target.id, None)
            return
        if isinstance(target, ast.Attribute):
            attr = self._self_key(target)
            if attr is not None:
                self._emit("write", attr, target, sources=sources, percall=percall, operand=value)
                return
            self._expr(target.value)
            base = self.key_of(target.value)
            if self.shared(base) and base is not None:
                self._emit(
                    "mutate", base, target, sources=sources, detail="setattr", percall=percall
                )
            return
        if isinstance(target, ast.Subscript):
            self._expr(target.value)
            self._expr(target.slice)
            base = self.key_of(target.value)
            if self.shared(base) and base is not None:
                detail = "local-key" if self._local_key(target.slice) else "setitem"
                self._emit("mutate", base, target, sources=sources, detail=detail, percall=percall)
                slot = _slot(base, target)
                if slot is not None:
                    self._emit("write", slot, target, sources=sources, percall=percall)

    def _self_key(self, target: ast.Attribute) -> str | None:
        me = self._top.self_name
        if me and isinstance(target.value, ast.Name) and target.value.id == me:
            return f"self.{target.attr}"
        return None

    def _local_key(self, index: ast.expr) -> bool:
        """``d[name] = ...`` where ``name`` is this call's own: a disjoint key per task."""
        names = [n for n in ast.walk(index) if isinstance(n, ast.Name)]
        return bool(names) and all(
            self.name_key(n.id).startswith("local:")
            and not self.name_key(n.id).startswith("local:0:")
            for n in names
        )

    # ── expressions ────────────────────────────────────────────────────────

    def _iterate(self, iterable: ast.expr) -> None:
        target = iterable
        if (
            isinstance(target, ast.Call)
            and isinstance(target.func, ast.Attribute)
            and target.func.attr in _ITER_VIEWS
            and not target.args
        ):
            target = target.func.value
        if isinstance(target, ast.Attribute | ast.Name):
            key = self.key_of(target)
            if self.shared(key) and key is not None:
                self._emit("iterate", key, iterable)

    def _expr(self, expr: ast.expr) -> None:
        if isinstance(expr, ast.Lambda):
            return
        if isinstance(expr, ast.Await):
            self._expr_await(expr)
        elif isinstance(expr, ast.Call):
            self._call(expr, awaited=False)
        elif isinstance(expr, ast.Attribute):
            key = self._self_key(expr) if isinstance(expr.ctx, ast.Load) else None
            if key is not None:
                self._emit("read", key, expr)
            else:
                self._expr(expr.value)
        elif isinstance(expr, ast.Name):
            if isinstance(expr.ctx, ast.Load):
                # a callee's parameter holds what the caller passed, evaluated then
                alias = "alias" if expr.id in self._top.mapping else ""
                self._emit("read", self.name_key(expr.id), expr, detail=alias)
        elif isinstance(expr, ast.Subscript):
            self._expr(expr.value)
            self._expr(expr.slice)
            base = self.key_of(expr.value)
            if self.shared(base) and base is not None:
                self._emit("index", base, expr, detail="pos" if _positional(expr.slice) else "")
                slot = _slot(base, expr)
                if slot is not None:
                    self._emit("read", slot, expr)
        elif isinstance(expr, ast.NamedExpr):
            start = len(self.events)
            self._expr(expr.value)
            sources = self._sources(expr.value, start)
            self._store(expr.target, expr.value, sources | self._tainted(expr.value), sources)
        elif isinstance(expr, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            for generator in expr.generators:
                self._expr(generator.iter)
                self._iterate(generator.iter)
                self._store(generator.target, None, frozenset())
                for condition in generator.ifs:
                    self._expr(condition)
            if isinstance(expr, ast.DictComp):
                self._expr(expr.key)
                self._expr(expr.value)
            else:
                self._expr(expr.elt)
        elif isinstance(expr, ast.Yield | ast.YieldFrom):
            if expr.value is not None:
                self._expr(expr.value)
            if isinstance(self._top.func, ast.AsyncFunctionDef):
                self._emit("await", "", expr)  # the consumer runs (and may await) meanwhile
        else:
            # the same children as ast.iter_child_nodes, in its order, minus the
            # tokens (contexts, operators), which are no expressions
            for child in nodes.children(expr):
                if isinstance(child, ast.expr):
                    self._expr(child)

    def _expr_await(self, expr: ast.Await) -> None:
        if isinstance(expr.value, ast.Call) and last_name(expr.value.func) in _NO_SUSPEND:
            # trio's and anyio's documented contract: return at once, or raise Cancelled;
            # never resume after other tasks ran
            for arg in _call_args(expr.value):
                self._expr(arg)
            return
        if isinstance(expr.value, ast.Call):
            inlined = self._call(expr.value, awaited=True)
            if not inlined:
                self._emit("await", "", expr)
                for arg in _call_args(expr.value):
                    key = self.key_of(arg)
                    if self.shared(key) and key is not None:
                        self._emit("escape", key, arg)  # the callee keeps using it
                held = _lock_call(expr.value, "acquire")
                if held is not None and held not in self._top.acquired:
                    # `await self._lock.acquire()`: a lock region from here to the
                    # matching release() (aiosmtplib holds its connect lock until close())
                    region = self._new_id()
                    self._top.acquired[held] = region
                    self._locks.append((region, False))
                    self._context = None
        else:
            self._expr(expr.value)
            self._emit("await", "", expr)

    def _named_attribute(self, call: ast.Call, builtin: str) -> ast.Attribute | None:
        """``getattr(self, "x"[, d])`` / ``setattr(self, "x", v)`` as the ``self.x`` it means."""
        func = call.func
        if not (
            isinstance(func, ast.Name)
            and func.id == builtin
            and self.name_key(builtin) == f"local:0:{builtin}"  # the builtin, not a rebinding
            and len(call.args) >= 2
            and not call.keywords
        ):
            return None
        obj, name = call.args[0], call.args[1]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return None
        attribute = ast.Attribute(value=obj, attr=name.value, ctx=ast.Load(), **_pos(call))
        return attribute if self._self_key(attribute) is not None else None

    def _call(self, call: ast.Call, awaited: bool) -> bool:
        """Evaluate a call; inline its body when we can. True when it was inlined."""
        read = self._named_attribute(call, "getattr")
        if read is not None and len(call.args) <= 3:
            for default in call.args[2:]:
                self._expr(default)
            self._expr(read)
            return False
        written = self._named_attribute(call, "setattr")
        if written is not None and len(call.args) == 3:
            value = call.args[2]
            start = len(self.events)
            self._expr(value)
            sources = self._sources(value, start)
            written.ctx = ast.Store()
            self._store(written, value, sources | self._tainted(value), sources)
            return False
        func = call.func
        released = _lock_call(call, "release")
        if released is not None and released in self._top.acquired:
            self._release(self._top.acquired.pop(released))
        method_call = isinstance(func, ast.Attribute) and self._self_key(func) is not None
        if not method_call:
            self._expr(func)
        for arg in call.args:
            self._expr(arg.value if isinstance(arg, ast.Starred) else arg)
        for kw in call.keywords:
            self._expr(kw.value)
        if isinstance(func, ast.Attribute) and func.attr in MUTATORS and not method_call:
            base = self.key_of(func.value)
            if self.shared(base) and base is not None:
                # pop(k, default) and discard(x) work whether or not the key is there
                tolerant = (func.attr == "pop" and len(call.args) >= 2) or func.attr == "discard"
                self._emit("mutate", base, call, detail=func.attr, tolerant=tolerant)
        return self._inline(call, awaited)

    def _reached(self, depth: int) -> None:
        """A call to inline asked at ``depth``: how deep below its callee the innermost
        recording asks (see :meth:`_Recording.fits`)."""
        if self._recording:
            innermost = self._recording[-1]
            if depth - innermost.depth > innermost.reach:
                innermost.reach = depth - innermost.depth

    def _inline(self, call: ast.Call, awaited: bool) -> bool:
        if not self.inline:
            return False
        depth = self._depth
        if depth >= MAX_INLINE_DEPTH:
            # a call the depth keeps out: a recording made here is not what a walk
            # higher up makes (a call nothing resolves is kept out at any depth)
            kept_out = self._resolve(call)
            if kept_out is not None and (
                awaited or not isinstance(kept_out[0], ast.AsyncFunctionDef)
            ):
                for recording in self._recording:
                    recording.limited = True
            return False
        if len(self.events) >= MAX_FLOW_EVENTS:
            self._reached(depth)
            # what a recording cut here holds depends on how many events came before
            # it in this flow: replayed into another flow, it would cut a callee a
            # fresh walk there inlines
            for recording in self._recording:
                recording.cut = True
            return False  # a budget: see MAX_FLOW_EVENTS
        resolved = self._resolve(call)
        if resolved is None:
            return False
        callee, self_name, skip = resolved
        if isinstance(callee, ast.AsyncFunctionDef) and not awaited:
            return False  # creates a coroutine; its body runs elsewhere, later
        self._reached(depth)
        for recording in self._recording:
            recording.queries.add(id(callee))
        if any(frame.func is callee for frame in self._frames):
            return False
        mapping: dict[str, str] = {}
        names = params(callee)[skip:]
        for name, arg in zip(names, call.args, strict=False):
            if isinstance(arg, ast.Starred):
                break
            key = self.key_of(arg)
            if self.shared(key) and key is not None:
                mapping[name] = key
        for kw in call.keywords:
            key = self.key_of(kw.value)
            if kw.arg and self.shared(key) and key is not None:
                mapping[kw.arg] = key
        memo_key = (id(callee), self_name, tuple(sorted(mapping.items())), id(self.klass))
        outer = {id(frame.func) for frame in self._frames}
        templates = self.module.inline_templates.setdefault(memo_key, [])
        for template in templates:
            if template.fits(depth + 1) and all(
                (q in outer) == (q in template.hits) for q in template.queries
            ):
                for recording in self._recording:
                    recording.queries |= template.queries
                    recording.limited |= template.limited
                    if template.reach >= 0:
                        recording.reach = max(
                            recording.reach, depth + 1 + template.reach - recording.depth
                        )
                self._replay(template)
                return True
        recording = _Recording(
            id_base=self._next_id,
            order_base=self._next_order,
            start=len(self.events),
            path_len=len(self._path),
            loops_len=len(self._loops),
            frames_len=len(self._frame_ids),
            depth=depth + 1,
        )
        self._recording.append(recording)
        frame = self._frame(callee, self_name, mapping)
        self._frames.append(frame)
        outer_ids, self._frame_ids = self._frame_ids, (*self._frame_ids, frame.id)
        self._block(callee.body)
        self._let_go(frame)
        self._frames.pop()
        self._frame_ids = outer_ids
        self._recording.pop()
        for enclosing in self._recording:
            enclosing.queries |= recording.queries
            enclosing.limited |= recording.limited
            if recording.reach >= 0:
                enclosing.reach = max(
                    enclosing.reach, recording.depth + recording.reach - enclosing.depth
                )
        recording.hits = frozenset(q for q in recording.queries if q in outer)
        recording.ids = self._next_id - recording.id_base
        recording.orders = self._next_order - recording.order_base
        # a snapshot: the caller may still mark its copies (`+=` marks its writes)
        recording.events = [_clone(event) for event in self.events[recording.start :]]
        templates.append(recording)
        return True

    def _replay(self, template: _Recording) -> None:
        """Append a recorded callee's events as if it had been walked again here.

        Its ids (frames, lock regions) and orders are shifted to where the counters
        are now, and the context it was recorded under (the caller's arms, locks,
        loops and frames) is swapped for the current one. The events are exactly
        those a second walk would make: the walk depends on nothing else.

        Most events of a large module's flows are replays (three in four on
        asyncssh's ``sftp.py``), so the work per event is kept to copying it and
        storing its fields: the few distinct keys, arms, frames, loops and lock
        sets of a template are shifted once per replay (:class:`_Plan`).
        """
        plan = template.plan
        if plan is None:
            plan = template.plan = _Plan(template)
        d_id = self._next_id - template.id_base
        d_order = self._next_order - template.order_base
        order_base = template.order_base
        path = tuple(self._path)
        locks = frozenset(region for region, _ in self._locks)
        sync_locks = frozenset(region for region, is_sync in self._locks if is_sync)
        busy = frozenset(self._busy)
        loops = tuple(self._loops)
        site = self._site
        looping = self._whiles > 0
        frames = self._frame_ids

        keys = [
            key if shift is None else f"{shift[0]}{shift[1] + d_id}{shift[2]}"
            for key, shift in plan.keys
        ]
        paths = [
            path
            + tuple(Arm((frame + d_id, node), index, ends) for frame, node, index, ends in tail)
            for tail in plan.paths
        ]
        inside = [frames + tuple(f + d_id for f in tail) for tail in plan.frames]
        within = [loops + tail for tail in plan.loops]
        held = [locks | frozenset(r + d_id for r in own) for own in plan.regions]
        held_sync = [sync_locks | frozenset(r + d_id for r in own) for own in plan.regions]
        # an event entered no section and none is held here: keep the empty set
        held_busy = [
            busy | frozenset(r + d_id for r in own) if own or busy else busy for own in plan.regions
        ]
        new = object.__new__
        append = self.events.append
        for event, k, p, f, lp, lk, sk, bk, scoped in plan.rows:
            clone = new(Event)
            fields = clone.__dict__
            fields.update(event.__dict__)
            fields["key"] = keys[k]
            if scoped:
                fields["scope"] = (event.scope[0] + d_id, event.scope[1])
            fields["order"] = event.order + d_order
            fields["site"] = site
            fields["path"] = paths[p]
            fields["locks"] = held[lk]
            fields["sync_locks"] = held_sync[sk]
            fields["busy"] = held_busy[bk]
            fields["loops"] = within[lp]
            fields["frames"] = inside[f]
            fields["looping"] = looping
            if event.sources:
                fields["sources"] = frozenset(
                    o + d_order if o >= order_base else o for o in event.sources
                )
            if event.end:
                fields["end"] = event.end + d_order
            append(clone)
        self._next_id += template.ids
        self._next_order += template.orders

    def _resolve(self, call: ast.Call) -> tuple[FunctionNode, str | None, int] | None:
        func = call.func
        if isinstance(func, ast.Attribute) and self.klass is not None:
            if self._self_key(func) is None:
                return None
            method = self.module.resolve_method(self.klass, func.attr)
            if method is None or "property" in {last_name(d) for d in method.decorator_list}:
                return None
            self_name = self.module.self_name(method)
            return method, self_name, 1 if self_name else 0
        if isinstance(func, ast.Name):
            if func.id in self._top.locals:
                nested = _nested_def(self._top.func, func.id)
                return (nested, None, 0) if nested is not None else None
            target = self.module.functions.get(func.id)
            if target is not None:
                return target, None, 0
        return None


@dataclass
class _Recording:
    """One inlined call's events, kept to be replayed at the next identical call.

    Identical: the same callee, instance name, shared arguments and class, the
    same answer to every "is this function already on the stack?" that the walk
    asked (``queries``; ``hits`` are the ones answered yes), and the same answer
    to every "is the stack too deep to inline?" (:meth:`fits`). A function that
    calls one helper from many places (redis-py's connection, aiomysql's
    handshake) walked the helper's body, and its helpers', at every call.
    """

    id_base: int
    order_base: int
    start: int
    path_len: int
    loops_len: int
    frames_len: int
    queries: set[int] = field(default_factory=set)
    hits: frozenset[int] = frozenset()
    ids: int = 0
    orders: int = 0
    events: list[Event] = field(default_factory=list)
    plan: _Plan | None = None  # made at the first replay
    #: the depth of the callee's frame (the analysed function's is 0)
    depth: int = 0
    #: how many frames below the callee's the walk asked to inline a call that
    #: resolves to a function of the module (-1: never)
    reach: int = -1
    #: some call that resolves was not inlined: the stack was MAX_INLINE_DEPTH deep
    limited: bool = False
    #: some call was not inlined because the flow had reached MAX_FLOW_EVENTS
    cut: bool = False

    def fits(self, depth: int) -> bool:
        """Is a walk of the callee at frame ``depth`` the walk recorded here?

        Where the callee runs matters to a walk only through ``MAX_INLINE_DEPTH``
        (every other test of the depth tells the analysed function, depth 0, from
        a callee; what a call resolves to does not depend on it): a recording
        that kept out no resolvable call for depth and asked to inline one no
        deeper than ``reach`` frames below it gets every answer the same wherever
        those asks stay above the limit. The same helper reached at depths 1 and
        2 (a method called directly and through another) was walked once for
        each. A recording the event budget cut (``cut``) is never replayed: what it
        kept out depends on the flow it was made in.
        """
        if self.cut:
            return False
        if depth == self.depth:
            return True
        return not self.limited and depth + self.reach < MAX_INLINE_DEPTH


class _Plan:
    """What of a recording's events a replay shifts, each distinct value listed once.

    ``keys``: a key, with ``(prefix, number, suffix)`` when its number is an id
    of the recording (a callee's local, any fail-fast section) and moves with it;
    ``paths``, ``frames``, ``loops``: the part of each event's arms, frames and
    loops inside the callee (arms as ``(frame, statement, index, ends)``);
    ``regions``: the recording's own lock regions in a held set (the caller's
    are swapped for the replaying caller's). ``rows``: per event, the indexes of
    its values in those lists, and whether its check scope is the callee's.
    """

    def __init__(self, template: _Recording) -> None:
        id_base = template.id_base
        self.keys: list[tuple[str, tuple[str, int, str] | None]] = []
        self.paths: list[tuple[tuple[int, int, int, str], ...]] = []
        self.frames: list[tuple[int, ...]] = []
        self.loops: list[tuple[int, ...]] = []
        self.regions: list[tuple[int, ...]] = []
        self.rows: list[tuple[Event, int, int, int, int, int, int, int, bool]] = []
        # distinct values by identity: a callee's events share a handful of each
        keys: dict[str, int] = {}
        paths: dict[int, int] = {}
        frames: dict[int, int] = {}
        loops: dict[int, int] = {}
        regions: dict[int, int] = {}
        path_len, frames_len, loops_len = template.path_len, template.frames_len, template.loops_len
        rows = self.rows
        for event in template.events:
            key = event.key
            k = keys.get(key)
            if k is None:
                k = keys[key] = len(self.keys)
                self.keys.append((key, _key_shift(key, id_base)))
            p = paths.get(id(event.path))
            if p is None:
                p = paths[id(event.path)] = len(self.paths)
                self.paths.append(
                    tuple((a.node[0], a.node[1], a.index, a.ends) for a in event.path[path_len:])
                )
            f = frames.get(id(event.frames))
            if f is None:
                f = frames[id(event.frames)] = len(self.frames)
                self.frames.append(event.frames[frames_len:])
            lp = loops.get(id(event.loops))
            if lp is None:
                lp = loops[id(event.loops)] = len(self.loops)
                self.loops.append(event.loops[loops_len:])
            held = []
            for regionset in (event.locks, event.sync_locks, event.busy):
                r = regions.get(id(regionset))
                if r is None:
                    r = regions[id(regionset)] = len(self.regions)
                    self.regions.append(tuple(x for x in regionset if x >= id_base))
                held.append(r)
            rows.append((event, k, p, f, lp, held[0], held[1], held[2], event.scope[0] >= id_base))


def _key_shift(key: str, id_base: int) -> tuple[str, int, str] | None:
    """``(prefix, number, suffix)`` of a key whose number moves with a replay, else None."""
    if key.startswith("busy:"):
        return ("busy:", int(key[5:]), "")
    if key.startswith("local:"):
        number, _, name = key[6:].partition(":")
        if int(number) >= id_base:
            return ("local:", int(number), f":{name}")
    return None


def _clone(event: Event) -> Event:
    """A shallow copy of ``event`` (``copy.copy`` without its reduce protocol)."""
    clone = object.__new__(Event)
    clone.__dict__.update(event.__dict__)
    return clone


def _lock_call(call: ast.Call, method: str) -> str | None:
    """``self._lock`` for ``self._lock.acquire()`` (``method``) on a lock-like name."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == method and is_locklike(func.value):
        return dotted(func.value)
    return None


def _identity_locals(func: FunctionNode) -> frozenset[str]:
    """Names ``func`` binds to the running task or thread (``me = current_task()``)."""
    cached: frozenset[str] | None = getattr(func, "_racecheck_identity", None)
    if cached is None:  # asked at every membership check: walk the body once
        cached = frozenset(
            t.id
            for node in iter_own(func)
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and last_name(node.value.func) in _IDENTITY_CALLS
            for t in node.targets
            if isinstance(t, ast.Name)
        )
        setattr(func, "_racecheck_identity", cached)  # noqa: B010 - AST nodes take attributes
    return cached


def _names_in(expr: ast.AST) -> tuple[bool, tuple[str, ...]]:
    """Does ``expr`` contain an await, and the names it mentions (in walk order)."""
    cached: tuple[bool, tuple[str, ...]] | None = getattr(expr, "_racecheck_names", None)
    if cached is None:  # a value is asked about once per store, and again per inlining
        awaits = False
        names: list[str] = []
        for node in ast.walk(expr):
            if isinstance(node, ast.Await):
                awaits = True
            elif isinstance(node, ast.Name):
                names.append(node.id)
        cached = (awaits, tuple(names))
        setattr(expr, "_racecheck_names", cached)  # noqa: B010 - AST nodes take attributes
    return cached


def _takes_lock(helper: FunctionNode) -> bool:
    """Does a ``@contextmanager`` helper hold a lock-like ``with`` anywhere in its body?"""
    cached: bool | None = getattr(helper, "_racecheck_takes_lock", None)
    if cached is None:
        cached = any(
            isinstance(node, ast.With | ast.AsyncWith)
            and any(is_locklike(item.context_expr) for item in node.items)
            for node in ast.walk(helper)
        )
        setattr(helper, "_racecheck_takes_lock", cached)  # noqa: B010 - AST nodes take attributes
    return cached


def _substitute(expr: ast.expr, name: str, by: ast.expr | None) -> ast.expr:
    """``expr`` with the local ``name`` replaced by ``by`` (a constant when unknown)."""

    class Replace(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            if node.id != name:
                return node
            return by if by is not None else ast.Constant(value=None)

    if not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(expr)):
        return expr
    result: ast.expr = Replace().visit(copy.deepcopy(expr))
    return result


def _terms(expr: ast.expr) -> Iterator[ast.expr]:
    """The operands of a sum or difference: ``self.used`` and ``n`` in ``self.used + n``."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add | ast.Sub):
        yield from _terms(expr.left)
        yield from _terms(expr.right)
    else:
        yield expr


def _breaks(body: list[ast.stmt]) -> bool:
    """Does a ``break`` leave this loop (not one nested in it)?"""
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Break):
            return True
        if isinstance(node, ast.For | ast.AsyncFor | ast.While):
            pending.extend(node.orelse)  # a break in the inner body leaves the inner loop
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        pending.extend(ast.iter_child_nodes(node))
    return False


def _nested_def(func: FunctionNode, name: str) -> FunctionNode | None:
    """The first function named ``name`` defined anywhere inside ``func`` (breadth first)."""
    table: dict[str, FunctionNode] | None = getattr(func, "_racecheck_defs", None)
    if table is None:  # asked at every call of a local name: index the body once
        table = {}
        for stmt in ast.walk(func):
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt is not func:
                table.setdefault(stmt.name, stmt)
        setattr(func, "_racecheck_defs", table)  # noqa: B010 - AST nodes take attributes
    return table.get(name)


def _call_args(call: ast.Call) -> Iterator[ast.expr]:
    for arg in call.args:
        yield arg.value if isinstance(arg, ast.Starred) else arg
    for kw in call.keywords:
        yield kw.value


def _slot(base: str, node: ast.Subscript) -> str | None:
    """``self.d['k']``: a fixed slot of a shared dict behaves like an attribute."""
    index = node.slice
    if isinstance(index, ast.Constant) and isinstance(index.value, str):
        if isinstance(node.value, ast.Name | ast.Attribute):
            return f"{base}[{index.value!r}]"
    return None


def _positional(index: ast.expr) -> bool:
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
        index = index.operand
    return isinstance(index, ast.Constant) and isinstance(index.value, int)


def _as_load(target: ast.expr) -> ast.expr:
    """``target`` as an expression that reads it (for the read half of ``x op= y``)."""
    if isinstance(target, ast.Attribute):
        return ast.Attribute(value=target.value, attr=target.attr, ctx=ast.Load(), **_pos(target))
    if isinstance(target, ast.Subscript):
        return ast.Subscript(value=target.value, slice=target.slice, ctx=ast.Load(), **_pos(target))
    return target


def _pos(node: ast.AST) -> dict[str, int]:
    return {
        "lineno": getattr(node, "lineno", 1),
        "col_offset": getattr(node, "col_offset", 0),
        "end_lineno": getattr(node, "end_lineno", 1),
        "end_col_offset": getattr(node, "end_col_offset", 0),
    }
