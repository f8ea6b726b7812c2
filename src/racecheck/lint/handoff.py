"""Where code leaves the event loop's thread: ``Thread(target=f)``, ``submit(f)``, ...

RC105 and RC106 both need to know which functions run on some other thread.
Nothing in the source says so directly; these are the calls that hand a
callable to a thread (or to something that owns threads), by their common
names. A callable handed to ``loop.call_soon_threadsafe`` is the opposite: it
is brought *onto* the loop's thread.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from racecheck.lint.module import last_name

#: names that mark an argument as a pool of threads (the Rx ``flat_map(f, pool)`` shape)
_POOLISH = ("pool", "executor", "scheduler")
ONTO_LOOP = frozenset({"call_soon_threadsafe", "run_coroutine_threadsafe"})


@dataclass(frozen=True)
class Handoff:
    call: ast.Call
    func: ast.expr  # the callable that will run on another thread
    how: str  # "Thread(target=...)", "submit()", ...


def _poolish(expr: ast.expr) -> bool:
    name = (last_name(expr) or "").lower()
    return any(word in name for word in _POOLISH)


def _callable_ref(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Attribute | ast.Name | ast.Lambda)


def handoffs(call: ast.Call) -> Iterator[Handoff]:
    """The callables ``call`` hands to another thread (usually none)."""
    name = last_name(call.func) or ""
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    kwargs = {kw.arg: kw.value for kw in call.keywords if kw.arg}
    if name in ONTO_LOOP or name == "add_done_callback":
        return
    if name in {"Thread", "Process"} and "target" in kwargs:
        if name == "Thread":
            yield Handoff(call, kwargs["target"], "Thread(target=...)")
        return
    if name == "Timer":
        func = kwargs.get("function") or (call.args[1] if len(call.args) > 1 else None)
        if func is not None:
            yield Handoff(call, func, "threading.Timer")
        return
    if name in {"submit", "start_new_thread"} and call.args:
        yield Handoff(call, call.args[0], f"{name}()")
        return
    if name == "map" and receiver is not None and _poolish(receiver) and call.args:
        yield Handoff(call, call.args[0], "executor.map()")
        return
    if name == "run_in_executor" and len(call.args) >= 2:
        yield Handoff(call, call.args[1], "run_in_executor()")
        return
    if name == "to_thread" or (name == "run_sync" and "to_thread" in ast.unparse(call.func)):
        if call.args:
            yield Handoff(call, call.args[0], "to_thread()")
        return
    if name == "subscribe":
        for key in ("on_next", "on_error", "on_completed"):
            if key in kwargs:
                yield Handoff(call, kwargs[key], f"subscribe({key}=...)")
        return
    args = [*call.args, *kwargs.values()]
    if any(_poolish(a) for a in args):
        for arg in args:
            if _callable_ref(arg) and not _poolish(arg):
                yield Handoff(call, arg, f"{name or 'a call'}(..., {_pool_name(args)})")


def _pool_name(args: list[ast.expr]) -> str:
    for arg in args:
        if _poolish(arg):
            return ast.unparse(arg)
    return "pool"
