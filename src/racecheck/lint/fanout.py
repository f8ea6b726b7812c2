"""RC104: one collection shared by every copy of a fanned-out task or thread.

A fan-out runs the same function several times at once: ``asyncio.gather``
over a generator, ``create_task``/``start_soon`` in a loop,
``executor.submit`` in a loop, ``executor.map``, ``run_in_executor`` or
``to_thread`` in a loop or a gather. An argument that is the *same object* for
every copy (a dict passed to all of them, a closure variable, ``self.<attr>``,
a module global) is shared state, even though each copy looks sequential.

For asyncio tasks a single ``d[k] = v`` or ``l.append(x)`` is atomic, so the
finding needs more than a mutation: the task must mutate the collection and
also rely on it across an await (mutate, await, use it again -- a sibling may
have overwritten the slot; or use, await, mutate). Writes to a key that is the
task's own (``results[item] = ...``, ``pending.discard(item)``) are disjoint
between tasks and do not count. For threads any unlocked mutation that comes
with another access of the same collection counts: a thread can be preempted
anywhere.

The finding points at the fan-out call, because that is where the sharing
happens: the same task function may be fine when called once.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from racecheck.lint.findings import Finding
from racecheck.lint.flow import Event, Flow, common_lock, reaches
from racecheck.lint.module import (
    ClassInfo,
    FunctionNode,
    Module,
    iter_own,
    last_name,
    memo,
    params,
)
from racecheck.lint.report import at, line_of

_TASK_WRAPPERS = frozenset({"create_task", "ensure_future"})
_POOLISH = ("executor", "pool")


@dataclass
class Site:
    """One fan-out: where it starts, what runs, with which arguments."""

    node: ast.AST
    kind: str  # "task" or "thread"
    target: ast.expr  # the function that runs
    args: list[ast.expr]
    keywords: list[ast.keyword]
    per_item: frozenset[str]  # names that differ between the copies


def check(module: Module, codes: frozenset[str]) -> Iterator[Finding]:
    if "RC104" not in codes:
        return
    for func in module.function_nodes:
        klass = module.class_of(func)
        reported: set[tuple[int, str]] = set()
        for site in _sites(func):
            for finding, key in _check_site(module, func, klass, site):
                if (id(site.node), key) not in reported:
                    reported.add((id(site.node), key))
                    yield finding


# ── finding the fan-outs ────────────────────────────────────────────────────


def _targets(node: ast.expr) -> set[str]:
    return {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def _assigned_in(body: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def _sites(func: FunctionNode) -> list[Site]:
    """The fan-outs in ``func``, found once: RC104 and RC101's severity both ask."""
    return memo(
        func,
        "fanout_sites",
        lambda: list(_visit(func.body, frozenset(), False, func)) if _fans_out(func) else [],
    )


#: the calls every fan-out site starts from (``_exprs``, ``_spawn``, ``_gather``)
_SITE_CALLS = frozenset(
    {"gather", "start_soon", "submit", "run_in_executor", "to_thread", "run_sync", *_TASK_WRAPPERS}
)


def _fans_out(func: FunctionNode) -> bool:
    """Does ``func``'s own body make a call a fan-out site can start from?

    A pre-filter (issue 14's time per file): most functions of a large module
    make none, and walking them expression by expression found nothing. A new
    kind of site must add its call here (``tests/lint/test_lint_speed_prefilter.py``).
    """
    for node in iter_own(func):
        if isinstance(node, ast.Call):
            name = last_name(node.func)
            if name in _SITE_CALLS:
                return True
            if name == "map" and isinstance(node.func, ast.Attribute):
                owner = (last_name(node.func.value) or "").lower()
                if any(p in owner for p in _POOLISH):
                    return True
    return False


def _visit(
    body: list[ast.stmt], loop_names: frozenset[str], in_loop: bool, func: FunctionNode
) -> Iterator[Site]:
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(stmt, ast.For | ast.AsyncFor):
            names = loop_names | _targets(stmt.target) | _assigned_in(stmt.body)
            yield from _exprs(stmt.iter, loop_names, in_loop, func)
            yield from _visit(stmt.body, frozenset(names), True, func)
            yield from _visit(stmt.orelse, loop_names, in_loop, func)
            continue
        if isinstance(stmt, ast.While):
            names = loop_names | _assigned_in(stmt.body)
            yield from _exprs(stmt.test, loop_names, in_loop, func)
            yield from _visit(stmt.body, frozenset(names), True, func)
            yield from _visit(stmt.orelse, loop_names, in_loop, func)
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(stmt, field, None)
            if not isinstance(inner, list):
                continue
            blocks = [
                getattr(x, "body", None) if not isinstance(x, ast.stmt) else None for x in inner
            ]
            if all(b is None for b in blocks):
                yield from _visit(inner, loop_names, in_loop, func)
            else:
                for block in blocks:
                    if block is not None:
                        yield from _visit(block, loop_names, in_loop, func)
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.expr):
                yield from _exprs(child, loop_names, in_loop, func)
            elif isinstance(child, ast.withitem):
                yield from _exprs(child.context_expr, loop_names, in_loop, func)


def _exprs(
    expr: ast.expr, loop_names: frozenset[str], in_loop: bool, func: FunctionNode
) -> Iterator[Site]:
    if isinstance(expr, ast.Lambda):
        return
    if isinstance(expr, ast.ListComp | ast.SetComp | ast.GeneratorExp):
        names = loop_names.union(*(_targets(g.target) for g in expr.generators))
        yield from _exprs(expr.elt, frozenset(names), True, func)
        for generator in expr.generators:
            yield from _exprs(generator.iter, loop_names, in_loop, func)
        return
    if isinstance(expr, ast.Call):
        name = last_name(expr.func)
        if name == "gather":
            yield from _gather(expr, loop_names, func)
            return
        site = _spawn(expr, loop_names, in_loop)
        if site is not None:
            yield site
            return
    for child in ast.iter_child_nodes(expr):
        if isinstance(child, ast.expr):
            yield from _exprs(child, loop_names, in_loop, func)


def _unwrap(task: ast.expr) -> ast.expr:
    """``create_task(coro(...))`` -> ``coro(...)``."""
    while isinstance(task, ast.Call) and last_name(task.func) in _TASK_WRAPPERS and task.args:
        task = task.args[0]
    return task


def _spawn(call: ast.Call, loop_names: frozenset[str], in_loop: bool) -> Site | None:
    """A call that starts ``f`` concurrently, when it happens once per loop iteration."""
    name = last_name(call.func)
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    owner = (last_name(receiver) or "").lower() if receiver is not None else ""
    if name == "map" and receiver is not None and any(p in owner for p in _POOLISH):
        if call.args:  # every element is a copy: only closure and self state is shared
            return Site(call, "thread", call.args[0], [], [], frozenset({"*"}))
    if not in_loop:
        return None
    if name in _TASK_WRAPPERS and call.args:
        coro = _unwrap(call.args[0])
        if isinstance(coro, ast.Call):
            return Site(call, "task", coro.func, coro.args, coro.keywords, loop_names)
    if name == "start_soon" and call.args:
        return Site(call, "task", call.args[0], call.args[1:], [], loop_names)
    if name == "submit" and call.args:
        return Site(call, "thread", call.args[0], call.args[1:], call.keywords, loop_names)
    if name == "run_in_executor" and len(call.args) >= 2:
        return Site(call, "thread", call.args[1], call.args[2:], [], loop_names)
    if name == "to_thread" or (name == "run_sync" and "to_thread" in ast.unparse(call.func)):
        if call.args:
            return Site(call, "thread", call.args[0], call.args[1:], call.keywords, loop_names)
    return None


def _gather(call: ast.Call, loop_names: frozenset[str], func: FunctionNode) -> Iterator[Site]:
    direct: list[ast.Call] = []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            source = arg.value
            if isinstance(source, ast.Name):
                yield from _gathered_list(source.id, func, call)
                continue
            if isinstance(source, ast.ListComp | ast.GeneratorExp):
                names = loop_names.union(*(_targets(g.target) for g in source.generators))
                site = _task_site(source.elt, call, frozenset(names))
                if site is not None:
                    yield site
        else:
            task = _unwrap(arg)
            if isinstance(task, ast.Call):
                direct.append(task)
    if len(direct) >= 2:
        seen: dict[str, int] = {}
        for task in direct:
            for name in {n.id for a in task.args for n in ast.walk(a) if isinstance(n, ast.Name)}:
                seen[name] = seen.get(name, 0) + 1
        shared = {name for name, count in seen.items() if count >= 2}
        for task in direct:
            own = {n.id for a in task.args for n in ast.walk(a) if isinstance(n, ast.Name)}
            site = _task_site(task, call, frozenset(own - shared))
            if site is not None:
                yield site


def _task_site(elt: ast.expr, node: ast.AST, per_item: frozenset[str]) -> Site | None:
    elt = _unwrap(elt)
    if not isinstance(elt, ast.Call):
        return None
    name = last_name(elt.func)
    if name == "run_in_executor" and len(elt.args) >= 2:
        return Site(node, "thread", elt.args[1], elt.args[2:], [], per_item)
    if name == "to_thread" and elt.args:
        return Site(node, "thread", elt.args[0], elt.args[1:], elt.keywords, per_item)
    return Site(node, "task", elt.func, elt.args, elt.keywords, per_item)


def _gathered_list(name: str, func: FunctionNode, call: ast.Call) -> Iterator[Site]:
    """``gather(*tasks)``: find how ``tasks`` was built in the same function."""
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            value = node.value
            if isinstance(value, ast.ListComp | ast.GeneratorExp):
                names = frozenset().union(*(_targets(g.target) for g in value.generators))
                site = _task_site(value.elt, call, names)
                if site is not None:
                    yield site
        elif isinstance(node, ast.For):
            names = frozenset(_targets(node.target) | _assigned_in(node.body))
            for inner in ast.walk(node):
                if (
                    isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Attribute)
                    and inner.func.attr == "append"
                    and isinstance(inner.func.value, ast.Name)
                    and inner.func.value.id == name
                    and inner.args
                ):
                    site = _task_site(inner.args[0], call, names)
                    if site is not None:
                        yield site


# ── what the copies share ───────────────────────────────────────────────────


def _resolve(
    module: Module, func: FunctionNode, klass: ClassInfo | None, target: ast.expr
) -> tuple[FunctionNode, int, bool] | None:
    """The function a fan-out runs, how many leading parameters to skip, and if it is nested."""
    if isinstance(target, ast.Call) and last_name(target.func) == "partial":
        return None
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        me = module.self_name(func)
        if klass is not None and me is not None and target.value.id == me:
            method = module.resolve_method(klass, target.attr)
            if method is not None:
                return method, 1 if module.self_name(method) else 0, False
        return None
    if isinstance(target, ast.Name):
        for node in ast.walk(func):
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and node.name == target.id
                and node is not func
            ):
                return node, 0, True
        if target.id in module.functions:
            return module.functions[target.id], 0, False
    return None


def _shared_arg(arg: ast.expr, per_item: frozenset[str], me: str | None) -> bool:
    """Is ``arg`` the same object in every copy (a name, or something reached from one)?"""
    if "*" in per_item:
        return False
    names = {n.id for n in ast.walk(arg) if isinstance(n, ast.Name)}
    if names & per_item:
        return False
    node = arg
    while isinstance(node, ast.Subscript | ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and (node.id != me or arg is not node)


def _check_site(
    module: Module, func: FunctionNode, klass: ClassInfo | None, site: Site
) -> Iterator[tuple[Finding, str]]:
    resolved = _resolve(module, func, klass, site.target)
    if resolved is None:
        return
    callee, skip, nested = resolved
    me = module.self_name(func)
    mapping: dict[str, str] = {}
    shown: dict[str, str] = {}
    names = params(callee)[skip:]
    pairs = list(zip(names, site.args, strict=False))
    pairs += [(kw.arg, kw.value) for kw in site.keywords if kw.arg]
    for name, arg in pairs:
        if isinstance(arg, ast.Starred):
            break
        if _shared_arg(arg, site.per_item, me):
            mapping[name] = f"root:{name}"
            shown[f"root:{name}"] = ast.unparse(arg)
    closure = module.closure(callee) if nested else frozenset()
    flow = Flow(
        module, callee, klass=klass if not nested else None, mapping=mapping, closure=closure
    )
    events = flow.run()
    keys = {e.key for e in events if e.kind == "mutate" and _interesting(e.key, callee, nested)}
    for key in sorted(keys):
        hit = _race(events, key, site.kind)
        if hit is None:
            continue
        mutation, suspend = hit
        what = shown.get(key) or key.split(":", 1)[-1]
        copies = "tasks" if site.kind == "task" else "threads"
        reason = f", and use it across an await ({line_of(suspend)})" if suspend is not None else ""
        message = (
            f"concurrent {copies} started here all mutate the same `{what}` without a lock "
            f"({line_of(mutation)}){reason}; give each its own copy and merge afterwards"
        )
        yield at(module, site.node, "RC104", message, end=mutation.node), key


def _interesting(key: str, callee: FunctionNode, nested: bool) -> bool:
    if key.startswith(("root:", "self.", "global:")):
        return True
    return key.startswith("free:") and nested


def _race(events: list[Event], key: str, kind: str) -> tuple[Event, Event | None] | None:
    """(the mutation, the await it races across) when the copies can interfere."""
    uses = [e for e in events if e.key == key and e.kind != "check"]
    mutations = [e for e in uses if e.kind == "mutate" and e.detail != "local-key"]
    if kind == "thread":
        # A thread can be preempted anywhere: a read-modify-write of any key, or a
        # mutation next to another statement using the collection, is enough.
        by_order = {e.order: e for e in events}
        rmw = [
            e
            for e in uses
            if e.kind == "mutate"
            and any(by_order[o].key == key for o in e.sources if o in by_order)
        ]
        for mutation in [*rmw, *mutations]:
            if mutation.sync_locks:
                continue
            if mutation in rmw or any(
                u.site is not mutation.site and not common_lock(u, mutation, sync_only=True)
                for u in uses
            ):
                return mutation, None
        return None
    awaits = [e for e in events if e.kind == "await"]
    for mutation in mutations:
        for suspend in awaits:
            for use in uses:
                if use is mutation:
                    continue
                ordered = (reaches(mutation, suspend) and reaches(suspend, use)) or (
                    reaches(use, suspend) and reaches(suspend, mutation)
                )
                if ordered and not common_lock(mutation, suspend, use):
                    return mutation, suspend
    return None
