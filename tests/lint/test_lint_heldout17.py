"""Seventeenth held-out round (lint18): a general shape found after reading it.

The round (docs/lint.md, "Seventeenth held-out round") was linted with the
rules frozen first; its held-out number is the one before these fixes, which
are fitted on it.

* A task started in a loop and waited for inside the ``try`` that follows
  (camel's MCP client: ``connect_task = asyncio.create_task(
  self._try_connect(transport))``, then ``try: await
  asyncio.shield(connect_task); return``) runs one attempt at a time, as the
  sixteenth round's plain wait did (``test_lint_heldout16b``); the wait was
  looked for only as a statement of the same block.

Not fixed: chainlit's eight false errors rest on a fan-out whose copies each
call ``send()`` on their own loop item (``[action.send(...) for action in
self.actions]``), which runs it on many objects, one call each. Leaving such a
fan-out out of the evidence would contradict
``test_lint_heldout4.test_a_write_read_back_the_module_fans_out_stays_an_error``
(``gather(*(m.install(True) for m in machines))`` keeps RC101 an error), which
stays as it is.
"""

from __future__ import annotations

from pathlib import Path

from test_lint_heldout16 import findings

_CLIENT = """
import asyncio


class Client:
    def __init__(self, transports):
        self._transports = transports
        self._session = None

    async def connect(self):
        for transport in self._transports:
            connect_task = asyncio.create_task(self._try_connect(transport))
            try:
                await asyncio.shield(connect_task)
                return
            except asyncio.CancelledError:
                connect_task.cancel()
                raise
            except Exception:
                pass

    async def _try_connect(self, transport):
        self._session = transport.session()
        await self._session.start()
        await self._session.initialize()
"""


def test_a_task_waited_for_in_the_try_after_it_is_no_fan_out(tmp_path: Path) -> None:
    ((line, severity, message),) = findings(tmp_path, {"client": _CLIENT}, "RC101")
    assert (line, severity) == (23, "warning"), message


def test_a_task_the_try_does_not_wait_for_keeps_the_error(tmp_path: Path) -> None:
    unwaited = _CLIENT.replace(
        "                await asyncio.shield(connect_task)\n                return\n",
        "                await asyncio.sleep(0)\n",
    )
    ((line, severity, message),) = findings(tmp_path, {"client": unwaited}, "RC101")
    assert (line, severity) == (22, "error"), message
