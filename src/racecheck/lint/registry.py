"""Every lint rule, in one table: code, name, severity and the text that explains it.

The CLI's ``--explain``, the docs and the tests all read :data:`RULES`, so a
rule's wording lives in exactly one place. Codes are stable: a code is never
reused for a different shape, because users write them into suppression
comments and CI configuration.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from racecheck.errors import UsageError
from racecheck.lint.findings import Severity


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    # the severity the shape gives; a check may lower it per finding, and since lint20
    # an error needs a counted resource (racecheck.lint.severity): see `reported`
    severity: Severity
    summary: str
    why: str
    example: str
    fix: str
    reported: str = ""  # what --explain says the rule reports, when not just `severity`


RULES: dict[str, Rule] = {
    rule.code: rule
    for rule in (
        Rule(
            code="RC101",
            name="state-across-await",
            severity="error",
            reported="warning (held out, 3 of 39 RC101 errors were true)",
            summary="shared attribute written, then awaited across, then read back",
            why=(
                "An object shared by several tasks is not per-call storage. While this "
                "coroutine is suspended at the await, another task running the same "
                "method overwrites the attribute, and the read after the await sees the "
                "other task's value."
            ),
            example=(
                "async def step(self, branch):\n"
                "    self._current = branch.agent\n"
                "    await self.run_model(branch)\n"
                "    return self.validate(self._current)"
            ),
            fix=(
                "Keep per-call data in local variables and pass it along as an argument; "
                "or hold one lock across the write, the await and the read."
            ),
        ),
        Rule(
            code="RC102",
            name="check-then-act-across-await",
            severity="error",
            reported="error when the check counts a resource, else warning",
            summary="a check of shared state and the action it guards are split by an await",
            why=(
                "The check is only true at the moment it runs. Another task can make the "
                "same check during the await, so both act: two connections are opened and "
                "one leaks, a stream is read twice, a limit is overshot, an object is "
                "closed twice. A lazy value that is only looked up or computed (nothing "
                "that leaks when made twice, no stream read) is stored twice: a warning. "
                "It is an error only when the check counts a resource (a count compared "
                "with < or >, moved by += 1 / -= 1, in an object that is not its own "
                "async iterator): on held-out code that was right 6 times of 6, while a "
                "spawn the package shows was right 11 of 30 times and the shape alone 83 "
                "of 138. Otherwise a warning that names the evidence found (the package "
                "spawning the method, the module fanning it out) and its record."
            ),
            example=(
                "async def execute(self, *args):\n"
                "    if self.connection is None:\n"
                "        self.connection = await self.pool.get_connection()\n"
                "    return await self.connection.send(*args)"
            ),
            fix=(
                "Hold an asyncio.Lock around check, await and act (re-check after "
                "acquiring it; creating the lock in __init__ is fine while the object "
                "lives in one event loop, see RC107), re-check in a `while` loop after "
                "the await, or store a future/task before the first await so that "
                "later callers await the same one."
            ),
        ),
        Rule(
            code="RC103",
            name="read-modify-write-across-await",
            severity="error",
            reported="warning (no counted resource; held out, its evidence was under 90%)",
            summary="shared state read before an await and written back from the stale value",
            why=(
                "The value read before the await may be changed by another task while "
                "this one is suspended; writing back a value computed from the old read "
                "discards that change (a lost update). A warning since lint20, naming "
                "the evidence that the package runs the method concurrently when there "
                "is some (held out, a spawn the package shows was right 11 of 30 times)."
            ),
            example=(
                "async def add(self, n):\n"
                "    self.total += await self.price(n)  # reads total, then suspends"
            ),
            fix=(
                "Do the await first and the read-modify-write after it, with no await in "
                "between; or guard the whole sequence with a lock."
            ),
        ),
        Rule(
            code="RC104",
            name="shared-collection-in-fan-out",
            severity="warning",
            summary="concurrent tasks or threads mutate one shared collection without a lock",
            why=(
                "gather, create_task in a loop and executor.submit/map run the same code "
                "concurrently. When every copy mutates one dict, list or set (a closure "
                "variable, an argument passed to all of them, self.<attr> or a global) and "
                "also relies on it across a suspension, copies see and overwrite each "
                "other's entries; in threads, compound updates are lost."
            ),
            example=(
                "async def run_step(step, ctx):\n"
                "    ctx['findings'] = step.inputs\n"
                "    await agent.run(step, ctx)  # a sibling step overwrites ctx meanwhile\n"
                "\n"
                "await asyncio.gather(*(run_step(s, ctx) for s in group))"
            ),
            fix=(
                "Give each task its own collection and merge the results after the "
                "fan-out, in a fixed order; or guard the shared one with a lock."
            ),
        ),
        Rule(
            code="RC105",
            name="unguarded-compound-op-in-threads",
            severity="warning",
            summary="compound operation on shared state in threaded code, outside a lock",
            why=(
                "A thread can be preempted between the read and the write of "
                "``self.n += 1``, between a check and the action it guards, or in the "
                "middle of iterating a collection that another method mutates (which "
                "raises 'changed size during iteration'). A lock only helps if it is held "
                "across the whole compound operation."
            ),
            example=(
                "class Counter:\n"
                "    def __init__(self):\n"
                "        self._lock = threading.Lock()\n"
                "        self.n = 0\n"
                "    def hit(self):\n"
                "        self.n += 1  # the lock exists but is not held"
            ),
            fix=(
                "Do the whole compound operation inside one `with self._lock:` block; "
                "iterate over a snapshot taken under the lock; and pass explicit handles "
                "instead of relying on 'the most recent item' of a shared list."
            ),
        ),
        Rule(
            code="RC106",
            name="asyncio-object-used-from-thread",
            severity="error",
            reported="warning (held out, 0 of 12 RC106 errors were true)",
            summary="asyncio primitive or event loop used from a thread that is not the loop's",
            why=(
                "asyncio objects and the event loop are not thread-safe. Event.set(), "
                "Queue.put_nowait(), ensure_future() or loop.create_task() called from "
                "another thread can corrupt the loop's state or leave it asleep with work "
                "ready; an asyncio.Lock cannot be taken by a thread at all, so it guards "
                "nothing against threads. A warning: its messages say whether a thread "
                "is started on the function (Thread(target=), submit, run_in_executor, "
                "to_thread) or only guessed from a pool-like name; held out, even the "
                "started ones were false 12 times of 12 (a join, an awaited executor "
                "job or a thread that never touches the guarded state ordered them)."
            ),
            example=(
                "def on_message(self, msg):  # runs on a worker thread\n"
                "    self._queue.put_nowait(msg)  # self._queue = asyncio.Queue()"
            ),
            fix=(
                "Hand work to the loop with loop.call_soon_threadsafe(...) or "
                "asyncio.run_coroutine_threadsafe(...); guard state shared with threads "
                "by a threading.Lock."
            ),
        ),
        Rule(
            code="RC107",
            name="loop-bound-primitive-in-init",
            severity="warning",
            summary="asyncio primitive created in __init__ of an object that may outlive its loop",
            why=(
                "Since Python 3.10 asyncio.Lock, Event, Condition, Semaphore and Queue "
                "bind to an event loop the first time they have to wait (before 3.10 they "
                "bound when created). An object that keeps one from __init__ and is used "
                "again under another loop (a second asyncio.run, a new_event_loop, a test "
                "per loop) fails with 'is bound to a different event loop'. Futures and a "
                "stored get_event_loop() are tied to one loop from the start. A lock or "
                "queue made in __init__ is reported only when the module shows several "
                "loops (asyncio.run twice, new_event_loop, or code that compares the "
                "running loop with a stored one); otherwise it is the idiomatic place. "
                "Its message says when the module also shows one object meeting two "
                "loops (made at module level, made in a function that runs loops twice, "
                "or running a loop on itself); a warning either way since lint20 (held "
                "out, 6 of 21 RC107 errors were true)."
            ),
            example=(
                "class Executor:\n"
                "    def __init__(self):\n"
                "        self._lock = asyncio.Lock()\n"
                "    async def execute(self, msg):\n"
                "        async with self._lock: ..."
            ),
            fix=(
                "Create the primitive lazily, inside a coroutine, and re-create it when "
                "asyncio.get_running_loop() differs from the loop it was made for."
            ),
        ),
    )
}


def _match(code: str, prefixes: Iterable[str]) -> bool:
    return any(code.startswith(prefix) for prefix in prefixes)


def resolve_codes(
    select: Iterable[str] | None = None, ignore: Iterable[str] | None = None
) -> frozenset[str]:
    """The codes enabled by ``select`` and ``ignore`` (ruff-style prefixes, ``ALL``).

    Raises :class:`UsageError` for an entry that matches no rule, so a typo such
    as ``--select RC1O1`` is reported instead of silently selecting nothing.
    """
    chosen = _normalise(select, "--select")
    dropped = _normalise(ignore, "--ignore")
    codes = set(RULES) if chosen is None else {c for c in RULES if _match(c, chosen)}
    if dropped:
        codes = {c for c in codes if not _match(c, dropped)}
    return frozenset(codes)


def _normalise(entries: Iterable[str] | None, option: str) -> list[str] | None:
    if entries is None:
        return None
    prefixes: list[str] = []
    for raw in entries:
        for entry in raw.split(","):
            entry = entry.strip().upper()
            if not entry:
                continue
            if entry == "ALL":
                entry = "RC"
            if not any(code.startswith(entry) for code in RULES):
                known = ", ".join(RULES)
                raise UsageError(f"unknown rule code or prefix {entry!r} in {option} ({known})")
            prefixes.append(entry)
    return prefixes
