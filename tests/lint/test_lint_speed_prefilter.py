"""A rule walks a function only when the function holds what the rule looks for.

RC104 (and RC101's severity) look for fan-outs: calls named ``gather``,
``create_task``, ``start_soon``, ``submit``, ``run_in_executor``, ``to_thread``,
a pool's ``map``. A function that makes no such call has no fan-out, and on a
large module most functions make none; walking each of them expression by
expression was most of the fan-out check's time. The partner test keeps every
kind of fan-out found when it is the only one in its function.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator

import pytest

from racecheck.lint import awaits, fanout, lint_source, threads
from racecheck.lint.module import FunctionNode, Module

PLAIN = textwrap.dedent(
    """
    class Conn:
        async def query(self, sql):
            for row in await self.fetch(sql):
                self.rows.append(row)
            return [self.tasks.map(r) for r in self.rows]
    """
)

FAN_OUTS = {
    "create_task": "for x in xs:\n    asyncio.create_task(work(x))",
    "ensure_future": "for x in xs:\n    asyncio.ensure_future(work(x))",
    "start_soon": "for x in xs:\n    nursery.start_soon(work, x)",
    "submit": "for x in xs:\n    executor.submit(work, x)",
    "run_in_executor": "for x in xs:\n    loop.run_in_executor(None, work, x)",
    "to_thread": "for x in xs:\n    asyncio.to_thread(work, x)",
    "run_sync": "for x in xs:\n    anyio.to_thread.run_sync(work, x)",
    "pool map": "return self.pool.map(work, xs)",
    "gather": "await asyncio.gather(work(a), work(b))",
    "gather starred": "tasks = [work(x) for x in xs]\nawait asyncio.gather(*tasks)",
}


def test_a_function_without_a_fan_out_call_is_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    module = Module.parse("plain.py", PLAIN)
    walked: list[str] = []
    visit = fanout._visit

    def counted(
        body: list[ast.stmt], names: frozenset[str], in_loop: bool, func: FunctionNode
    ) -> Iterator[fanout.Site]:
        walked.append("visit")
        return visit(body, names, in_loop, func)

    monkeypatch.setattr(fanout, "_visit", counted)
    (func,) = module.function_nodes
    assert fanout._sites(func) == []
    assert walked == []


@pytest.mark.parametrize("kind", sorted(FAN_OUTS))
def test_every_fan_out_call_still_makes_a_site(kind: str) -> None:
    body = textwrap.indent(FAN_OUTS[kind], "    ")
    source = f"async def spread(self, xs, a, b, nursery, executor, loop):\n{body}\n"
    module = Module.parse("spread.py", source)
    (func,) = [f for f in module.function_nodes if f.name == "spread"]
    sites = fanout._sites(func)
    assert sites, kind
    assert all(isinstance(site.node, ast.AST) for site in sites)


LOCKS = textwrap.dedent(
    """
    class Plain:
        async def a(self):
            await self.b()

        async def b(self):
            return [x async for x in self.c()]

    class Guarded(Plain):
        async def run(self):
            async with self._lock:
                await self.b()

        async def later(self):
            def nested():
                with self._mutex:
                    pass
            await self._sem.acquire()
            self._sem.release()

        async def loose(self):
            with open(self.path) as f:
                return f.read()
    """
)


def test_lock_regions_are_found_within_a_function_and_its_nested_ones() -> None:
    module = Module.parse("locks.py", LOCKS)
    methods = {f.name: f for f in module.function_nodes}
    assert not module.holds_lock_within(methods["a"])
    assert not module.holds_lock_within(methods["b"])
    assert module.holds_lock_within(methods["run"])
    assert module.holds_lock_within(methods["later"])  # a nested `with`, an acquire()
    assert module.holds_lock_within(methods["nested"])
    assert not module.holds_lock_within(methods["loose"])  # `open()` is no lock


def test_a_class_without_a_lock_region_is_not_walked_for_locked_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = Module.parse("locks.py", LOCKS)
    walked: list[str] = []
    self_uses = awaits._self_uses

    def counted(module: Module, method: FunctionNode) -> dict[str, bool]:
        walked.append(method.name)
        return self_uses(module, method)

    monkeypatch.setattr(awaits, "_self_uses", counted)
    assert awaits._awaited_under_lock(module, module.classes["Plain"]) == set()
    assert walked == []
    # the partner: a class with a lock is walked, and `b` is awaited under it...
    # but also called outside (Plain.a), so it is not always locked
    assert awaits._awaited_under_lock(module, module.classes["Guarded"]) == set()
    assert walked
    only_locked = Module.parse(
        "only.py",
        textwrap.dedent(
            """
            class Only:
                async def run(self):
                    async with self._lock:
                        await self.step()

                async def step(self):
                    await self.io()
            """
        ),
    )
    assert awaits._awaited_under_lock(only_locked, only_locked.classes["Only"]) == {"step"}


def test_a_threaded_class_without_a_lock_is_not_walked_for_locked_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = textwrap.dedent(
        """
        import threading

        class Plain:
            def run(self):
                self.step()

            def step(self):
                self.items.append(1)

        class Guarded:
            def __init__(self):
                self._lock = threading.Lock()

            def run(self):
                with self._lock:
                    self.step()

            def step(self):
                self.items.append(1)
        """
    )
    module = Module.parse("threaded.py", source)
    walked: list[str] = []
    calls_under_lock = threads._calls_under_lock

    def counted(module: Module, method: FunctionNode) -> dict[str, bool]:
        walked.append(method.name)
        return calls_under_lock(module, method)

    monkeypatch.setattr(threads, "_calls_under_lock", counted)
    assert threads._called_under_lock(module, module.classes["Plain"]) == set()
    assert walked == []
    assert threads._called_under_lock(module, module.classes["Guarded"]) == {"step"}
    assert walked


def test_what_excuses_a_finding_is_asked_only_of_a_method_that_has_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []
    for name in ("_lifecycle", "_awaited_under_lock", "_behind_once_guards", "_owned"):
        original = getattr(awaits, name)

        def recorded(*args: object, _name: str = name, _original: object = original) -> object:
            asked.append(_name)
            return _original(*args)  # type: ignore[operator]

        monkeypatch.setattr(awaits, name, recorded)
    quiet = textwrap.dedent(
        """
        class Client:
            async def get(self, key):
                value = await self.fetch(key)
                return value

            async def serve(self):
                while True:
                    await self.get(1)
        """
    )
    assert lint_source(quiet, "quiet.py") == []
    assert asked == []
    # the partner: a finding in a method that drives the object is still excused
    # to a warning, which needs the class-wide answers
    driven = textwrap.dedent(
        """
        class Server:
            async def serve(self):
                if self.conn is None:
                    self.conn = await self.connect()
                while True:
                    await self.conn.read()
        """
    )
    (finding,) = lint_source(driven, "driven.py")
    assert finding.code == "RC102"
    assert finding.severity == "warning" and "serving until shutdown" in finding.message
    assert "_lifecycle" in asked
