"""The six error-severity false positives left by the first study round (docs/lint.md).

Each shape is written twice: as the real package has it (quiet, or a warning
with the reason documented) and as the bug it resembles (still an error). The
negatives were written before the rules that quiet them and seen failing.
"""

from __future__ import annotations

import textwrap

import pytest

from racecheck.lint import lint_source
from racecheck.lint.findings import Finding
from racecheck.lint.severity import shape_severity


def lint(source: str) -> list[Finding]:
    return lint_source(textwrap.dedent(source), "t.py")


def errors(source: str) -> list[str]:
    return [f.code for f in lint(source) if shape_severity(f) == "error"]


def warnings(source: str) -> list[str]:
    return [f.code for f in lint(source) if shape_severity(f) == "warning"]


# asyncpg's Connection: a fail-fast exclusive section (``__enter__`` raises when it
# is already held) around the query. A second task that passed the check fails
# when it enters the section, before it can act.
EXCLUSIVE_SECTION = """
class _Atomic:
    def __init__(self):
        self._acquired = 0

    def __enter__(self):
        if self._acquired:
            raise RuntimeError("another operation is in progress")
        self._acquired = 1

    def __exit__(self, t, e, tb):
        self._acquired = 0


class Connection:
    def __init__(self):
        self._listeners = {}
        self._section = _Atomic()

    async def fetch(self, query):
        return await self._execute(query)

    async def _execute(self, query):
        with self._section:
            result = await self._protocol.query(query)
        return result

    async def add_listener(self, channel, callback):
        if channel not in self._listeners:
            await self.fetch("LISTEN " + channel)
            self._listeners[channel] = set()
        self._listeners[channel].add(callback)
"""


def test_an_await_inside_a_fail_fast_section_is_not_a_gap() -> None:
    assert errors(EXCLUSIVE_SECTION) == []


def test_a_context_manager_that_does_not_refuse_a_second_entry_is_no_guard() -> None:
    # the same code with an ``__enter__`` that only counts: a second task goes in
    source = EXCLUSIVE_SECTION.replace(
        """        if self._acquired:
            raise RuntimeError("another operation is in progress")
        self._acquired = 1""",
        "        self._acquired += 1",
    )
    assert errors(source) == ["RC102"]


def test_an_await_outside_the_fail_fast_section_is_still_a_gap() -> None:
    # the section is left before the await: a second task enters it freely
    source = EXCLUSIVE_SECTION.replace(
        """        with self._section:
            result = await self._protocol.query(query)""",
        """        with self._section:
            prepared = self._protocol.prepare(query)
        result = await self._protocol.query(prepared)""",
    )
    assert errors(source) == ["RC102"]


def test_a_fail_fast_section_does_not_excuse_state_written_before_it() -> None:
    # RC101: the second task overwrites the attribute before it fails at the section
    source = """
    class _Busy:
        def __enter__(self):
            if self._held:
                raise RuntimeError("busy")
            self._held = True

        def __exit__(self, *exc):
            self._held = False


    class Client:
        def __init__(self):
            self._busy = _Busy()

        async def call(self, request):
            self._current = request
            with self._busy:
                await self._send(request)
            return self._current


    async def call_all(client, requests):
        await asyncio.gather(*(client.call(r) for r in requests))
    """
    assert errors(source) == ["RC101"]


def test_a_fail_fast_section_entered_only_on_some_runs_is_no_guard() -> None:
    # a second task that skips the section acts while the first is suspended in it
    source = EXCLUSIVE_SECTION.replace(
        "async def add_listener(self, channel, callback):",
        "async def add_listener(self, channel, callback, remote=True):",
    ).replace(
        """        if channel not in self._listeners:
            await self.fetch("LISTEN " + channel)""",
        """        if channel not in self._listeners:
            if remote:
                with self._section:
                    await self._protocol.query("LISTEN " + channel)""",
    )
    assert errors(source) == ["RC102"]


def test_a_read_modify_write_around_a_fail_fast_section() -> None:
    # RC103: the second task reads the stale count, then fails at the section
    source = """
    class _Busy:
        def __enter__(self):
            if self._held:
                raise RuntimeError("busy")
            self._held = True

        def __exit__(self, *exc):
            self._held = False


    class Counter:
        def __init__(self):
            self._busy = _Busy()

        async def bump(self):
            seen = self.count
            with self._busy:
                await self._io()
            self.count = seen + 1
    """
    assert errors(source) == []
    assert errors(source.replace("with self._busy:", "with self._timer:")) == ["RC103"]


# asyncpg's cursors: ``CursorFactory.__aiter__`` returns a new ``CursorIterator``
# for each ``async for``, so only that loop ever calls its ``__anext__``.
PER_LOOP_ITERATOR = """
class Factory:
    def __init__(self, connection, query):
        self._connection = connection
        self._query = query

    def __aiter__(self):
        return Iterator(self._connection, self._query)


class Iterator:
    def __init__(self, connection, query):
        self._connection = connection
        self._query = query
        self._state = None

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self._state is None:
            self._state = await self._connection.prepare(self._query)
        return await self._state.next()
"""


def test_an_iterator_made_for_each_async_for_is_not_shared() -> None:
    assert errors(PER_LOOP_ITERATOR) == []


def test_an_iterator_that_is_also_the_shared_object_still_fires() -> None:
    # the object iterates itself and is made elsewhere: tasks can share it
    source = PER_LOOP_ITERATOR.replace(
        "return Iterator(self._connection, self._query)", "return self._iterator"
    )
    assert errors(source) == ["RC102"]


# asyncpg's ``Cursor._init``: a private initialiser awaited right after the
# object is made, before anyone else holds a reference to it.
FRESH_OBJECT = """
class Factory:
    def __await__(self):
        cursor = Cursor(self._connection, self._query)
        return cursor._init(self._timeout).__await__()


class Cursor:
    def __init__(self, connection, query):
        self._connection = connection
        self._query = query
        self._state = None

    async def _init(self, timeout):
        if self._state is None:
            self._state = await self._connection.prepare(self._query, timeout)
        return self
"""


def test_a_private_initialiser_of_a_fresh_object_is_not_shared() -> None:
    assert errors(FRESH_OBJECT) == []


def test_a_private_method_also_called_on_a_shared_object_still_fires() -> None:
    source = FRESH_OBJECT + textwrap.dedent(
        """

        class Holder:
            async def refresh(self):
                await self._cursor._init(None)
        """
    )
    assert errors(source) == ["RC102"]


def test_a_public_method_of_a_fresh_object_still_fires() -> None:
    # public: any caller may share the object and call it again
    assert errors(FRESH_OBJECT.replace("_init", "init")) == ["RC102"]


# asyncpg's ``PoolConnectionHolder.connect`` (and anyio's ``__aenter__``): the check
# raises when the slot the method fills is already filled. The method is single-use
# by its own contract; the race only lets a caller who breaks it go unnoticed.
RAISE_ON_REUSE = """
class Holder:
    async def connect(self):
        if self._con is not None:
            raise RuntimeError("connect() called while a connection exists")
        con = await self._pool.new_connection()
        self._con = con
"""


def test_a_raise_on_reuse_guard_is_a_warning() -> None:
    assert errors(RAISE_ON_REUSE) == []
    assert warnings(RAISE_ON_REUSE) == ["RC102"]
    (finding,) = lint(RAISE_ON_REUSE)
    assert "single-use" in finding.message


def test_lazy_initialisation_across_an_await_stays_an_error() -> None:
    source = """
    class Holder:
        async def connect(self):
            if self._con is None:
                self._con = await self._pool.new_connection()
            return self._con
    """
    assert errors(source) == ["RC102"]


def test_a_capacity_guard_that_raises_stays_an_error() -> None:
    # ``tokens`` running out is the normal case, not a misuse: two tasks spend one token
    source = """
    class Bucket:
        async def take(self):
            if self.tokens <= 0:
                raise RuntimeError("no tokens left")
            await self._refill_clock()
            self.tokens -= 1
    """
    assert errors(source) == ["RC102"]


# anyio's ``BufferedByteReceiveStream.receive_until``: a size limit on a buffer
# that the act grows by a chunk of any size. One caller alone overshoots the limit
# by up to a chunk; the check bounds nothing the act keeps.
SOFT_LIMIT = """
class Buffered:
    async def receive_until(self, delimiter, max_bytes):
        while True:
            index = self._buffer.find(delimiter)
            if index >= 0:
                found = self._buffer[:index]
                del self._buffer[: index + len(delimiter)]
                return bytes(found)
            if len(self._buffer) >= max_bytes:
                raise ValueError(max_bytes)
            data = await self.receive_stream.receive()
            self._buffer.extend(data)
"""


def test_a_limit_the_act_overshoots_by_itself_is_a_warning() -> None:
    assert errors(SOFT_LIMIT) == []
    assert warnings(SOFT_LIMIT) == ["RC102"]


@pytest.mark.parametrize(
    "source",
    [
        # the canonical shapes from issue 14: a unit step keeps the bound
        """
        class Pool:
            async def acquire(self):
                if self.opened < self.max_size:
                    conn = await self._connect()
                    self.opened += 1
                    return conn
        """,
        """
        class Bucket:
            async def take(self):
                if self.tokens > 0:
                    await self._wait()
                    self.tokens -= 1
        """,
        # one item per check: the queue's bound holds without concurrency
        """
        class Bounded:
            async def put(self, producer):
                if len(self._items) < self.maxsize:
                    item = await producer()
                    self._items.append(item)
        """,
        # the check counts what the act adds
        """
        class Budget:
            async def spend(self, n):
                if self.used + n <= self.limit:
                    await self._charge(n)
                    self.used += n
        """,
    ],
    ids=["opened-max-size", "tokens", "append-one", "amount-in-the-check"],
)
def test_bounds_the_act_keeps_stay_errors(source: str) -> None:
    assert errors(source) == ["RC102"]


# Found on the held-out packages (docs/lint.md), after the rules above were fixed.

# aiomysql: every public query method calls ``_execute_command``, whose own
# check-then-act was reported once per caller (15 times) instead of once.
CHECK_IN_A_CALLEE = """
class Connection:
    async def _execute_command(self, sql):
        if self._result is not None:
            while self._result.has_next:
                await self.next_result()
            self._result = None
        self._send(sql)

    async def next_result(self):
        await self._read_query_result()

    async def _read_query_result(self):
        self._result = None
        result = Result(self)
        await result.read()
        self._result = result

    async def _read_ok_packet(self):
        packet = await self._read_packet()
        self.server_status = packet.status

    async def commit(self):
        await self._execute_command("COMMIT")
        await self._read_ok_packet()

    async def rollback(self):
        await self._execute_command("ROLLBACK")
        await self._read_ok_packet()
"""


def test_a_check_and_act_inside_one_callee_are_reported_once_in_the_callee() -> None:
    found = [(f.line, f.code) for f in lint(CHECK_IN_A_CALLEE) if shape_severity(f) == "error"]
    assert found == [(4, "RC102")]


def test_a_callee_check_acted_on_by_the_caller_is_reported_at_the_caller() -> None:
    # the callee's loop re-checks, but the caller awaits again before it acts
    source = """
    class Pool:
        async def _wait_for_room(self):
            while self.opened >= self.max_size:
                await self._released.wait()

        async def acquire(self):
            await self._wait_for_room()
            conn = await self._connect()
            self.opened += 1
            return conn
    """
    found = [(f.line, f.code) for f in lint(source) if shape_severity(f) == "error"]
    assert found == [(8, "RC102")]


# aiomysql's ``_SAConnectionContextManager.__anext__``: the value comes from
# awaiting an awaitable stored on the object. A coroutine can be awaited once (the
# second task fails), a future or task gives every awaiter the same result: both
# tasks store the same thing. It is the fix RC102 recommends.
STORED_AWAITABLE = """
class ContextManager:
    def __init__(self, coro):
        self._coro = coro
        self._obj = None

    async def __aenter__(self):
        if self._obj is None:
            self._obj = await self._coro
        return self._obj
"""


def test_awaiting_a_stored_awaitable_gives_every_task_the_same_value() -> None:
    assert errors(STORED_AWAITABLE) == []


def test_awaiting_a_fresh_call_still_fires() -> None:
    fresh = STORED_AWAITABLE.replace("await self._coro", "await self._make()")
    # in a plain method: inside ``__aenter__`` the same fill is a lifecycle race (entering
    # one object twice at once), a warning since the tenth held-out round
    assert errors(fresh.replace("__aenter__", "get")) == ["RC102"]
    assert errors(fresh) == []


def test_awaiting_a_future_this_call_made_still_fires() -> None:
    # aiosqlite's ``_connect``: each caller makes its own future, so each opens a connection
    source = """
    class Connection:
        async def _connect(self):
            if self._connection is None:
                future = self._loop.create_future()
                self._tx.put_nowait((future, self._connector))
                self._connection = await future
            return self
    """
    assert errors(source) == ["RC102"]
