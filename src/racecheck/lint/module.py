"""What the checks need to know about one module: imports, classes, methods, primitives.

Every check is intra-module: a base class defined in another file is unknown,
so a method inherited from it is never resolved. That keeps the lint fast and
its answers explainable; it also means it under-reports rather than guesses.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any, TypeVar

_T = TypeVar("_T")
_N = TypeVar("_N", bound=ast.AST)

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef

#: asyncio classes that bind to an event loop (RC106, RC107)
ASYNCIO_PRIMITIVES = frozenset(
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
        "Future",
    }
)
ASYNCIO_LOCKS = frozenset({"Lock", "Condition", "Semaphore", "BoundedSemaphore"})
THREADING_LOCKS = frozenset({"Lock", "RLock", "Condition", "Semaphore", "BoundedSemaphore"})

#: methods that change a dict, list, set or deque in place
MUTATORS = frozenset(
    {
        "append",
        "appendleft",
        "extend",
        "extendleft",
        "insert",
        "pop",
        "popleft",
        "popitem",
        "remove",
        "discard",
        "add",
        "update",
        "setdefault",
        "clear",
        "sort",
        "reverse",
        "rotate",
        "difference_update",
        "intersection_update",
        "symmetric_difference_update",
    }
)
#: mutators that can take an element away (what makes a check-then-read unsafe)
REMOVERS = frozenset({"pop", "popleft", "popitem", "remove", "discard", "clear"})

COLLECTION_FACTORIES = frozenset(
    {"dict", "list", "set", "deque", "defaultdict", "OrderedDict", "Counter", "WeakSet"}
)

#: trio's ConflictDetector (``with self._send_conflict_detector:``) excludes too: a
#: second caller fails at once instead of interleaving
_LOCKLIKE = re.compile(
    r"lock|mutex|semaphore|(^|_)sem($|_)|cond(ition)?($|_)|conflict", re.IGNORECASE
)


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else ``None``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def last_name(node: ast.expr) -> str | None:
    """The final identifier of an expression: ``lock`` for ``self._x.lock()``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def self_attr(node: ast.AST, self_name: str | None) -> str | None:
    """``x`` when ``node`` is ``self.x`` (``self`` being the method's first parameter)."""
    if (
        self_name is not None
        and isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == self_name
    ):
        return node.attr
    return None


def is_locklike(expr: ast.expr) -> bool:
    """Does ``with expr:`` look like it holds a lock? Judged by name, on purpose.

    Names are what a reader sees too: ``self._lock``, ``self._pool_lock``,
    ``self._get_lock(key)``, ``sem``, ``self._cond``. A context manager with an
    unrelated name is not taken for a lock, which errs towards reporting.
    """
    name = last_name(expr)
    return name is not None and bool(_LOCKLIKE.search(name))


#: Fields that hold only tokens: a ``Load``/``Store`` context, an operator. Every
#: rule reads them through their parent (``node.ctx``, ``test.op``) and none looks
#: for them in a walk; they are a third of a module's nodes.
_TOKEN_FIELDS = frozenset({"ctx", "op", "ops"})
#: fields that never hold a node (identifiers, constants, flags), in any node class
_PLAIN_FIELDS = frozenset(
    {"id", "attr", "arg", "asname", "module", "level", "is_async", "simple", "conversion"}
    | {"type_comment", "kind", "rest", "kwd_attrs", "tag"}
)
#: fields that hold no node in these classes (``TypeAlias.name`` is a node: not here)
_PLAIN_IN: dict[str, frozenset[str]] = {
    "Constant": frozenset({"value"}),
    "MatchSingleton": frozenset({"value"}),
    "Global": frozenset({"names"}),
    "Nonlocal": frozenset({"names"}),
    **{
        kind: frozenset({"name"})
        for kind in (
            "FunctionDef",
            "AsyncFunctionDef",
            "ClassDef",
            "alias",
            "ExceptHandler",
            "MatchAs",
            "MatchStar",
            "TypeVar",
            "ParamSpec",
            "TypeVarTuple",
        )
    },
}
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(kind: type) -> tuple[str, ...]:
    skip = _TOKEN_FIELDS | _PLAIN_FIELDS | _PLAIN_IN.get(kind.__name__, frozenset())
    fields: tuple[str, ...] = getattr(kind, "_fields", ())
    found = _CHILD_FIELDS[kind] = tuple(f for f in fields if f not in skip)
    return found


def _children_by_fields(node: ast.AST) -> list[ast.AST]:
    """:func:`children` read field by field: any node, built by the parser or not."""
    fields = _CHILD_FIELDS.get(node.__class__)
    if fields is None:
        fields = _child_fields(node.__class__)
    found: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            found.append(value)
        elif isinstance(value, list):
            found.extend(item for item in value if isinstance(item, ast.AST))
    return found


#: ``Name(type mark name, ...)``: one field of a node class's signature, as its
#: docstring gives it (``*`` a list, ``?`` optional), generated from Python's ASDL
_SIGNATURE = re.compile(r"(\w+)([*?]?) (\w+)")
#: list fields the parser fills with None for a missing item (``{**d}``'s key, a
#: keyword-only parameter without a default)
_NONE_ITEMS = frozenset({("Dict", "keys"), ("arguments", "kw_defaults")})
_Reader = Callable[[ast.AST], list[ast.AST]]
#: node class -> a function made for it that reads its child fields (see children)
_READERS: dict[type, _Reader] = {}
#: node classes none of whose fields can hold a node (``Name``, ``Constant``,
#: ``alias``, ``Pass``, ...): a walk need not ask for their children. Filled by
#: :func:`_reader` as classes are met, so it holds only what :func:`children`
#: has confirmed to be childless, whatever the Python version's grammar.
_LEAVES: set[type] = set()


def _reader(kind: type) -> _Reader:
    """A function listing a ``kind`` node's children, generated from its signature.

    Straight-line code per class (``out = [n.func]; out += n.args; ...``) with no
    ``getattr``/``isinstance`` per field: the module index and the await rules
    list the children of every node, and this is a third faster than reading
    the fields in a loop. A class whose signature does not name a child field
    (a future Python's) is read field by field.
    """
    signature = {
        name: mark for _, mark, name in _SIGNATURE.findall((kind.__doc__ or "").partition("(")[2])
    }
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _child_fields(kind)
    if not fields:
        _LEAVES.add(kind)
    lines = ["def read(n):", "    out = []"]
    for name in fields:
        mark = signature.get(name)
        if mark is None or not name.isidentifier():
            _READERS[kind] = _children_by_fields
            return _children_by_fields
        if mark == "*" and (kind.__name__, name) in _NONE_ITEMS:
            lines.append(f"    out += [x for x in n.{name} if x is not None]")
        elif mark == "*":
            lines.append(f"    out += n.{name}")
        else:
            lines.append(f"    v = n.{name}")
            lines.append("    if v is not None: out.append(v)")
    lines.append("    return out")
    namespace: dict[str, Any] = {}
    # the code is made from the field names of ast's own classes, nothing else
    exec("\n".join(lines), namespace)
    read: _Reader = namespace["read"]
    _READERS[kind] = read
    return read


def children(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes(node)`` as a list, in the same order, without tokens.

    The module-wide walks (every node once, every function body once) go
    through here: the generator pair behind ``ast.iter_child_nodes`` was the
    largest single cost of linting a big module. Context and operator tokens
    (``_TOKEN_FIELDS``) are left out: a walk that visited them visited a third
    more nodes for nothing. Each node class's fields are read by a function
    made for it (:func:`_reader`); a node built by hand without some field
    (``ast.Name(id="x")``), or with None for a list, is read field by field.
    """
    kind = node.__class__
    if kind in _LEAVES:  # a name or a constant, a third of the nodes: no call
        return []
    read = _READERS.get(kind)
    if read is None:
        read = _reader(kind)
    try:
        return read(node)
    except (AttributeError, TypeError):  # a field missing, or None for a list
        return _children_by_fields(node)


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` (breadth first, same order) over :func:`children`."""
    todo = deque([node])
    pop, extend, leaves = todo.popleft, todo.extend, _LEAVES
    while todo:
        current = pop()
        if current.__class__ not in leaves:
            extend(children(current))
        yield current


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _index_walk(tree: ast.AST) -> tuple[list[ast.AST], dict[int, FunctionNode]]:
    """:func:`walk`'s nodes, with every scope's :func:`iter_own` list filled on the way.

    One depth-first pass in the order ``iter_own`` visits (a stack: the last
    child first) hands each node to the body of the scope it is in; a nested
    scope's own nodes go to a list of its own. Breadth-first order is rebuilt
    from depths: among nodes of one depth, neither an ancestor of another,
    any depth-first order sorts them as breadth first does, so each depth's
    list, reversed (the stack ran right to left), is that depth's part of the
    walk. Returns the nodes and, for each function nested directly in another
    one's body, that function (by ``id``).
    """
    parents: dict[int, FunctionNode] = {}
    body: list[ast.AST] = []
    setattr(tree, "_racecheck_own", body)  # noqa: B010 - AST nodes take attributes
    depths: list[list[ast.AST]] = [[tree]]
    stack: list[tuple[ast.AST, list[ast.AST], ast.AST, int]] = [
        (child, body, tree, 1) for child in children(tree)
    ]
    pop, push = stack.pop, stack.append
    # children() inlined: a name or a constant is every third node, and asking
    # for its (empty) children was a call, a look-up and a list each time
    leaves, readers = _LEAVES, _READERS
    while stack:
        node, own, scope, depth = pop()
        own.append(node)
        if depth < len(depths):
            depths[depth].append(node)
        else:
            depths.append([node])
        kind = node.__class__
        if kind in leaves:
            continue
        if isinstance(node, _SCOPES):
            if isinstance(node, _FUNCTIONS) and isinstance(scope, _FUNCTIONS):
                parents[id(node)] = scope
            own = []
            setattr(node, "_racecheck_own", own)  # noqa: B010 - AST nodes take attributes
            scope = node
        depth += 1
        read = readers.get(kind) or _reader(kind)
        try:
            kids = read(node)
        except (AttributeError, TypeError):  # a node built by hand (see children)
            kids = _children_by_fields(node)
        for child in kids:
            push((child, own, scope, depth))
    nodes: list[ast.AST] = []
    for level in depths:
        level.reverse()
        nodes.extend(level)
    return nodes, parents


def memo(node: ast.AST, name: str, compute: Callable[[], _T]) -> _T:
    """``compute()``, kept on ``node`` under ``name``: one answer per node and module parse.

    Class-level questions (what its methods mutate, which calls hold a lock) are
    asked once for every class that inherits a method; keeping each method's own
    answer makes a deep hierarchy cost its size, not its size times its depth.
    """
    key = f"_racecheck_{name}"
    try:
        cached: _T = getattr(node, key)
    except AttributeError:
        cached = compute()
        setattr(node, key, cached)
    return cached


def iter_own(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function body, not descending into nested functions, lambdas or classes.

    A nested function's body does not run when the outer one does; treating it
    as part of the outer body would invent orderings that never happen.
    """
    cached: list[ast.AST] | None = getattr(node, "_racecheck_own", None)
    if cached is None:  # every check asks for the same bodies: walk each once
        cached = []
        stack = children(node)
        while stack:
            child = stack.pop()
            cached.append(child)
            if isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
            ):
                continue
            stack.extend(children(child))
        setattr(node, "_racecheck_own", cached)  # noqa: B010 - AST nodes take attributes
    return iter(cached)


def params(func: FunctionNode | ast.Lambda) -> list[str]:
    a = func.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if a.vararg:
        names.append(a.vararg.arg)
    if a.kwarg:
        names.append(a.kwarg.arg)
    return names


def local_names(func: FunctionNode) -> frozenset[str]:
    """Parameters and names bound in the body (minus ``global``/``nonlocal`` ones)."""
    cached: frozenset[str] | None = getattr(func, "_racecheck_locals", None)
    if cached is None:
        cached = _local_names(func)
        setattr(func, "_racecheck_locals", cached)  # noqa: B010 - AST nodes take attributes
    return cached


#: the nodes other than names that bind or unbind a name in a function body: one
#: test passes over every other node (a third of the body's nodes are names, most
#: of the rest bind nothing) instead of four
_BINDERS = (
    ast.Global,
    ast.Nonlocal,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.alias,
    ast.ExceptHandler,
)
_STORE_DEL = (ast.Store, ast.Del)


def _local_names(func: FunctionNode) -> frozenset[str]:
    bound = set(params(func))
    outer: set[str] = set()
    for node in iter_own(func):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, _STORE_DEL):
                bound.add(node.id)
        elif not isinstance(node, _BINDERS):
            continue
        elif isinstance(node, ast.Global | ast.Nonlocal):
            outer.update(node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return frozenset(bound - outer)


def global_names(func: FunctionNode) -> frozenset[str]:
    cached: frozenset[str] | None = getattr(func, "_racecheck_globals", None)
    if cached is None:  # asked each time the function is inlined somewhere
        names: set[str] = set()
        for node in iter_own(func):
            if isinstance(node, ast.Global):
                names.update(node.names)
        cached = frozenset(names)
        setattr(func, "_racecheck_globals", cached)  # noqa: B010 - AST nodes take attributes
    return cached


def decorator_names(func: FunctionNode) -> set[str]:
    return {name for d in func.decorator_list if (name := last_name(d)) is not None}


@dataclass
class ClassInfo:
    node: ast.ClassDef
    bases: list[str]
    methods: dict[str, FunctionNode] = field(default_factory=dict)
    fail_fast: frozenset[str] | None = None  # memo of Module.fail_fast_attrs


@dataclass
class Module:
    """A parsed module and the indexes the checks share."""

    path: str
    tree: ast.Module
    #: local name -> imported dotted name (``aio`` -> ``asyncio``, ``Lock`` -> ``asyncio.Lock``)
    imports: dict[str, str] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    functions: dict[str, FunctionNode] = field(default_factory=dict)
    #: function node -> the class it is a method of
    owner: dict[int, ClassInfo] = field(default_factory=dict)
    #: recorded inlined calls, shared by every flow of the module (see flow._Recording)
    inline_templates: dict[tuple[object, ...], list[Any]] = field(default_factory=dict)
    #: function -> the function it is nested in (by id), filled with :attr:`nodes`
    _parent_map: dict[int, FunctionNode] | None = field(default=None, repr=False)
    #: node class -> the module's nodes of that class, in walk order (see nodes_of)
    _by_type: dict[type, list[ast.AST]] | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, path: str, source: str) -> Module:
        return cls.from_tree(path, cls.parse_tree(path, source))

    @staticmethod
    def parse_tree(path: str, source: str) -> ast.Module:
        return ast.parse(source, filename=path)

    @classmethod
    def from_tree(cls, path: str, tree: ast.Module) -> Module:
        """The module of an already parsed tree, indexed (timed apart from the parse)."""
        module = cls(path, tree)
        module._index()
        return module

    @cached_property
    def nodes(self) -> list[ast.AST]:
        """Every node of the module in :func:`walk`'s order, walked once and shared.

        The same walk fills what the checks ask of every function body next:
        each scope's :func:`iter_own` list and the function each function is
        nested in (:meth:`parent_of`). Apart, those were a second walk of every
        function body, a third of a large module's index time.
        """
        nodes, parents = _index_walk(self.tree)
        self._parent_map = parents
        return nodes

    @cached_property
    def function_nodes(self) -> list[FunctionNode]:
        """Every ``def`` and ``async def`` of the module, in :attr:`nodes` order."""
        return [
            node
            for node in self._typed(ast.FunctionDef, ast.AsyncFunctionDef)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        ]

    def nodes_of(self, kind: type[_N]) -> list[_N]:
        """The module's nodes of exactly class ``kind`` (``ast.Call``), in :attr:`nodes` order.

        Sorted out in one pass over the nodes the first time any kind is asked:
        a rule that looks only at calls, or at names, then reads those and not
        every node of the module.
        """
        typed = self._by_type
        if typed is None:
            typed = self._by_type = {}
            for node in self.nodes:
                found = typed.get(node.__class__)
                if found is None:
                    typed[node.__class__] = [node]
                else:
                    found.append(node)
        return typed.get(kind, [])  # type: ignore[return-value]

    def _typed(self, *kinds: type[ast.AST]) -> list[ast.AST]:
        """Nodes of any of ``kinds``, in :attr:`nodes` order."""
        if len(kinds) == 1:
            return list(self.nodes_of(kinds[0]))
        wanted = frozenset(kinds)
        return [node for node in self.nodes if node.__class__ in wanted]

    def _index(self) -> None:
        # imports, classes and functions are few: one pass picks them out in
        # walk order (an import later in the walk overrides an earlier one)
        picked = self._typed(
            ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef
        )
        for node in picked:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.imports[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        self.function_nodes = [
            node for node in picked if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[node.name] = node
        for node in picked:
            if isinstance(node, ast.ClassDef):
                info = ClassInfo(node, [b for b in map(last_name, node.bases) if b])
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        info.methods[item.name] = item
                        self.owner[id(item)] = info
                # a nested class shadows nothing at module level; first one wins
                self.classes.setdefault(node.name, info)

    # ── names ──────────────────────────────────────────────────────────────

    @cached_property
    def module_names(self) -> frozenset[str]:
        """Names bound at module level, or declared ``global`` anywhere in the module."""
        names: set[str] = set()
        # every node under the module-level statements other than defs and classes,
        # nested functions' bodies included; through the token-free children (a
        # name's only child is its context): this was ``ast.walk``, a few ms on
        # modules with large tables or import blocks, paid by every file with a flow
        todo: list[ast.AST] = [
            stmt
            for stmt in self.tree.body
            if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        ]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Store):
                    names.add(node.id)
            else:
                todo += children(node)
        for node in self.nodes_of(ast.Global):
            names.update(node.names)
        return frozenset(names)

    @cached_property
    def lock_lines(self) -> list[int]:
        """Lines, in order, where a lock region can start: a ``with``/``async with`` of a
        lock-like item, or an ``.acquire()`` call on a lock-like name."""
        blocks: list[ast.With | ast.AsyncWith] = [
            *self.nodes_of(ast.With),
            *self.nodes_of(ast.AsyncWith),
        ]
        lines = [
            block.lineno
            for block in blocks
            if any(is_locklike(item.context_expr) for item in block.items)
        ]
        lines.extend(
            call.lineno
            for call in self.nodes_of(ast.Call)
            if isinstance(call.func, ast.Attribute)
            and call.func.attr == "acquire"
            and is_locklike(call.func.value)
        )
        return sorted(lines)

    def holds_lock_within(self, node: ast.stmt) -> bool:
        """Can a lock region start anywhere inside ``node`` (nested functions included)?

        By line span, from :attr:`lock_lines`: a rule that asks which calls hold a
        lock need not walk a class none of whose methods can take one.
        """
        lines = self.lock_lines
        first = bisect.bisect_left(lines, node.lineno)
        end = node.end_lineno if node.end_lineno is not None else node.lineno
        return first < len(lines) and lines[first] <= end

    def qualname(self, expr: ast.expr) -> str | None:
        """The imported dotted name ``expr`` refers to: ``asyncio.Lock`` for ``aio.Lock``."""
        name = dotted(expr)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        base = self.imports.get(head)
        if base is None:
            return None
        return f"{base}.{rest}" if rest else base

    def asyncio_primitive(self, expr: ast.expr) -> str | None:
        """``Lock`` when ``expr`` constructs an asyncio primitive (``asyncio.Lock()``)."""
        if not isinstance(expr, ast.Call):
            return None
        name = self.qualname(expr.func)
        if name is not None and name.startswith("asyncio."):
            leaf = name.rsplit(".", 1)[-1]
            if leaf in ASYNCIO_PRIMITIVES:
                return leaf
            if leaf == "get_event_loop":
                return "event loop"
        if isinstance(expr.func, ast.Attribute) and expr.func.attr == "create_future":
            return "Future"
        return None

    def threading_lock(self, expr: ast.expr) -> bool:
        if not isinstance(expr, ast.Call):
            return False
        name = self.qualname(expr.func) or ""
        return name.startswith("threading.") and name.rsplit(".", 1)[-1] in THREADING_LOCKS

    def is_collection(self, expr: ast.expr | None) -> bool:
        """Does ``expr`` build a mutable collection (a literal, ``dict()``, ``defaultdict``)?"""
        if isinstance(
            expr, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp
        ):
            return True
        if isinstance(expr, ast.Call):
            name = last_name(expr.func)
            if name in COLLECTION_FACTORIES:
                return True
            if name == "field":  # dataclasses.field(default_factory=list)
                for kw in expr.keywords:
                    if kw.arg == "default_factory" and last_name(kw.value) in COLLECTION_FACTORIES:
                        return True
        return False

    # ── classes ────────────────────────────────────────────────────────────

    def mro(self, info: ClassInfo) -> list[ClassInfo]:
        """The class and its bases defined in this module, depth first, each once."""
        seen: list[ClassInfo] = []
        visited: set[int] = set()
        queue = deque([info])
        while queue:
            current = queue.popleft()
            if id(current) in visited:
                continue
            visited.add(id(current))
            seen.append(current)
            queue.extend(self.classes[b] for b in current.bases if b in self.classes)
        return seen

    def resolve_method(self, info: ClassInfo, name: str) -> FunctionNode | None:
        for klass in self.mro(info):
            if name in klass.methods:
                return klass.methods[name]
        return None

    def all_methods(self, info: ClassInfo) -> dict[str, FunctionNode]:
        """Every method visible on ``info`` (own and in-module inherited), by name."""
        methods: dict[str, FunctionNode] = {}
        for klass in reversed(self.mro(info)):
            methods.update(klass.methods)
        return methods

    def has_async_methods(self, info: ClassInfo) -> bool:
        return any(isinstance(m, ast.AsyncFunctionDef) for m in self.all_methods(info).values())

    def self_name(self, func: FunctionNode) -> str | None:
        """The name of a method's instance parameter (``self``), if it has one."""
        if id(func) not in self.owner:
            return None
        if decorator_names(func) & {"staticmethod", "classmethod"}:
            return None
        args = [*func.args.posonlyargs, *func.args.args]
        return args[0].arg if args else None

    def collection_attrs(self, info: ClassInfo) -> set[str]:
        """``self.<attr>`` names bound to a mutable collection anywhere in the class."""
        attrs: set[str] = set()
        for klass in self.mro(info):
            for item in klass.node.body:
                if isinstance(item, ast.AnnAssign | ast.Assign) and self.is_collection(item.value):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    attrs.update(t.id for t in targets if isinstance(t, ast.Name))
            for method in klass.methods.values():
                me = self.self_name(method)
                for node in iter_own(method):
                    if isinstance(node, ast.Assign | ast.AnnAssign) and self.is_collection(
                        node.value
                    ):
                        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                        for target in targets:
                            if (attr := self_attr(target, me)) is not None:
                                attrs.add(attr)
        return attrs

    def primitive_attrs(self, info: ClassInfo) -> dict[str, tuple[str, ast.AST]]:
        """``self.<attr>`` -> (asyncio primitive kind, where it is created), over the MRO."""
        found: dict[str, tuple[str, ast.AST]] = {}
        for klass in self.mro(info):
            for method in klass.methods.values():
                for attr, made in memo(method, "primitives", partial(self._primitives, method)):
                    found.setdefault(attr, made)
        return found

    def _primitives(self, method: FunctionNode) -> list[tuple[str, tuple[str, ast.AST]]]:
        found: list[tuple[str, tuple[str, ast.AST]]] = []
        me = self.self_name(method)
        for node in iter_own(method):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                kind = self.asyncio_primitive(node.value)
                if kind is None:
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if (attr := self_attr(target, me)) is not None:
                        found.append((attr, (kind, node)))
        return found

    @cached_property
    def fail_fast_classes(self) -> frozenset[str]:
        """Classes whose ``__enter__`` refuses a second entry instead of waiting.

        ``if self._held: raise ...`` then ``self._held = ...``: asyncpg's
        ``_Atomic``, trio's ``ConflictDetector``. A synchronous ``__enter__``
        cannot suspend between its test and its set, so in one event loop the
        second task to enter fails at once: the "busy" pattern, the fix for a
        connection that must not run two operations at a time.
        """
        found = set()
        for name, info in self.classes.items():
            enter = info.methods.get("__enter__")
            if not isinstance(enter, ast.FunctionDef):
                continue
            me = self.self_name(enter)
            flags: set[str] = set()
            for stmt in enter.body:
                if isinstance(stmt, ast.If) and _ends_in_raise(stmt.body) and not stmt.orelse:
                    flags |= {
                        attr
                        for node in ast.walk(stmt.test)
                        if (attr := self_attr(node, me)) is not None
                    }
                elif isinstance(stmt, ast.Assign) and flags:
                    if any(self_attr(t, me) in flags for t in stmt.targets):
                        found.add(name)
                        break
        return frozenset(found)

    def fail_fast_attrs(self, info: ClassInfo) -> frozenset[str]:
        """``self.<attr>`` names the class binds to an instance of a fail-fast class."""
        if info.fail_fast is not None:
            return info.fail_fast
        attrs: set[str] = set()
        if self.fail_fast_classes:
            for method in self.all_methods(info).values():
                me = self.self_name(method)
                for node in iter_own(method):
                    if (
                        isinstance(node, ast.Assign)
                        and isinstance(node.value, ast.Call)
                        and last_name(node.value.func) in self.fail_fast_classes
                    ):
                        attrs.update(
                            attr for t in node.targets if (attr := self_attr(t, me)) is not None
                        )
        info.fail_fast = frozenset(attrs)
        return info.fail_fast

    def class_of(self, node: ast.AST) -> ClassInfo | None:
        return self.owner.get(id(node))

    @property
    def _parents(self) -> dict[int, FunctionNode]:
        """Function -> the function it is nested in; filled by the walk of :attr:`nodes`."""
        if self._parent_map is None:
            self.nodes  # noqa: B018 - the walk fills it
        assert self._parent_map is not None
        return self._parent_map

    def parent_of(self, func: FunctionNode) -> FunctionNode | None:
        """The function ``func`` is nested in, if any."""
        return self._parents.get(id(func))

    def closure(self, func: FunctionNode) -> frozenset[str]:
        """Names ``func`` can see from the functions it is nested in."""
        names: set[str] = set()
        parent = self._parents.get(id(func))
        while parent is not None:
            names |= local_names(parent)
            parent = self._parents.get(id(parent))
        return frozenset(names - local_names(func))


def _ends_in_raise(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Raise)


def functions_in(tree: ast.AST) -> Iterator[FunctionNode]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node
