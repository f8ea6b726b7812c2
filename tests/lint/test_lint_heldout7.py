"""Seventh held-out round (issue 14, lintprec2): aioamqp, aioftp, aiohomekit,
aiokatcp, aiorpcx, aioxmpp, aiozk, matrix-nio, pymodbus.

Every error there was false (0 of 6, docs/lint.md). Each in-module class is a
reduced snippet next to the partner shape that must stay an error.
"""

from __future__ import annotations

import textwrap

from racecheck.lint import lint_source
from racecheck.lint.severity import shape_severity


def severities(source: str) -> list[tuple[int, str, str]]:
    return [
        (f.line, f.code, shape_severity(f)) for f in lint_source(textwrap.dedent(source), "t.py")
    ]


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
        if not self._session:
            session = await self._open_session()
            self._session = session
"""


def test_method_under_a_lock_decorator_is_no_race() -> None:
    assert severities(_DECORATED) == []


def test_method_under_another_decorator_stays_an_error() -> None:
    other = _DECORATED.replace("@operation_lock", "@retry_on_error")
    assert severities(other) == [(11, "RC102", "error")]


# ── an asyncio lock and a threading lock in exclusive arms ──────────────────
# (pymodbus' TransactionManager: a sync client gets an RLock, an async one an
# asyncio.Lock; one object is never both)

_EITHER = """
import asyncio
from threading import RLock

class Manager:
    def __init__(self, sync_client=None):
        self.params = {}
        if sync_client:
            self._sync_lock = RLock()
        else:
            self._lock = asyncio.Lock()

    def sync_execute(self, request):
        with self._sync_lock:
            self.params["last"] = request

    async def execute(self, request):
        async with self._lock:
            self.params["last"] = request
"""


def test_asyncio_and_threading_lock_in_exclusive_arms_is_no_race() -> None:
    assert severities(_EITHER) == []


def test_asyncio_lock_beside_a_threading_lock_is_a_warning() -> None:
    # a threading lock says the class *expects* threads, not that one reaches the
    # asyncio side (aioredis' fork guard): a warning since the eleventh round
    both = _EITHER.replace("        else:\n            self._lock", "        self._lock")
    assert severities(both) == [(10, "RC106", "warning")]


def test_asyncio_lock_in_a_class_that_starts_a_thread_on_itself_is_found() -> None:
    both = _EITHER.replace("        else:\n            self._lock", "        self._lock")
    started = both + (
        "\n    def start(self):\n"
        "        threading.Thread(target=self.sync_execute, args=(None,)).start()\n"
    )
    started = started.replace("import asyncio\n", "import asyncio\nimport threading\n", 1)
    # a warning since lint19: the thread uses what the lock guards, never the lock
    # (0 of 3 true on the held-out rounds; test_lint_evidence_cells.py)
    assert severities(started) == [(11, "RC106", "warning")]


# ── "not started yet" guard, then a new value stored ────────────────────────
# (aioxmpp's ClientSession.proceed: `if self._response is None: raise`, then
# `self._response = await ...`: no store can make the other task's check fail)

_STARTED = """
class Session:
    async def proceed(self, payload):
        if self._response is None:
            raise RuntimeError("not started yet")
        request = self._build(payload)
        self._response = await self._stream.send(request)
        return self._response.payload
"""


def test_stored_value_after_a_not_none_guard_is_no_race() -> None:
    assert severities(_STARTED) == []


def test_lazy_fill_under_an_is_none_check_stays_an_error() -> None:
    lazy = """
    class Session:
        async def proceed(self, payload):
            if self._response is None:
                self._response = await self._stream.start()
            return self._response.payload
    """
    assert severities(lazy) == [(4, "RC102", "error")]


def test_lazy_fill_after_an_is_not_none_guard_stays_an_error() -> None:
    lazy = """
    class Session:
        async def get(self):
            if self._conn is not None:
                return self._conn
            self._conn = await self._connect()
            return self._conn
    """
    assert severities(lazy) == [(4, "RC102", "error")]
