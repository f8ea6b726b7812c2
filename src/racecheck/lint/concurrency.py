"""Is a method run by two tasks (or threads) at once? The evidence an error needs.

Ten held-out rounds of the await rules (docs/lint.md) kept finding the same
thing: a check-then-act across an await is a *shape*, and whether it is a bug
depends on whether two callers ever run the method at once on one object.
Each round's fixes excused one more way a library makes an operation run once
or one at a time (lifecycle steps, callers holding a lock, a claim, merged
calls, one task per stream), and the next round brought a new one: 45% over
ten frozen rounds. This module takes the other side: instead of excusing what
it can recognise, an RC102/RC103 finding is an *error* only when the code
itself shows the concurrency that makes it one, and a warning otherwise.

The evidence, any one of:

* **spawned**: within the package (the topmost directory chain with
  ``__init__.py``; the module alone outside a package) the method's name is
  inside the arguments of a call that starts concurrent work -
  ``create_task``, ``ensure_future``, ``gather``, ``wait``, ``as_completed``,
  ``start_soon``, ``spawn``, ``run_in_executor``, ``to_thread``, ``submit``,
  ``run_coroutine_threadsafe``, ``Thread(target=...)`` - or a function that
  calls it is, up to three callers up. A future the calling thread waits
  for at once (``run_coroutine_threadsafe(...)``/``submit(...)``, then its
  ``.result()``) adds no concurrency and does not count. A task the object keeps
  (``self._t = create_task(self._run())``) is its driver, started once per
  object, and does not count; neither does a task started in ``__init__``,
  ``__aenter__`` or a public start-up step (:data:`callers._LIFECYCLE_VERBS`).
  The module's own fan-outs (``_run_concurrently``: a list of coroutines
  gathered later) count as well;
* **a counted resource** (RC102 only): the check compares the attribute with
  ``<``/``<=``/``>``/``>=`` and the act moves it by one unit, ``+= 1``/``-= 1`` (issue 14's
  canonical ``if self.opened < self.max_size: await ...; self.opened += 1``): a
  count bounded by a limit exists only because several users share what it
  counts. Not in an object that is its own async iterator (it defines
  ``__anext__``): one ``async for`` consumes it, and its count is that
  consumer's progress (twitchio's paginator counting down the results it may
  still yield, twelfth round); two tasks pulling one iterator is misuse.

Without any of these the finding is a warning that says so. A class *named*
as shared by design (a pool, cache, limiter, throttle, bucket, semaphore, lock
or queue) was evidence until lintprec10; on the 429 packages of the held-out
rounds, of the nine errors whose message named the class as the evidence
three had a spawn the package shows as well, and of the six with nothing but
the name two were true; so such a finding is now a warning that names the
class (:func:`shared_by_design`). Only inside a
package: a lone file or a snippet (``lint_source``, a directory of scripts)
has no package to search, is often one piece of an application whose tasks
come from a framework the lint cannot see (request handlers), and keeps the
severity its shape gives, as before - the same line the callers index draws. What this gives
up, knowingly: misuse races (two tasks reading one HTTP body, one request
object resolved twice) and races that only a caller outside the package can
start are warnings now, though the earlier rounds counted many of them as
true errors. They are listed all the same; the severity says how much the
package itself shows, not whether to look.

It reads the package's *text*, as :mod:`racecheck.lint.callers` does (its
walk of the package is shared), and only for a finding that would otherwise
be an error. Names are matched, not types: a same-named method of another
class that is spawned counts as evidence (an error kept, never one invented
from nothing).
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from racecheck.lint.callers import (
    _LIFECYCLE_VERBS,
    _Def,
    _File,
    _module_package,
    _Package,
    _self_call_reaches,
    bisect_line,
)
from racecheck.lint.module import ClassInfo, FunctionNode, Module, memo

#: calls that start work running alongside the caller (their arguments run concurrently)
_SPAWN = re.compile(
    r"\b(create_task|ensure_future|gather|as_completed|start_soon|spawn|run_in_executor|"
    r"to_thread|submit|run_coroutine_threadsafe|Thread|asyncio\.wait)[ \t]*\("
)
#: spawns that hand back a concurrent.futures future, whose ``result()`` blocks
_WAITABLE = frozenset({"submit", "run_coroutine_threadsafe"})
#: the future's result taken on the spot: ``submit(...).result(``
_RESULT_NOW = re.compile(r"[ \t]*\.result[ \t]*\(")
#: ``future = `` before the spawning call
_ASSIGNED = re.compile(r"(\w+)[ \t]*=[ \t]*[\w.]*$")
#: a task kept on the object: its driver, started once per object
_KEPT = re.compile(r"self\.\w+[ \t]*(?::[^=\n]*)?=[ \t]*[\w.]*$")
#: a character that continues a name (or opens a string) right before a match
_NAME_OR_QUOTE = re.compile(r"[\w'\"]")
#: how far back a spawn call's opening may be from the name inside its arguments
_WINDOW = 600
#: how many callers up a chain is followed
_DEPTH = 3
#: words of class names that are shared by many tasks by design
_SHARED_BY_DESIGN = frozenset(
    {
        "pool",
        "cache",
        "limiter",
        "ratelimiter",
        "throttle",
        "throttler",
        "bucket",
        "semaphore",
        "lock",
        "mutex",
        "queue",
    }
)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")
_STARTS = frozenset({"__init__", "__aenter__", "__post_init__"})


#: :func:`_shallow_line`'s patterns, by indent
_SHALLOW: dict[int, re.Pattern[str]] = {}


def _shallow_line(indent: int) -> re.Pattern[str]:
    """A line that can end a def at ``indent``: a newline, then at most ``indent``
    spaces (or an indent with a tab, measured afterwards), then a character that
    is not blank, a comment or a closing bracket. It opens with the newline, a
    literal the engine skips ahead to."""
    found = _SHALLOW.get(indent)
    if found is None:
        first = r"(?=[^ \t\n#)\]}])"
        found = _SHALLOW[indent] = re.compile(
            rf"\n([ ]{{0,{indent}}}{first}|[ \t]*\t[ \t]*{first})"
        )
    return found


def in_package(module: Module) -> bool:
    """Is there a package to search? Outside one (``lint_source``, a lone script)
    the shape decides, as before this cut: see the module docstring."""
    return memo(module.tree, "package", partial(_module_package, module.path)) is not None


def in_namespace_portion(module: Module) -> str | None:
    """The package above a module whose own directory has no ``__init__.py``, or None.

    litellm's ``integrations/datadog/``, spanner's ``_async/``: implicit
    namespace portions of a regular package. No package is searched from them
    (:func:`in_package` is False), and until lint19 the shape alone made an
    error there, as in a lone script: 15 of 20 true on the held-out rounds.
    They now need evidence the module itself shows. Searching the enclosing
    package instead kept 7 of the 20, 2 of them true, and was not taken.
    """
    try:
        here = Path(module.path).resolve().parent
    except (OSError, RuntimeError):
        return None
    if (here / "__init__.py").is_file():
        return None
    for above in here.parents:
        if (above / "__init__.py").is_file():
            return above.name
    return None


def evidence(
    module: Module, func: FunctionNode, info: ClassInfo | None, spawned_here: frozenset[str]
) -> str | None:
    """Why ``func`` may run in two tasks at once, in a few words, or None.

    ``spawned_here`` is the module's own fan-out targets (and what they call).
    """
    if func.name in spawned_here:
        return f"{func.name}() is fanned out in this module"
    where = spawned(module, func.name, info.node.name if info is not None else None)
    if where is not None:
        return f"{func.name}() runs concurrently ({where})"
    return None


def shared_by_design(info: ClassInfo | None) -> str | None:
    """The class's name when it says the object is shared by many tasks (a pool,
    cache, limiter, queue, lock), or None.

    Weaker than :func:`evidence`: a name is what the author called the class, not
    code that runs a method twice at once. On the 429 packages of the held-out
    rounds the errors resting on a name alone were 2 true of 6 (lintprec10's
    table in docs/lint.md), those with a spawn or fan-out the package shows 11
    of 13; so a name alone makes a warning that says so.
    """
    if info is None:
        return None
    words = {w.lower() for w in _WORD.findall(info.node.name)}
    return f"`{info.node.name}`" if words & _SHARED_BY_DESIGN else None


def counted(
    module: Module, func: FunctionNode, info: ClassInfo | None, line: int, end_line: int | None
) -> bool:
    """Is the RC102 on ``line`` a counted resource: ``<``-like check, ``+=``/``-=`` act,
    in an object that is not its own async iterator?"""
    if end_line is None or (
        info is not None and module.resolve_method(info, "__anext__") is not None
    ):
        return False
    targets = [
        ast.unparse(node.target)
        for node in ast.walk(func)
        if isinstance(node, ast.AugAssign)
        and getattr(node, "lineno", 0) == end_line
        and isinstance(node.op, (ast.Add, ast.Sub))
        and isinstance(node.target, ast.Attribute)
        # one unit taken or given back: a progress total (pyatv's padding counter,
        # `+= len(frames)`, bounded by a latency in one streaming loop) is no count
        # of a shared resource
        and isinstance(node.value, ast.Constant)
        and node.value.value == 1
    ]
    if not targets:
        return False
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Compare)
            and getattr(node, "lineno", 0) == line
            and all(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops)
            and any(ast.unparse(side) in targets for side in [node.left, *node.comparators])
        ):
            return True
    return False


def spawned(module: Module, name: str, owner: str | None) -> str | None:
    """Where the package starts method ``name`` of class ``owner`` (or a caller of it)
    as concurrent work, or None."""
    if not name.isidentifier():
        return None
    package = memo(module.tree, "package", partial(_module_package, module.path))
    if package is None:
        return None
    return _spawned(_index(package), name, owner, _DEPTH, frozenset({name}))


@dataclass
class _Index:
    """The package's text with what the search asks of it again and again."""

    package: _Package
    #: name -> how many ``def``s of that name the package has (counted on first use)
    defs: dict[str, int] = field(default_factory=dict)
    #: (name, owner, depth) -> the answer
    answers: dict[tuple[str, str | None, int], str | None] = field(default_factory=dict)
    #: id(file) -> its strings and function bodies (built on first use)
    shapes: dict[int, _Shape] = field(default_factory=dict)
    #: name -> its references (see :func:`_refs`)
    refs: dict[str, list[_Ref]] = field(default_factory=dict)
    #: (class, owner) -> can ``self.m()`` in ``class`` run ``owner``'s ``m``
    related: dict[tuple[str, str], bool] = field(default_factory=dict)


def _index(package: _Package) -> _Index:
    found: _Index | None = getattr(package, "spawn_index", None)
    if found is None:
        found = _Index(package)
        package.spawn_index = found  # type: ignore[attr-defined]
    return found


def _defs_named(index: _Index, name: str) -> int:
    """How many functions (not classes) named ``name`` the package defines: the
    headers of ``callers._File.defs`` in the files that hold the name. Those are
    the files :func:`_refs` reads the headers of for the same name, so counting
    there costs nothing more (a search of each file for ``def name`` found every
    ``def`` of it: 1,301 files for agno's ``async_mongo.py``'s 81 names)."""
    count = index.defs.get(name)
    if count is None:
        count = index.defs[name] = sum(
            file.function_names[name] for file in index.package.holding(name)
        )
    return count


def _spawned(
    index: _Index, name: str, owner: str | None, depth: int, seen: frozenset[str]
) -> str | None:
    """Where ``name`` is spawned, or a caller of it up to ``depth`` callers up.

    One answer per name, class and depth for the package's text (a common name
    has hundreds of references; each is judged once per run). The answer
    ignores ``seen`` (which only cuts cycles).
    """
    key = (name, owner, depth)
    if key not in index.answers:
        index.answers[key] = None  # a cycle back here adds nothing
        index.answers[key] = _search(index, name, owner, depth, seen)
    return index.answers[key]


def _lifecycle(name: str) -> bool:
    return name in _STARTS or (
        not name.startswith("_") and name.split("_", 1)[0].lower() in _LIFECYCLE_VERBS
    )


@dataclass(frozen=True)
class _Ref:
    """One reference to a name, judged once whatever class is asking."""

    where: str  # ``file.py:line``
    outer: str  # the function it is in
    cls: str | None  # that function's class
    on_self: bool  # ``self.name``
    spawn: bool  # inside the arguments of a spawn, or appended to a list gathered later
    #: ``obj.name`` where ``obj`` is a local the calling function just built,
    #: ``obj = Cls(...)``: each run of the caller has an object of its own
    fresh: bool = False


def _refs(index: _Index, name: str) -> list[_Ref]:
    """Every reference to ``name`` that may run it, once per name and package text.

    A common name is asked about for many classes (telethon's 413 generated
    ``resolve()``s): the text is scanned once, and each class only filters.
    Text in a docstring or comment, the name's own ``def``, a reference at
    import time or in a class body, and one inside a lifecycle step are left
    out here.
    """
    found = index.refs.get(name)
    if found is not None:
        return found
    found = []
    # The name first, its left edge checked on each match: a pattern that opens
    # with a look-behind is tried at every position of the text (sre has no
    # literal to skip ahead to), 15-100x slower on a large package.
    ref = re.compile(rf"{name}\b(?=[ \t]*[(,)\n])")
    for file in index.package.holding(name):
        shape = _shape(index, file)
        for m in ref.finditer(file.text):
            if m.start() and _NAME_OR_QUOTE.match(file.text, m.start() - 1):
                continue  # a longer name ending in this one, or a string's content
            if shape.in_string(m.start()):
                continue  # a docstring's example (``asyncio.create_task(pubsub.run())``)
            line = bisect_line(file.line_starts, m.start())
            start = file.line_starts[line]
            head = file.text[start : m.start()]
            if re.search(r"\bdef[ \t]+$|\bclass[ \t]+$", head) or "#" in head:
                continue  # its own definition, or a comment
            outer = shape.enclosing(line)
            if outer is None or outer.kind == "class":
                continue  # a call at import time or in a class body starts no task here
            if _lifecycle(outer.name):
                continue  # a start-up or teardown step runs it once per object
            on_self = re.search(r"(?<![\w.])self\.$", head) is not None
            if on_self and _claimed(file.text, file.line_starts[outer.line], m.start()):
                continue  # the caller claims the call first: one at a time per object
            klass = shape.enclosing(outer.line)
            found.append(
                _Ref(
                    f"{file.path.name}:{line + 1}",
                    outer.name,
                    klass.name if klass is not None and klass.kind == "class" else None,
                    on_self,
                    _inside_spawn(file.text, m.start()) or shape.gathered(m.start(), outer),
                    not on_self
                    and _on_fresh_object(file.text, file.line_starts[outer.line], m.start(), head),
                )
            )
    index.refs[name] = found
    return found


#: ``processor.`` right before the name: the receiver, a plain local
_RECEIVER = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\.$")
#: a class built: ``Cls(`` or ``module.Cls(``, by the naming convention
_BUILT = re.compile(r"[ \t]*(?:\w+\.)*[A-Z]\w*\(")


def _on_fresh_object(text: str, start: int, pos: int, head: str) -> bool:
    """Is the reference at ``pos`` a call on a local the function (from ``start``)
    last bound to a new object, ``processor = RequestProcessing(data=data)``?

    Each run of the caller builds its own object, so however many tasks run the
    caller at once, none shares the object the method runs on (litellm's proxy
    builds a ``ProxyBaseLLMRequestProcessing`` per request and runs its pre-call
    step once on it; sixteenth round, #39-41). The module-local version of this
    is ``awaits._owned``. A later rebinding of the name (a loop target, ``as``,
    another assignment) makes it unknown.
    """
    receiver = _RECEIVER.search(head)
    if receiver is None or receiver.group(1) in ("self", "cls"):
        return False
    name = re.escape(receiver.group(1))
    # searched in place (``pos``/``endpos``): a copy of a large function's text
    # for each reference cost more than the search
    binding = re.compile(rf"^[ \t]*{name}[ \t]*(?::[^=\n]*)?=(?!=)", re.M)
    last = None
    for last in binding.finditer(text, start, pos):  # noqa: B007 - the last one is wanted
        pass
    if last is None or not _BUILT.match(text, last.end(), pos):
        return False
    rebound = re.compile(
        rf"\b(?:for|as)[ \t]+(?:\w+[ \t]*,[ \t]*)*{name}\b|\b{name}[ \t]*,[^=\n]*=(?!=)"
    )
    return rebound.search(text, last.end(), pos) is None


#: ``if self._flag:`` and ``return`` (on its line or the next): a caller leaving
#: while the flag is set
_CLAIM_CHECK = re.compile(r"\bif[ \t]+self\.(\w+)[ \t]*:[ \t]*(?:#[^\n]*)?\n?[ \t]*return\b")
#: where a coroutine may suspend
_SUSPENDS = re.compile(r"\bawait\b|\basync[ \t]+(?:with|for)\b")


def _claimed(text: str, start: int, pos: int) -> bool:
    """Is the call at ``pos`` (in the function that begins at ``start``) behind a claim?

    ``if self._update_staged: return`` and then ``self._update_staged = True``
    before the first await, before the call (Home Assistant's
    ``Entity.async_device_update`` around a subclass's ``async_update``): a
    second caller leaves at the check while the first is inside, so the call
    runs once at a time per object however often the caller is spawned. The
    same shape inside one class is :func:`awaits._behind_once_guards`; here
    the callee lives in another module. A flag set after an await claims
    nothing (two callers can both pass the check first).
    """
    body = text[start:pos]
    for check in _CLAIM_CHECK.finditer(body):
        claim = re.compile(rf"self\.{check.group(1)}[ \t]*=[ \t]*True\b").search(body, check.end())
        if claim is not None and not _SUSPENDS.search(body, check.end(), claim.start()):
            return True
    return False


def _search(
    index: _Index, name: str, owner: str | None, depth: int, seen: frozenset[str]
) -> str | None:
    """Names, not types: a reference counts only when it can only mean this method -
    ``self.name`` in the method's class (or a base or subclass of it), or any
    reference when the package defines ``name`` once. A common name (``read``,
    ``close``) defined by several classes is reached only through ``self``:
    aiohttp's ``run_in_executor(None, fobj.read, ...)`` is a file's ``read``,
    not a response's."""
    unique = _defs_named(index, name) <= 1
    callers: dict[tuple[str, str | None], None] = {}
    for ref in _refs(index, name):
        if ref.on_self and ref.cls is not None:
            if owner is not None and not _related(index, ref.cls, owner):
                continue  # a sibling class's own method of that name
        elif not unique:
            continue  # which class's method this is, the text cannot tell
        if ref.spawn:
            return ref.where
        if ref.fresh:
            continue  # its caller's runs each build their own object: none shares this one
        if depth > 1 and ref.outer not in seen:
            callers[ref.outer, ref.cls] = None
    for caller, cls in callers:
        found = _spawned(index, caller, cls, depth - 1, seen | {caller})
        if found is not None:
            return f"through {caller}(), {found}"
    return None


def _related(index: _Index, cls: str, owner: str) -> bool:
    key = (cls, owner)
    if key not in index.related:
        index.related[key] = _self_call_reaches(index.package, cls, owner)
    return index.related[key]


_TRIPLE = re.compile(r"\"\"\"|\'\'\'")
#: the letters that may open a string literal before its quotes
_STRING_PREFIX = frozenset("rbuRBUfF")
#: ``tasks.append(`` : a coroutine kept in a list, gathered later in the same function
_APPEND = re.compile(r"(\w+)\.append\(\s*[\w.]*$")


class _Shape:
    """Where a file's triple-quoted strings and its functions' bodies are, from its text.

    ``callers._enclosing`` takes the nearest earlier ``def`` with less indent,
    which is wrong after a nested function ends (aioboto3's download loop sits
    after a nested ``queue_reader()``): here a ``def`` ends at the first later
    line, outside a string, indented no deeper than it.
    """

    def __init__(self, file: _File) -> None:
        self.file = file
        text = file.text
        spans: list[int] = []
        pos = 0
        while True:
            # the quotes first, then the prefix letters before them: a pattern that
            # opens with the letters is tried at every position (0.45 s on
            # asyncua's 14 MB of generated modules)
            m = _TRIPLE.search(text, pos)
            if m is None:
                break
            start = m.start()
            while start > pos and text[start - 1] in _STRING_PREFIX:
                start -= 1
            close = text.find(m.group(0), m.end())
            if close < 0:
                break
            spans += [start, close + 3]
            pos = close + 3
        self.spans = spans
        #: each def's line, for the bisect in :meth:`enclosing`
        self.lines = [d.line for d in file.defs]
        self._ends: dict[int, int] = {}
        self._parents: list[int] | None = None

    def end(self, i: int) -> int:
        """Def ``i``'s end: the first later line, outside a string, not blank, not a
        comment, not the close of a multi-line signature, indented no deeper.

        Found on first use, by a pattern that skips the deeper lines of the body
        inside the regular expression engine: only the defs around a reference
        are asked (every def scanned ahead to its end cost 1.4 s on telethon's
        generated package; every line looked at, 0.4-1.1 s).
        """
        found = self._ends.get(i)
        if found is None:
            d, starts, text = self.file.defs[i], self.file.line_starts, self.file.text
            found = len(starts)
            pos = starts[d.line + 1] - 1 if d.line + 1 < len(starts) else len(text)
            pattern = _shallow_line(d.indent)
            while (m := pattern.search(text, pos)) is not None:
                pos = m.end()
                if self.in_string(m.start() + 1):
                    continue  # inside a triple-quoted string
                if len(m.group(1).expandtabs()) > d.indent:
                    continue  # a tab took the indent deeper than it looked
                found = bisect.bisect_right(starts, m.start() + 1) - 1
                break
            self._ends[i] = found
        return found

    def parents(self) -> list[int]:
        """Each def's nearest earlier def with less indent (-1: none)."""
        if self._parents is None:
            defs = self.file.defs
            parents: list[int] = []
            stack: list[int] = []
            for d in defs:
                while stack and defs[stack[-1]].indent >= d.indent:
                    stack.pop()
                parents.append(stack[-1] if stack else -1)
                stack.append(len(parents) - 1)
            self._parents = parents
        return self._parents

    def in_string(self, pos: int) -> bool:
        return bisect.bisect_right(self.spans, pos) % 2 == 1

    def enclosing(self, line: int) -> _Def | None:
        """The innermost ``def``/``class`` whose body holds ``line``.

        Only the nearest def before ``line`` and its parents by indent can hold
        it: a def's header line ends every earlier def at least as deep. That
        needs the headers between to be code; past a header inside a string
        (an example in a docstring) every earlier def is asked, from the
        nearest backwards, and the first that holds the line with its header
        outside a string ends the search, for the same reason.
        """
        defs, starts = self.file.defs, self.file.line_starts
        parents = self.parents()
        i = bisect.bisect_left(self.lines, line) - 1
        best: _Def | None = None
        while i >= 0:
            if self.in_string(starts[defs[i].line]):
                break  # from here on, every def is asked
            if line < self.end(i):
                return defs[i]
            i = parents[i]
        for j in range(i, -1, -1):
            d = defs[j]
            if line < self.end(j) and (best is None or d.indent >= best.indent):
                best = d
                if not self.in_string(starts[d.line]):
                    break
        return best

    def gathered(self, pos: int, outer: _Def) -> bool:
        """``tasks.append(name(...))`` and ``gather(*tasks)`` (or ``wait``) later in ``outer``."""
        text, starts = self.file.text, self.file.line_starts
        m = _APPEND.search(text, max(0, pos - 200), pos)
        if m is None:
            return False
        end = self.end(self.file.defs.index(outer))
        body = text[pos : starts[end] if end < len(starts) else len(text)]
        return (
            re.search(rf"\b(?:gather|wait|as_completed)\([ \t]*\*?{m.group(1)}\b", body) is not None
        )


def _shape(index: _Index, file: _File) -> _Shape:
    shape = index.shapes.get(id(file))
    if shape is None:
        shape = index.shapes[id(file)] = _Shape(file)
    return shape


def _inside_spawn(text: str, pos: int) -> bool:
    """Is ``pos`` inside the arguments of a spawning call (not a task the object keeps)?"""
    lo = max(0, pos - _WINDOW)
    window = text[lo:pos]
    for m in reversed(list(_SPAWN.finditer(window))):
        closed, depth = _closing_bracket(window, m.end(), len(window), 0)
        if closed >= 0:
            continue  # that call closed before the name
        line_start = window.rfind("\n", 0, m.start()) + 1
        if _KEPT.search(window[line_start : m.start()]):
            return False  # `self._task = create_task(self._run())`: the object's driver
        if m.group(1) in _WAITABLE and _waited(text, pos, depth, window[line_start : m.start()]):
            continue  # the calling thread blocks on it: no concurrency of its own
        return True
    return False


def _closing_bracket(text: str, start: int, stop: int, depth: int) -> tuple[int, int]:
    """Where, in ``text[start:stop]``, a bracket closes the call ``depth`` brackets out.

    The index of that ``)`` (or -1 when none does before ``stop``), and the
    depth reached.
    """
    for index in range(start, stop):
        ch = text[index]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return index, depth
    return -1, depth


def _waited(text: str, pos: int, depth: int, head: str) -> bool:
    """Does the thread that made this future wait for it at once?

    ``submit(...)``/``run_coroutine_threadsafe(...)`` followed by ``.result(``,
    or assigned to a name whose ``.result(`` is taken on the next line (scrapy's
    shell: ``future = run_coroutine_threadsafe(self._schedule(...), loop)``,
    then ``future.result()``). ``depth`` is how many brackets inside the call
    ``pos`` is.
    """
    end, _ = _closing_bracket(text, pos, min(len(text), pos + _WINDOW), depth)
    if end < 0:
        return False
    rest = text[end + 1 : end + 1 + _WINDOW]
    if _RESULT_NOW.match(rest):
        return True
    assigned = _ASSIGNED.search(head)
    if assigned is None:
        return False
    line_end = rest.find("\n")
    if line_end < 0 or rest[:line_end].strip(" \t#"):
        return False
    following = rest[line_end + 1 :].lstrip("\n").split("\n", 1)[0]
    return f"{assigned.group(1)}.result(" in following
