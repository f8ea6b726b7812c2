"""What a target can keep between schedules, and whether it changed.

Schedules must be independent: every one should start from the state the
first one saw. When a failure turns out to depend on what earlier schedules
left behind (see ``found._check_fresh_start``), this module names the
suspects: the fixture values a pytest test receives, the target's closure
variables and arguments, and the module globals (and class attributes of the
module's classes) of the code it calls directly.

A :func:`snapshot` is a bounded structural digest of each: values of builtin
types by content, containers by length and their first items, plain objects
by their attributes. Only builtin containers and instance dictionaries are
read, the latter through CPython's own descriptor (racecheck.instance_state),
so no user ``__repr__``/``__eq__``/``__getattr__`` nor a ``__dict__`` property
runs; anything else is digested by identity.
The digest is for naming suspects in a message, never for deciding a
verdict, so its being shallow costs precision only.
"""

from __future__ import annotations

import collections
import functools
import inspect
import types
from collections.abc import Callable, Hashable
from itertools import islice
from typing import Any

from racecheck.instance_state import instance_dict

#: attribute a front end sets on a target to name the objects it shares with
#: every schedule (the pytest plugin: its fixture values)
STATE_ATTRIBUTE = "__racecheck_state__"

_SCALARS = (bool, int, float, complex, type(None))
_SKIP = (
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    type,
    functools.partial,
)
_ITEMS = 20
_DEPTH = 3


def _digest(value: Any, depth: int = 0) -> Hashable:
    try:
        if type(value) in _SCALARS:
            return (type(value).__name__, value)
        if type(value) in (str, bytes):
            return (type(value).__name__, len(value), hash(value))
        if depth >= _DEPTH:
            return (type(value).__name__, id(value))
        kind = type(value)
        # exact builtin types only: a subclass's __len__/__iter__ is user code
        if kind in (list, tuple, collections.deque):
            items = tuple(_digest(v, depth + 1) for v in islice(value, _ITEMS))
            return (type(value).__name__, len(value), items)
        if kind is dict:
            pairs = tuple(
                (_digest(k, depth + 1), _digest(v, depth + 1))
                for k, v in islice(dict.items(value), _ITEMS)
            )
            return (type(value).__name__, len(value), pairs)
        if kind in (set, frozenset):
            if len(value) > 4 * _ITEMS:
                return (type(value).__name__, len(value), id(value))
            return (
                type(value).__name__,
                len(value),
                frozenset(_digest(v, depth + 1) for v in value),
            )
        if isinstance(value, _SKIP):
            return (type(value).__name__, id(value))
        try:
            attributes = instance_dict(value)
        except AttributeError:
            attributes = None
        if type(attributes) is dict:
            return (type(value).__name__, id(value), _digest(attributes, depth + 1))
        return (type(value).__name__, id(value))
    except Exception:  # a container changed under us, an odd __dict__: identity only
        return ("?", id(value))


def _watchable(name: str, value: Any) -> bool:
    return not (name.startswith("__") or isinstance(value, _SKIP) or inspect.isroutine(value))


Watched = dict[str, Callable[[], Any]]


def roots(target: Callable[..., Any]) -> Watched:
    """Where ``target`` keeps what it shares with every schedule, best names first.

    Each label maps to a getter, so a global or closure variable that is
    rebound (``counter += 1``) is read afresh, not through its old value.
    """
    found: Watched = {}
    seen_ids: set[int] = set()
    seen_functions: set[int] = set()

    def add(label: str, value: Any, getter: Callable[[], Any] | None = None) -> None:
        if not isinstance(value, (*_SCALARS, str, bytes)):
            if id(value) in seen_ids:
                return
            seen_ids.add(id(value))
        found.setdefault(label, getter or (lambda: value))

    named = getattr(target, STATE_ATTRIBUTE, None)
    named_by_front_end = isinstance(named, dict)
    if isinstance(named, dict):
        for label, value in named.items():
            add(str(label), value)

    def visit(func: Any, depth: int) -> None:
        if depth > 2 or id(func) in seen_functions:
            return
        seen_functions.add(id(func))
        if isinstance(func, functools.partial):
            for i, arg in enumerate(func.args):
                add(f"argument {i} of the target", arg)
            for key, arg in func.keywords.items():
                add(f"argument {key!r} of the target", arg)
            visit(func.func, depth + 1)
            return
        if isinstance(func, types.MethodType):
            add(f"the object of {func.__func__.__qualname__}", func.__self__)
            visit(func.__func__, depth + 1)
            return
        code = getattr(func, "__code__", None)
        if code is None:
            call = getattr(type(func), "__call__", None)  # noqa: B004 - the method itself
            if call is not None and not isinstance(func, type):
                add(f"the callable {type(func).__qualname__} object", func)
                visit(call, depth + 1)
            return
        for name, cell in zip(code.co_freevars, func.__closure__ or (), strict=False):
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if inspect.isfunction(value) or isinstance(value, functools.partial):
                visit(value, depth + 1)
            elif depth == 0 and named_by_front_end:
                continue  # the front end's wrapper: what it passes on is named above
            elif _watchable(name, value):
                add(
                    f"closure variable {name!r} of {func.__qualname__}",
                    value,
                    functools.partial(_cell_value, cell),
                )
        module = getattr(func, "__module__", None) or "?"
        namespace = getattr(func, "__globals__", {})
        for name, value in list(namespace.items()):
            if _watchable(name, value):
                add(f"global {module}.{name}", value, functools.partial(namespace.get, name))
            elif isinstance(value, type) and value.__module__ == module:
                # class-level registries and singletons (``_instances = {}``)
                attributes = _class_dict(value)
                for attr, held in list(attributes.items()):
                    if _watchable(attr, held) and not isinstance(
                        held, (property, classmethod, staticmethod)
                    ):
                        add(
                            f"class attribute {module}.{name}.{attr}",
                            held,
                            functools.partial(_attribute, value, attr),
                        )

    visit(target, 0)
    return found


def _attribute(owner: type, name: str) -> Any:
    return _class_dict(owner).get(name)


#: a class's namespace through type's own descriptor: a metaclass's ``__dict__`` cannot run
_class_dict: Callable[[type], Any] = type.__dict__["__dict__"].__get__


def _cell_value(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return None


def snapshot(watched: Watched) -> dict[str, Hashable]:
    out: dict[str, Hashable] = {}
    for label, getter in watched.items():
        try:
            out[label] = _digest(getter())
        except Exception:
            out[label] = None
    return out


def changed(before: dict[str, Hashable], watched: Watched) -> list[str]:
    """Labels of the watched objects whose digest differs from ``before``."""
    now = snapshot(watched)
    return [label for label, digest in before.items() if now.get(label) != digest]
