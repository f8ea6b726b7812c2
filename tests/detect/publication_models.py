"""A container filled by one thread, then stored where another thread finds it.

Copy-on-write (loguru 0.7.3's handlers): the writer builds a new dict under
its lock, changes it while no other thread can reach it, and stores it whole
into a shared attribute; a reader loads the attribute once, with no lock, and
loops over the dict it got. The changes came before the store the reader's
load found, so they cannot overlap its loop: no race. The partners change the
container after it was first stored (the reader may hold it by then: loguru
0.7.2), or reach it by a path the publishing store is not on.

Lines that the detector must name carry a ``# <- marker``.
"""

from __future__ import annotations

import threading
from typing import Any


def _run(*targets: Any) -> None:
    workers = [threading.Thread(target=t) for t in targets]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


class Core:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.handlers: dict[int, str] = {1: "stderr", 2: "file"}
        self.names: list[str] = ["stderr", "file"]
        self.by_kind: dict[str, dict[int, str]] = {"all": {1: "stderr"}}


def copy_changed_then_stored() -> None:
    """Each removal copies the published dict, pops from the copy, stores the copy."""
    core = Core()
    seen: list[str] = []

    def log() -> None:
        for handler in core.handlers.values():
            seen.append(handler)

    def remove_all() -> None:
        with core.lock:
            for handler_id in list(core.handlers):
                handlers = core.handlers.copy()
                handlers.pop(handler_id)
                core.handlers = handlers

    _run(log, remove_all)


def list_built_then_stored() -> None:
    """A new list filled by appends, then stored whole; the reader loops over it."""
    core = Core()
    seen: list[str] = []

    def log() -> None:
        for name in core.names:
            seen.append(name)

    def rename() -> None:
        with core.lock:
            names = []
            for name in core.names:
                names.append(name.upper())
            core.names = names

    _run(log, rename)


def dict_built_then_stored_in_an_item() -> None:
    """The new dict is stored as a value of another dict, where the reader looks it up."""
    core = Core()
    seen: list[str] = []

    def log() -> None:
        for handler in core.by_kind["all"].values():
            seen.append(handler)

    def add() -> None:
        with core.lock:
            handlers = dict(core.by_kind["all"])
            handlers[2] = "file"
            core.by_kind["all"] = handlers

    _run(log, add)


def replaced_while_the_reader_holds_the_old_one() -> None:
    """The reader loads the old dict, then calls ``.values()`` on it; the writer stores a
    new dict in between (a preemption inside the reader's line). The call acts on the
    dict the load found, never touched since: what the attribute holds by the time of
    the call is not what the reader loops over."""
    core = Core()
    seen: list[str] = []

    def log() -> None:
        for handler in core.handlers.values():
            seen.append(handler)

    def replace() -> None:
        with core.lock:
            handlers = {}
            handlers[3] = "new"
            core.handlers = handlers

    _run(log, replace)


def old_one_changed_in_place_then_replaced() -> None:
    """The partner: the old dict itself is popped from before the new one is stored."""
    core = Core()
    seen: list[str] = []

    def log() -> None:
        for handler in core.handlers.values():  # <- old loop
            seen.append(handler)

    def replace() -> None:
        with core.lock:
            core.handlers.pop(1)  # <- old pop
            core.handlers = {3: "new"}

    _run(log, replace)


def copy_changed_after_it_is_stored() -> None:
    """loguru 0.7.2: one copy, stored after its first pop, then popped from again."""
    core = Core()
    seen: list[str] = []

    def log() -> None:
        for handler in core.handlers.values():  # <- loop
            seen.append(handler)

    def remove_all() -> None:
        with core.lock:
            handlers = core.handlers.copy()
            for handler_id in list(handlers):
                handlers.pop(handler_id)  # <- pop
                core.handlers = handlers

    _run(log, remove_all)


def list_changed_after_it_is_stored() -> None:
    """Stored first, filled after: the reader's loop may run while it grows."""
    core = Core()
    seen: list[str] = []

    def log() -> None:
        for name in core.names:
            seen.append(name)

    def rename() -> None:
        with core.lock:
            names: list[str] = []
            core.names = names
            names.append("STDERR")
            names.append("FILE")

    _run(log, rename)


REGISTRY: dict[int, str] = {1: "stderr"}


def changed_where_the_reader_reaches_it_without_the_store() -> None:
    """The dict is a module global made at import: the reader loops over it by its name,
    so the store that later puts it in an attribute is not how the reader got it."""
    core = Core()
    seen: list[str] = []
    REGISTRY.clear()
    REGISTRY[1] = "stderr"

    def log() -> None:
        for handler in REGISTRY.values():
            seen.append(handler)

    def add() -> None:
        with core.lock:
            REGISTRY[2] = "file"
            core.handlers = REGISTRY

    _run(log, add)


def marked(marker: str) -> int:
    """The line carrying ``# <- marker`` in this file."""
    with open(__file__, encoding="utf-8") as source:
        for number, line in enumerate(source, 1):
            if line.rstrip().endswith(f"# <- {marker}"):
                return number
    raise LookupError(marker)
