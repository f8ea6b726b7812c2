"""An object's own stored state, read without running any of its code.

racecheck reads user objects from the outside: the detector reads the state an
access touched, the threads backend walks module globals and the target's
objects for locks to adopt. ``obj.__dict__`` (even through
``object.__getattribute__``) runs a ``__dict__`` property when the class
defines one, and libraries do: apipkg's lazy ``ApiModule`` loads every lazy
attribute there, importing modules and running its first-access hook. Run by
racecheck, that one-time work is gone from every schedule, and the race
around it with it. So the dictionary is read through the descriptor CPython
made for the class that added it, which no subclass can replace.
"""

from __future__ import annotations

from typing import Any

_MISSING = object()
# type's own descriptors: a metaclass cannot intercept them
_TYPE_DICT: Any = type.__dict__["__dict__"].__get__
_TYPE_MRO: Any = type.__dict__["__mro__"].__get__
_GETSET = type(type("_Plain", (), {}).__dict__["__dict__"])
_MEMBER = type(type("_Slotted", (), {"__slots__": ("x",)}).__dict__["x"])  # ModuleType's too
#: type -> the C-level descriptor of its instances' ``__dict__`` (None: they have none)
_dict_getters: dict[type, Any] = {}


def instance_dict(obj: Any) -> Any:
    """``obj``'s own ``__dict__``, read through the C-level descriptor, never a property.

    The first ``__dict__`` along the MRO that is a getset or member descriptor
    (made by CPython for the class that added the instance dictionary, or
    ``ModuleType``'s own) is the storage. Raises ``AttributeError`` when the
    instances have no dictionary (``__slots__``, builtins), or when a class
    replaced the descriptor of the very class that added the dictionary: then
    there is no way to read it that runs no user code.
    """
    getter = _dict_getters.get(type(obj), _MISSING)
    if getter is _MISSING:
        getter = dict_getter(type(obj))
    if getter is None:
        raise AttributeError("__dict__")
    return getter(obj)


def dict_getter(cls: type) -> Any:
    """What :func:`instance_dict` calls for ``cls`` instances, or None when they have none.

    For a caller that keeps its own answer per class (the detector's per-access path).
    """
    getter = _dict_getters.get(cls, _MISSING)
    if getter is _MISSING:
        getter = None
        for klass in _TYPE_MRO(cls):
            entry = _TYPE_DICT(klass).get("__dict__", _MISSING)
            if type(entry) in (_GETSET, _MEMBER):
                getter = entry.__get__
                break
        _dict_getters[cls] = getter
    return getter
