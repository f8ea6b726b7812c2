"""Who calls a method, across the package: is it only ever a lifecycle step?

The await rules read one module, so every coroutine method looks like an
operation that callers may run at any time. On the fifth held-out round
(asyncua) most false errors were methods the package itself calls only from
its start-up, reconnect or driver-task paths, in other modules: a
subscription's ``restore`` from the client's ``_recreate_subscriptions``, a
dataset's ``on_state_change`` from a reader's one ``_timeout_task``. Those run
once per object (or one at a time, in one task): they race only when a program
starts one object twice, which the severity policy makes a warning.

How, cheaply: the package's text, not its syntax trees (parsing every module
of a package for one finding would cost more than the lint of that file).
Every reference to the method's name - ``.name`` or a string ``"name"`` - in
every module of the package (the topmost directory chain with
``__init__.py``) must be a call inside a function that is a lifecycle step:
its public name starts with a start-up/teardown/reconnect verb (a private
``_connect`` is judged by its own callers: it is often the lazy reconnect of
an operation), it is a task the
module keeps on its object (``self.t = create_task(self.f())``), or, up to
three callers deep, a coroutine whose own callers all are. References are
matched by name only, so another class's method of the same name counts as a
caller too: more callers, fewer demotions - the resolution errs towards
keeping an error. Anything it cannot place keeps the error: a reference that
is not a call (a callback handed on), the name in a string (``getattr``), a
call at module or class level, no caller at all, a file outside a package.
One exception, for names shared by unrelated classes: a call in a plain
``def`` that neither awaits nor hands the result to a task cannot be a call of
a coroutine method that does anything, so it is not counted.
Callers outside the package (its users, its tests) are not seen: a public
method the package calls only on start-up may still be called by a user at
any time, which is why the finding stays, as a warning naming the callers.

A call site also counts when its caller holds a lock at the call (issue 14's
tenth round; :func:`_held_lock`): tortoise-orm's SQLite ``create_connection``
is reached only through a helper that the connection wrappers' ``__aenter__``
awaits after ``await self._lock.acquire()``, and telethon's event builders
run ``_resolve`` inside ``async with self._resolve_lock:``. The lock is read
by name, from the lines of the calling function that enclose the call, so two
callers holding different locks look the same as two holding one: the
finding becomes a warning naming the locks, not silence.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property, partial
from itertools import accumulate
from pathlib import Path

from racecheck.lint.module import Module, is_locklike, memo

#: first words of functions that are a lifecycle step of their object
_LIFECYCLE_VERBS = frozenset(
    {
        "connect",
        "reconnect",
        "start",
        "startup",
        "serve",
        "initialize",
        "init",
        "setup",
        "login",
        "handshake",
        "listen",
        "bind",
        "restore",
        "recreate",
        "stop",
        "close",
        "shutdown",
        "disconnect",
        "teardown",
        "main",
    }
)
_ENTRY_DUNDERS = frozenset({"__aenter__", "__aexit__", "__await__", "__init__"})

#: how many callers up a chain of plain coroutines is followed
_DEPTH = 3

#: a ``def``/``class`` header is the keyword and a name (searched for by the keyword,
#: a literal the engine skips ahead to: a pattern that opens with ``^`` and an
#: indent is tried at every position), with nothing before it on its line but an
#: indent and ``async`` (:attr:`_File.defs`)
_DEF_WORD = re.compile(r"def[ \t]+(\w+)")
_CLASS_WORD = re.compile(r"class[ \t]+(\w+)")
#: what follows a reference that is called (without copying the rest of the file)
_CALLED = re.compile(r"[ \t]*\(")
#: a call line in a plain def that may hand a coroutine on rather than drop it
_HANDS_ON = re.compile(r"await|task|future|gather|run|spawn|start_soon|wait|partial")


@dataclass(frozen=True)
class _Def:
    line: int
    indent: int
    kind: str  # "def", "async def" or "class"
    name: str


#: every ASCII character that is not part of a word (``\w``), as a blank: an ASCII
#: text translated with it splits into exactly its maximal ``\w+`` runs
_NOT_WORD = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_")}
)
#: how many names the package text is scanned for before its files' words are collected
_SCANS_BEFORE_WORDS = 16


class _File:
    """One module of a package: its text, and what is read from it on first use.

    A search for a name only looks inside files whose text holds the name, so
    in a large package (Pyrogram's 2,555 files) most files never need their
    lines or ``def`` headers: working them out for every file on the first
    question cost 0.4 s there.
    """

    def __init__(self, full: str, text: str) -> None:
        self.full = full
        self.text = text

    @cached_property
    def path(self) -> Path:
        return Path(self.full)

    @cached_property
    def words(self) -> frozenset[str] | None:
        """Every maximal run of ``\\w`` characters in the text; None when the text is
        not ASCII (``\\w`` then has letters the blanking below does not know)."""
        if not self.text.isascii():
            return None
        return frozenset(self.text.translate(_NOT_WORD).split())

    def may_hold(self, name: str) -> bool:
        """Can the text hold ``name`` as a whole word (as ``\\bname\\b`` matches it)?"""
        words = self.words
        return name in self.text if words is None else name in words

    @cached_property
    def line_starts(self) -> list[int]:
        # each line's length plus its newline, summed without a Python step per line
        # (Home Assistant: 2,914 files hold one name asked about)
        lengths = map(len, self.text.split("\n")[:-1])
        return list(accumulate(map((1).__add__, lengths), initial=0))

    @cached_property
    def defs(self) -> list[_Def]:
        text, starts = self.text, self.line_starts
        found: list[tuple[int, str, str]] = [
            (m.start(), kind, m.group(1))
            for kind, pattern in (("def", _DEF_WORD), ("class", _CLASS_WORD))
            for m in pattern.finditer(text)
        ]
        found.sort()
        defs: list[_Def] = []
        for begin, kind, name in found:
            # the line of the match: counting newlines from the top for every
            # def was quadratic in the file (100 ms for asyncssh's package)
            line = bisect.bisect_right(starts, begin) - 1
            head = text[starts[line] : begin]
            rest = head.lstrip(" \t")
            if rest:  # only `async` and blanks may come before the keyword
                if not rest.startswith("async") or rest[5:].strip(" \t") or not rest[5:]:
                    continue  # `def`/`class` inside a line, not a header
                kind = "class" if kind == "class" else "async def"
            indent = len(head[: len(head) - len(rest)].expandtabs())
            defs.append(_Def(line, indent, kind, name))
        return defs

    @cached_property
    def function_names(self) -> Counter[str]:
        """How many ``def`` headers (``class`` ones left out) of each name the text holds."""
        return Counter(d.name for d in self.defs if d.kind != "class")


@dataclass
class _Package:
    root: Path
    stamp: tuple[tuple[str, int, int], ...]
    files: list[_File]
    #: (class, method name) -> the answer of :func:`lifecycle_callers` (the text is fixed)
    answers: dict[tuple[str | None, str], Callers | None]
    #: class name -> the names of its bases, by name across the package (built on first use)
    bases: dict[str, set[str]] | None = None
    #: name -> the files whose text holds it (see :meth:`holding`)
    holders: dict[str, list[_File]] = field(default_factory=dict)

    def holding(self, name: str) -> list[_File]:
        """The files, in package order, that may hold identifier ``name`` as a whole word.

        Every search of the package for a name (its references, its ``def``s, its
        callers) matches it as a whole word, so a file that does not hold the word
        has nothing to give. The first names are found by scanning every file's text
        (``name in text``: 11 ms for Home Assistant's 33 MB); a package asked about
        more names than :data:`_SCANS_BEFORE_WORDS` (one file of a large package
        asks hundreds, with the callers of the callers: 91 for Home Assistant's
        ``garages_amsterdam/config_flow.py``, twice 11 ms each) has each file's words
        collected once (:attr:`_File.words`, 0.6 s there), and a later name costs a
        set look-up per file.
        """
        found = self.holders.get(name)
        if found is None:
            if len(self.holders) < _SCANS_BEFORE_WORDS:
                found = [file for file in self.files if name in file.text]
            else:
                found = [file for file in self.files if file.may_hold(name)]
            self.holders[name] = found
        return found


@dataclass(frozen=True)
class Callers:
    """Where a method's callers are, when every one is a lifecycle step or holds a lock."""

    #: the first caller, ``file:line in f()``, and how many more
    where: str
    #: the locks callers hold at their call (sorted, as written); empty: lifecycle only
    locks: tuple[str, ...] = ()


_PACKAGES: dict[Path, _Package] = {}


def package_root(path: str) -> Path | None:
    """The topmost directory of the package ``path`` is in, or None outside a package."""
    try:
        here = Path(path).resolve().parent
    except (OSError, RuntimeError):
        return None
    if not (here / "__init__.py").is_file():
        return None
    while (here.parent / "__init__.py").is_file() and here.parent != here:
        here = here.parent
    return here


#: the packages walked in the run under way (see :func:`one_run`); None outside a run
_WALKED: set[Path] | None = None


@contextmanager
def one_run() -> Iterator[None]:
    """One run of the lint over many files: each package is walked once in it.

    Outside a run every module's package is walked and its files' sizes and
    times compared with what was read (a file changed since is read again).
    Walking Home Assistant's 6,725 files and 2,071 directories took 60-100 ms,
    for each of its modules that asks about the package: over the 50 ms budget
    by itself. In a run, the package read for its first module serves the rest
    (the files do not change while they are linted); the next run walks again.
    """
    global _WALKED
    outer, _WALKED = _WALKED, set()
    try:
        yield
    finally:
        _WALKED = outer


def _package(root: Path) -> _Package:
    """The package's modules, read once per run (re-read when a file changes)."""
    cached = _PACKAGES.get(root)
    if cached is not None and _WALKED is not None and root in _WALKED:
        return cached
    if _WALKED is not None:
        _WALKED.add(root)
    stamp: list[tuple[str, int, int]] = []
    for top, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(names):
            if name.endswith(".py"):
                full = os.path.join(top, name)
                try:
                    st = os.stat(full)
                except OSError:
                    continue
                stamp.append((full, st.st_mtime_ns, st.st_size))
    key = tuple(stamp)
    if cached is not None and cached.stamp == key:
        return cached
    files: list[_File] = []
    for full, _, _ in stamp:
        try:
            with open(full, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        files.append(_File(full, text))
    _PACKAGES.clear()  # one package at a time: a run walks packages in order
    package = _PACKAGES[root] = _Package(root, key, files, {})
    return package


def _enclosing(file: _File, line: int, indent: int) -> _Def | None:
    """The innermost ``def``/``class`` a line at ``indent`` is in (by indentation)."""
    for d in reversed(file.defs):
        if d.line < line and d.indent < indent:
            return d
    return None


def lifecycle_callers(module: Module, name: str, owner: str | None = None) -> str | None:
    """Where the callers of method ``name`` are, when :func:`guarded_callers` finds them all
    lifecycle steps or holding a lock; else None."""
    found = guarded_callers(module, name, owner)
    return None if found is None else found.where


def guarded_callers(module: Module, name: str, owner: str | None = None) -> Callers | None:
    """Every caller of method ``name`` (of class ``owner``) in the module's package is a
    lifecycle step or holds a lock at its call: where they are, or None.

    The package is found, walked and checked for changes once per linted module
    (``memo``), and each name is judged once per class and package text.
    """
    package = memo(module.tree, "package", partial(_module_package, module.path))
    if package is None or not name.isidentifier():
        return None
    if (owner, name) not in package.answers:
        package.answers[owner, name] = _judge(package, name, _DEPTH, {name}, owner)
    return package.answers[owner, name]


#: a ``class`` header's name and bases, searched for by the keyword (as ``_DEF_WORD``)
_CLASS = re.compile(r"class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:")
_INDENT = re.compile(r"[ \t]*$")


def _class_headers(text: str) -> Iterator[re.Match[str]]:
    """Every ``class`` header that starts a line (after its indent)."""
    pos = 0
    while (m := _CLASS.search(text, pos)) is not None:
        if _INDENT.match(text, text.rfind("\n", 0, m.start()) + 1, m.start()):
            yield m
            pos = m.end()
        else:  # `class` inside a line: the bases it took may hold a real header
            pos = m.start() + 1


def _class_bases(package: _Package) -> dict[str, set[str]]:
    """Class name -> base names, from every ``class`` header of the package's text.

    By name only: two classes of one name are one node, so they share their
    bases - more relations, fewer self-calls ruled out (the resolution errs
    towards keeping an error).
    """
    if package.bases is None:
        bases: dict[str, set[str]] = {}
        for file in package.files:
            for m in _class_headers(file.text):
                found = bases.setdefault(m.group(1), set())
                for part in (m.group(2) or "").split(","):
                    part = part.split("[", 1)[0].strip()
                    if part and "=" not in part:  # `metaclass=...` is no base
                        found.add(part.rsplit(".", 1)[-1].strip())
        package.bases = bases
    return package.bases


def _ancestors(bases: dict[str, set[str]], name: str) -> set[str]:
    seen: set[str] = set()
    todo = [name]
    while todo:
        for base in bases.get(todo.pop(), ()):
            if base not in seen:
                seen.add(base)
                todo.append(base)
    return seen


def _self_call_reaches(package: _Package, caller: str, owner: str) -> bool:
    """Can ``self.m()`` in a method of class ``caller`` run class ``owner``'s ``m``?

    Only when ``owner`` is that class, an ancestor it inherits ``m`` from, or a
    descendant ``self`` may be an instance of. A sibling class - another
    subclass of a shared base - has its own ``m``: faststream's MQTT
    subscriber calls its own ``_create_subscription()`` from ``__aiter__``,
    which never runs the NATS subscriber's. A class the headers do not show is
    taken as related.
    """
    bases = _class_bases(package)
    if caller == owner or caller not in bases or owner not in bases:
        return True
    return owner in _ancestors(bases, caller) or caller in _ancestors(bases, owner)


def _module_package(path: str) -> _Package | None:
    root = package_root(path)
    return None if root is None else _package(root)


#: what makes ``.name`` an assignment target, not a use
_ASSIGNED = re.compile(r"[ \t]*=[^=]")


def _attribute_refs(ref: re.Pattern[str], text: str) -> Iterator[tuple[int, int, bool]]:
    """Each ``.name`` that is not assigned to and each ``'name'`` in quotes: where it
    starts (the dot or the quote), where the name ends, and whether it is quoted.

    What ``\\.[ \\t]*name\\b(?![ \\t]*=[^=])|['"]name['"]`` finds, searched for
    by the name (``ref``): that pattern opens with no literal, so it was tried at
    every position of the package's text (2.5 s of telethon's first file).
    """
    for m in ref.finditer(text):
        begin = m.start()
        dot = begin
        while dot and text[dot - 1] in " \t":
            dot -= 1
        if dot and text[dot - 1] == ".":
            if _ASSIGNED.match(text, m.end()) is None:
                yield dot - 1, m.end(), False
        elif begin and text[begin - 1] in "'\"" and text.startswith(("'", '"'), m.end()):
            yield begin - 1, m.end(), True


def _judge(
    package: _Package, name: str, depth: int, seen: set[str], owner: str | None
) -> Callers | None:
    root = package.root
    ref = re.compile(rf"{name}\b")
    callers: list[str] = []
    locks: set[str] = set()
    for file in package.holding(name):
        for begin, end, quoted in _attribute_refs(ref, file.text):
            if quoted:
                return None  # named in a string: a getattr or a table the lint cannot follow
            if _CALLED.match(file.text, end) is None:
                return None  # handed on (a callback), or another attribute of that name
            line = bisect_line(file.line_starts, begin)
            start = file.line_starts[line]
            end = file.text.find("\n", start)
            text = file.text[start : end if end >= 0 else len(file.text)]
            indent = len(text) - len(text.lstrip(" \t"))
            outer = _enclosing(file, line, len(text[:indent].expandtabs()))
            if outer is None or outer.kind == "class":
                return None  # run at import time or in a class body: not a step we can place
            if outer.name in seen:
                continue  # an override calling its base, or a recursion
            if owner is not None and re.search(r"(?<![\w.])self[ \t]*$", file.text[start:begin]):
                klass = _enclosing(file, outer.line, outer.indent)
                if (
                    klass is not None
                    and klass.kind == "class"
                    and klass.indent < outer.indent
                    and not _self_call_reaches(package, klass.name, owner)
                ):
                    continue  # a sibling class's own method of that name
            if outer.kind == "def" and not _HANDS_ON.search(text):
                continue  # a plain call of a same-named plain method of another class
            held = _held_lock(file, outer, line, text)
            if held is not None:
                callers.append(
                    f"{file.path.relative_to(root.parent)}:{line + 1} in {outer.name}() "
                    f"under {held}"
                )
                locks.add(held)
                continue
            step = _lifecycle_step(package, file, outer, depth, seen)
            if step is None:
                return None
            why, held_above = step
            locks.update(held_above)
            callers.append(f"{file.path.relative_to(root.parent)}:{line + 1} in {why}")
    if not callers:
        return None
    more = f" and {len(callers) - 1} more" if len(callers) > 1 else ""
    return Callers(f"{callers[0]}{more}", tuple(sorted(locks)))


#: a ``with``/``async with`` header, its items in group 1
_WITH = re.compile(r"[ \t]*(?:async[ \t]+)?with[ \t]+(.+?):[ \t]*(?:#.*)?$")
#: ``await <expr>.acquire()`` / ``<expr>.release()`` as a whole statement
_LOCK_CALL = re.compile(r"[ \t]*(?:await[ \t]+)?([\w.]+)\.(acquire|release)\(\)[ \t]*(?:#.*)?$")
#: a call line that hands the coroutine on: it runs later, outside the caller's lock
_DEFERS = re.compile(r"task|future|gather|spawn|start_soon|run_coroutine|call_soon|partial")


def _held_lock(file: _File, func: _Def, line: int, text: str) -> str | None:
    """The lock the call on ``line`` (awaited, in ``func``) runs under, or None.

    Read from the text, as the rest of this module: the call is awaited on its
    line and nothing there hands it to a task; walking up from the call, an
    enclosing ``with``/``async with`` header whose item has a lock-like name (as
    :func:`racecheck.lint.module.is_locklike` judges names, a semaphore aside), or an
    ``[await] <x>.acquire()`` statement in the same block or an enclosing one
    with no ``<x>.release()`` after it (in any block: a release in a ``finally:``
    that ended before the call let go too). An ``acquire()`` whose
    result is dropped is a claim whatever the object's name (pyatv's
    ``self.playback_manager.acquire()`` raises when the manager is taken); one
    whose result is kept (``conn = await pool.acquire()``) takes something out
    of a pool and holds nothing. Only the blocks that
    enclose the call are looked at (a line deeper than the chain so far is in a
    block that has ended), and only inside ``func`` (a nested ``def`` runs
    whenever its caller awaits it, not under the outer function's lock). A line
    this cannot read - a header over several lines, a continuation line - at
    worst hides a lock, which keeps the error.
    """
    if "await" not in text or _DEFERS.search(text):
        return None
    starts = file.line_starts
    limit = len(text[: len(text) - len(text.lstrip(" \t"))].expandtabs())
    released: set[str] = set()
    for number in range(line - 1, func.line, -1):
        begin = starts[number]
        end = starts[number + 1] - 1 if number + 1 < len(starts) else len(file.text)
        source = file.text[begin:end]
        stripped = source.lstrip(" \t")
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(source[: len(source) - len(stripped)].expandtabs())
        call = _LOCK_CALL.match(source)
        if call is not None and call.group(2) == "release":
            # at any depth: a release in a `finally:` or a branch that ended before
            # the call may have let go (it errs towards keeping the error)
            released.add(call.group(1))
            continue
        if indent > limit:
            continue  # inside a block that ended before the call
        if indent < limit:
            limit = indent
            header = _WITH.match(source)
            if header is not None:
                for item in header.group(1).split(","):
                    expr = re.sub(r"[ \t]+as[ \t]+\w+[ \t]*$", "", item.strip())
                    expr = re.sub(r"\([^()]*\)$", "", expr)  # `self._get_lock(key)`
                    last = re.search(r"(\w+)$", expr)
                    if last is not None and _locklike(last.group(1)):
                        return expr
            continue
        if (
            call is not None
            and call.group(1) not in released
            and not _COUNTING.search(call.group(1).rsplit(".", 1)[-1])
        ):
            return call.group(1)
    return None


#: a semaphore lets N holders in at once: no exclusion between two callers
_COUNTING = re.compile(r"semaphore|(^|_)sem($|_)", re.IGNORECASE)


def _locklike(name: str) -> bool:
    """A name judged as :func:`is_locklike` judges the last name of a ``with`` item,
    less semaphores (aioboto3's downloads run ``get_object()`` under one, several at once)."""
    return is_locklike(ast.Name(id=name)) and not _COUNTING.search(name)


def bisect_line(starts: list[int], pos: int) -> int:
    lo, hi = 0, len(starts)
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if starts[mid] <= pos:
            lo = mid
        else:
            hi = mid
    return lo


def _lifecycle_step(
    package: _Package, file: _File, func: _Def, depth: int, seen: set[str]
) -> tuple[str, tuple[str, ...]] | None:
    """Why ``func`` runs once per object, or only with a lock held (and which), or None."""
    name = func.name
    if name in _ENTRY_DUNDERS:
        return f"{name}()", ()
    if not name.startswith("_") and name.split("_", 1)[0].lower() in _LIFECYCLE_VERBS:
        # public only: a private ``_connect()`` is often the lazy reconnect an
        # operation calls (aiomysql's ``ping()``); it is judged by its callers
        return f"{name}()", ()
    kept = re.compile(
        rf"self\.\w+[ \t]*=[ \t]*[\w.]*\b(?:create_task|ensure_future|spawn)\([ \t]*self\.{name}\("
    )
    if kept.search(file.text):
        return f"{name}(), the object's own kept task", ()
    if depth > 1 and func.kind == "async def" and not name.startswith("__"):
        klass = _enclosing(file, func.line, func.indent)
        cls = klass.name if klass is not None and klass.kind == "class" else None
        up = _judge(package, name, depth - 1, seen | {name}, cls)
        if up is not None:
            return f"{name}() (called from {up.where})", up.locks
    return None
