"""Seventh held-out round (issue 14, lintprec2): aioamqp, aioftp, aiohomekit,
aiokatcp, aiorpcx, aioxmpp, aiozk, matrix-nio, pymodbus.

Every error there was false (0 of 6, docs/lint.md). Each in-module class is a
reduced snippet next to the partner shape that must stay an error.
"""

from __future__ import annotations

import textwrap

from racecheck.lint import lint_source


def severities(source: str) -> list[tuple[int, str, str]]:
    return [(f.line, f.code, f.severity) for f in lint_source(textwrap.dedent(source), "t.py")]


# ── a guard that raises, then the slot claimed before the first await ──────
# (matrix-nio's share_group_session: the in-flight marker is stored at once)

_CLAIM_AFTER_GUARD = """
class Client:
    async def share(self, room_id):
        if room_id in self.sharing:
            raise RuntimeError("already sharing")
        self.sharing[room_id] = Event()
        try:
            await self._send(room_id)
        finally:
            event = self.sharing.pop(room_id)
            event.set()
"""


def test_slot_claimed_right_after_a_raising_guard_is_no_race() -> None:
    assert severities(_CLAIM_AFTER_GUARD) == []


def test_slot_claimed_only_after_the_await_stays_an_error() -> None:
    late = """
    class Client:
        async def share(self, room_id):
            if room_id in self.sharing:
                raise RuntimeError("already sharing")
            await self._prepare(room_id)
            self.sharing[room_id] = Event()
    """
    assert severities(late) == [(4, "RC102", "error")]


# ── a method wrapped by a decorator named like a lock ───────────────────────
# (aiohomekit's `@operation_lock`: `async with self._operation_lock:` around it)

_DECORATED = """
def operation_lock(func):
    async def wrapper(self, *args):
        async with self._operation_lock:
            return await func(self, *args)
    return wrapper

class Pairing:
    @operation_lock
    async def subscribe(self, chars):
        if not self._key:
            key = await self._fetch_key()
            self._key = key
"""


def test_method_under_a_lock_decorator_is_no_race() -> None:
    assert severities(_DECORATED) == []


def test_method_under_another_decorator_stays_an_error() -> None:
    other = _DECORATED.replace("@operation_lock", "@retry_on_error")
    assert severities(other) == [(11, "RC102", "error")]
