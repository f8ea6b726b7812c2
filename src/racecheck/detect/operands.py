"""What an instruction touches: the object and key behind each shared-state access.

A tracer sees *that* ``STORE_ATTR balance`` is about to run, not *on which
object*: the operands sit on the value stack, which Python code cannot read.
But the instructions that pushed them can be read. This module walks each code
object once, simulating the stack with symbolic values (``self``, ``self.d``,
the constant ``"k"``...) and leaves, for every access instruction, a
:class:`Recipe`: how to re-evaluate its operands from the frame's locals and
globals at the moment the tracer fires. Anything not rebuilt from plain
loads (a call result, an arithmetic result, a value merged from two branches)
is unknown, and the access is skipped rather than guessed.

Re-evaluation never runs user code: attributes are read from instance
dictionaries only, never through properties or ``__getattr__``.
"""

from __future__ import annotations

import dis
import itertools
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from types import CodeType, ModuleType
from typing import Any

from racecheck.instance_state import instance_dict

_PY313 = sys.version_info >= (3, 13)
_PY312 = sys.version_info >= (3, 12)

#: a symbolic stack value: ("local", name) | ("global", name) | ("deref", name) |
#: ("const", value) | ("attr", base, name) | ("item", base, key) |
#: ("method", receiver, name) | ("ns", obj, via) (obj's ``__dict__``, via the
#: ``vars`` builtin when ``via`` is set) | ("conv", str-or-int, value) |
#: ("result", callable, arguments, keywords) | ("merged", alternatives) |
#: ("awaited", offset of the await's SEND) (what the awaited coroutine returned) | NULL |
#: None (unknown)
Sym = tuple[Any, ...] | None
NULL: tuple[str] = ("null",)
#: a slice object built for a subscript (``lst[a:b]``): the access is a slice's
SLICE: tuple[str] = ("slice",)
#: ``bisect`` functions: a search for a position, or an insertion at one
POSITION_FUNCTIONS = frozenset(("bisect", "bisect_left", "bisect_right"))
INSORT_FUNCTIONS = frozenset(("insort", "insort_left", "insort_right"))

#: container methods: name -> (kind, whether the first argument is the key/element)
CONTAINER_METHODS: dict[str, tuple[str, bool]] = {
    "append": ("append", True),
    "appendleft": ("mutate", False),
    "extend": ("mutate", False),
    "extendleft": ("mutate", False),
    "insert": ("mutate", False),
    "pop": ("pop", True),
    "popleft": ("mutate", False),
    "popitem": ("mutate", False),
    "remove": ("remove", True),
    "clear": ("mutate", False),
    "update": ("mutate", False),
    "setdefault": ("setdefault", True),
    "add": ("add", True),
    "discard": ("remove", True),
    "sort": ("mutate", False),
    "reverse": ("mutate", False),
    "difference_update": ("mutate", False),
    "intersection_update": ("mutate", False),
    "symmetric_difference_update": ("mutate", False),
    "get": ("get", True),
    # queues (queue.Queue, asyncio.Queue): an emptiness test, and a take
    "empty": ("queue", False),
    "qsize": ("queue", False),
    "get_nowait": ("queue", False),
    # an asyncio queue's put, a trio memory channel's send and receive: an item
    # carries the putter's clock (Detector._queue_item)
    "put": ("queue", False),
    "put_nowait": ("queue", False),
    "send": ("queue", False),
    "send_nowait": ("queue", False),
    "receive": ("queue", False),
    "receive_nowait": ("queue", False),
    "keys": ("scan", False),
    "values": ("scan", False),
    "items": ("scan", False),
    "copy": ("scan", False),
    "count": ("scan", False),
    "index": ("scan", False),
    "issubset": ("scan", False),
    "issuperset": ("scan", False),
    "union": ("scan", False),
    "difference": ("scan", False),
    "intersection": ("scan", False),
}
#: builtins that read a whole container passed as their first argument
SCANNING_BUILTINS = frozenset(
    (
        "list",
        "tuple",
        "set",
        "frozenset",
        "dict",
        "sorted",
        "len",
        "sum",
        "min",
        "max",
        "any",
        "all",
        "enumerate",
        "reversed",
        "iter",
        "next",
        "zip",
        "map",
        "filter",
    )
)


@dataclass(frozen=True)
class Recipe:
    """One access instruction: what it does and how to find its operands."""

    #: "read" | "write" attribute/item; "slice-read" | "slice-write" | "slice-delete"
    #: (``lst[a:b]``, ``lst[a:b] = v``, ``del lst[a:b]``); "position" | "insort" (a
    #: ``bisect`` function, ``via`` the callable); "contains"; "iterate"; "next" (a later step
    #: of a ``for`` loop, ``name``: the offset of the GET_ITER that began it); "call" (container
    #: method or scanning builtin); "truth" (a branch on a container's emptiness);
    #: "global-read"/"global-write"; "deref-read"/"deref-write"; "await" (what an
    #: ``await`` waits for: not an access, handed to DPOR's step log only); "slot-call"
    #: (``object.__setattr__(obj, "x", v)``, ``d.__setitem__(k, v)``: ``base`` the
    #: receiver, ``name`` the dunder, ``args`` the call's first two arguments);
    #: "whole-read" (a C operation reading all of ``base``: a comparison, an
    #: unpacking, a format, a binary operator's operand); "inplace" (``base op= ...``:
    #: a mutable container's in-place operator changes it, ``args``: the other operand);
    #: "callee" (any other call: ``base`` the callable, ``args`` its arguments; "call"
    #: and "scan-arg" carry their arguments too: what C code reads or calls of them)
    op: str
    base: Sym
    name: Any = None  # attribute name, global/cell name, method name
    key: Sym = None
    #: an attribute reached through its namespace (``getattr``/``setattr``,
    #: ``vars(obj)[k]``, ``obj.__dict__[k]``): ``key`` evaluates to the name, and
    #: ``via``, when set, must evaluate to that builtin (a shadowed ``getattr`` is not one)
    via: Sym = None
    namespace: bool = False
    #: the builtin's own item access on a container subclass that redefines it in
    #: Python (``super().__setitem__(k, v)``, ``k in self.keys()``): the storage
    #: itself, which the subclass's ``obj[k]`` (skipped) reaches through here
    inner: bool = False
    args: tuple[Sym, ...] = ()
    #: for ``base`` and each of ``args`` read whole (a loop, C code), the offset of the
    #: attribute load that made it, where a property's getter returns it (None: not an
    #: attribute); empty when none is. See RETURNS_READ
    returns_at: tuple[int | None, ...] = ()
    #: an attribute store's value (``self.running = False``): what it writes, to tell
    #: two stores of one value apart from a lost update (see Detector._nothing_lost)
    stored: Sym = None
    #: the offset of the attribute load, in this code, that pushed ``base``: the object
    #: the instruction acts on is what that load found, which the attribute may no
    #: longer hold when this one runs (another thread stored a new one in between)
    base_at: int | None = None
    #: an attribute load whose value a later recipe acts on (its ``base_at``): how to
    #: read what it loads, kept by the detector per frame (Detector.loaded)
    feeds: Sym = None


#: the attribute and item protocol's dunders, called by name: what each does.
#: Through a C type's slot wrapper (``object.__setattr__``, ``dict.__setitem__``)
#: such a call fires no profile event, so only its recipe sees it.
SLOT_CALLS = {
    "__setattr__": "write",
    "__delattr__": "write",
    "__getattribute__": "read",
    "__setitem__": "write",
    "__delitem__": "write",
    "__getitem__": "read",
    "__contains__": "contains",
}


#: id(code) -> (code, its recipes). Keyed by identity: a code object hashes its
#: bytecode, constants and names again at every lookup (about 1 us on 3.12+),
#: and this is asked at every access event of a detected step, twice on 3.12+.
#: Each entry keeps its code object alive, so its id is not reused meanwhile.
_recipes: dict[int, tuple[CodeType, dict[int, Recipe]]] = {}


#: id(code) -> the offsets where Python code hands the code a value that a recipe of
#: it reads whole and no name reaches, for codes that have any: an await's SEND (``for
#: v in await self.fetch()``: the coroutine returns there) and an attribute load (``for
#: v in self.pending``: a property's getter returns there). The step log keeps what
#: was returned at these (StepLog.returned_value). Filled with ``_recipes``, which
#: keeps the code object (so its id) alive.
RETURNS_READ: dict[int, frozenset[int]] = {}


def recipes(code: CodeType) -> dict[int, Recipe]:
    """offset -> Recipe for every access in ``code`` whose operands can be rebuilt."""
    entry = _recipes.get(id(code))
    if entry is None:
        entry = _recipes[id(code)] = (code, _analyse(code))
        kept = frozenset(_returns_read(entry[1].values()))
        if kept:
            RETURNS_READ[id(code)] = kept
    return entry[1]


def _returns_read(found: Iterable[Recipe]) -> Iterator[int]:
    """Where the values the recipes ``found`` read are returned by Python code."""
    for recipe in found:
        for offset in recipe.returns_at:
            if offset is not None:
                yield offset
        for sym in (recipe.base, *recipe.args):
            if sym is None or sym is NULL:
                continue
            if sym[0] == "star" or sym[0] == "starstar":
                sym = sym[1]
                if sym is None:
                    continue
            for alternative in sym[1] if sym[0] == "merged" else (sym,):
                if alternative[0] == "awaited":
                    yield alternative[1]


class _LoopChangesStack(Exception):
    """A loop's back edge arrives at its head with another stack than the one assumed."""

    def __init__(self, head: int) -> None:
        super().__init__(head)
        self.head = head


def _analyse(code: CodeType) -> dict[int, Recipe]:
    """The recipes of ``code``, assuming first that each loop leaves the stack below
    its own values as it found it, and dropping that assumption for a loop whose
    back edge says otherwise (then its head's stack is unknown).

    3.12+ inlines a comprehension (PEP 709): its loop runs in the middle of an
    expression, with the expression's operands below it. Taken as unknown at the
    loop's head, they were lost for the rest of the line: ``t |= {k: v for ...}``
    on a local alias of shared state had no recipe, and DPOR called the lost
    update verified.
    """
    doubted: set[int] = set()
    while True:
        try:
            return _analyse_assuming(code, doubted)
        except _LoopChangesStack as changed:
            doubted.add(changed.head)  # one more pass, with one assumption fewer


def _analyse_assuming(code: CodeType, doubted: set[int]) -> dict[int, Recipe]:
    out: dict[int, Recipe] = {}
    stack: list[Sym] = []

    def pop(n: int = 1) -> list[Sym]:
        taken: list[Sym] = []
        for _ in range(n):
            taken.append(stack.pop() if stack else None)
        taken.reverse()
        return taken

    def peek(depth: int) -> Sym:
        return stack[-depth] if len(stack) >= depth else None

    listing = list(dis.get_instructions(code))
    awaits = _await_loops(listing)
    #: ``super()`` without arguments is bound to the function's first argument
    first: Sym = ("local", code.co_varnames[0]) if code.co_argcount else None
    #: an await's SEND target -> the stack below the awaitable when the await began
    below_await: dict[int, list[Sym]] = {}
    #: an await's SEND target -> the SEND (where the awaited coroutine returns to)
    sent_from: dict[int, int] = {}
    #: id of an attribute load's symbol -> the load's offset (see Recipe.returns_at)
    loaded_at: dict[int, int] = {}
    attribute_loads: list[Sym] = []
    #: a forward jump's target -> the stacks the jumps to it arrive with
    arriving: dict[int, list[list[Sym]]] = {}
    backward = _backward_targets(listing)
    #: a loop head not doubted -> the stack assumed there (its back edges must agree)
    assumed: dict[int, list[Sym]] = {}
    falls_through = True
    for index, instr in enumerate(listing):
        if instr.is_jump_target:
            kept = below_await.pop(instr.offset, None) if instr.offset in awaits else None
            if kept is not None:
                # An await resumes with the stack it left: only the awaited value is new
                stack = kept + [None] * (_AFTER_SEND - 1) + [("awaited", sent_from[instr.offset])]
            elif instr.offset not in awaits:
                # merged from several paths: what they agree on is known (the
                # stack below ``a if c else b`` or ``x or y``), the rest is not
                paths = arriving.pop(instr.offset, [])
                if falls_through:
                    paths.append(stack)
                trusted = instr.offset not in backward or instr.offset not in doubted
                merged = _merged(paths) if paths and trusted else None
                depth = len(paths[-1]) if paths else len(stack)
                stack = merged if merged is not None else [None] * depth
                if instr.offset in backward and trusted:
                    assumed[instr.offset] = list(stack)
        head = _backward_jump(instr)
        if head is not None and head in backward and head not in doubted and head not in awaits:
            try:
                moved = dis.stack_effect(instr.opcode, instr.arg, jump=True)
            except ValueError:
                raise _LoopChangesStack(head) from None
            carried = stack[: len(stack) + moved] if moved <= 0 else stack + [None] * moved
            if assumed.get(head) != carried:
                raise _LoopChangesStack(head)
        jump = _forward_jump(instr)
        if jump is not None:
            try:
                effect = dis.stack_effect(instr.opcode, instr.arg, jump=True)
            except ValueError:
                effect = None
            if effect is not None:
                taken = stack[: len(stack) + effect] if effect <= 0 else stack + [None] * effect
                arriving.setdefault(jump, []).append(list(taken))
        falls_through = instr.opname not in _NO_FALLTHROUGH
        if instr.opname == "SEND" and isinstance(instr.argval, int):
            below_await[instr.argval] = stack[:-2]
            sent_from[instr.argval] = instr.offset
        name = instr.opname
        arg = instr.arg or 0
        argval = instr.argval
        if name in ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR"):
            stack.append(("local", argval))
        elif name == "LOAD_FAST_LOAD_FAST":
            first, second = argval
            stack.extend((("local", first), ("local", second)))
        elif name == "STORE_FAST_LOAD_FAST":
            # 3.13 fuses ``found = box.value = v``'s store and load: the top is replaced,
            # not kept (kept, ``box.value``'s store was placed on ``v``)
            pop()
            stack.append(("local", argval[1]))
        elif name in ("LOAD_DEREF", "LOAD_CLASSDEREF"):
            out[instr.offset] = Recipe("deref-read", None, argval)
            stack.append(("deref", argval))
        elif name == "STORE_DEREF":
            out[instr.offset] = Recipe("deref-write", None, argval)
            pop()
        elif name == "LOAD_GLOBAL":
            if instr.offset not in out:
                out[instr.offset] = Recipe("global-read", None, argval)
            if arg & 1:
                stack.extend((("global", argval), NULL) if _PY313 else (NULL, ("global", argval)))
            else:
                stack.append(("global", argval))
        elif name == "LOAD_NAME":
            stack.append(("global", argval))
        elif name == "STORE_GLOBAL":
            out[instr.offset] = Recipe("global-write", None, argval)
            pop()
        elif name == "LOAD_CONST":
            stack.append(("const", argval))
        elif name == "PUSH_NULL":
            stack.append(NULL)
        elif name in ("PRECALL", "KW_NAMES", "NOP", "RESUME", "CACHE", "EXTENDED_ARG"):
            pass  # 3.11 counts the arguments of a call here; the CALL below pops them
        elif name == "LOAD_METHOD" or (name == "LOAD_ATTR" and _PY312 and arg & 1):
            (receiver,) = pop()
            stack.extend((("method", receiver, argval), receiver))
        elif name == "LOAD_SUPER_ATTR":  # 3.12+: super().name
            _, _, receiver = pop(3)
            if arg & 1:
                stack.extend((("method", ("super", receiver), argval), receiver))
            else:
                stack.append(None)
        elif name == "LOAD_ATTR":
            (base,) = pop()
            out[instr.offset] = Recipe("read", base, argval)
            if argval == "__dict__":
                stack.append(("ns", base, None))
            else:
                loaded = ("attr", base, argval)
                loaded_at[id(loaded)] = instr.offset
                attribute_loads.append(loaded)  # alive to the end: its id names this load only
                stack.append(loaded)
        elif name in ("STORE_ATTR", "DELETE_ATTR"):
            base = peek(1)
            stored = peek(2) if name == "STORE_ATTR" else None
            out[instr.offset] = Recipe("write", base, argval, stored=stored)
            pop(2 if name == "STORE_ATTR" else 1)
        elif name == "BUILD_SLICE":
            pop(arg)
            stack.append(SLICE)
        elif name == "BINARY_SUBSCR":
            base, key = pop(2)
            if key is SLICE:
                out[instr.offset] = Recipe("slice-read", base)
                stack.append(None)  # a new list
            else:
                out[instr.offset] = _subscript("read", base, key)
                stack.append(("item", base, key))
        elif name in ("STORE_SUBSCR", "DELETE_SUBSCR"):
            base, key = peek(2), peek(1)
            if key is SLICE:
                op = "slice-write" if name == "STORE_SUBSCR" else "slice-delete"
                out[instr.offset] = Recipe(op, base)
            else:
                out[instr.offset] = _subscript("write", base, key)
            pop(3 if name == "STORE_SUBSCR" else 2)
        elif name == "BINARY_SLICE":  # 3.12+: container[start:stop]
            base, _, _ = pop(3)
            out[instr.offset] = Recipe("slice-read", base)
            stack.append(None)
        elif name == "STORE_SLICE":  # 3.12+: container[start:stop] = value
            out[instr.offset] = Recipe("slice-write", peek(3))
            pop(4)
        elif name == "CONTAINS_OP":
            key, base = pop(2)
            if base is not None and base is not NULL and base[0] == "keys":
                # ``k in self.keys()``: membership of the storage behind the view
                out[instr.offset] = Recipe("contains", base[1], "keys", key, inner=True)
            else:
                out[instr.offset] = Recipe("contains", base, None, key)
            stack.append(None)
        elif name == "GET_ITER":
            (base,) = pop()
            out[instr.offset] = Recipe("iterate", base)
            stack.append(None)
            following = listing[index + 1] if index + 1 < len(listing) else None
            if following is not None and following.opname == "FOR_ITER":
                # each later step of this loop: ``name`` is the GET_ITER that began it
                out[following.offset] = Recipe("next", base, instr.offset)
        elif name in ("CALL", "CALL_KW"):
            argc = arg
            extra = 1 if name == "CALL_KW" else 0
            slots = pop(argc + 2 + extra)
            callable_slots = slots[:2]
            args = slots[2 : 2 + argc]
            recipe = _call_recipe(callable_slots, args)
            if recipe is not None:
                out[instr.offset] = recipe
            builtin = _global_slot(callable_slots)
            if builtin is not None and builtin[1] == "super" and argc in (0, 2):
                # 3.11: super() (bound to the first argument) or super(cls, obj)
                stack.append(("super", first if argc == 0 else args[1]))
            else:
                result = _call_result(callable_slots, args)
                if result is None:
                    keywords = extra == 1 or _after_keyword_names(listing, index)
                    result = _made_by(callable_slots, args, keywords)
                stack.append(result)
        elif name == "CALL_FUNCTION_EX":
            # ``obj.setdefault(key, *rest)``: the arguments are one tuple made at run
            # time, so a container method called so is recorded without its element
            slots = pop(4 if arg & 1 else 3)
            for slot in slots[:2]:
                if (
                    slot is not None
                    and slot is not NULL
                    and slot[0] == "attr"
                    and CONTAINER_METHODS.get(slot[2], ("queue", False))[0] != "queue"
                ):
                    out[instr.offset] = Recipe("call", slot[1], slot[2], args=_packed(slots))
            if instr.offset not in out:
                packed = _packed_call(slots)
                if packed is not None:
                    out[instr.offset] = packed
            stack.append(_made_by(slots[:2], list(_packed(slots)), True))
        elif name == "END_SEND":  # 3.12+: the awaited value, its awaitable dropped
            (value,) = pop()
            pop()
            stack.append(value)
        elif name == "GET_AWAITABLE":
            # what an ``await`` waits for: DPOR orders the await of a future that
            # is done already after the step that finished it (accesses.StepLog.awaited)
            (awaited,) = pop()
            if awaited is not None and awaited is not NULL and awaited[0] in _TESTABLE:
                out[instr.offset] = Recipe("await", awaited)
            stack.append(None)
        elif name in _TRUTH_TESTS:
            # `if self.items:` / `while not queue:`: the truth of a container decides
            # what runs next (3.13 tests it in TO_BOOL, earlier versions in the jump)
            (value,) = pop()
            if value is not None and value is not NULL and value[0] in _TESTABLE:
                out[instr.offset] = Recipe("truth", value)
            if name == "TO_BOOL":
                stack.append(None)
        elif name in _WHOLE_READS or (name == "BINARY_OP" and arg < _INPLACE_FIRST):
            # ``lst == [1]``, ``a, = lst``, ``f"{lst}"``, ``lst + other``: C reads all of it
            for operand in _read_operands(name, arg, peek):
                if _testable(operand):
                    operands = _read_operands(name, arg, peek)
                    out[instr.offset] = Recipe("whole-read", operand, args=operands)
                    break
            _generic(stack, instr)
        elif name == "BINARY_OP":
            # ``t |= {...}``, ``items += [...]``: a mutable container's in-place slot
            # changes it in C (BINARY_OP's arg 13 and up are the in-place operators)
            target, other = peek(2), peek(1)
            if _testable(target):
                out[instr.offset] = Recipe("inplace", target, args=(other,))
            _generic(stack, instr)
        elif name == "COPY":
            stack.append(peek(arg))
        elif name == "SWAP":
            if len(stack) < arg:
                stack[:0] = [None] * (arg - len(stack))
            stack[-1], stack[-arg] = stack[-arg], stack[-1]
        else:
            try:
                effect = dis.stack_effect(instr.opcode, instr.arg, jump=False)
            except ValueError:
                stack = []
                continue
            _apply_effect(stack, instr, effect)
        if name in _NO_FALLTHROUGH:
            stack = []
    for offset in _private_cell_accesses(code, listing):
        del out[offset]
    fed: dict[int, Sym] = {}
    for offset, recipe in out.items():
        at = loaded_at.get(id(recipe.base)) if recipe.base is not None else None
        if at is not None and at != offset:
            out[offset] = recipe = replace(recipe, base_at=at)
            fed[at] = recipe.base
    for at, sym in fed.items():
        load = out.get(at)
        if load is not None and load.op == "read":
            out[at] = replace(load, feeds=sym)
    for offset, recipe in out.items():
        if recipe.op in _READS_RETURNED:
            returns_at = tuple(loaded_at.get(id(sym)) for sym in (recipe.base, *recipe.args))
            if any(at is not None for at in returns_at):
                out[offset] = replace(recipe, returns_at=returns_at)
    return out


#: recipes whose operands a loop or C code reads whole: a property's value among them is
#: read as what its getter returned (Recipe.returns_at)
_READS_RETURNED = frozenset(("iterate", "scan-arg", "contains", "call", "callee"))


def _private_cell_accesses(code: CodeType, listing: list[dis.Instruction]) -> list[int]:
    """Offsets of this code's own closure variables' accesses that no other code can see yet.

    A cell is made fresh for each activation, and only a closure made from it
    (LOAD_CLOSURE; on 3.13 a LOAD_FAST of the cell) lets other code reach it. An
    access before the first such load, in no loop that reaches one, is the
    activation's own. Feeding DPOR, every closure variable of one name is taken
    for one (Detector._variable), so two activations binding their own helper
    function (``async def deliver(...)`` then a gather over it) conflicted: a
    quarter of the executor scenario's reversals. The detector keys such an
    access by its activation already: it never raced.
    """
    own = set(code.co_cellvars)
    if not own:
        return []
    first_closure: dict[str, int] = {}
    for instr in listing:
        if instr.opname == "LOAD_CLOSURE" or instr.opname.startswith("LOAD_FAST"):
            names = instr.argval if isinstance(instr.argval, tuple) else (instr.argval,)
            for name in names:
                if name in own:
                    first_closure.setdefault(name, instr.offset)
    # (head, end) of every loop: an access in one is seen again after what follows it
    loops = [
        (i.argval, i.offset)
        for i in listing
        if i.opcode in _JUMPS and isinstance(i.argval, int) and i.argval <= i.offset
    ]
    private = []
    for instr in listing:
        if instr.opname not in ("LOAD_DEREF", "STORE_DEREF") or instr.argval not in own:
            continue
        shared_from = first_closure.get(instr.argval)
        if shared_from is None:
            continue  # a cell no closure is made from here: its function reads it (class cells)
        if instr.offset < shared_from and all(
            end < shared_from for head, end in loops if head <= instr.offset <= end
        ):
            private.append(instr.offset)
    return private


#: what an await leaves on the stack at its SEND's target, above what it found:
#: the result (3.11), or the awaitable and the result (3.12+, popped by END_SEND)
_AFTER_SEND = 2 if _PY312 else 1


def _await_loops(listing: list[dis.Instruction]) -> frozenset[int]:
    """Jump targets of ``await`` loops only, where the stack below the awaitable survives.

    An ``await`` (and ``yield from``, ``async with``, ``async for``) is a loop:
    SEND, YIELD_VALUE, RESUME, a jump back to the SEND; SEND jumps out to its
    target when the awaitable is done (3.12+ also from CLEANUP_THROW, after a
    throw). None of those paths touches the stack below the awaitable, so the
    operands pushed before ``x.total += await f()`` are still known after it.
    A target that any other jump (or an exception handler) reaches is a real
    merge and is left unknown.
    """
    sources: dict[int, list[dis.Instruction]] = {}
    previous: dict[int, dis.Instruction] = {}
    for before, instr in itertools.pairwise(listing):
        previous[instr.offset] = before
    for instr in listing:
        if instr.opcode in dis.hasjrel or instr.opcode in dis.hasjabs:
            if isinstance(instr.argval, int):
                sources.setdefault(instr.argval, []).append(instr)
    loops: set[int] = set()
    by_offset = {instr.offset: instr for instr in listing}
    for target, jumps in sources.items():
        landing = by_offset.get(target)
        if landing is None:
            continue
        if landing.opname == "SEND":
            if all(j.opname == "JUMP_BACKWARD_NO_INTERRUPT" for j in jumps):
                loops.add(target)
            continue
        sends = [j for j in jumps if j.opname == "SEND"]
        throws = [
            j
            for j in jumps
            if j.opname.startswith("JUMP_BACKWARD")
            and getattr(previous.get(j.offset), "opname", "") == "CLEANUP_THROW"
        ]
        falls_in = previous.get(target)
        if (
            len(sends) == 1
            and len(sends) + len(throws) == len(jumps)
            and (falls_in is None or falls_in.opname in _NO_FALLTHROUGH)
        ):
            loops.add(target)
    # an exception handler's target is a jump target no jump names: never trusted
    return frozenset(loops)


_TRUTH_TESTS = frozenset(
    (
        "TO_BOOL",
        "POP_JUMP_IF_FALSE",
        "POP_JUMP_IF_TRUE",
        "POP_JUMP_FORWARD_IF_FALSE",
        "POP_JUMP_FORWARD_IF_TRUE",
        "POP_JUMP_BACKWARD_IF_FALSE",
        "POP_JUMP_BACKWARD_IF_TRUE",
    )
)
_TESTABLE = frozenset(("local", "global", "deref", "attr", "item"))

_NO_FALLTHROUGH = frozenset(
    (
        "RETURN_VALUE",
        "RETURN_CONST",
        "RAISE_VARARGS",
        "RERAISE",
        "JUMP_BACKWARD",
        "JUMP_FORWARD",
        "JUMP_BACKWARD_NO_INTERRUPT",
        "JUMP",
    )
)


def _forward_jump(instr: dis.Instruction) -> int | None:
    """The target of ``instr`` if it is a jump forward (where a stack is carried to)."""
    if instr.opcode in _JUMPS and isinstance(instr.argval, int) and instr.argval > instr.offset:
        return instr.argval
    return None


def _backward_jump(instr: dis.Instruction) -> int | None:
    """The target of ``instr`` if it is a jump backward (a loop's back edge)."""
    if instr.opcode in _JUMPS and isinstance(instr.argval, int) and instr.argval <= instr.offset:
        return instr.argval
    return None


def _backward_targets(listing: list[dis.Instruction]) -> frozenset[int]:
    """Offsets some jump reaches backwards (a loop's head): the jump's stack is not
    known when the head is reached, so the head's is assumed (see _analyse)."""
    return frozenset(head for head in map(_backward_jump, listing) if head is not None)


def _merged(paths: list[list[Sym]]) -> list[Sym] | None:
    """The stack where every path agrees, the alternatives where they differ; None if
    the paths arrive with stacks of different depths (nothing is then assumed)."""
    depth = len(paths[0])
    if any(len(path) != depth for path in paths):
        return None
    return [
        slot if all(path[i] == slot for path in paths) else _either([path[i] for path in paths])
        for i, slot in enumerate(paths[0])
    ]


def _either(slots: list[Sym]) -> Sym:
    """A value two paths push differently (``l or []``, ``a if c else b``):
    ``("merged", alternatives)``, or unknown when no alternative can be shared state.

    Which path ran is not known when the value is used, so it evaluates to nothing
    and no access is placed on it; DPOR's step log reads each alternative instead
    (Detector._unreached_read). Taken for an unknown, ``for v in (self.items or [])``
    and ``(pa if c else pb)(v)`` recorded nothing, and DPOR called order bugs and
    lost updates through them verified. A call's layout marker (NULL) stays unknown.
    """
    alternatives: dict[Sym, None] = {}
    for slot in slots:
        if slot is NULL:
            return None
        if slot is not None and slot[0] == "merged":
            alternatives.update(dict.fromkeys(slot[1]))
        elif slot is not None and slot is not NEW and slot[0] != "const":
            alternatives[slot] = None
    return ("merged", tuple(alternatives)) if alternatives else None


_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


#: instructions whose C code reads all of an operand (a container's items): no
#: instruction records them otherwise (BINARY_OP below its in-place operators too)
_WHOLE_READS = frozenset(
    (
        "COMPARE_OP",
        "UNPACK_SEQUENCE",
        "UNPACK_EX",
        "FORMAT_VALUE",
        "FORMAT_SIMPLE",
        "FORMAT_WITH_SPEC",
        "CONVERT_VALUE",
    )
)
#: BINARY_OP's first in-place operator (``+=``: NB_INPLACE_ADD)
_INPLACE_FIRST = 13


def _read_operands(name: str, arg: int, peek: Any) -> tuple[Sym, ...]:
    """The operands a _WHOLE_READS instruction (or a binary operator) reads, as symbols."""
    if name == "COMPARE_OP" or name == "BINARY_OP":
        return (peek(2), peek(1))
    if name == "FORMAT_WITH_SPEC" or (name == "FORMAT_VALUE" and arg & 0x04):
        return (peek(2),)  # the value below its format spec
    return (peek(1),)


def _testable(sym: Sym) -> bool:
    """Is ``sym`` a value the detector can read again (a variable, attribute or item)?"""
    return sym is not None and sym is not NULL and sym[0] in _TESTABLE


def _generic(stack: list[Sym], instr: dis.Instruction) -> None:
    """An instruction whose result is unknown: its stack effect only."""
    try:
        effect = dis.stack_effect(instr.opcode, instr.arg, jump=False)
    except ValueError:
        stack.clear()
        return
    _apply_effect(stack, instr, effect)


def _apply_effect(stack: list[Sym], instr: dis.Instruction, effect: int) -> None:
    """Generic instructions: pop what they consume, push unknowns for what they make."""
    popped, pushed = _pops_pushes(instr, effect)
    for _ in range(popped):
        if stack:
            stack.pop()
    if pushed == 1 and (instr.opname.startswith(_BUILDS) or instr.argrepr == _LIST_TO_TUPLE):
        stack.append(NEW)
        return
    stack.extend([None] * pushed)


#: instructions that make a new object from the items below them
_BUILDS = ("BUILD_", "LIST_TO_TUPLE")
#: 3.12+'s LIST_TO_TUPLE, a CALL_INTRINSIC_1 (``f(*[a, b])``'s tuple is new too)
_LIST_TO_TUPLE = "INTRINSIC_LIST_TO_TUPLE"
#: a list, tuple, dict, set or str built in place (``[]``, ``(a, b)``): shared by nobody
NEW: Sym = ("new",)


#: instructions of stack effect 0 that leave every slot as it is (jumps, cell and
#: name bookkeeping), or whose result may stand for the operand it replaces: a new
#: immutable value made from it (a formatted str, a function from its code, the
#: bool of an exception match), which no store goes through. Any other instruction
#: of effect 0 replaces its operand with a result of its own: ``(yield item)`` is
#: what the caller sends, ``+x`` (3.12+: CALL_INTRINSIC_1) what ``__pos__``
#: returns. Taken for their operands, a store through them was placed on the wrong
#: object (tests/core/test_dpor_stack_results.py); an opcode a later Python adds
#: is read as "replaces its operand" until it is modelled.
_KEEPS_THE_SLOT = frozenset(
    (
        "NOP",
        "RESUME",
        "CACHE",
        "EXTENDED_ARG",
        "JUMP",
        "JUMP_FORWARD",
        "JUMP_BACKWARD",
        "JUMP_BACKWARD_NO_INTERRUPT",
        "JUMP_NO_INTERRUPT",
        "COPY_FREE_VARS",
        "MAKE_CELL",
        "DELETE_FAST",
        "DELETE_NAME",
        "DELETE_GLOBAL",
        "DELETE_DEREF",
        "SETUP_ANNOTATIONS",
        "RETURN_GENERATOR",
        "RETURN_CONST",
        "RAISE_VARARGS",
        "FORMAT_VALUE",
        "MAKE_FUNCTION",
        "CHECK_EXC_MATCH",
    )
)


def _pops_pushes(instr: dis.Instruction, effect: int) -> tuple[int, int]:
    # Most instructions consume their inputs and push one result; stack_effect
    # gives only the difference, so infer the split for the common shapes.
    name = instr.opname
    if name.startswith(("BINARY_OP", "COMPARE_OP", "IS_OP")):
        return 2, 1
    if name.startswith(("UNARY_", "TO_BOOL", "FORMAT_SIMPLE", "CONVERT_VALUE")):
        return 1, 1
    if effect == 0 and name not in _KEEPS_THE_SLOT and not name.startswith(_BUILDS):
        return 1, 1
    if name.startswith("UNPACK_"):
        return 1, effect + 1
    if name.startswith(_BUILDS):
        # a new list, tuple, dict, set or str from its items: ``f(*[a, b])``'s list is
        # not ``a`` (a no-op or a pop only left an item standing for the new object)
        return 1 - effect, 1
    if effect >= 0:
        return 0, effect
    return -effect, 0


def _subscript(op: str, base: Sym, key: Sym) -> Recipe:
    if base is not None and base is not NULL and base[0] == "ns":
        # vars(obj)[k] / obj.__dict__[k]: the attribute k of obj, not an item of a dict
        return Recipe(op, base[1], None, key, via=base[2], namespace=True)
    return Recipe(op, base, None, key)


def _global_slot(callable_slots: list[Sym]) -> Sym:
    for slot in callable_slots:
        if slot is not None and slot is not NULL and slot[0] == "global":
            return slot
    return None


def _call_result(callable_slots: list[Sym], args: list[Sym]) -> Sym:
    """``vars(obj)`` is obj's namespace, ``d.keys()`` its keys; other call results are unknown."""
    for slot in callable_slots:
        if slot is not None and slot is not NULL and slot[0] == "method":
            if slot[2] == "keys" and not args and slot[1] is not None:
                return ("keys", slot[1])
            break
    slot = _global_slot(callable_slots)
    if slot is not None and slot[1] == "vars" and len(args) == 1:
        return ("ns", args[0], slot)
    if slot is not None and slot[1] in ("str", "int") and len(args) == 1 and args[0] is not None:
        # a key spelled ``str(path)``: rebuilt when the argument is already a plain
        # str or int (filelock keys its singletons so); nothing else is converted
        return ("conv", slot, args[0])
    return None


def _call_recipe(callable_slots: list[Sym], args: list[Sym]) -> Recipe | None:
    first_arg = args[0] if args else None
    builtin = _global_slot(callable_slots)
    if builtin is not None and len(args) >= 2:
        # getattr(obj, "name"[, default]) / setattr(obj, "name", value): plain
        # attribute accesses spelled as calls (marsys reads its shared state so)
        if builtin[1] == "getattr" and len(args) in (2, 3):
            return Recipe("read", first_arg, None, args[1], via=builtin, namespace=True)
        if builtin[1] == "setattr" and len(args) == 3:
            return Recipe("write", first_arg, None, args[1], via=builtin, namespace=True)
        if builtin[1] == "isinstance" and len(args) == 2:
            return Recipe("read", first_arg, None, _CLASS_NAME, via=builtin, namespace=True)
        if builtin[1] == "hasattr" and len(args) == 2:
            # a read that may find nothing: ``if not hasattr(o, "conn"): o.conn = ...``
            return Recipe("read", first_arg, None, args[1], via=builtin, namespace=True)
    if builtin is not None and NULL in callable_slots and len(args) == 1:
        if builtin[1] == "vars":
            # ``vars(o)``: a read of ``o.__dict__``, which the detector ties to ``o``
            return Recipe("read", first_arg, None, _DICT_NAME, via=builtin, namespace=True)
        if builtin[1] == "type":
            # ``type(o)``: a read of ``o.__class__``, which an assignment may change
            return Recipe("read", first_arg, None, _CLASS_NAME, via=builtin, namespace=True)
        if builtin[1] in WHOLE_READING_BUILTINS and _testable(first_arg):
            return Recipe("whole-read", first_arg, args=(first_arg,))
    for slot in callable_slots:
        if (
            slot is not None
            and slot is not NULL
            and slot[0] in ("method", "attr")
            and slot[2] in SLOT_CALLS
            and slot[1] is not None
            and slot[1][0] != "super"  # super().__setitem__: the storage recipe below
        ):
            return Recipe("slot-call", slot[1], slot[2], args=tuple(args[:2]))
    bisecting = _bisect_call(callable_slots)
    if bisecting is not None and args:
        name, via = bisecting
        op = "position" if name in POSITION_FUNCTIONS else "insort"
        return Recipe(op, first_arg, name, via=via)
    for slot in callable_slots:
        if slot is None or slot is NULL:
            continue
        if slot[0] == "method" and slot[1] is not None and slot[1][0] == "super":
            # super().__setitem__(k, v) in a container subclass: the builtin's storage
            receiver = slot[1][1]
            kind = _SUPER_ITEM_METHODS.get(slot[2])
            if kind is not None and receiver is not None and args:
                return Recipe(kind, receiver, None, first_arg, inner=True)
            return None
        if slot[0] == "method" and slot[2] in CONTAINER_METHODS:
            return Recipe("call", slot[1], slot[2], first_arg, args=tuple(args))
        if slot[0] == "global" and slot[1] in SCANNING_BUILTINS and args:
            return Recipe("scan-arg", first_arg, slot[1], args=tuple(args))
    return _callee_recipe(callable_slots, args)


#: builtins whose calls leave nothing unseen: no argument of theirs is read
#: whole or called (``len`` and the scanning builtins have recipes of their own)
_NOTHING_HIDDEN = frozenset(
    ("isinstance", "issubclass", "id", "callable", "super", "type", "range", "hasattr")
)


def _callee_recipe(callable_slots: list[Sym], args: list[Sym]) -> Recipe | None:
    """Any other call whose callable can be rebuilt: ``base`` the callable, ``args`` its
    arguments. A C callable object (``functools.partial``, ``operator.attrgetter``, an
    ``lru_cache`` wrapper) fires no profile event, and a C method's profile event names
    the object it is bound to, not the containers it reads (``"".join(l)``)."""
    callee = _callee_slot(callable_slots)
    if callee is None or (callee[0] == "global" and callee[1] in _NOTHING_HIDDEN):
        return None
    return Recipe("callee", callee, args=tuple(args))


def _callee_slot(callable_slots: list[Sym]) -> Sym:
    """The callable of a call, from the two slots below its arguments, or None."""
    first, second = callable_slots
    if first is NULL:
        return second  # NULL, callable (3.11, 3.12)
    if second is NULL or (first is not None and first[0] == "method"):
        return first  # callable, NULL (3.13); a method and its receiver
    return None  # not a call's usual layout (a ``with`` block's exit)


def _made_by(callable_slots: list[Sym], args: list[Sym], keywords: bool) -> Sym:
    """A call's result: ``("result", callable, arguments, keywords)``. Nothing rebuilds it
    but the detector, for the few calls that run no user code (``getattr(o, "f")``,
    ``functools.partial(...)``); the rest tell it that a value came from a call it cannot
    see into (``islice(get(), 2)``, ``make_setter()(v)``)."""
    callee = _callee_slot(callable_slots)
    if callee is None:
        return None  # a generator expression's, a ``with`` block's: not a call's result
    return ("result", callee, tuple(args), keywords)


def _after_keyword_names(listing: list[dis.Instruction], index: int) -> bool:
    """Does the CALL at ``index`` pass keywords (3.11: KW_NAMES, PRECALL, CALL)?"""
    for before in listing[max(0, index - 2) : index]:
        if before.opname == "KW_NAMES":
            return True
    return False


def _packed_call(slots: list[Sym]) -> Recipe | None:
    """``f(*args)``, ``f(**kw)`` (CALL_FUNCTION_EX): a callee recipe whose arguments are
    the packed tuple (``("star", sym)``) and dictionary (``("starstar", sym)``)."""
    callee = _callee_slot(slots[:2])
    if callee is None or (callee[0] == "global" and callee[1] in _NOTHING_HIDDEN):
        return None
    return Recipe("callee", callee, args=_packed(slots))


def _packed(slots: list[Sym]) -> tuple[Sym, ...]:
    """The packed arguments of a CALL_FUNCTION_EX, below them its two callable slots."""
    packed: tuple[Sym, ...] = (("star", slots[2]),)
    if len(slots) == 4:
        packed += (("starstar", slots[3]),)
    return packed


#: ``vars(o)``'s attribute: the object's namespace
_DICT_NAME: Sym = ("const", "__dict__")
#: ``type(o)``'s and ``isinstance(o, ...)``'s attribute: the object's class
_CLASS_NAME: Sym = ("const", "__class__")
#: builtins whose one argument is read whole in C, with no profile event of its own
#: (a container's ``repr``): ``str`` and ``int`` of a key are read as ``conv`` too
WHOLE_READING_BUILTINS = frozenset(("repr", "str", "ascii", "format"))


#: a container's item methods called on ``super()``: what each does to the item
_SUPER_ITEM_METHODS = {
    "__getitem__": "read",
    "__setitem__": "write",
    "__delitem__": "write",
    "__contains__": "contains",
}


def _bisect_call(callable_slots: list[Sym]) -> tuple[str, Sym] | None:
    """``bisect.bisect_left(...)`` or a bare ``bisect_left(...)``: (name, the callable's sym).

    Only the name is read here; the detector checks that the callable really is
    the ``bisect`` module's function before it records anything.
    """
    for slot in callable_slots:
        if slot is None or slot is NULL:
            continue
        if slot[0] in ("method", "attr") and slot[2] in POSITION_FUNCTIONS | INSORT_FUNCTIONS:
            return slot[2], ("attr", slot[1], slot[2])
        if slot[0] == "global" and slot[1] in POSITION_FUNCTIONS | INSORT_FUNCTIONS:
            return slot[1], slot
    return None


#: recipes only DPOR's step log reads: without one (``detect=True`` alone) the detector
#: returns at once, so a run that records no steps need not stop at them at all
STEP_LOG_OPS = frozenset(("await", "whole-read", "inplace"))

_lines: dict[CodeType, frozenset[int]] = {}
#: the lines of a run that records no steps (without STEP_LOG_OPS)
_race_lines: dict[CodeType, frozenset[int]] = {}


def detect_lines(code: CodeType, step_log: bool = True) -> frozenset[int]:
    """Lines of ``code`` holding an access the detector looks at (``step_log``: in a run
    that records DPOR's steps; else without the recipes only the step log reads)."""
    cache = _lines if step_log else _race_lines
    lines = cache.get(code)
    if lines is None:
        table = recipes(code)
        lines = cache[code] = frozenset(
            instr.positions.lineno
            for instr in dis.get_instructions(code)
            if instr.offset in table
            and (step_log or table[instr.offset].op not in STEP_LOG_OPS)
            and instr.positions is not None
            and instr.positions.lineno
        )
    return lines


# -- evaluation ------------------------------------------------------------------------

_MISSING = object()
_DICT_GETITEM = dict.__getitem__


def evaluate(sym: Sym, frame: Any, f_locals: dict[str, Any] | None = None) -> Any:
    """The current value of a symbolic operand, or ``_MISSING`` if it cannot be had safely."""
    if sym is None or sym is NULL:
        return _MISSING
    tag = sym[0]
    if tag == "local" or tag == "deref":
        names = f_locals if f_locals is not None else frame.f_locals
        return names.get(sym[1], _MISSING)
    if tag == "const":
        return sym[1]
    if tag == "global":
        value = frame.f_globals.get(sym[1], _MISSING)
        if value is _MISSING:
            value = frame.f_builtins.get(sym[1], _MISSING)
        return value
    if tag == "attr":
        base = evaluate(sym[1], frame, f_locals)
        if base is _MISSING:
            return _MISSING
        return instance_attribute(base, sym[2])
    if tag == "ns":
        return _namespace_of(sym, frame, f_locals)
    if tag == "conv":
        convert = evaluate(sym[1], frame, f_locals)
        value = evaluate(sym[2], frame, f_locals)
        if (convert is str or convert is int) and type(value) in (str, int):
            return convert(value)  # exact builtin types: no __str__ or __int__ of theirs runs
        return _MISSING
    if tag == "item":
        base = evaluate(sym[1], frame, f_locals)
        key = evaluate(sym[2], frame, f_locals)
        if base is _MISSING or key is _MISSING:
            return _MISSING
        if type(base) not in (dict, list, tuple):
            if isinstance(base, dict) and type(base).__getitem__ is _DICT_GETITEM:
                # a defaultdict, OrderedDict, Counter: a stored item is read as a dict's;
                # a missing one would run __missing__ (a factory, user code): unknown
                try:
                    return dict.get(base, key, _MISSING)
                except TypeError:  # an unhashable key
                    return _MISSING
            return _MISSING
        try:
            return base[key]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return _MISSING


def _namespace_of(sym: tuple[Any, ...], frame: Any, f_locals: dict[str, Any] | None) -> Any:
    """``obj.__dict__`` or ``vars(obj)``: the instance's own dictionary (never a class's)."""
    if sym[2] is not None and evaluate(sym[2], frame, f_locals) is not vars:
        return _MISSING  # a ``vars`` of the program's own
    obj = evaluate(sym[1], frame, f_locals)
    if obj is _MISSING or isinstance(obj, type):
        return _MISSING
    try:
        namespace = instance_dict(obj)
    except AttributeError:
        return _MISSING
    return namespace if type(namespace) is dict else _MISSING


def instance_attribute(obj: Any, name: str) -> Any:
    """``obj.name`` from the instance (or module) dictionary only: no user code runs."""
    if type(obj) is ModuleType:
        # the commonest owner (``asyncio.sleep``, ``threading.Thread``): its own
        # dictionary at once (ModuleType's ``__dict__`` member, which no module shadows)
        value = obj.__dict__.get(name, _MISSING)
        if value is not _MISSING:
            return value
    if isinstance(obj, type):
        return _class_attribute(obj, name)
    try:
        namespace = instance_dict(obj)
    except AttributeError:
        return slot_value(obj, name)
    if type(namespace) is not dict:
        return dict(namespace).get(name, _MISSING) if isinstance(namespace, dict) else _MISSING
    value = namespace.get(name, _MISSING)
    return slot_value(obj, name) if value is _MISSING else value


#: (class, name) -> the ``__slots__`` member descriptor storing ``name``, or None
_slots: dict[tuple[type, str], Any] = {}
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement
_TYPE_DICT: Any = type.__dict__["__dict__"].__get__
_MEMBER = type(type("_Slotted", (), {"__slots__": ("x",)}).__dict__["x"])


def member_slot(cls: type, name: str) -> Any:
    """The ``__slots__`` member descriptor that stores ``name`` for ``cls``, or None.

    The first class along the MRO that defines ``name`` decides, as for any
    attribute: a property or method of that name shadows a base's slot. Only
    classes written in Python: a builtin's C members are not user state.
    """
    key = (cls, name)
    found = _slots.get(key, _MISSING)
    if found is not _MISSING:
        return found
    found = None
    for klass in cls.__mro__:
        entry = _TYPE_DICT(klass).get(name, _MISSING)
        if entry is not _MISSING:
            if klass.__flags__ & _HEAPTYPE and type(entry) is _MEMBER:
                found = entry
            break
    _slots[key] = found
    return found


def slot_value(obj: Any, name: str) -> Any:
    """``obj.name`` read from its ``__slots__`` member (no user code runs), or missing."""
    slot = member_slot(type(obj), name)
    if slot is None:
        return _MISSING
    try:
        return slot.__get__(obj, type(obj))
    except AttributeError:
        return _MISSING  # never set, or deleted


#: (class, name) -> does ``name`` live in C storage of the object (see c_attribute)
_c_attributes: dict[tuple[type, str], bool] = {}
_GETSET = type(type.__dict__["__dict__"])


def c_attribute(cls: type, name: str) -> bool:
    """Is ``obj.name`` state a C object keeps in its own C struct?

    ``ctypes.c_int(0).value``, a ``ctypes.Structure``'s field,
    ``decimal.Context().prec``: a getset descriptor (or ctypes' field
    descriptor) on the class, not an entry of an instance ``__dict__`` nor a
    ``__slots__`` member. Dunders (``__class__``, ``__dict__``) are left out:
    the type and namespace an object has, not a value kept in it.
    """
    key = (cls, name)
    found = _c_attributes.get(key)
    if found is not None:
        return found
    found = False
    if not (name.startswith("__") and name.endswith("__")):
        for klass in _TYPE_MRO(cls):
            entry = _TYPE_DICT(klass).get(name, _MISSING)
            if entry is not _MISSING:
                found = type(entry) is _GETSET or type(entry).__name__ == "CField"
                break
    if len(_c_attributes) >= 4096:
        _c_attributes.clear()  # classes made per run must not pile up
    _c_attributes[key] = found
    return found


def buffer_exporter(view: memoryview) -> Any:
    """The object whose memory ``view`` shows (a bytearray, an array): its items are
    that object's, so an access through the view is one of it. The view itself once
    released (nothing to reach through it any more)."""
    try:
        return view.obj
    except ValueError:
        return view


# type's own descriptors: a metaclass cannot intercept them
_TYPE_DICT = type.__dict__["__dict__"].__get__
_TYPE_MRO = type.__dict__["__mro__"].__get__


def _class_attribute(cls: type, name: str) -> Any:
    """``Cls.name`` (``Registry.cache``, ``cls._instances``) along the MRO, as stored.

    A descriptor (method, property, classmethod) would compute the value, so it
    is not read: only plain class-level state (a dict, a set, a counter).
    """
    for klass in _TYPE_MRO(cls):
        value = _TYPE_DICT(klass).get(name, _MISSING)
        if value is not _MISSING:
            if any("__get__" in _TYPE_DICT(k) for k in _TYPE_MRO(type(value))):
                return _MISSING
            return value
    return _MISSING


MISSING = _MISSING
