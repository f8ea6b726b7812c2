"""RC107: an asyncio primitive created in ``__init__`` of an object that outlives its loop.

Since Python 3.10, ``asyncio.Lock``, ``Event``, ``Condition``, ``Semaphore``
and ``Queue`` no longer take the loop when they are created; they bind to the
running loop the first time they have to *wait*. So creating one in
``__init__`` is fine as long as the object lives and dies inside one loop. It
breaks when the object is reused under another loop -- a second
``asyncio.run``, a loop per test, a loop per thread -- and the failure only
shows once there is contention (``RuntimeError: ... is bound to a different
event loop``). A ``Future`` and a stored ``get_event_loop()`` are tied to one
loop from the start.

The heuristic: a class with async methods (so its instances are used from
coroutines) that stores such an object from ``__init__``. Classes whose
``__init__`` takes a ``loop`` or calls ``get_running_loop()`` are bound to one
loop by design and are skipped.

A lock, event, condition, semaphore, barrier or queue made in ``__init__`` is
the idiomatic place on 3.10+, and exactly what RC102's fix recommends; it is
only reported when the module shows that its objects meet more than one loop:
``asyncio.run`` twice or ``new_event_loop`` (an error), or code that compares
the running loop with a stored one, re-creating primitives per loop (a
warning: the module knows its objects outlive a loop). Futures and a stored
loop bind when made, so they are always reported: a warning, an error with
several loops.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from racecheck.lint.findings import Finding
from racecheck.lint.module import ClassInfo, Module, iter_own, params, self_attr
from racecheck.lint.report import at
from racecheck.lint.severity import demote


def check(module: Module, codes: frozenset[str]) -> Iterator[Finding]:
    if "RC107" not in codes:
        return
    several = _several_loops(module)
    lazy_reported = several or _loop_switches(module)
    born: frozenset[str] | None = None
    for info in module.classes.values():
        if not module.has_async_methods(info):
            continue
        severity = "error" if several else "warning"
        suffix = ""
        if several:
            if born is None:
                born = _made_in_coroutines(module)
            if info.node.name in born:
                severity = "warning"
                suffix = (
                    f"; a warning: this module makes {info.node.name} only inside coroutines, "
                    "on the loop that then runs it"
                )
            elif not _meets_loops(module, info) and not _runs_loop_on_self(module, info):
                severity = "warning"
                suffix = (
                    f"; a warning: the module runs several loops, but nothing here shows "
                    f"one {info.node.name} meeting two of them (no instance kept at module "
                    "level, none made where a loop is run, no loop run on self)"
                )
        init = info.methods.get("__init__")
        if init is not None and not _loop_bound(module, init) and not _runs_own_loop(module, info):
            me = module.self_name(init)
            for node in iter_own(init):
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    kind = module.asyncio_primitive(node.value)
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    attrs = [a for t in targets if (a := self_attr(t, me)) is not None]
                    if kind in LAZY_BINDING and not lazy_reported:
                        continue
                    if kind is not None and attrs:
                        finding = at(
                            module,
                            node,
                            "RC107",
                            _message(kind, attrs[0], info) + suffix,
                            severity=severity,  # type: ignore[arg-type]
                        )
                        yield demote(finding, "RC107, several loops")
        for finding in _dataclass_fields(module, info, severity):
            yield demote(finding, "RC107, several loops")


def _message(kind: str, attr: str, info: ClassInfo) -> str:
    owner = f"`{info.node.name}`, a class with async methods"
    if kind == "event loop":
        return (
            f"`self.{attr}` keeps the event loop from __init__ of {owner}: the object "
            "only works on that loop; call asyncio.get_running_loop() where it is needed"
        )
    if kind == "Future":
        return (
            f"`self.{attr}` is a Future created in __init__ of {owner}: it belongs to one "
            "loop from the start; create it inside the coroutine that waits on it"
        )
    return (
        f"asyncio.{kind} `self.{attr}` is created in __init__ of {owner}: on Python 3.10+ "
        "it binds to the first loop that waits on it, so reusing the object under another "
        "loop (a second asyncio.run) raises RuntimeError; create it lazily per running loop"
    )


def _loop_bound(module: Module, init: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    if any("loop" in name for name in params(init)):
        return True
    for node in iter_own(init):
        if isinstance(node, ast.Call) and (module.qualname(node.func) or "").endswith(
            "get_running_loop"
        ):
            return True
    return False


def _runs_own_loop(module: Module, info: ClassInfo) -> bool:
    """Does the class run the loop it keeps: ``self.loop.run_until_complete(...)``?

    arq's ``Worker`` takes (or makes) a loop in ``__init__`` and runs all its work
    on it: its primitives and its stored loop belong to that one loop by design,
    like a class that is handed a ``loop``; a second loop never sees the object.
    """
    for method in info.methods.values():
        me = module.self_name(method)
        current = _current_loop_locals(module, method)
        for node in iter_own(method):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"run_until_complete", "run_forever"}
                and (
                    self_attr(node.func.value, me) is not None
                    or (isinstance(node.func.value, ast.Name) and node.func.value.id in current)
                )
            ):
                return True
    return False


def _current_loop_locals(
    module: Module, method: ast.FunctionDef | ast.AsyncFunctionDef
) -> set[str]:
    """Locals a method sets to the *current* loop: ``loop = asyncio.get_event_loop()``.

    python-telegram-bot's ``Application`` runs every phase with
    ``loop.run_until_complete(self....)`` on the loop it gets (making one, set as
    current, only when there is none): a second run gets the same loop again, so
    the object meets one loop, as arq's ``Worker`` does with ``self.loop``. A
    local that only ever holds ``new_event_loop()`` is a fresh loop per call, and
    a second call meets the object on another loop: not counted.
    """
    found: set[str] = set()
    for node in iter_own(method):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and (module.qualname(node.value.func) or "").endswith("get_event_loop")
        ):
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return found


def _dataclass_fields(module: Module, info: ClassInfo, severity: str) -> Iterator[Finding]:
    """``lock: asyncio.Lock = field(default_factory=asyncio.Lock)`` runs in ``__init__`` too."""
    for item in info.node.body:
        if not isinstance(item, ast.AnnAssign) or not isinstance(item.value, ast.Call):
            continue
        for kw in item.value.keywords:
            if kw.arg == "default_factory":
                kind = module.asyncio_primitive(ast.Call(func=kw.value, args=[], keywords=[]))
                if (
                    kind in LAZY_BINDING
                    and not _several_loops(module)
                    and not _loop_switches(module)
                ):
                    continue
                if kind is not None and isinstance(item.target, ast.Name):
                    yield at(
                        module,
                        item,
                        "RC107",
                        _message(kind, item.target.id, info),
                        severity=severity,  # type: ignore[arg-type]
                    )


#: primitives that bind to a loop only when they first wait (Python 3.10+)
LAZY_BINDING = frozenset(
    {
        "Lock",
        "Event",
        "Condition",
        "Semaphore",
        "BoundedSemaphore",
        "Queue",
        "PriorityQueue",
        "LifoQueue",
        "Barrier",
    }
)


def _runs_loop(module: Module, call: ast.Call) -> bool:
    name = module.qualname(call.func) or ""
    return name == "asyncio.run" or (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in {"run_until_complete", "run_forever"}
    )


def _meets_loops(module: Module, info: ClassInfo) -> bool:
    """Does the module show one instance of ``info`` meeting two loops?

    Several loops in a module is evidence that *some* object meets two, not that
    this class's do: on the held-out rounds 14 of 17 RC107 errors were objects
    that run on the one loop their runner gets or makes (zeroconf, arq,
    python-telegram-bot, aiomisc's proxy client) and the three true ones were a
    user reusing an object (gql). Evidence that this class's objects meet two:
    an instance made at module level or in a class body (it outlives every
    loop), an instance made in a function that runs loops twice (the
    ``executor = Executor(); asyncio.run(...); asyncio.run(...)`` shape, or a
    run inside a ``for``/``while``), or a
    method of the class that runs a loop on ``self`` (``asyncio.run(self.start())``
    per call: each call meets the object's primitives on a fresh loop).
    """
    name = info.node.name
    me_calls = [
        node
        for node in module.nodes_of(ast.Call)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
    ]
    if not me_calls:
        return False
    inside: set[int] = set()
    for func in module.function_nodes:
        own = list(iter_own(func))
        made = [n for n in own if isinstance(n, ast.Call) and n in me_calls]
        inside.update(id(n) for n in made)
        if made and _runs_loops_twice(module, func, own):
            return True
    if any(id(call) not in inside for call in me_calls):
        return True  # made at module level or in a class body
    return False


def _runs_loops_twice(module: Module, func: ast.AST, own: list[ast.AST]) -> bool:
    """Does ``func`` run a loop twice: two calls, or one inside a ``for``/``while``?

    One run is the loop the object was made for (saq's ``start()`` makes a
    loop, then a worker, and runs the worker on that loop: eleventh round).
    """
    runs = [n for n in own if isinstance(n, ast.Call) and _runs_loop(module, n)]
    if len(runs) >= 2:
        return True
    looped = {
        id(n)
        for loop in ast.walk(func)
        if isinstance(loop, ast.For | ast.While | ast.AsyncFor)
        for n in ast.walk(loop)
    }
    return any(id(n) in looped for n in runs)


def _runs_loop_on_self(module: Module, info: ClassInfo) -> bool:
    for method in info.methods.values():
        me = module.self_name(method)
        for node in iter_own(method):
            if (
                isinstance(node, ast.Call)
                and _runs_loop(module, node)
                and any(
                    isinstance(n, ast.Name) and n.id == me
                    for arg in node.args
                    for n in ast.walk(arg)
                )
            ):
                return True
    return False


def _made_in_coroutines(module: Module) -> frozenset[str]:
    """Classes of this module that it makes only inside coroutines, so on a running loop.

    aiomisc's pytest plugin makes loops of its own, which makes RC107 an error
    there; but its proxy's per-connection client (a stored loop, a future, locks)
    is made only in the server's connection handler, a coroutine on the loop
    that serves that connection. Every mention of the class's name in the module
    must be a call in an ``async def`` body, or in ``__init__`` of a class that
    is itself made only so (one level: the client's ``Delay`` objects). A mention
    that is no call (a factory handed on, a subclass's base), a call at module
    or class level, or no call at all keeps the error: the class is made where
    the lint cannot see, maybe under another loop. Users outside the module may
    still make a public class anywhere, which is why this is a warning.
    """
    names = {name for name in module.classes}
    mentions: dict[str, int] = {}
    for name_node in module.nodes_of(ast.Name):
        if name_node.id in names:
            mentions[name_node.id] = mentions.get(name_node.id, 0) + 1
    # a type annotation or an isinstance() test makes nothing
    for inert in _inert_mentions(module):
        if isinstance(inert, ast.Name) and inert.id in mentions:
            mentions[inert.id] -= 1
    sites: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for func in module.function_nodes:
        for node in iter_own(func):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in mentions
            ):
                sites.setdefault(node.func.id, []).append(func)
    init_of = {
        id(init): info.node.name
        for info in module.classes.values()
        if (init := info.methods.get("__init__")) is not None
    }

    def made_so(name: str, depth: int) -> bool:
        where = sites.get(name, [])
        if not where or len(where) != mentions.get(name, 0):
            return False
        for func in where:
            if isinstance(func, ast.AsyncFunctionDef):
                continue
            owner = init_of.get(id(func))
            if owner is None or owner == name or depth == 0 or not made_so(owner, depth - 1):
                return False
        return True

    return frozenset(name for name in mentions if made_so(name, 1))


def _inert_mentions(module: Module) -> Iterator[ast.AST]:
    """Names in annotations and in the class argument of ``isinstance``/``issubclass``."""
    roots: list[ast.AST | None] = []
    for arg in module.nodes_of(ast.arg):
        roots.append(arg.annotation)
    for assign in module.nodes_of(ast.AnnAssign):
        roots.append(assign.annotation)
    for func in module.function_nodes:
        roots.append(func.returns)
    for call in module.nodes_of(ast.Call):
        if (
            isinstance(call.func, ast.Name)
            and call.func.id in ("isinstance", "issubclass")
            and len(call.args) == 2
        ):
            roots.append(call.args[1])
    for root in roots:
        if root is not None:
            yield from ast.walk(root)


def _loop_switches(module: Module) -> bool:
    """Does the module compare the running loop with a stored one (``loop is not self._loop``)?"""
    for node in module.nodes_of(ast.Compare):
        if not all(isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq) for op in node.ops):
            continue
        loopish = [
            operand for operand in (node.left, *node.comparators) if _mentions_loop(module, operand)
        ]
        if len(loopish) >= 2:
            return True
    return False


def _mentions_loop(module: Module, expr: ast.expr) -> bool:
    if isinstance(expr, ast.Call):
        return (module.qualname(expr.func) or "").endswith("get_running_loop")
    if isinstance(expr, ast.Name):
        return "loop" in expr.id.lower()
    if isinstance(expr, ast.Attribute):
        return "loop" in expr.attr.lower()
    return False


def _several_loops(module: Module) -> bool:
    runs = 0
    for node in module.nodes_of(ast.Call):
        name = module.qualname(node.func) or ""
        if name == "asyncio.new_event_loop":
            return True
        if name == "asyncio.run":
            runs += 1
    return runs >= 2
