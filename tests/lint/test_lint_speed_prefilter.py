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

from racecheck.lint import fanout
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
