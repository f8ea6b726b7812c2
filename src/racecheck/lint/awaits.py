"""RC101-RC103: shared state whose meaning changes while a coroutine is suspended.

In asyncio only an ``await`` (or ``async with``/``async for``) lets another task
run, so the code between two awaits is atomic. The three shapes here are the
ones where a coroutine *relies* on shared state staying put across an await:

* RC101 writes ``self.x``, awaits, and reads ``self.x`` back, treating the
  shared object as per-call scratch space (marsys' ``_current_instance``);
* RC102 checks ``self.x`` (``is None``, ``key not in``), awaits, then acts on
  the check (double initialisation, duplicate work, a lost entry);
* RC103 reads ``self.x``, awaits, and writes back a value computed from the old
  read (a lost update; ``self.x += await f()`` is the one-line version).

All three stay quiet when one lock region encloses the whole sequence. RC101
also requires the written value to be per-call data (a local, a parameter, an
awaited result): writing a constant such as ``self._state = CLOSING`` is a
state machine, not scratch space.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterator
from dataclasses import replace
from functools import partial

from racecheck.lint import concurrency
from racecheck.lint import module as nodes  # `nodes.children`: the counted walk
from racecheck.lint.callers import guarded_callers
from racecheck.lint.fanout import Site as FanoutSite
from racecheck.lint.fanout import _sites as fanout_sites
from racecheck.lint.findings import Finding
from racecheck.lint.flow import Event, Flow, common_lock, ending, reaches
from racecheck.lint.module import (
    ClassInfo,
    FunctionNode,
    Module,
    dotted,
    is_locklike,
    iter_own,
    last_name,
    memo,
    params,
)
from racecheck.lint.report import at, line_of, show, where
from racecheck.lint.severity import demote


def check(module: Module, codes: frozenset[str]) -> Iterator[Finding]:
    if not codes & {"RC101", "RC102", "RC103"}:
        return
    locked: dict[int, set[str]] = {}
    drivers: dict[int, dict[str, str]] = {}
    flows = {
        id(func): _Facts(Flow(module, func, closure=module.closure(func)).run())
        for func in module.function_nodes
        if isinstance(func, ast.AsyncFunctionDef) and _suspends(func)
    }
    owned: set[int] | None = None
    for func in module.function_nodes:
        if not isinstance(func, ast.AsyncFunctionDef):
            continue
        if any(is_locklike(d.func if isinstance(d, ast.Call) else d) for d in func.decorator_list):
            continue  # `@operation_lock`: the wrapper holds a lock around the whole call
        facts = flows.get(id(func))
        if facts is None or not facts.awaits:
            continue
        found: list[Finding] = []
        if "RC101" in codes:
            once = _started_once(module, func)
            found.extend(_scratch_state(module, facts, once))
        if "RC102" in codes:
            found.extend(_check_then_act(module, facts, func))
        if "RC103" in codes:
            lost = list(_lost_update(module, facts))
            # `self.x += await f()` after a check of `self.x`: one statement, one
            # interleaving; RC103 names it (aiobotocore's chunked reader had both)
            written = {f.line for f in lost}
            found = [f for f in found if f.code != "RC102" or f.end_line not in written]
            found.extend(lost)
        # What can excuse a finding is asked only of a method that has one: on a
        # large module these class-wide walks cost more than the rules themselves
        # (issue 14's time per file), and most methods have nothing to excuse.
        if not found:
            continue
        if owned is None:
            owned = _owned(module)
        if id(func) in owned:
            continue  # owned: only one task ever holds the object it runs on
        info = module.class_of(func)
        driver = None
        if info is not None:
            if id(info) not in drivers:
                drivers[id(info)] = _lifecycle(module, info)
            driver = drivers[id(info)].get(func.name)
            if id(info) not in locked:
                locked[id(info)] = _awaited_under_lock(module, info) | _behind_once_guards(
                    module, info, flows
                )
            if func.name in locked[id(info)]:
                continue  # every caller holds a lock, or runs it once per object
        outside = (
            driver is None
            and info is not None
            and any(f.severity == "error" for f in found)
            and _called_from_outside(module, info, func)
        )
        for finding in found:
            if finding.code == "RC101" and finding.severity == "error" and driver is None:
                if func.name not in memo(
                    module.tree, "run_concurrently", partial(_run_concurrently, module)
                ):
                    finding = replace(
                        finding,
                        severity="warning",
                        message=f"{finding.message}; a warning: nothing in this module runs "
                        f"{func.name}() concurrently{_parts_note(module, func.name)}, and a "
                        "write read back with no check is weak evidence (most were set-up "
                        "steps on held-out code)",
                    )
            if outside and finding.severity == "error":
                finding = replace(
                    finding,
                    severity="warning",
                    message=f"{finding.message}; but nothing in this module names "
                    f"{func.name}(): its caller is elsewhere (a base class from another "
                    "module, a dynamic getattr), and whether that caller holds a lock or "
                    "runs it once the lint cannot see",
                )
            if (
                driver is None
                and finding.severity == "error"
                and finding.code in ("RC102", "RC103")
                and (
                    steps := guarded_callers(
                        module, func.name, info.node.name if info is not None else None
                    )
                )
                is not None
            ):
                finding = replace(
                    finding,
                    severity="warning",
                    message=f"{finding.message}; but the package calls {func.name}() only "
                    f"on lifecycle paths ({steps.where}): it races only when a program runs "
                    "one object's start-up, reconnect or driver twice at once"
                    if not steps.locks
                    else f"{finding.message}; but every caller in the package holds a lock "
                    f"({', '.join(steps.locks)}) or is a lifecycle step ({steps.where}): it "
                    "races only if those callers hold different locks, or a caller outside "
                    "the package holds none",
                )
            if driver is not None and finding.severity == "error":
                finding = replace(
                    finding,
                    severity="warning",
                    message=f"{finding.message}; but {func.name}() drives the object's "
                    f"life ({driver}): only a program that runs it twice at once on one "
                    "object races here",
                )
            if finding.severity == "error" and finding.code in ("RC102", "RC103"):
                finding = _needs_concurrency(module, func, info, finding)
            if finding.code == "RC101":
                finding = demote(finding, "RC101, a write read back")
            yield finding


def _needs_concurrency(
    module: Module, func: FunctionNode, info: ClassInfo | None, finding: Finding
) -> Finding:
    """An RC102/RC103 error stays one only with evidence that two tasks run it at once.

    Since lint20 (:mod:`racecheck.lint.severity`) only a counted resource keeps
    the error; the evidence of the eleventh round's cut (the package spawning the
    method, the module fanning it out) is named in a warning with its held-out
    record, and so is the shape alone in a lone file.
    """
    if finding.code == "RC102" and concurrency.counted(
        module, func, info, finding.line, finding.end_line
    ):
        return replace(finding, message=f"{finding.message} (a counted resource: shared by design)")
    portion = None
    packaged = concurrency.in_package(module)
    if not packaged:
        portion = concurrency.in_namespace_portion(module)
    if portion is None and not packaged:
        # a lone file or snippet: no package to search, the shape is all there is
        return demote(finding, "the shape alone")
    here = memo(module.tree, "run_concurrently", partial(_run_concurrently, module))
    why = concurrency.evidence(module, func, info, here)
    if why is not None:
        kind = "a fan-out in the module" if "fanned out" in why else "a spawn the package shows"
        return demote(finding, kind, why)
    if portion is not None:
        return replace(
            finding,
            severity="warning",
            message=f"{finding.message}; a warning: this module is in a directory without "
            f"__init__.py inside a package (`{portion}`), so no package was searched for "
            f"what runs {func.name}() at once, and the module itself runs it in no two "
            "tasks: such errors were 15 true of 20 on held-out code, under the 90% an error "
            "promises",
        )
    named = concurrency.shared_by_design(info)
    if named is not None:
        return replace(
            finding,
            severity="warning",
            message=f"{finding.message}; a warning: {named} is named as shared by design (a "
            f"pool, cache, limiter, queue or lock), but nothing in the package runs "
            f"{func.name}() in two tasks or threads at once (no create_task, gather, "
            "TaskGroup, executor or Thread reaches it within three callers): on held-out "
            "code a class name alone was wrong more often than right",
        )
    what = f"`{info.node.name}`" if info is not None else "the module"
    return replace(
        finding,
        severity="warning",
        message=f"{finding.message}; a warning: nothing in the package runs {func.name}() "
        f"in two tasks or threads at once{_parts_note(module, func.name)} (no create_task, "
        "gather, TaskGroup, executor or "
        f"Thread reaches it within three callers) and {what} is no pool, cache or limiter: "
        "only a caller outside the package, or misuse, can race it",
    )


def _parts_note(module: Module, name: str) -> str:
    """Why the module's own fan-out of ``name`` was no evidence, if it was left out."""
    where = memo(module.tree, "run_on_parts", partial(_run_on_parts, module)).get(name)
    return "" if where is None else f" (its fan-out at {where}, each item an object of its own)"


def _run_concurrently(module: Module) -> frozenset[str]:
    """Names of functions the module itself fans out, and what those call (one hop).

    RC101 (write, await, read back) names no check: the write may be a set-up
    step's configuration as well as a per-call value. On the held-out rounds 2
    of its 29 errors were true, nearly all the rest set-up methods run once per
    object. It is an error when the module shows the method running in several
    tasks at once: the target of a fan-out (``create_task`` or ``start_soon``
    in a loop, ``gather`` over several calls), or a method such a target calls
    (marsys' orchestrator starts ``_tick(branch)`` per branch, and ``_tick``
    calls ``runtime.step(branch)``).
    """
    targets: set[str] = set()
    for func in module.function_nodes:
        sites = fanout_sites(func)
        waited = _waited_at_once(func) if sites else set()
        for site in sites:
            if id(site.node) in waited:
                continue  # one task at a time: each is waited for before the next starts
            if _on_own_parts(module, func, site) is not None:
                continue  # each copy on another item of the object's own collection
            if site.kind == "task" and (name := last_name(site.target)) is not None:
                targets.add(name)
    reached = set(targets)
    for func in module.function_nodes:
        if func.name in targets:
            built = _fresh_locals(module, func, any_class=True)
            for node in iter_own(func):
                if isinstance(node, ast.Call) and (name := last_name(node.func)) is not None:
                    if (
                        isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name)
                        and node.func.value.id in built
                    ):
                        # ``vehicle = VehicleProxy(...)``; ``await vehicle.async_initialise()``:
                        # each copy calls it on an object of its own (Home Assistant's
                        # renault hub, sixteenth round #27: the hub's own same-named
                        # set-up step was taken for fanned out)
                        continue
                    reached.add(name)
    return frozenset(reached)


def _run_on_parts(module: Module) -> dict[str, str]:
    """Names the module fans out only over its objects' own parts, with where.

    What :func:`_run_concurrently` leaves out for :func:`_on_own_parts`, for the
    warning's message.
    """
    found: dict[str, str] = {}
    for func in module.function_nodes:
        for site in fanout_sites(func):
            parts = _on_own_parts(module, func, site)
            if parts is not None and (name := last_name(site.target)) is not None:
                found.setdefault(
                    name, f"line {getattr(site.node, 'lineno', 0)}: once on each item of {parts}"
                )
    return found


def _on_own_parts(module: Module, func: FunctionNode, site: FanoutSite) -> str | None:
    """``self.<attr>`` when each copy of the fan-out calls its method on another item of it.

    chainlit's ``Message.send()`` gathers ``[action.send(...) for action in
    self.actions]``: one call on each part of the message, each part an object
    of its own, so the fan-out does not show one object running ``send()``
    twice at once. Its eight errors on the seventeenth held-out round were all
    false (lint19, docs/lint.md "Precision per evidence cell"). A collection
    the caller hands in (``for m in machines``) stays evidence: nothing shows
    its items are distinct parts of one owner.
    """
    target = site.target
    if not (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id in site.per_item
    ):
        return None
    me = module.self_name(func)
    if me is None:
        return None
    item = target.value.id
    for node in ast.walk(func):
        if isinstance(node, ast.comprehension | ast.For | ast.AsyncFor) and any(
            isinstance(n, ast.Name) and n.id == item for n in ast.walk(node.target)
        ):
            source = node.iter
            if (
                isinstance(source, ast.Attribute)
                and isinstance(source.value, ast.Name)
                and source.value.id == me
            ):
                return f"{me}.{source.attr}"
            return None  # the item's first binding decides
    return None


def _waited_at_once(func: FunctionNode) -> set[int]:
    """Task starts (``create_task(...)`` calls) that the same block waits for before going on.

    ``self._turn = asyncio.create_task(self._run_turn())`` and then ``await
    asyncio.wait([self._turn])`` in a loop (google-adk's cascade connection,
    sixteenth round #12: a task only so a barge-in can cancel the turn): the
    loop starts one turn at a time, which is no fan-out. The wait must be a
    later statement of the same block that awaits the task itself or a call
    naming it (``wait``, ``wait_for``, ``shield``, ``gather``).
    """
    found: set[int] = set()
    for node in iter_own(func):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if not isinstance(block, list):
                continue
            for index, stmt in enumerate(block):
                if not (
                    isinstance(stmt, ast.Assign | ast.AnnAssign)
                    and isinstance(stmt.value, ast.Call)
                    and (
                        target := dotted(
                            stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
                        )
                    )
                ):
                    continue
                if any(_awaits_named(later, target) for later in block[index + 1 :]):
                    found.add(id(stmt.value))
    return found


def _awaits_named(stmt: ast.stmt, target: str) -> bool:
    """Is ``stmt`` an ``await`` of ``target`` or of a call whose arguments name it?
    Or a ``try`` whose body holds one (camel's MCP client: ``try: await
    asyncio.shield(connect_task)``; seventeenth round, fitted)."""
    if isinstance(stmt, ast.Try):
        return any(_awaits_named(inner, target) for inner in stmt.body)
    value = stmt.value if isinstance(stmt, ast.Expr | ast.Assign | ast.AnnAssign) else None
    if not isinstance(value, ast.Await):
        return False
    return any(
        dotted(n) == target
        for n in ast.walk(value.value)
        if isinstance(n, ast.Name | ast.Attribute)
    )


def _called_from_outside(module: Module, info: ClassInfo, func: FunctionNode) -> bool:
    """A private method nothing in the module names, in a class with a base from elsewhere.

    psycopg-pool's null pool overrides ``_get_ready_connection``, which the base
    class in another module calls inside ``async with self._lock:``. The lint
    reads one module: the caller, and the lock it holds, are out of sight. A
    public method may be called by anyone, and a private one called here is
    judged at its callers, so both stay as they are.
    """
    name = func.name
    if not name.startswith("_") or name.endswith("__"):
        return False
    if all(base in module.classes for base in _base_names(info)):
        return False  # every base is here: its callers would be here too
    return name not in memo(module.tree, "named_attrs", partial(_named_attrs, module.tree))


def _base_names(info: ClassInfo) -> list[str]:
    """The last name of every base, a generic's too: ``DefaultSubscriber["Msg"]`` is a
    base named ``DefaultSubscriber`` (faststream's subscribers; ``info.bases`` holds
    only plain names, so a subscripted base from another module went unseen)."""
    names = []
    for base in info.node.bases:
        while isinstance(base, ast.Subscript):
            base = base.value
        name = last_name(base)
        names.append(name if name is not None else "")  # a call or an expression: elsewhere
    return names


def _named_attrs(tree: ast.Module) -> frozenset[str]:
    """Every attribute name the module reads or calls, and every string it holds."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)
    return frozenset(found)


def _suspends(func: ast.AsyncFunctionDef) -> bool:
    """Does ``func``'s own body await? Only then can its flow hold an await: a callee is
    inlined with its awaits only where it is awaited, and that await is here."""
    return any(isinstance(n, ast.Await | ast.AsyncFor | ast.AsyncWith) for n in iter_own(func))


#: calls whose coroutine argument is the main of the event loop they run
_LOOP_MAINS = frozenset({"run", "asyncio_run", "run_until_complete"})


#: classes whose ``async with`` many tasks enter at once by design: a lock's or a
#: limiter's ``__aenter__`` is the operation, not a start-up step
_SHARED_ENTRY = re.compile(
    r"lock|mutex|sem|cond|limit|throttl|gate|barrier|guard|latch|pool", re.IGNORECASE
)


def _lifecycle(module: Module, info: ClassInfo) -> dict[str, str]:
    """Coroutine methods that drive an object's life, not operations on it: name -> why.

    The await rules take every coroutine method for an operation that tasks may
    call at once on a shared object. A driver is run once per object by
    construction: awaiting the object (``__await__`` returns ``self.run()``),
    trio's ``nursery.start`` (a ``task_status`` parameter), the main coroutine
    of an event loop (``asyncio.run(self.serve())``), or a method that ends by
    serving until shutdown (its last statement a ``while`` loop that awaits) and
    that the class never starts several copies of. A private method every
    reference to which is in a driver (and that is not started again and again
    there) is part of it; a public one only when ``__await__`` is its one user.
    Findings in a driver are warnings: they race only when a program starts one
    object twice at once (hypercorn's servers, uvicorn's ``Server._serve``,
    aiosqlite's ``Connection._connect``).
    """
    methods = module.all_methods(info)
    refs: dict[str, list[tuple[str, bool]]] = {}  # name -> (referrer, started repeatedly)
    drivers: dict[str, str] = {}
    for method in methods.values():
        for name, repeated, main in memo(
            method, "lifecycle_refs", partial(_method_refs, module, method)
        ):
            if name in methods:
                refs.setdefault(name, []).append((method.name, repeated))
                if main and isinstance(methods[name], ast.AsyncFunctionDef):
                    drivers.setdefault(name, "the main coroutine of an event loop it runs")
    if "__await__" in methods:
        drivers["__await__"] = "the object is started by awaiting it"
    if "__aenter__" in methods and not _SHARED_ENTRY.search(info.node.name):
        # telethon's Conversation resolves its chat, aiomisc's proxy starts its server:
        # entering one such object twice at once is starting it twice (tenth round)
        drivers["__aenter__"] = "entering the object (`async with`) starts it"
    init = methods.get("__init__")
    started = _task_starts(module, init) if init is not None else set()
    kept: dict[str, int] = {}  # name -> how often a method keeps a task of it on the object
    for method in methods.values():
        for name in memo(method, "kept_tasks", partial(_kept_task_starts, module, method)):
            kept[name] = kept.get(name, 0) + 1
    for name, method in methods.items():
        if not isinstance(method, ast.AsyncFunctionDef) or name in drivers:
            continue
        if any(repeated for _, repeated in refs.get(name, [])):
            continue  # several copies of it run at once: a pool of workers, not a driver
        if "task_status" in params(method):
            drivers[name] = "started once by nursery.start(), with task_status"
        elif _serves_until_shutdown(method.body):
            drivers[name] = "it ends by serving until shutdown"
        elif name in started and all(user == "__init__" for user, _ in refs.get(name, [])):
            drivers[name] = "the object's background task, started once in __init__"
        elif kept.get(name, 0) and kept[name] == len(refs.get(name, [])):
            drivers[name] = "the object's own task, kept on it (`self.<task> = create_task(...)`)"
    changed = True
    while changed:  # helpers only drivers use are part of them
        changed = False
        for name, method in methods.items():
            users = refs.get(name, [])
            if name in drivers or not isinstance(method, ast.AsyncFunctionDef):
                continue
            private = name.startswith("_") and not name.endswith("__")
            inside = all(user in drivers and not repeated for user, repeated in users)
            if not (users and inside and (private or all(u == "__await__" for u, _ in users))):
                if _starts_up(name, method) and all(
                    (u in drivers or u in _ENTRIES) and not repeated for u, repeated in users
                ):
                    drivers[name] = (
                        "a start-up step no operation of the class calls: run once by "
                        "whoever builds the object"
                    )
                    changed = True
                continue
            if inside:
                first = users[0][0]
                drivers[name] = (
                    "only __await__() starts it"
                    if first == "__await__"
                    else f"only {first}(), which drives the object, calls it"
                    if len({user for user, _ in users}) == 1
                    else "only the object's drivers call it"
                )
                changed = True
    return {name: why for name, why in drivers.items() if name != "__await__"}


#: calls that start a coroutine as a task of its own
_TASK_STARTS = frozenset({"create_task", "ensure_future", "start_soon", "spawn"})

#: first words of public coroutine methods that start an object up rather than use it
_STARTUP_VERBS = frozenset(
    {
        "connect",
        "start",
        "startup",
        "open",
        "run",
        "main",
        "serve",
        "initialize",
        "init",
        "setup",
        "login",
        "handshake",
        "listen",
        "bind",
    }
)

#: the protocol methods that start an object up when a program enters or awaits it
_ENTRIES = frozenset({"__aenter__", "__await__"})


def _starts_up(name: str, method: ast.AsyncFunctionDef) -> bool:
    """``connect()``, ``start()``, ``connect_tls()``, ``__aenter__``: a start-up step by name.

    Judged by name on purpose, as locks are: a public method named so is the step
    a program runs once on an object it has just built (nats' ``Service.start``
    from ``add_service``, a transport's ``connect_tls``). Only when nothing in the
    class calls it except the object's entry points and drivers: a lazy
    ``connect()`` that the operations call on use is an operation. Nor is one that
    returns a value (``return self._con``, ``return self``): callers call such a
    getter whenever they need what it returns, so it is an operation too.
    """
    if name != "__aenter__" and (
        name.startswith("_") or name.split("_", 1)[0] not in _STARTUP_VERBS
    ):
        return False
    return not any(
        isinstance(node, ast.Return)
        and node.value is not None
        and not (isinstance(node.value, ast.Constant) and node.value.value is None)
        for node in iter_own(method)
    )


def _kept_task_starts(module: Module, method: FunctionNode) -> list[str]:
    """Methods ``method`` starts as a task kept on the object: ``self.t = create_task(self.m())``.

    One object, one such task (arq's ``Worker.main``, started by ``run()`` or
    ``async_run()`` into ``self.main_task``): a second is a program starting the
    object twice. A task started in a loop is one of a pool and stays an operation
    (``_method_refs`` marks it as started repeatedly).
    """
    me = module.self_name(method)
    found = []
    for node in iter_own(method):
        if not isinstance(node, ast.Assign | ast.AnnAssign) or not isinstance(node.value, ast.Call):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not any(
            isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me
            for t in targets
        ):
            continue
        call = node.value
        if last_name(call.func) in _TASK_STARTS and call.args:
            first = call.args[0]
            target = first.func if isinstance(first, ast.Call) else first
            if isinstance(target, ast.Attribute) and _on(target, me):
                found.append(target.attr)
    return found


def _task_starts(module: Module, init: FunctionNode) -> set[str]:
    """Methods ``__init__`` starts as a task: ``self._task = create_task(self._run())``.

    ``__init__`` runs once per object, so a task it starts (outside a loop, which
    ``_method_refs`` sees) is the object's one background task (aiokafka's
    coordination routine), not an operation callers start at will.
    """
    me = module.self_name(init)
    found = set()
    for node in iter_own(init):
        if isinstance(node, ast.Call) and last_name(node.func) in _TASK_STARTS and node.args:
            first = node.args[0]
            target = first.func if isinstance(first, ast.Call) else first
            if isinstance(target, ast.Attribute) and _on(target, me):
                found.add(target.attr)
    return found


def _method_refs(module: Module, method: FunctionNode) -> list[tuple[str, bool, bool]]:
    """``self.<name>`` references in ``method``: (name, started repeatedly, loop main).

    *Started repeatedly*: inside a loop or comprehension and not awaited on the
    spot (``create_task(self.work())`` in a ``for``); an awaited call in a loop
    runs the copies one after another. *Loop main*: the coroutine handed to
    ``asyncio.run``/``run_until_complete``.
    """
    me = module.self_name(method)
    found: list[tuple[str, bool, bool]] = []
    # an await, or a call that runs a loop, is met before the reference inside it
    awaited: set[int] = set()
    mains: set[int] = set()

    def visit(node: ast.AST, looping: bool) -> None:
        for child in nodes.children(node):
            if isinstance(child, ast.Await) and isinstance(child.value, ast.Call):
                awaited.add(id(child.value.func))
            elif isinstance(child, ast.Call) and last_name(child.func) in _LOOP_MAINS:
                if child.args:
                    first = child.args[0]
                    mains.add(id(first.func) if isinstance(first, ast.Call) else id(first))
            elif (
                isinstance(child, ast.Attribute)
                and isinstance(child.value, ast.Name)
                and child.value.id == me
            ):
                found.append((child.attr, looping and id(child) not in awaited, id(child) in mains))
            inner = looping or isinstance(
                child,
                ast.For
                | ast.AsyncFor
                | ast.While
                | ast.comprehension
                # the element of a comprehension is no child of its `comprehension`
                | ast.ListComp
                | ast.SetComp
                | ast.DictComp
                | ast.GeneratorExp,
            )
            visit(child, inner)

    visit(method, False)
    return found


def _serves_until_shutdown(body: list[ast.stmt]) -> bool:
    """Does ``body`` end in a ``while`` loop that awaits (through ``with``/``try`` blocks)?"""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.While):
        return any(isinstance(n, ast.Await | ast.AsyncFor | ast.AsyncWith) for n in ast.walk(last))
    if isinstance(last, ast.With | ast.AsyncWith | ast.Try | ast.TryStar):
        return _serves_until_shutdown(last.body)
    return False


class _Facts:
    """One function's events, indexed once for the questions every rule asks of them.

    The rules ask, for each write, act or read, about every other event (the
    writes of one key, the checks before it, the awaits between): answered by
    scanning the whole list, a function with inlined callees (thousands of
    events) cost the square of its length.
    """

    def __init__(self, events: list[Event]) -> None:
        self.events = events
        self.awaits = [e for e in events if e.kind == "await"]
        self.await_orders = [e.order for e in self.awaits]
        self.entries = [e for e in events if e.kind == "enter"]
        self.checks = [e for e in events if e.kind == "check"]
        self.writes: dict[str, list[Event]] = {}  # key -> its writes, in order
        for event in events:
            if event.kind == "write":
                self.writes.setdefault(event.key, []).append(event)
        #: (key, arm) for every write inside that arm
        self.written_in = {
            (w.key, arm.node) for ws in self.writes.values() for w in ws for arm in w.path
        }
        self.checked_via = {(c.key, id(c.via)) for c in self.checks}
        self.first_via: dict[int, int] = {}  # inlined callee -> the order of its first event
        for event in events:
            if event.via is not None:
                self.first_via.setdefault(id(event.via), event.order)
        self._once: list[Event] | None = None
        self._once_in_calls: list[tuple[Event, tuple[int, ...]]] | None = None

    def next_await(self, after: int) -> int | None:
        """The order of the first await after order ``after``."""
        index = bisect.bisect_right(self.await_orders, after)
        return self.await_orders[index] if index < len(self.await_orders) else None

    def last_write(self, key: str) -> int:
        writes = self.writes.get(key)
        return writes[-1].order if writes else -1

    @property
    def once(self) -> list[Event]:
        if self._once is None:
            self._once = _once_writes(self)
        return self._once

    @property
    def once_in_calls(self) -> list[tuple[Event, tuple[int, ...]]]:
        """Close-once writes of inlined calls, each with the call it guards the rest of."""
        if self._once_in_calls is None:
            self._once_in_calls = _once_writes_in_calls(self)
        return self._once_in_calls


def _tracked(key: str) -> bool:
    return key.startswith(("self.", "global:"))


def _slot_or_tracked(key: str) -> bool:
    """RC101 also covers a fixed slot of a closure dict: ``state['request']``."""
    return _tracked(key) or (key.startswith("free:") and key.endswith("]"))


def _gap(
    first: Event,
    last: Event,
    awaits: list[Event],
    middle: Event | None = None,
    entries: list[Event] | None = None,
) -> Event | None:
    """An await that runs after ``first`` and before ``last`` with no lock held across all.

    With ``entries`` (the fail-fast sections entered), an await inside a section
    that every run from ``first`` to ``last`` enters after ``first`` is no gap:
    a second task that passed ``first`` meanwhile fails at the section's entry,
    before it reaches ``last``. That excuses a check (RC102) or a read (RC103)
    made before the section, never a write (RC101): the second task has already
    overwritten the attribute when it fails.
    """
    for suspend in awaits:
        if reaches(first, suspend) and reaches(suspend, last):
            held = (first, suspend, last) if middle is None else (first, suspend, middle, last)
            if common_lock(*held):
                continue
            if entries and _refused(first, suspend, last, entries):
                continue
            return suspend
    return None


def _refused(first: Event, suspend: Event, last: Event, entries: list[Event]) -> bool:
    for entry in entries:
        region = int(entry.key.split(":", 1)[1])
        if (
            region in suspend.busy
            and reaches(first, entry)
            and set(entry.path) <= set(last.path)  # not entered only on some runs
            and set(entry.loops) <= set(last.loops)  # nor in a loop that may not run
        ):
            return True
    return False


def _owned(module: Module) -> set[int]:
    """Coroutine methods that only ever run on an object one task holds.

    Two shapes, each judged from every use of the name in the module:

    * the ``__anext__`` of a class that the module only builds as the return
      value of an ``__aiter__`` (a fresh iterator for each ``async for``, which
      is the only caller of its ``__anext__``): asyncpg's ``CursorIterator``;
    * a private method (``_init``) whose every use is a call on an object the
      calling function has just built, in a local of its own (``cursor =
      Cursor(...)``; ``await cursor._init()``): nobody else holds the object
      yet. asyncpg's ``Cursor._init``.

    A class (or method) named anywhere else - handed on, subclassed, called on
    ``self`` or on an attribute - may be shared, and stays checked.
    """
    privates = {
        func.name
        for func in module.function_nodes
        if isinstance(func, ast.AsyncFunctionDef)
        and func.name.startswith("_")
        and not func.name.endswith("__")
        and module.class_of(func) is not None
    }
    # a private class only ever built here: its public methods are the module's too
    made_here = _built_only(module)
    for cls_name in made_here:
        for name, method in module.classes[cls_name].methods.items():
            if isinstance(method, ast.AsyncFunctionDef) and not name.endswith("__"):
                privates.add(name)
    iterators = {name for name, info in module.classes.items() if "__anext__" in info.methods}
    if not privates and not iterators:
        return set()
    scope_of = {  # the function whose own body holds each use of a private name
        id(node): func
        for func in module.function_nodes
        for node in iter_own(func)
        if isinstance(node, ast.Attribute) and node.attr in privates
    }
    returned = {
        id(node.value)
        for func in module.function_nodes
        if func.name == "__aiter__"
        for node in iter_own(func)
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Call)
    }
    called = {
        id(node.func): node for node in module.nodes_of(ast.Call) if isinstance(node.func, ast.Name)
    }
    made: dict[int, frozenset[str]] = {}  # function -> its locals bound only to `C(...)`
    built: dict[str, list[bool]] = {}  # iterator class -> per use: an __aiter__'s return value?
    fresh: dict[str, list[bool]] = {}  # private method -> per use: on an object just built?
    # only the names and attributes: a pass over every node's class was a third of this
    for use in module.nodes_of(ast.Name) if iterators else ():
        if use.id in iterators:
            call = called.get(id(use))
            built.setdefault(use.id, []).append(call is not None and id(call) in returned)
    for node in module.nodes_of(ast.Attribute):
        if node.attr in privates:
            scope = scope_of.get(id(node))
            on = node.value
            if isinstance(on, ast.Name) and scope is not None:
                if id(scope) not in made:
                    made[id(scope)] = _fresh_locals(module, scope)
                ok = on.id in made[id(scope)]
            else:
                ok = (
                    isinstance(on, ast.Call)
                    and isinstance(on.func, ast.Name)
                    and on.func.id in module.classes
                )
            fresh.setdefault(node.attr, []).append(ok)
    owned: set[int] = set()
    for cls_name, uses in built.items():  # every use is a construction an __aiter__ returns
        anext = module.classes[cls_name].methods.get("__anext__")
        if anext is not None and uses and all(uses):
            owned.add(id(anext))
    for func in module.function_nodes:
        uses = fresh.get(func.name, [])
        if func.name in privates and uses and all(uses):
            info = module.class_of(func)
            if func.name.startswith("_") or (info is not None and info.node.name in made_here):
                owned.add(id(func))
    return owned


def _built_only(module: Module) -> set[str]:
    """Private classes (``_Copier``) that the module names only to build one (``_Copier(...)``).

    Nobody outside the module is meant to build one, and inside it the class is
    never subclassed, stored as a factory or handed on: every object of it is
    made by a call here, so who calls its methods is all in this module.
    """
    names = {name for name in module.classes if name.startswith("_") and not name.endswith("__")}
    if not names:
        return set()
    called = {
        id(node.func) for node in module.nodes_of(ast.Call) if isinstance(node.func, ast.Name)
    }
    bad: set[str] = set()
    for node in module.nodes_of(ast.Name):
        if node.id in names and id(node) not in called:
            bad.add(node.id)
    return names - bad


def _awaited_under_lock(module: Module, info: ClassInfo) -> set[str]:
    """Methods whose every ``self.m(...)`` call in the class is inside a lock region."""
    methods = module.all_methods(info).values()
    if not any(module.holds_lock_within(method) for method in methods):
        return set()  # no call can be under a lock: no need to walk every method
    locked: dict[str, bool] = {}
    for method in methods:
        for name, always in _self_uses(module, method).items():
            locked[name] = locked.get(name, True) and always
    return {name for name, always in locked.items() if always}


def _self_uses(module: Module, method: FunctionNode) -> dict[str, bool]:
    """``self.<name>`` uses in ``method`` -> is every one a call made under a lock?

    Per method, once: a class asks about every method it inherits, so walking
    them again for each class of a deep hierarchy repeated the same walks.
    """
    cached: dict[str, bool] | None = getattr(method, "_racecheck_self_uses", None)
    if cached is not None:
        return cached
    locked: dict[str, bool] = {}
    me = module.self_name(method)

    def visit(node: ast.AST, held: bool) -> None:
        if isinstance(node, ast.With | ast.AsyncWith):
            held = held or any(is_locklike(item.context_expr) for item in node.items)
        callee = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if _on(node.func, me):
                callee = node.func
                name = node.func.attr
                locked[name] = locked.get(name, True) and held
        elif isinstance(node, ast.Attribute) and _on(node, me):
            locked[node.attr] = False  # `self.m` handed on (a callback, a task): any caller
        inner = held
        for child in nodes.children(node):
            if child is not callee and not isinstance(child, ast.Lambda):
                visit(child, inner)
            # `await self._lock.acquire()` holds the lock for the statements after it
            # in this block, up to a `self._lock.release()`
            if _lock_statement(child, "acquire"):
                inner = True
            elif _lock_statement(child, "release"):
                inner = held

    visit(method, False)
    setattr(method, "_racecheck_self_uses", locked)  # noqa: B010 - AST nodes take attributes
    return locked


def _lock_statement(stmt: ast.AST, method: str) -> bool:
    """``await self._lock.acquire()`` / ``self._lock.release()`` as a statement."""
    if not isinstance(stmt, ast.Expr):
        return False
    call = stmt.value.value if isinstance(stmt.value, ast.Await) else stmt.value
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == method
        and is_locklike(call.func.value)
    )


def _behind_once_guards(module: Module, info: ClassInfo, flows: dict[int, _Facts]) -> set[str]:
    """Helpers whose every caller in the class runs them at most once per object.

    aiohttp's ``prepare()`` returns early once ``_payload_writer`` is set, and
    ``_start()`` sets it before its first await: whatever ``_start()`` keeps on
    the object is not overwritten by a second caller. The helper must be
    awaited (so it is inlined in the caller's flow) at every call site, and the
    guarded flag written before the helper's first await.
    """
    methods = module.all_methods(info)
    callers: dict[str, list[ast.AsyncFunctionDef | None]] = {}  # None: a sync caller
    for method in methods.values():
        me = module.self_name(method)
        for node in iter_own(method):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if _on(node.func, me):
                    caller = method if isinstance(method, ast.AsyncFunctionDef) else None
                    callers.setdefault(node.func.attr, []).append(caller)
    protected = set()
    for name, sites in callers.items():
        helper = methods.get(name)
        if not isinstance(helper, ast.AsyncFunctionDef):
            continue
        if all(
            caller is not None and id(caller) in flows and _runs_once_in(flows[id(caller)], helper)
            for caller in sites
        ):
            protected.add(name)
    return protected


def _runs_once_in(facts: _Facts, helper: ast.AsyncFunctionDef) -> bool:
    start = facts.first_via.get(id(helper))
    if start is None:
        return False
    first_await = facts.next_await(start - 1)
    return any(
        write.order < (first_await if first_await is not None else write.order + 1)
        for write in facts.once
    )


def _on(node: ast.AST, me: str | None) -> bool:
    """``node`` is ``self.<name>`` (a load)."""
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Load)
        and isinstance(node.value, ast.Name)
        and node.value.id == me
    )


def _started_once(module: Module, func: ast.AsyncFunctionDef) -> bool:
    """Is nested ``func`` named exactly once in its parent, outside any loop, not returned?

    Its closure dict is then per call of the parent: no sibling copy of ``func``
    runs to overwrite a slot. A coroutine that is returned, stored, or started
    in a loop or a comprehension may run many times at once (the fan-out shape).
    """
    parent = module.parent_of(func)
    if parent is None:
        return False
    uses = [
        repeated
        for repeated, inside in _references(parent).get(func.name, [])
        if id(func) not in inside  # a reference in its own body is no start by the parent
    ]
    return uses == [False]


_ESCAPING = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.comprehension,
    ast.Lambda,
    ast.Return,
    ast.Yield,
    ast.Assign,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
)


def _references(parent: FunctionNode) -> dict[str, list[tuple[bool, frozenset[int]]]]:
    """Every name ``parent``'s body mentions -> per mention: repeated or escaping, and
    the functions nested in ``parent`` that the mention sits in.

    Built once per parent: asking each nested coroutine's question with a walk of
    the whole parent made a function with many nested coroutines quadratic.
    """
    cached: dict[str, list[tuple[bool, frozenset[int]]]] | None = getattr(
        parent, "_racecheck_refs", None
    )
    if cached is not None:
        return cached
    found: dict[str, list[tuple[bool, frozenset[int]]]] = {}
    stack: list[tuple[ast.AST, bool, frozenset[int]]] = [(parent, False, frozenset())]
    while stack:
        node, repeated, inside = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Name):
                found.setdefault(child.id, []).append((repeated, inside))
            within = inside
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                within = inside | {id(child)}
            stack.append((child, repeated or isinstance(child, _ESCAPING), within))
    setattr(parent, "_racecheck_refs", found)  # noqa: B010 - AST nodes take attributes
    return found


def _scratch_state(module: Module, facts: _Facts, once: bool = False) -> Iterator[Finding]:
    awaits = facts.awaits
    reported: set[int] = set()
    for read in facts.events:
        if read.kind != "read" or not _slot_or_tracked(read.key) or read.detail == "alias":
            continue
        if once and read.key.startswith("free:"):
            continue  # a closure dict of a coroutine its parent starts once
        before = [w for w in facts.writes.get(read.key, ()) if reaches(w, read)]
        if not before:
            continue
        write = max(before, key=lambda e: e.order)
        if write.via is not None or not write.percall or id(where(write)) in reported:
            continue  # a callee's write is the callee's business: it is checked on its own
        if write.looping:
            continue  # a driver loop (`while True:` in a connection's task) owns its object
        if _init_once(write, facts):
            continue
        if write.detail == "augmented" and _adds_to(read, facts):
            continue  # `self.items += mine`, await, `self.items.append(...)`: both only add
        if write.detail == "augmented" and read.detail == "augmented":
            # `self.used += n`, await, `self.used -= n` (modal's upload budget, sixteenth
            # round): a shared total taken back by a relative update, no value read out
            continue
        suspend = _gap(write, read, awaits)
        if suspend is None:
            continue
        reported.add(id(where(write)))
        yield at(
            module,
            where(write),
            "RC101",
            f"`{show(read.key)}` holds per-call data on a shared object: written here, "
            f"awaited across ({line_of(suspend)}), read back ({line_of(read)}); "
            "a concurrent call can overwrite it in between",
            end=where(read),
        )


def _adds_to(read: Event, facts: _Facts) -> bool:
    """Is ``read`` only the receiver of a mutator (``self.items.append(x)``)?

    After ``self.items += mine`` (an augmented write: this call's part added to
    what the object holds), another call adds its own part beside it and
    overwrites nothing; appending more later takes no per-call value back out
    (aioice's ``self._protocols``, thirteenth round). After a plain
    ``self.items = mine`` the same append goes into whatever list another call
    stored, and stays RC101. A read of the value (``self.seq += 1``, await,
    ``send(self.seq)``) may see another call's increment and stays too.
    """
    return any(
        event.kind == "mutate"
        and isinstance(event.node, ast.Call)
        and isinstance(event.node.func, ast.Attribute)
        and event.node.func.value is read.node
        for event in facts.events
        if event.key == read.key
    )


def _init_once(write: Event, facts: _Facts) -> bool:
    """Is ``write`` inside ``if self.x is None:`` (or ``if not self._done:``)?

    A write guarded by a check of the same attribute, or of a flag that the same
    branch sets, happens once per object, not once per call: lazy
    initialisation, not scratch space. (Doing it across an await without a lock
    is RC102's business.)
    """
    arms = {arm.node for arm in write.path}
    for check in facts.checks:
        if check.guard and check.end < write.order:  # `if self._started: return` ...
            if facts.last_write(check.key) > check.end:
                return True  # ... and later `self._started = ...`: a start-once method
        if check.scope not in arms:
            continue
        if check.key == write.key or (check.key, check.scope) in facts.written_in:
            return True
    return False


def _acts(event: Event) -> bool:
    """Does ``event`` act on shared state with per-call data (not a flag flip)?"""
    if event.kind == "write":
        return event.percall or event.detail == "augmented"
    if event.tolerant:
        return False
    if event.detail in {"setitem", "local-key"}:
        return event.percall or event.detail == "local-key"
    if event.detail == "setattr":
        return event.percall  # `self.session.authenticated = True`: a flag flip
    return event.kind == "mutate"


def _governs(check: Event, act: Event) -> bool:
    if check.detail == "membership" and act.kind == "write":
        return False  # `k in self.d`, then rebinding self.d to a fresh table: no stale key
    if check.detail == "recheck":
        return True  # a while loop's exit test: everything after the loop relies on it
    if (
        check.exits_call
        and check.frames
        and act.frames[: len(check.frames)] == check.frames
        and act.order > check.end
    ):
        # an inlined callee's leaving guard governs the rest of that call, as a guard
        # at the top level does (aiortc's `_transmit()`: `if flight >= cwnd: return`
        # right before each increase): the act relies on it, not on an earlier call's
        return True
    inside = any(arm.node == check.scope for arm in act.path)
    return inside or (check.guard and act.order > check.end)


def _rel(node: ast.AST | None) -> str | None:
    """``envelope.rcpt_tos`` for ``self.envelope.rcpt_tos``: the path below the root name."""
    path = dotted(node) if isinstance(node, ast.expr) else None
    return path.split(".", 1)[1] if path is not None and "." in path else None


def _touches_checked_path(check: Event, act: Event) -> bool:
    """Can ``act`` change what ``check`` tested, when it acts below the checked attribute?

    Both are keyed by the attribute of ``self`` they reach (``self.envelope``).
    An act on a field deeper down (``self.envelope.content = ...``,
    ``self.envelope.rcpt_tos.append(...)``) changes the check only when the check
    reads that field or something below it: aiosmtpd's ``if not
    self.envelope.rcpt_tos:`` is not made false by storing ``content``, and nats'
    ``if self._sub and self._sub._jsi:`` not by setting ``self._sub._jsi._fcr``.
    """
    if act.kind != "mutate":
        return True
    node = act.node
    if act.detail == "setattr":
        target: ast.AST | None = node
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        target = node.func.value
    elif isinstance(node, ast.Subscript):
        target = node.value
    else:
        return True
    acted = _rel(target)
    top = act.key.split(".", 1)[1] if act.key.startswith("self.") else None
    if acted is None or top is None or acted == top or not acted.startswith(top + "."):
        return True  # the attribute itself (or a path the lint cannot spell): as before
    read = {
        path
        for n in ast.walk(check.node)
        if isinstance(n, ast.Attribute) and (path := _rel(n)) is not None
    }
    return any(path == acted or path.startswith(acted + ".") for path in read)


def _rebound_between(facts: _Facts, check: Event, act: Event) -> bool:
    """Is the checked attribute itself rebound between the check and a deeper act?

    aiomysql's ``begin_nested``: ``self._transaction = NestedTransaction(...)``,
    then ``self._transaction._savepoint = await ...``: the act reaches the object
    through the attribute again after the await, and may land on another task's.
    """
    return any(
        reaches(check, write) and reaches(write, act) for write in facts.writes.get(act.key, ())
    )


def _once_writes(facts: _Facts) -> list[Event]:
    """Writes after which the method runs at most once per object.

    ``if self._closed: return`` and then ``self._closed = True`` (here or in a
    helper) with no await in between: the first caller sets the flag before it
    suspends, and every later caller leaves at the check.
    """
    found = []
    for check in facts.checks:
        if not check.guard or not _tracked(check.key):
            continue
        first_await = facts.next_await(check.end)
        for write in facts.writes.get(check.key, ()):
            if write.order > check.end and (first_await is None or first_await > write.order):
                found.append(write)
    return found


def _once_writes_in_calls(facts: _Facts) -> list[tuple[Event, tuple[int, ...]]]:
    """``_once_writes`` inside one inlined call: ``await self.close()`` whose ``close()``
    starts ``if self._closed: return`` and sets the flag before its first await.

    The flag guards the rest of that call only (the caller goes on after the
    callee returns), so each write comes with the call's frames.
    """
    found = []
    for check in facts.checks:
        if not check.exits_call or not check.frames or not _tracked(check.key):
            continue
        first_await = facts.next_await(check.end)
        for write in facts.writes.get(check.key, ()):
            if (
                write.order > check.end
                and write.frames[: len(check.frames)] == check.frames
                and (first_await is None or first_await > write.order)
            ):
                found.append((write, check.frames))
    return found


def _check_then_act(
    module: Module, facts: _Facts, func: FunctionNode | None = None
) -> Iterator[Finding]:
    awaits = facts.awaits
    entries = facts.entries
    checks: dict[str, list[Event]] = {}
    for check in facts.checks:
        if _tracked(check.key):
            checks.setdefault(check.key, []).append(check)
    reported: set[tuple[int, str]] = set()
    once = facts.once
    for act in facts.events:
        if act.kind not in {"write", "mutate"} or not _tracked(act.key) or not _acts(act):
            continue
        if any(reaches(write, act) for write in once):
            continue  # past a close-once (start-once) guard: no second caller gets here
        if any(
            act.frames[: len(frame)] == frame and reaches(write, act)
            for write, frame in facts.once_in_calls
        ):
            continue  # past the close-once guard of the call it is in (aiojobs' close())
        if any(arm.ends == "raise" for arm in act.path):
            continue  # recording an error on the way out: every caller fails anyway
        if act.via is not None and (act.key, id(act.via)) in facts.checked_via:
            continue  # the callee checks for itself: reported there, not at every caller
        if _same_result(act):
            continue  # every task awaits one stored awaitable: they all store the same value
        if _rechecked_by_its_loop(facts, checks.get(act.key, []), act):
            continue  # its own loop's test checks the key right before each pass
        governing = [
            c
            for c in checks.get(act.key, ())
            if reaches(c, act)
            and _governs(c, act)
            and not _adds_to_non_empty(c, act)
            and not _keeps_set(c, act)
            and (_touches_checked_path(c, act) or _rebound_between(facts, c, act))
        ]
        if not governing:
            continue
        test = max(governing, key=lambda e: e.order)
        if (id(where(test)), act.key) in reported or _inside_callee(test, act):
            continue
        suspend = _gap(test, act, awaits, entries=entries)
        if suspend is None or _claimed(facts, test, act):
            continue
        if _drops_from_current(facts, act):
            continue  # keeps what other tasks added meanwhile: it relies on no check
        reported.add((id(where(test)), act.key))
        split = f"({line_of(act)}) are split by an await ({line_of(suspend)})"
        if _reuse_guard(test, act):
            yield at(
                module,
                where(test),
                "RC102",
                f"check of `{show(act.key)}` here raises when the method was used already, "
                f"but it and the action it guards {split}: two concurrent calls both pass "
                "this single-use check, and the misuse it exists to report goes unnoticed",
                end=where(act),
                severity="warning",
            )
        elif _soft_limit(test, act):
            yield at(
                module,
                where(test),
                "RC102",
                f"limit check of `{show(act.key)}` here and the growth it guards {split}: "
                "concurrent calls each overshoot the limit by one step, which a single "
                "call already does (the check does not count what is added)",
                end=where(act),
                severity="warning",
            )
        elif func is not None and _weak_fill(func, test, act):
            yield at(
                module,
                where(test),
                "RC102",
                f"check of `{show(act.key)}` here and the store it guards {split}; "
                "another task can pass the same check meanwhile, do the work again "
                "and store its own result; a warning: nothing made here leaks when made "
                "twice (no connection, subscription, listener, task or stream read), so "
                "most likely a lazy cache that stores the same value twice",
                end=where(act),
                severity="warning",
            )
        else:
            yield at(
                module,
                where(test),
                "RC102",
                f"check of `{show(act.key)}` here and the action it guards {split}; "
                "another task can pass the same check meanwhile",
                end=where(act),
            )


#: words of a filled attribute's name, or of a call that makes the stored value,
#: naming something that leaks when a racing task makes a second one and
#: overwrites the first (a connection, a subscription, a task, an open response)
_LEAKS = frozenset(
    {
        "channel",
        "client",
        "conn",
        "connection",
        "consumer",
        "cursor",
        "endpoint",
        "file",
        "listener",
        "pool",
        "proc",
        "process",
        "producer",
        "protocol",
        "reader",
        "resp",
        "response",
        "savepoint",
        "server",
        "session",
        "sock",
        "socket",
        "stream",
        "sub",
        "subscriber",
        "subscription",
        "task",
        "thread",
        "transaction",
        "transport",
        "tunnel",
        "watcher",
        "websocket",
        "worker",
        "writer",
    }
)

#: words of a call that creates, opens, starts or subscribes (a second call makes a
#: second one), or consumes a stream (a second reader gets what the first left)
_MAKES = frozenset(
    {
        "accept",
        "acquire",
        "attach",
        "bind",
        "connect",
        "consume",
        "create",
        "launch",
        "listen",
        "make",
        "open",
        "popen",
        "prepare",
        "aread",
        "read",
        "readany",
        "readexactly",
        "readline",
        "readuntil",
        "recv",
        "receive",
        "serve",
        "spawn",
        "start",
        "subscribe",
        "watch",
    }
)


#: made, but nothing is held open by it: a second one is garbage, not a leak
_HARMLESS = frozenset({"create_future", "Future", "Event", "Queue", "Lock", "Condition"})


#: statements whose end is not the end of an act in their header
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")


def _words(name: str) -> set[str]:
    """``get_connection`` -> {get, connection}; ``getBluetoothLeScanner`` -> {get, bluetooth,
    le, scanner}; ``HTTPResponse`` -> {http, response}; a plural is also kept singular
    (``_sockets`` names sockets)."""
    words = {w.lower() for w in _WORD.findall(name)}
    return words | {w[:-1] for w in words if len(w) > 3 and w.endswith("s")}


def _weak_fill(func: FunctionNode, test: Event, act: Event) -> bool:
    """Is this RC102 a lazy fill of a value that two racing calls merely compute twice?

    ``if self.x is None:`` (or ``not self.x``, ``k not in self.d``), an await, and
    ``self.x = value`` (``self.d[k] = value``), all in the function itself. Two
    tasks both pass and both store; whether that is a bug depends on what was
    stored. On the held-out rounds the fills that were bugs made something a
    second copy of leaks (a connection, a subscription, a listener, a task, an
    open response) or read a stream (the second reader stores what the first
    left); the fills that were not, or were double work only, stored a value
    looked up or computed (a child node by name, a host name, a cached
    declaration) - the same value twice. Strong evidence is a leaking noun in the
    filled attribute's name, or a leaking noun or a making verb in a call made
    between the check and the store, or an ``async for`` there (a stream read).
    Anything else is a warning. A key added to a set after a membership check
    (``self.s.add(k)``) fills it as ``self.d[k] = v`` does. Counters, limits,
    deletions and appends are no fill and keep their severity: the canonical
    ``if self.opened < self.max_size: await ...; self.opened += 1`` stays an error.
    """
    if test.via is not None or act.via is not None or test.detail not in ("", "membership"):
        return False
    if isinstance(act.site, ast.Delete):
        return False  # `del self.d[k]`: the second remover's raises KeyError
    if act.kind == "write":
        if act.detail == "augmented":
            return False
    elif not (
        act.kind == "mutate"
        and (
            act.detail in {"setitem", "local-key"}
            # `k in self.s` ... `self.s.add(k)`: a set filled like a dict (thirteenth round)
            or (act.detail == "add" and test.detail == "membership")
        )
    ):
        return False
    attr = act.key.rsplit(".", 1)[-1].split("[", 1)[0]
    if _words(attr) & _LEAKS:
        return False
    first: int = getattr(test.node, "lineno", 0)
    last = _last_line(act.node)
    if not isinstance(act.site, _COMPOUND):  # the whole store: `self.x = (\n await f()\n)`
        last = max(last, _last_line(act.site))
    for node in ast.walk(func):
        line = getattr(node, "lineno", None)
        if line is None or not first <= line <= last:
            continue
        if isinstance(node, ast.AsyncFor):
            return False
        if isinstance(node, ast.Call) and (name := last_name(node)) is not None:
            if name not in _HARMLESS and _words(name) & (_LEAKS | _MAKES):
                return False
    return True


def _last_line(node: ast.AST) -> int:
    end = getattr(node, "end_lineno", None)
    return end if isinstance(end, int) else int(getattr(node, "lineno", 0))


def _claimed(facts: _Facts, test: Event, act: Event) -> bool:
    """Did this call act on the checked state before its first await after the check?

    ``if key not in cache: cache[key] = future`` and only then ``await``: the
    check and its first act are atomic, so a second task fails the check; the
    later ``cache[key] = result`` replaces this call's own claim (aioesphomeapi's
    ``singleton``: the "store a future before the first await" fix).
    """
    first_await = facts.next_await(test.order)
    for claim in facts.events[facts.events.index(test) + 1 :]:
        if claim.order >= act.order:
            return False
        if (
            first_await is not None
            and claim.order > first_await
            and _suspends_between(facts, test, claim)
        ):
            continue  # an await on the claim's own path: another task ran meanwhile
        if (
            claim.key == act.key
            and claim.kind in {"write", "mutate"}
            and (
                any(arm.node == test.scope for arm in claim.path)  # where the check held
                # or past a guard that leaves: ``if k in d: raise`` then ``d[k] = ...``
                # (matrix-nio's in-flight marker), reached only when the check passed;
                # only a slot store on a membership check: an ``append`` past
                # ``if not self._waiters: return`` claims no slot (a FIFO lock's hand-off)
                or (
                    test.guard
                    and test.detail == "membership"
                    and claim.detail in {"setitem", "local-key"}
                    and set(test.path) <= set(claim.path)
                )
                # or past a cap that leaves: ``if len(self._pending) >= LIMIT: return``
                # then ``self._pending[key] = task`` takes one of the counted slots
                # (litellm's MCP discovery cache, sixteenth round #42)
                or (
                    test.guard
                    and test.detail == "capacity"
                    and claim.detail in _TAKES_SLOT
                    and set(test.path) <= set(claim.path)
                )
                # or right after a wait loop: ``while self._available < n: await
                # cond.wait()`` then ``self._available -= n``, the loop's last test
                # and the take atomic (a semaphore made of a Condition: modal's
                # byte budget, sixteenth round #55); the later ``+= n`` gives back
                # this call's own take. The loop's test is emitted after its body,
                # so a claim after it in order is after the loop.
                or (test.detail == "recheck" and set(test.path) <= set(claim.path))
            )
            and _acts(claim)
            and reaches(test, claim)
            and reaches(claim, act)
            and set(claim.path) <= set(act.path)
            and set(claim.loops) <= set(act.loops)
        ):
            return True
    return False


def _rechecked_by_its_loop(facts: _Facts, checks: list[Event], act: Event) -> bool:
    """Is ``act`` inside a ``while`` loop whose test checks its key, with no await
    in the loop before it? (``while self._q and self._q[0].done(): self._q.popleft()``.)

    The flow emits a loop's test once, as the re-check after its body (the exit
    test), so the act found only an earlier check to pair with; but the test runs
    right before each pass, and with no await between it and the act no other task
    runs in between (ray's request router, sixteenth round #59).
    """
    for check in checks:
        loop = check.scope[1]
        if (
            check.detail == "recheck"
            and loop in act.loops
            and check.frames == act.frames[: len(check.frames)]
            and not any(
                loop in suspend.loops and reaches(suspend, act)
                for suspend in facts.awaits
                if suspend.order < act.order
            )
        ):
            return True
    return False


def _drops_from_current(facts: _Facts, act: Event) -> bool:
    """``self.q = [op for i, op in enumerate(self.q) if i not in sent]`` (or
    ``self.q = self.q[n:]``), reading ``self.q`` after the last await before it.

    The store filters the collection as it is now: what other tasks appended
    during the await is kept, and only what this call handled is dropped
    (litellm's spend-increment flush, sixteenth round #50). It relies on no
    earlier check. ``self.q = []`` or ``self.q.clear()`` after the await loses
    those entries, and stays reported; so does a rebuild that adds (a lazy fill
    by copy).
    """
    site = act.site
    if act.kind != "write" or act.via is not None or not isinstance(site, ast.Assign):
        return False
    value = site.value
    target = dotted(site.targets[0]) if len(site.targets) == 1 else None
    if target is None or act.key.split(".", 1)[-1] != target.split(".", 1)[-1]:
        return False
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Slice):
        source: ast.expr = value.value
    elif isinstance(value, ast.ListComp | ast.SetComp | ast.DictComp) and any(
        g.ifs for g in value.generators
    ):
        source = value.generators[0].iter
        if isinstance(source, ast.Call) and source.args:
            source = source.args[0]  # ``enumerate(self.q)``
        elif isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute):
            source = source.func.value  # ``self.d.items()``
    else:
        return False
    if dotted(source) != target:
        return False
    reads = [e for e in facts.events if e.kind == "read" and e.key == act.key and e.site is site]
    return bool(reads) and not any(_suspends_between(facts, read, act) for read in reads)


#: what takes one slot of a collection a size cap counts
_TAKES_SLOT = frozenset({"setitem", "local-key", "append", "appendleft", "add", "insert"})


def _suspends_between(facts: _Facts, first: Event, last: Event) -> bool:
    """Is there an await on a path from ``first`` to ``last``? (Not one in an arm
    that leaves before ``last``: the cap's own ``return await fetch()``.)"""
    start = bisect.bisect_right(facts.await_orders, first.order)
    stop = bisect.bisect_left(facts.await_orders, last.order)
    return any(
        reaches(first, suspend) and reaches(suspend, last) for suspend in facts.awaits[start:stop]
    )


#: mutators that only add to a collection
_ADDS = frozenset({"append", "appendleft", "add", "extend", "extendleft", "insert", "update"})


def _adds_to_non_empty(check: Event, act: Event) -> bool:
    """``if self.channels:`` and, in that arm, ``self.channels.update(...)``.

    The act cannot make the check false for another task: a second task that
    passed "non-empty" meanwhile still holds a true check. (An add after "empty",
    ``if not self.channels:``, is the lazy-fill race and stays reported.)
    """
    if act.kind != "mutate" or act.detail not in _ADDS or check.detail:
        return False
    test = check.node
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if isinstance(test, ast.UnaryOp) and negated else test
    if not isinstance(inner, ast.Attribute) or not check.key.endswith("." + inner.attr):
        return False
    for arm in act.path:
        if arm.node == check.scope:
            return (arm.index == 0) != negated
    return False


def _keeps_set(check: Event, act: Event) -> bool:
    """``if self.x is None: raise``, then ``self.x = <a value>`` after the ``if``.

    The check refuses to go on until ``x`` is set; the act stores another value.
    A second task that passed the check meanwhile still holds a true check: no
    store of a value can make ``x`` None again (aioxmpp's ``proceed()`` of a
    started command). Storing ``None`` could, and a lazy fill under ``is None``
    (the act inside the arm) is the race, both still reported.
    """
    stmt = check.site
    if check.via is not None or not isinstance(stmt, ast.If) or stmt.test is not check.node:
        return False
    test = stmt.test
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
        and isinstance(test.left, ast.Attribute)
        and check.key.endswith("." + test.left.attr)
    ):
        return False
    if stmt.orelse or ending(stmt.body) not in {"raise", "return"}:
        return False
    if any(arm.node == check.scope for arm in act.path):
        return False
    site = act.site
    return (
        act.kind == "write"
        and act.via is None
        and isinstance(site, ast.Assign | ast.AnnAssign)
        and site.value is not None
        and not (isinstance(site.value, ast.Constant) and site.value.value is None)
    )


def _inside_callee(first: Event, last: Event) -> bool:
    """Are both events inside one inlined call? Then the callee reports them, once.

    One call, at any depth: ``query()`` checks in one helper and acts in another,
    and reports that itself; a ``ping()`` that reaches ``query()`` through a
    reconnect must not report it again (aiomysql: four more reports of one race).

    The callee is a coroutine (an await lies between the two) and is checked on
    its own; repeating the finding at each of its callers says nothing new
    (aiomysql's ``_execute_command`` has fifteen).
    """
    return bool(first.frames) and bool(last.frames) and first.frames[0] == last.frames[0]


def _same_result(act: Event) -> bool:
    """``self._obj = await self._coro``: the value awaited is one shared awaitable.

    A coroutine can be awaited once (a second task fails at the await); a
    future or a task hands every awaiter the same result. Either way no task
    stores a value of its own: this is the "store a future before the first
    await" fix that RC102's text recommends. An awaitable this call made (``await
    future`` of a local, ``await self._load()``) is per call, and stays checked.
    """
    value = act.operand
    if act.kind != "write" or act.detail == "augmented" or not isinstance(value, ast.Await):
        return False
    awaited = value.value
    return isinstance(awaited, ast.Attribute) and dotted(awaited) is not None


def _reuse_guard(test: Event, act: Event) -> bool:
    """``if self._con is not None: raise ...``, then ``self._con = ...``: a single-use method.

    The method refuses a second call once the slot is filled, so by its own
    contract it runs once (or once at a time) per object; only callers who
    break that contract race, and what they lose is the error that would have
    told them. A real bug, on weaker evidence than a check that correct callers
    pass concurrently: a warning.
    """
    return act.kind == "write" and act.detail != "augmented" and act.key in test.reuse


#: mutators that add any number of elements at once
_BULK = frozenset({"extend", "extendleft", "update"})


def _soft_limit(test: Event, act: Event) -> bool:
    """A size limit that the act exceeds by itself: ``len(self.buf) >= n``, then ``extend(data)``.

    A unit step (``+= 1``, ``append``) after ``self.opened < self.max_size``
    keeps the bound, and a concurrent caller breaks it: the canonical bug. An
    act that adds an amount the check does not mention overshoots the limit on
    one task alone, so the limit is a soft one and concurrency only adds one
    more step per task (anyio's ``receive_until``): a warning.
    """
    if test.detail != "capacity":
        return False
    amount: ast.AST | None = None
    if act.kind == "mutate" and act.detail in _BULK and isinstance(act.node, ast.Call):
        amount = act.node.args[0] if act.node.args else None
    elif act.kind == "write" and act.detail == "augmented":
        amount = act.operand
    if amount is None or isinstance(amount, ast.Constant):
        return False
    return not _refs(amount) & _refs(test.node)


def _refs(node: ast.AST) -> set[str]:
    """Names and attribute chains in ``node``: ``{"self.used", "n"}`` for ``self.used + n``."""
    found = {
        d for n in ast.walk(node) if isinstance(n, ast.Name | ast.Attribute) and (d := dotted(n))
    }
    return {d for d in found if not any(other.startswith(d + ".") for other in found)}


def _lost_update(module: Module, facts: _Facts) -> Iterator[Finding]:
    events = facts.events
    awaits = facts.awaits
    entries = facts.entries
    by_order = {e.order: e for e in events}
    reported: set[int] = set()
    for write in events:
        if write.kind not in {"write", "mutate"} or not _tracked(write.key):
            continue
        if write.kind == "mutate" and write.detail not in {"setitem", "local-key"}:
            continue
        reads = [
            by_order[o]
            for o in write.sources
            if o in by_order and by_order[o].key == write.key and reaches(by_order[o], write)
        ]
        if write.kind == "mutate":
            reads = [read for read in reads if not _handed_whole(read)]
        if not reads or id(where(write)) in reported:
            continue
        read = max(reads, key=lambda e: e.order)
        if _inside_callee(read, write):
            continue
        suspend = _gap(read, write, awaits, entries=entries)
        if suspend is None or _dead_store(facts, write):
            continue
        reported.add(id(where(write)))
        yield at(
            module,
            where(write),
            "RC103",
            f"`{show(write.key)}` is written from a value read before an await "
            f"(read {line_of(read)}, await {line_of(suspend)}); updates made by other "
            "tasks meanwhile are lost",
            end=where(write),
        )


def _handed_whole(read: Event) -> bool:
    """Is ``read`` the whole collection passed as a call's argument (``Packet(self.map)``)?

    A slot store (``self.map[k] = v``) loses another task's update only when
    ``v`` comes from the slot's old value (``self.map[k]``, ``self.map.get(k)``).
    A value computed by code the whole collection was handed to is the callee's
    result, not a slot read back (asyncmy's binlog reader stores a new table
    id after parsing a packet it gave the map to): no evidence of a lost update.
    """
    for node in ast.walk(read.site):
        if isinstance(node, ast.Call) and (
            any(arg is read.node for arg in node.args)
            or any(kw.value is read.node for kw in node.keywords)
        ):
            return True
    return False


def _dead_store(facts: _Facts, write: Event) -> bool:
    """Is ``write`` replaced, with nothing reading it and no await, on every run after it?

    databases' ``self._connection = await pool.release(self._connection)``, then
    ``self._connection = None``: what another task stored meanwhile is gone after
    the second write whatever the first one wrote; the first loses nothing.
    """
    events = facts.events
    for event in events[events.index(write) + 1 :]:
        if event.kind == "await":
            return False
        if event.key != write.key:
            continue
        return (
            event.kind == "write"
            and event.detail != "augmented"
            and not event.sources
            and set(event.path) <= set(write.path)
            and reaches(write, event)
        )
    return False


def _fresh_locals(module: Module, func: FunctionNode, any_class: bool = False) -> frozenset[str]:
    """Locals of ``func`` that every binding sets to a new instance of a module class
    (``any_class``: of any class, by the naming convention, ``Cls(...)`` or
    ``mod.Cls(...)``)."""
    constructed: dict[str, int] = {}
    stores: dict[str, int] = {}
    for node in iter_own(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                stores[name] = stores.get(name, 0) + 2  # never counts as fresh
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and (
                (isinstance(node.value.func, ast.Name) and node.value.func.id in module.classes)
                or (any_class and (last_name(node.value.func) or "a")[:1].isupper())
            )
        ):
            name = node.targets[0].id
            constructed[name] = constructed.get(name, 0) + 1
    return frozenset(
        name
        for name, count in constructed.items()
        if stores.get(name) == count and name not in params(func)
    )
