"""What a bytecode instruction does to shared state, in words.

The threads backend puts its scheduling points at these instructions, the
trace recorder names the operation a step ended on with them, and both use
the same table: so it lives below both, knowing nothing of threads, tracers
or the engine.
"""

from __future__ import annotations

import dis
from types import CodeType

_READS = {
    "LOAD_ATTR": "read .{}",
    "LOAD_METHOD": "call .{}",
    "BINARY_SUBSCR": "read [..]",
    "LOAD_SUPER_ATTR": "read super().{}",
    "BINARY_SLICE": "read [..]",
}
_WRITES = {
    "STORE_ATTR": "write .{}",
    "DELETE_ATTR": "delete .{}",
    "STORE_SUBSCR": "write [..]",
    "DELETE_SUBSCR": "delete [..]",
    "STORE_GLOBAL": "write global {}",
    "DELETE_GLOBAL": "delete global {}",
    "STORE_DEREF": "write {}",
    "STORE_SLICE": "write [..]",
}
_OTHER = {"CALL": "call", "CALL_KW": "call", "CALL_FUNCTION_EX": "call", "FOR_ITER": "next item"}
ACCESS_OPS = {**_READS, **_WRITES, **_OTHER}

#: granularity -> code -> its points: one table per granularity rather than
#: one keyed by (code, granularity), whose key tuples the collector tracks.
#: Filled while the first runs of a process's first exploration run, such
#: keys stayed in generation 2 for that whole exploration, and every
#: collection between its runs was a full one (Session._collect_between_runs).
#: A code object and a points table are not tracked; the tables themselves
#: are kept tracked from the threads backend's install (racecheck.gctrack).
TABLES: dict[str, dict[CodeType, dict[int, str]]] = {"access": {}, "opcode": {}, "line": {}}


def points(code: CodeType, granularity: str) -> dict[int, str]:
    """offset → operation text for the scheduling points of ``code``."""
    tables = TABLES.get(granularity)
    if tables is None:
        tables = TABLES[granularity] = {}
    table = tables.get(code)
    if table is None:
        table = {}
        for instr in dis.get_instructions(code):
            if granularity == "opcode":
                table[instr.offset] = instr.opname.lower()
                continue
            template = ACCESS_OPS.get(instr.opname)
            if template is not None:
                name = instr.argval if isinstance(instr.argval, str) else ""
                if (
                    instr.opname == "LOAD_ATTR"
                    and isinstance(instr.argrepr, str)
                    and "method" in instr.argrepr
                ):
                    template = "call .{}"
                table[instr.offset] = template.format(name)
        tables[code] = table
    return table


def access_of(operation: str) -> str | None:
    """ "write .balance" → "w:balance" for conflict highlighting."""
    if operation.startswith(("write .", "delete .")):
        return "w:" + operation.split(".", 1)[1]
    if operation.startswith("read ."):
        return "r:" + operation.split(".", 1)[1]
    if operation.startswith("write global "):
        return "w:" + operation.rsplit(" ", 1)[1]
    return None
