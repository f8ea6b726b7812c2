"""RC105 and RC106: threads, and asyncio objects reached from them.

RC105 looks at classes that are visibly used by several threads -- one that
creates a ``threading.Lock``, hands its own methods to a thread or executor,
or bridges onto an event loop from outside (``call_soon_threadsafe``) -- or,
more weakly, any class in a module that starts threads. In such a class it
reports compound operations on ``self.<attr>`` that are not inside one
``with <lock>:`` block: ``+=``, check-then-act, iterating a collection that
another method mutates, and reading "the most recent item" (``x[-1]``) of a
shared list under a lock but using it after the lock is released. A helper
method whose every call site already holds a lock is treated as locked.

RC106 reports asyncio objects used from a thread that is not the loop's:
primitives (``Event.set()``, ``Queue.put_nowait()``) and the loop itself
(``ensure_future``, ``loop.create_task``) called from a function handed to a
thread, and an ``asyncio.Lock`` used to guard state that synchronous code of a
thread-driven class touches as well (it cannot exclude threads at all).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial

from racecheck.lint import module as syntax  # `syntax.walk`: the counted, token-free walk
from racecheck.lint.findings import Finding
from racecheck.lint.flow import Event, Flow, common_lock, reaches
from racecheck.lint.handoff import handoffs
from racecheck.lint.module import (
    ASYNCIO_LOCKS,
    MUTATORS,
    REMOVERS,
    ClassInfo,
    FunctionNode,
    Module,
    decorator_names,
    dotted,
    is_locklike,
    iter_own,
    last_name,
    memo,
    self_attr,
)
from racecheck.lint.report import at, show
from racecheck.lint.severity import demote

#: methods whose call changes (or waits on) an asyncio primitive
PRIMITIVE_CALLS = frozenset(
    {
        "set",
        "clear",
        "acquire",
        "release",
        "put",
        "put_nowait",
        "get",
        "get_nowait",
        "wait",
        "notify",
        "notify_all",
        "set_result",
        "set_exception",
        "cancel",
        "task_done",
    }
)
LOOP_CALLS = frozenset({"create_task", "call_soon", "call_later", "call_at", "create_future"})
#: a thread function calling these hosts an event loop of its own. Running a loop
#: (``run_until_complete`` as ``run_forever``) makes this thread the loop's thread; a
#: loop already running elsewhere refuses at once, it does not race (jupyterhub's
#: sync facade runs coroutines on a loop its one-thread pool made)
_OWN_LOOP_CALLS = frozenset(
    {"set_event_loop", "new_event_loop", "run_forever", "run_until_complete", "run"}
)
_SKIP_METHODS = frozenset(
    {"__init__", "__new__", "__del__", "__post_init__", "__repr__", "__str__", "__init_subclass__"}
)


def check(module: Module, codes: frozenset[str]) -> Iterator[Finding]:
    if not codes & {"RC105", "RC106"}:
        return
    module_threads = _module_starts_threads(module)
    thread_side = _ThreadSide(module)
    if "RC106" in codes:
        yield from thread_side.module_findings()
    for info in module.classes.values():
        evidence = _evidence(module, info, thread_side)
        if "RC106" in codes:
            yield from thread_side.class_findings(info)
            if evidence is not None:
                yield from _asyncio_lock_across_threads(module, info, evidence, thread_side)
        if "RC105" in codes:
            if evidence is not None:
                yield from _compound_ops(module, info, evidence)
            elif module_threads and _plain_sync(module, info):
                # Weak evidence: report only collections, and not `+=` on them.
                yield from _compound_ops(
                    module, info, "its module starts threads", module.collection_attrs(info)
                )


# ── where threads come from ─────────────────────────────────────────────────


def _module_starts_threads(module: Module) -> bool:
    for node in module.nodes_of(ast.Call):
        name = module.qualname(node.func) or ""
        if name in {"threading.Thread", "concurrent.futures.ThreadPoolExecutor"}:
            return True
    return False


def _evidence(module: Module, info: ClassInfo, side: _ThreadSide) -> str | None:
    """Why we believe instances of ``info`` are used by more than one thread, if we do."""
    for method in module.all_methods(info).values():
        attr = memo(method, "thread_lock", partial(_thread_lock, module, method))
        if attr is not None:
            return f"it creates a threading lock (self.{attr})"
    entries = side.entries(info, concurrent_only=True)
    if entries:
        name, how = next(iter(entries.items()))
        return f"{name}() runs on another thread via {how}"
    return None


def _thread_lock(module: Module, method: FunctionNode) -> str | None:
    """The first ``self.<attr>`` that ``method`` binds to a new threading lock."""
    me = module.self_name(method)
    for node in iter_own(method):
        if isinstance(node, ast.Assign) and module.threading_lock(node.value):
            for target in node.targets:
                if (attr := self_attr(target, me)) is not None:
                    return attr
    return None


def _handoff_targets(module: Module, method: FunctionNode) -> list[tuple[str, str, bool]]:
    """``self.<m>`` that ``method`` hands to another thread: (m, how, awaited on the spot)."""
    me = module.self_name(method)
    awaited = {id(n.value) for n in iter_own(method) if isinstance(n, ast.Await)}
    found = []
    for node in iter_own(method):
        if isinstance(node, ast.Call):
            for handoff in handoffs(node):
                attr = self_attr(handoff.func, me)
                if attr is not None:
                    found.append((attr, handoff.how, id(node) in awaited))
    return found


def _self_calls(module: Module, method: FunctionNode) -> list[str]:
    """``m`` for each ``self.m(...)`` call in ``method``, in walk order."""
    me = module.self_name(method)
    return [
        attr
        for node in iter_own(method)
        if isinstance(node, ast.Call) and (attr := self_attr(node.func, me)) is not None
    ]


def _plain_sync(module: Module, info: ClassInfo) -> bool:
    """A class with no async methods that never touches asyncio: thread-world code."""
    if module.has_async_methods(info):
        return False
    for method in module.all_methods(info).values():
        for node in iter_own(method):
            if isinstance(node, ast.Attribute | ast.Name):
                name = module.qualname(node) or ""
                if name.startswith(("asyncio", "anyio", "trio")):
                    return False
    return True


@dataclass
class _ThreadSide:
    """Functions that run on a thread other than the loop's, per class and per module."""

    module: Module
    _entries: dict[tuple[int, bool], dict[str, str]] = field(default_factory=dict)

    def entries(self, info: ClassInfo, concurrent_only: bool = False) -> dict[str, str]:
        """Method name -> how it gets onto another thread (handoffs and their sync callees).

        With ``concurrent_only``, a hand-off that the caller awaits on the spot
        (``await to_thread(self.m)``) does not count: the caller is suspended
        until it returns, so it adds no concurrency of its own.
        """
        cache_key = (id(info), concurrent_only)
        cached = self._entries.get(cache_key)
        if cached is not None:
            return cached
        found: dict[str, str] = {}
        methods = self.module.all_methods(info)
        module = self.module
        for method in methods.values():
            targets = memo(method, "handoffs", partial(_handoff_targets, module, method))
            for attr, how, awaited in targets:
                if concurrent_only and awaited:
                    continue
                if attr in methods:
                    found.setdefault(attr, how)
        frontier = list(found)
        while frontier:  # sync methods called from thread-side methods run there too
            name = frontier.pop()
            method = methods[name]
            for attr in memo(method, "self_calls", partial(_self_calls, module, method)):
                callee = methods.get(attr)
                if isinstance(callee, ast.FunctionDef) and attr not in found:
                    found[attr] = f"{found[name]}, through {name}()"
                    frontier.append(attr)
        self._entries[cache_key] = found
        return found

    def class_findings(self, info: ClassInfo) -> Iterator[Finding]:
        methods = self.module.all_methods(info)
        primitives = self.module.primitive_attrs(info)
        for name, how in self.entries(info).items():
            method = methods[name]
            if isinstance(method, ast.AsyncFunctionDef) or info.methods.get(name) is not method:
                continue  # report each method once, in the class that defines it
            yield from _loop_calls(self.module, method, how, primitives, {})

    def module_findings(self) -> Iterator[Finding]:
        """Module functions and nested functions handed to threads."""
        module = self.module
        bound = _module_primitives(module)
        for scope in [module.tree, *module.function_nodes]:
            local = dict(bound)
            if _is_function(scope):
                local.update(_local_primitives(module, scope))
            for node in iter_own(scope):
                if not isinstance(node, ast.Call):
                    continue
                for handoff in handoffs(node):
                    if isinstance(handoff.func, ast.Lambda):
                        yield from _loop_calls(module, handoff.func, handoff.how, {}, local)
                    elif isinstance(handoff.func, ast.Name):
                        target = _find_def(scope, handoff.func.id) or module.functions.get(
                            handoff.func.id
                        )
                        if target is not None and isinstance(target, ast.FunctionDef):
                            yield from _loop_calls(module, target, handoff.how, {}, local)


def _is_function(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)


def _find_def(scope: ast.AST, name: str) -> FunctionNode | None:
    for node in iter_own(scope):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return node
    return None


def _module_primitives(module: Module) -> dict[str, str]:
    found: dict[str, str] = {}
    for stmt in module.tree.body:
        if isinstance(stmt, ast.Assign) and (kind := module.asyncio_primitive(stmt.value)):
            found.update((t.id, kind) for t in stmt.targets if isinstance(t, ast.Name))
    return found


def _local_primitives(module: Module, scope: ast.AST) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in iter_own(scope):
        if isinstance(node, ast.Assign) and (kind := module.asyncio_primitive(node.value)):
            found.update((t.id, kind) for t in node.targets if isinstance(t, ast.Name))
    return found


def _loop_calls(
    module: Module,
    func: FunctionNode | ast.Lambda,
    how: str,
    attrs: dict[str, tuple[str, ast.AST]],
    names: dict[str, str],
) -> Iterator[Finding]:
    """Calls on asyncio objects, or on the loop, inside a function that runs on a thread."""
    me = module.self_name(func) if not isinstance(func, ast.Lambda) else None
    where = "a lambda" if isinstance(func, ast.Lambda) else f"{func.name}()"
    nodes = list(ast.walk(func.body)) if isinstance(func, ast.Lambda) else list(iter_own(func))
    if any(
        isinstance(node, ast.Call) and last_name(node.func) in _OWN_LOOP_CALLS for node in nodes
    ):
        return  # the thread makes or installs the loop it drives: its objects are its own
    for node in nodes:
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            qual = module.qualname(node.func) if isinstance(node, ast.Call) else None
            if qual in {"asyncio.ensure_future", "asyncio.create_task"}:
                yield _cross_thread(module, node, where, how, f"{qual}()")
            continue
        receiver, method = node.func.value, node.func.attr
        qual = module.qualname(node.func)
        if qual in {"asyncio.ensure_future", "asyncio.create_task"}:
            yield _cross_thread(module, node, where, how, f"{qual}()")
            continue
        attr = self_attr(receiver, me)
        kind = attrs[attr][0] if attr is not None and attr in attrs else None
        if kind is None and isinstance(receiver, ast.Name):
            kind = names.get(receiver.id)
        if kind == "event loop" or (kind is None and "loop" in (last_name(receiver) or "").lower()):
            if method in LOOP_CALLS:
                yield _cross_thread(module, node, where, how, f"{ast.unparse(node.func)}()")
        elif kind is not None and method in PRIMITIVE_CALLS:
            yield _cross_thread(
                module, node, where, how, f"{ast.unparse(node.func)}() on an asyncio.{kind}"
            )


#: hand-offs that start the callable on another thread for certain (the rest - a
#: callable passed beside something named like a pool - is a guess from names)
_STARTS_THREAD = (
    "Thread(target=...)",
    "threading.Timer",
    "submit()",
    "start_new_thread()",
    "executor.map()",
    "run_in_executor()",
    "to_thread()",
)


#: calls that hand their argument to a thread (or to a pool of them)
_THREAD_CALLS = frozenset({"submit", "run_in_executor", "to_thread", "start_new_thread", "Thread"})


def _started_thread(module: Module, how: str) -> bool:
    """Is the hand-off certain to run the callable on another thread?

    A call that starts a thread, by name; or a callable passed beside a pool to
    a function of this module whose body hands work to that pool or a thread
    (the reference bridge's ``flat_map(mapper, pool)`` calls ``pool.submit``).
    A callee the module does not define - taskiq's ``receiver_cls(on_exit,
    executor)``, a parameter - stays a guess.
    """
    if how in _STARTS_THREAD:
        return True
    callee = module.functions.get(how.split("(", 1)[0])
    return callee is not None and any(
        isinstance(node, ast.Call) and last_name(node.func) in _THREAD_CALLS
        for node in ast.walk(callee)
    )


def _cross_thread(module: Module, node: ast.AST, where: str, how: str, what: str) -> Finding:
    """An error when the function is started on a thread; a warning when the lint only
    guesses so from names (taskiq hands ``on_exit`` to a constructor beside an executor,
    and calls it on the loop: held-out round five)."""
    started = _started_thread(module, how)
    finding = at(
        module,
        node,
        "RC106",
        f"{what} from {where}, which runs on another thread ({how}); asyncio objects are "
        "not thread-safe: use loop.call_soon_threadsafe() or "
        "asyncio.run_coroutine_threadsafe()"
        + ("" if started else "; a warning: the thread is guessed from a pool-like name"),
        severity="error" if started else "warning",
    )
    return demote(finding, "RC106, a thread started")


# ── RC106: an asyncio.Lock in a class that threads use ──────────────────────


def _asyncio_lock_across_threads(
    module: Module, info: ClassInfo, evidence: str, side: _ThreadSide
) -> Iterator[Finding]:
    methods = module.all_methods(info)
    # an error only when a thread is started on the class's own methods; a threading
    # lock beside the asyncio one is weaker evidence (aioredis' fork guard, held-out
    # round three: no thread ever reached the asyncio side)
    started = {
        name: how
        for name, how in side.entries(info, concurrent_only=True).items()
        if _started_thread(module, how)
    }
    for attr, (kind, created) in module.primitive_attrs(info).items():
        if kind not in ASYNCIO_LOCKS or not _created_in(info, created):
            continue
        if evidence.startswith("it creates a threading lock") and _either_lock(
            module, info, created
        ):
            continue  # a sync object gets the threading lock, an async one this lock
        guarded = _guarded_by(module, methods.values(), attr)
        if not guarded:
            continue
        changed = _guarded_by(module, methods.values(), attr, changes_only=True)
        settled = _set_at_construction(module, methods.values())
        settled |= _read_once_per_hold(module, methods, attr) - changed
        inside = _only_called_under(module, methods.values(), attr)
        # the thread on the lock's own side (lint19): it takes the lock or queues a
        # method that does - the reference bridge's proposed fix; one that reaches only
        # the guarded state was 0 of 3 true on the held-out rounds, a warning
        reaching, taking = _reaching_the_lock(module, methods, started, attr, guarded)
        reaching.sort(key=lambda name: name not in taking)
        for method in methods.values():
            if not isinstance(method, ast.FunctionDef) or method.name in _SKIP_METHODS:
                continue
            if "property" in decorator_names(method):
                continue
            me = module.self_name(method)
            if _recreates(module, method, me, attr):
                continue  # a reset (after a fork): it replaces the lock and what it guards
            if method.name in inside:
                continue  # a helper of the coroutines that hold the lock: no thread's entry
            unlocked = _outside_thread_locks(method, me)
            # the asyncio side only reading what the threads change under their own
            # lock (a snapshot, copy-on-write) is not what an asyncio lock fails at
            touched = sorted(
                {
                    a
                    for n in iter_own(method)
                    if (a := self_attr(n, me)) in guarded
                    and (a in changed or a in unlocked)
                    and a not in settled
                }
            )
            if touched:
                if reaching:
                    name = reaching[0]
                    why, caveat = f"{name}() runs on another thread via {started[name]}", ""
                    if name not in taking:
                        caveat = (
                            f"; a warning: {name}() uses what the lock guards but neither "
                            "the lock nor a method that takes it, and on held-out code such "
                            "findings were 0 of 3 true (a join, one build thread, state the "
                            "thread alone changes ordered them): whether the two sides "
                            "really overlap the lint cannot see"
                        )
                elif started:
                    why = evidence
                    caveat = (
                        "; a warning: what runs on threads here ("
                        + ", ".join(f"{name}()" for name in started)
                        + f") uses neither this lock nor what it guards, so whether a thread "
                        f"reaches {method.name}() the lint cannot see"
                    )
                else:
                    why = evidence
                    caveat = (
                        "; a warning: nothing here starts a thread on this class's "
                        "methods, so whether threads reach both sides the lint cannot see"
                    )
                finding = at(
                    module,
                    created,
                    "RC106",
                    f"asyncio.{kind} `self.{attr}` guards `{touched[0]}`, which synchronous "
                    f"{method.name}() also uses, and {why}: an asyncio lock cannot "
                    "exclude other threads; use a threading.Lock" + caveat,
                    severity="error" if reaching and reaching[0] in taking else "warning",
                )
                yield demote(finding, "RC106, a thread started")
                break


def _reaching_the_lock(
    module: Module,
    methods: dict[str, FunctionNode],
    started: dict[str, str],
    lock: str,
    guarded: set[str],
) -> tuple[list[str], set[str]]:
    """The methods started on threads that use the lock, what it guards, or a method taking
    it; and those of them that use the lock or a method taking it.

    A thread that only pumps data into the loop (``run_coroutine_threadsafe`` of
    coroutines that never take this lock) is no thread on the lock's state: the
    openai-agents Docker session's reader thread, beside an asyncio lock around
    ``self.state`` that a sync getter reads (fourteenth held-out round). The
    reference bridge's proposed fix queues ``self._add_task`` - which takes the
    lock - from its pool thread: that thread is on the lock's side.
    """
    lock_users = {
        name
        for name, method in methods.items()
        if any(self_attr(n, module.self_name(method)) == lock for n in iter_own(method))
    }
    taking = lock_users | {lock}
    reaching: list[str] = []
    on_the_lock: set[str] = set()
    for name in started:
        used = {self_attr(n, module.self_name(methods[name])) for n in iter_own(methods[name])}
        if used & (guarded | taking):
            reaching.append(name)
        if used & taking:
            on_the_lock.add(name)
    return reaching, on_the_lock


def _either_lock(module: Module, info: ClassInfo, created: ast.AST) -> bool:
    """Is the asyncio lock made in one arm of an ``if`` whose other arm makes the threading lock?

    pymodbus' transaction manager takes ``sync_client``: a sync object gets an
    ``RLock``, an async one an ``asyncio.Lock``, never both; the threading lock is
    then no evidence that threads reach the asyncio one. Any threading lock made
    outside such an arm keeps the evidence.
    """
    sides: list[tuple[set[int], set[int]]] = []
    for method in module.all_methods(info).values():
        for node in iter_own(method):
            if isinstance(node, ast.If):
                sides.append(
                    (
                        {id(n) for stmt in node.body for n in ast.walk(stmt)},
                        {id(n) for stmt in node.orelse for n in ast.walk(stmt)},
                    )
                )
    for method in module.all_methods(info).values():
        for node in iter_own(method):
            if isinstance(node, ast.Assign) and module.threading_lock(node.value):
                if not any(
                    (id(created) in one and id(node) in other)
                    or (id(created) in other and id(node) in one)
                    for one, other in sides
                ):
                    return False
    return True


def _only_called_under(module: Module, methods: object, lock: str) -> set[str]:
    """Methods the class names only as ``self.m(...)`` calls inside ``async with self.<lock>:``.

    aioredis 2's ``make_connection()`` runs in the coroutine that holds the pool's
    asyncio lock: a helper of the loop side, which no thread enters.
    """
    inside: dict[str, bool] = {}
    for method in methods:  # type: ignore[attr-defined]
        me = module.self_name(method)

        def visit(node: ast.AST, held: bool, me: str | None = me) -> None:
            if isinstance(node, ast.AsyncWith) and any(
                self_attr(item.context_expr, me) == lock for item in node.items
            ):
                held = True
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Attribute) and self_attr(child, me) is not None:
                    called = isinstance(node, ast.Call) and node.func is child
                    inside[child.attr] = inside.get(child.attr, True) and held and called
                if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                    visit(child, held)

        visit(method, False)
    return {name for name, ok in inside.items() if ok}


def _recreates(module: Module, method: FunctionNode, me: str | None, lock: str) -> bool:
    """Does ``method`` bind ``self.<lock>`` to a new asyncio primitive?

    aioredis 2's ``ConnectionPool.reset()``: the child of a fork rebuilds the
    pool's state, lock included. It uses nothing the old lock guards; no task
    can hold the new lock yet.
    """
    return any(
        isinstance(node, ast.Assign)
        and any(self_attr(target, me) == lock for target in node.targets)
        and module.asyncio_primitive(node.value) is not None
        for node in iter_own(method)
    )


#: methods that build the object: what they bind, no other thread sees half-made
_CONSTRUCTION = frozenset({"__init__", "__post_init__", "__new__"})


def _set_at_construction(module: Module, methods: object) -> set[str]:
    """Attributes the class changes only while constructing the object (bound in
    ``__init__``, never rebound or mutated by another method or a callback).

    Home Assistant's stream binds ``self.hass`` in ``__init__`` and only reads it
    after; crewai's job runner only calls its ``format_error`` (sixteenth round,
    #30 and #5). An asyncio lock's failure to exclude threads matters for what
    someone changes while both sides run; a value fixed before either starts is
    not that. A change in a function nested in ``__init__`` runs later: it counts.
    """
    inside: set[str] = set()
    outside: set[str] = set()
    safe: set[str] = set()  # bound to an object threads may share: only rebinding changes it
    for method in methods:  # type: ignore[attr-defined]
        me = module.self_name(method)
        if method.name in _CONSTRUCTION:
            for node in iter_own(method):
                if (attr := _changed_attr(node, me)) is not None:
                    inside.add(attr)
                    if isinstance(node, ast.Attribute) and _thread_safe_value(node, method):
                        safe.add(attr)
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                    outside.update(_changes_in(node, me, rebinds_only=False))
        else:
            outside.update(_changes_in(method, me, rebinds_only=False))
    rebound: set[str] = set()
    for method in methods:  # type: ignore[attr-defined]
        if method.name not in _CONSTRUCTION:
            rebound.update(_changes_in(method, module.self_name(method), rebinds_only=True))
    return (inside - outside) | (safe - rebound)


def _read_once_per_hold(module: Module, methods: dict[str, FunctionNode], lock: str) -> set[str]:
    """Attributes that every ``async with self.<lock>:`` block reads at most once.

    One read inside the block sees one whole value whether or not a thread
    rebinds the attribute meanwhile; the lock makes nothing atomic for it (Home
    Assistant's stream logs ``self.source`` inside its start/stop lock, and
    ``update_source()`` rebinds it from the loop; sixteenth round #30). A check
    and a use of the attribute in one hold (two reads) rely on it staying put,
    and stay counted; so does an attribute the block changes (the caller leaves
    those out), itself or through a method of the class it calls.
    """
    counts: dict[str, int] = {}
    for method in methods.values():
        me = module.self_name(method)
        for node in iter_own(method):
            if isinstance(node, ast.AsyncWith) and any(
                self_attr(item.context_expr, me) == lock for item in node.items
            ):
                here: dict[str, int] = {}
                for inner in ast.walk(node):
                    if (attr := self_attr(inner, me)) is not None:
                        here[attr] = here.get(attr, 0) + 1
                        callee = methods.get(attr)
                        if callee is not None and callee is not method:
                            # ``if self._created >= 10: return self.make_connection()``,
                            # whose helper changes ``_created``: a check and an act
                            for changed in _changes_in(callee, module.self_name(callee), False):
                                here[changed] = here.get(changed, 0) + 2
                for attr, count in here.items():
                    counts[attr] = max(counts.get(attr, 0), count)
    return {attr for attr, count in counts.items() if count == 1}


#: thread-safe objects: ``set()``/``clear()``/``put()`` on them need no lock of ours
_THREAD_SAFE = re.compile(
    r"(?:threading\.(?:Event|Lock|RLock|Condition|Semaphore|BoundedSemaphore|Barrier)"
    r"|queue\.(?:Queue|SimpleQueue|LifoQueue|PriorityQueue))$"
)


def _thread_safe_value(target: ast.Attribute, method: FunctionNode) -> bool:
    """Is ``self.x`` bound, in ``method``, to a new ``threading.Event()``, ``queue.Queue()``...?

    Home Assistant's stream sets and clears a ``threading.Event`` under its
    asyncio start/stop lock and in the worker thread (sixteenth round #30): the
    event is made for exactly that, and is no state the lock must guard.
    """
    for node in iter_own(method):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if (
            isinstance(node, ast.Assign | ast.AnnAssign)
            and target in targets
            and isinstance(node.value, ast.Call)
            and (name := dotted(node.value.func)) is not None
        ):
            return _THREAD_SAFE.match(name) is not None
    return False


def _changes_in(func: ast.AST, me: str | None, rebinds_only: bool) -> set[str]:
    return {
        attr
        for node in ast.walk(func)
        if (not rebinds_only or isinstance(node, ast.Attribute))
        and (attr := _changed_attr(node, me)) is not None
    }


def _created_in(info: ClassInfo, node: ast.AST) -> bool:
    return any(node in ast.walk(method) for method in info.methods.values())


def _guarded_by(module: Module, methods: object, lock: str, changes_only: bool = False) -> set[str]:
    """Attributes used inside ``async with self.<lock>:`` (only those changed there).

    A change made while a ``with <threading lock>:`` inside the block is held as
    well is not counted: threads that take that lock are excluded by it (wandb's
    asyncio manager changes ``_remaining_tasks`` under its ``threading.Lock`` on
    the loop and in the sync ``_schedule``, the ``asyncio.Condition`` around it
    only wakes the loop; sixteenth held-out round).
    """
    guarded: set[str] = set()
    for method in methods:  # type: ignore[attr-defined]
        me = module.self_name(method)
        for node in iter_own(method):
            if isinstance(node, ast.AsyncWith) and any(
                self_attr(item.context_expr, me) == lock for item in node.items
            ):
                inside = _outside_thread_lock_nodes(node) if changes_only else ast.walk(node)
                for inner in inside:
                    attr = _changed_attr(inner, me) if changes_only else self_attr(inner, me)
                    if attr is not None and attr != lock:
                        guarded.add(attr)
    return guarded


def _outside_thread_lock_nodes(block: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``block`` not inside a ``with <lock>:`` of its own."""
    yield block
    for child in ast.iter_child_nodes(block):
        if isinstance(child, ast.With) and any(is_locklike(i.context_expr) for i in child.items):
            continue
        yield from _outside_thread_lock_nodes(child)


def _changed_attr(node: ast.AST, me: str | None) -> str | None:
    """The ``self.<attr>`` that ``node`` stores into or mutates in place, if any."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
        return self_attr(node, me)
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
        return _root_attr(node.value, me)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in MUTATORS
    ):
        return _root_attr(node.func.value, me)
    return None


def _root_attr(node: ast.expr, me: str | None) -> str | None:
    """``self.x`` behind ``self.x``, ``self.x[k]``, ``self.x.setdefault(k, [])``..."""
    while True:
        attr = self_attr(node, me)
        if attr is not None:
            return attr
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return None


def _outside_thread_locks(method: FunctionNode, me: str | None) -> set[str]:
    """Attributes ``method`` uses outside every ``with <lock>:`` block."""
    found: set[str] = set()

    def visit(node: ast.AST, held: bool) -> None:
        if isinstance(node, ast.With):
            held = held or any(is_locklike(item.context_expr) for item in node.items)
        if not held and (attr := self_attr(node, me)) is not None:
            found.add(attr)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(child, held)

    visit(method, False)
    return found


# ── RC105: compound operations outside a lock ───────────────────────────────


def _mutated_by(module: Module, info: ClassInfo) -> dict[str, set[str]]:
    """``attr`` -> names of methods that mutate ``self.attr`` in place (lambdas included)."""
    found: dict[str, set[str]] = {}
    for method in module.all_methods(info).values():
        if method.name in _SKIP_METHODS:
            continue
        for attr in memo(method, "mutates", partial(_mutates, module, method)):
            found.setdefault(attr, set()).add(method.name)
    return found


def _mutates(module: Module, method: FunctionNode) -> set[str]:
    found: set[str] = set()
    me = module.self_name(method)
    for node in syntax.walk(method):  # ast.walk's order, without context/operator tokens
        attr = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in MUTATORS:
                attr = self_attr(node.func.value, me)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
            attr = self_attr(node.value, me)
        if attr is not None:
            found.add(attr)
    return found


def _removed_by(module: Module, info: ClassInfo) -> set[str]:
    found: set[str] = set()
    for method in module.all_methods(info).values():
        found |= memo(method, "removes", partial(_removes, module, method))
    return found


def _removes(module: Module, method: FunctionNode) -> set[str]:
    found: set[str] = set()
    me = module.self_name(method)
    for node in syntax.walk(method):  # ast.walk's order, without context/operator tokens
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in REMOVERS
            and (attr := self_attr(node.func.value, me)) is not None
        ):
            found.add(attr)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and (attr := self_attr(target.value, me)):
                    found.add(attr)
    return found


def _called_under_lock(module: Module, info: ClassInfo) -> set[str]:
    """Methods whose every ``self.m(...)`` call site in the class holds a lock."""
    methods = module.all_methods(info).values()
    if not any(module.holds_lock_within(method) for method in methods):
        return set()  # no call can be under a lock: no need to walk every method
    locked: dict[str, bool] = {}
    for method in methods:
        calls = memo(method, "thread_calls", partial(_calls_under_lock, module, method))
        for name, always in calls.items():
            locked[name] = locked.get(name, True) and always
    return {name for name, always in locked.items() if always}


def _calls_under_lock(module: Module, method: FunctionNode) -> dict[str, bool]:
    """``self.m(...)`` calls in ``method`` -> does every one hold a ``with`` lock?"""
    locked: dict[str, bool] = {}
    me = module.self_name(method)

    def visit(node: ast.AST, held: bool) -> None:
        if isinstance(node, ast.With):
            held = held or any(is_locklike(item.context_expr) for item in node.items)
        if isinstance(node, ast.Call) and (attr := self_attr(node.func, me)) is not None:
            locked[attr] = locked.get(attr, True) and held
        for child in syntax.children(node):  # no tokens: none is a call, lock or lambda
            if not isinstance(child, ast.Lambda):
                visit(child, held)

    visit(method, False)
    return locked


def _compound_ops(
    module: Module, info: ClassInfo, reason: str, only: set[str] | None = None
) -> Iterator[Finding]:
    """RC105 in one class; ``only`` limits it to these attributes (and drops ``+=``)."""
    mutated = _mutated_by(module, info)
    removed = _removed_by(module, info)
    under_lock = _called_under_lock(module, info)
    for method in info.methods.values():
        if not isinstance(method, ast.FunctionDef) or method.name in _SKIP_METHODS:
            continue
        if method.name in under_lock or module.self_name(method) is None:
            continue
        events = Flow(module, method, klass=info, inline=False).run()
        if only is not None:
            events = [e for e in events if not _self_key(e.key) or e.key[5:] in only]
        found: dict[int, Finding] = {}
        for finding in _rmw(module, events, reason) if only is None else ():
            found.setdefault(finding.line, finding)
        for finding in _check_then_act(module, events, reason, removed):
            found.setdefault(finding.line, finding)
        for finding in _iteration(module, method, events, reason, mutated):
            found.setdefault(finding.line, finding)
        for finding in _stale_position(module, events, reason, mutated):
            found.setdefault(finding.line, finding)
        yield from found.values()


def _self_key(key: str) -> bool:
    return key.startswith("self.")


def _rmw(module: Module, events: list[Event], reason: str) -> Iterator[Finding]:
    by_order = {e.order: e for e in events}
    for write in events:
        if write.kind not in {"write", "mutate"} or not _self_key(write.key):
            continue
        if write.kind == "mutate" and write.detail not in {"setitem", "local-key"}:
            continue
        for order in write.sources:
            read = by_order.get(order)
            if read is None or read.key != write.key or not reaches(read, write):
                continue
            if not common_lock(read, write, sync_only=True):
                yield at(
                    module,
                    write.node,
                    "RC105",
                    f"read-modify-write of `{show(write.key)}` outside a lock, and {reason}: "
                    "another thread can update it between the read and the write",
                )
                break


def _check_then_act(
    module: Module, events: list[Event], reason: str, removed: set[str]
) -> Iterator[Finding]:
    checks = [e for e in events if e.kind == "check" and _self_key(e.key)]
    settled: set[int] = set()  # checks whose first action has been judged
    for act in events:
        if not _self_key(act.key):
            continue
        if act.kind == "index":
            if act.key[5:] not in removed:
                continue
        elif act.kind not in {"write", "mutate"}:
            continue
        for test in checks:
            if test.key != act.key or not reaches(test, act) or id(test.node) in settled:
                continue
            inside = any(arm.node == test.scope for arm in act.path)
            if not (inside or (test.guard and act.order > test.end)):
                continue
            settled.add(id(test.node))  # only the first action counts: later ones
            if common_lock(test, act, sync_only=True):  # (a reset in `finally`) are
                continue  # not guarded by the check any more
            verb = "reads from" if act.kind == "index" else "changes"
            yield at(
                module,
                test.node,
                "RC105",
                f"check of `{show(act.key)}` here, then {verb} it (line "
                f"{getattr(act.node, 'lineno', 0)}) outside one lock, and {reason}: another "
                "thread can change it in between",
                end=act.node,
            )


def _iteration(
    module: Module,
    method: FunctionNode,
    events: list[Event],
    reason: str,
    mutated: dict[str, set[str]],
) -> Iterator[Finding]:
    info = module.class_of(method)
    methods = module.all_methods(info) if info is not None else {}
    for event in events:
        if event.kind != "iterate" or not _self_key(event.key) or event.sync_locks:
            continue
        others = sorted(
            mutated.get(event.key[5:], set()) - {method.name},
            key=lambda name: (isinstance(methods.get(name), ast.AsyncFunctionDef), name),
        )
        if not others:
            continue
        yield at(
            module,
            event.node,
            "RC105",
            f"iterates `{show(event.key)}` outside a lock while {others[0]}() mutates it, "
            f"and {reason}: iteration can fail with 'changed size during iteration' or "
            "miss items; iterate over a snapshot taken under a lock",
        )


def _stale_position(
    module: Module, events: list[Event], reason: str, mutated: dict[str, set[str]]
) -> Iterator[Finding]:
    """``with lock: x = self.items[-1]`` ... then ``x`` used after the lock is released."""
    by_order = {e.order: e for e in events}
    acted_on: set[int] | None = None  # built only once a pick is found: most methods have none
    for write in events:
        if write.kind != "write" or not write.key.startswith("local:"):
            continue
        picks = [
            by_order[o]
            for o in write.sources
            if o in by_order and by_order[o].detail == "pos" and _self_key(by_order[o].key)
        ]
        picks = [p for p in picks if p.sync_locks and mutated.get(p.key[5:])]
        if not picks:
            continue
        pick = picks[0]
        if acted_on is None:
            acted_on = _call_arguments(events)
        for use in events:
            if (
                use.kind == "read"
                and use.key == write.key
                and id(use.node) in acted_on
                and reaches(write, use)
            ):
                if not pick.sync_locks & use.sync_locks:
                    yield at(
                        module,
                        pick.node,
                        "RC105",
                        f"`{ast.unparse(pick.node)}` picks an item by position under a lock, "
                        f"but it is used after the lock is released (line "
                        f"{getattr(use.node, 'lineno', 0)}), and {reason}: other threads "
                        "change which item that position means; pass the item explicitly",
                        end=use.node,
                    )
                    break


def _call_arguments(events: list[Event]) -> set[int]:
    """Ids of names passed as call arguments: where a picked item is acted on."""
    found: set[int] = set()
    roots = {id(e.site): e.site for e in events}
    for root in roots.values():
        for node in ast.walk(root):
            if isinstance(node, ast.Call):
                for arg in [*node.args, *(kw.value for kw in node.keywords)]:
                    if isinstance(arg, ast.Name):
                        found.add(id(arg))
    return found
