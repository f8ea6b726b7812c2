"""False-positive classes of the third held-out round (issue 14; table in docs/lint.md).

Each shape was read by hand in a package no rule had been fitted to (asyncssh,
aiokafka, aiojobs, aiobotocore, aioredis 2). Each quiet shape sits next to the
error shape it must not swallow.
"""

from __future__ import annotations

import textwrap

from racecheck.lint import lint_source
from racecheck.lint.findings import Finding
from racecheck.lint.severity import shape_severity


def lint(source: str) -> list[Finding]:
    return lint_source(textwrap.dedent(source), "t.py")


def errors(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in lint(source) if shape_severity(f) == "error"]


# ── a private class built and run by one call ──────────────────────────────
# asyncssh's ``_SFTPFileCopier``: ``await _SFTPFileCopier(...).run()``; the
# object exists for that one call, so its attributes are that call's locals.

PRIVATE_COPIER = """
class _Copier:
    def __init__(self, fs, path):
        self._fs = fs
        self._path = path

    async def run(self):
        self._src = await self._fs.open(self._path)
        self._dst = await self._fs.open(self._path + ".copy")
        data = await self._src.read()
        await self._dst.write(data)
        return len(data)


async def copy(fs, path):
    return await _Copier(fs, path).run()


async def copy_local(fs, path):
    copier = _Copier(fs, path)
    return await copier.run()
"""


def test_a_private_class_run_once_on_a_fresh_object_is_not_shared() -> None:
    assert errors(PRIVATE_COPIER) == []


def _rc101(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in lint(source) if f.code == "RC101"]


def test_the_same_class_made_public_still_fires() -> None:
    # a public class: a user may build one, share it and call run() twice (a warning
    # since the fourth held-out round: nothing here runs it concurrently)
    assert _rc101(PRIVATE_COPIER.replace("_Copier", "Copier")) == [(8, "RC101"), (9, "RC101")]


def test_a_private_class_whose_object_is_kept_and_shared_still_fires() -> None:
    source = PRIVATE_COPIER + textwrap.dedent(
        """

        class Holder:
            def __init__(self, fs, path):
                self._copier = _Copier(fs, path)

            async def again(self):
                return await self._copier.run()
        """
    )
    assert _rc101(source) == [(8, "RC101"), (9, "RC101")]


# ── the object's background task, started once in __init__ ─────────────────
# aiokafka's ``GroupCoordinator``: ``self._task = create_task(self._routine())``
# in ``__init__``; only that task runs ``_maybe_commit``.

BACKGROUND = """
import asyncio
import time


class Coordinator:
    def __init__(self, client):
        self._client = client
        self._deadline = 0
        self._task = asyncio.create_task(self._routine())

    async def _routine(self):
        while not self._closing:
            await self._maybe_commit()
            await asyncio.sleep(1)
        await self._client.close()

    async def _maybe_commit(self):
        now = time.monotonic()
        if now > self._deadline:
            await self._client.commit()
            self._deadline = now + 5
"""


def test_a_task_started_once_in_init_drives_the_object() -> None:
    found = [(f.line, f.code, shape_severity(f)) for f in lint(BACKGROUND)]
    assert found == [(20, "RC102", "warning")]
    assert "only _routine(), which drives the object, calls it" in lint(BACKGROUND)[0].message


def test_a_routine_kept_on_the_object_by_a_public_method_is_a_lifecycle_warning() -> None:
    # start() keeps the routine in self._task: the object's one task. Calling start()
    # twice is a program starting one object twice (a lifecycle race): a warning since
    # the fourth held-out round (arq's Worker.main), an error before it.
    source = BACKGROUND.replace(
        "        self._task = asyncio.create_task(self._routine())\n",
        "\n    def start(self):\n        self._task = asyncio.create_task(self._routine())\n",
    )
    assert [(f.line, f.code, shape_severity(f)) for f in lint(source)] == [(22, "RC102", "warning")]


def test_a_routine_started_by_a_public_method_without_keeping_it_stays_an_error() -> None:
    # nothing marks it as the object's one task: each call of poke() starts another
    source = BACKGROUND.replace(
        "        self._task = asyncio.create_task(self._routine())\n",
        "\n    def poke(self):\n        asyncio.create_task(self._routine())\n",
    )
    assert errors(source) == [(22, "RC102")]


def test_routines_started_in_a_loop_in_init_stay_errors() -> None:
    # a pool of workers: every copy runs _maybe_commit at once
    source = BACKGROUND.replace(
        "        self._task = asyncio.create_task(self._routine())\n",
        "        self._tasks = [asyncio.create_task(self._routine()) for _ in range(4)]\n",
    )
    assert errors(source) == [(20, "RC102")]


# ── one statement, one race: RC103 reports `+= await`, RC102 not again ──────
# aiobotocore's ``AioAwsChunkedWrapper.read``.

CHUNKED = """
class Body:
    async def read(self, size=None):
        if self._complete and not self._remaining:
            return b""
        while not self._complete:
            self._remaining += await self._make_chunk()
        out = self._remaining[:size]
        self._remaining = self._remaining[size:]
        return out
"""


def test_a_lost_update_is_reported_once_not_also_as_check_then_act() -> None:
    assert errors(CHUNKED) == [(7, "RC103")]


def test_a_check_then_act_on_another_line_still_fires() -> None:
    source = """
    class Body:
        async def read(self):
            if not self._remaining:
                chunk = await self._make_chunk()
                self._remaining = chunk
            return self._remaining
    """
    assert errors(source) == [(4, "RC102")]


# ── an act behind the callee's own close-once guard ─────────────────────────
# aiojobs' ``wait_and_close()``: waits until no job is left, then ``close()``,
# which returns at once for every caller after the first.

CLOSE_ONCE = """
import asyncio


class Scheduler:
    async def wait_and_close(self):
        while self._jobs:
            await asyncio.gather(*(job.wait() for job in self._jobs))
        await self.close()

    async def close(self):
        if self._closed:
            return
        self._closed = True
        jobs = self._jobs
        if jobs:
            await asyncio.gather(*(job.close() for job in jobs))
            self._jobs.clear()
"""


def test_an_act_past_the_callees_close_once_guard_is_not_raced() -> None:
    assert errors(CLOSE_ONCE) == []


def test_without_the_close_once_guard_the_act_still_fires() -> None:
    source = CLOSE_ONCE.replace(
        "        if self._closed:\n            return\n        self._closed = True\n", ""
    )
    assert [code for _, code in errors(source)] == ["RC102"]


# ── RC106: a fork reset re-creates the asyncio lock, it does not use it ─────
# aioredis 2's ``ConnectionPool.reset()``: after a fork the child rebuilds the
# pool's state (and its asyncio lock) under a threading lock.

FORK_RESET = """
import asyncio
import os
import threading


class Pool:
    def __init__(self):
        self._fork_lock = threading.Lock()
        self._lock = asyncio.Lock()
        self.reset()

    def reset(self):
        self._lock = asyncio.Lock()
        self._available = []
        self.pid = os.getpid()

    def _checkpid(self):
        if self.pid != os.getpid():
            with self._fork_lock:
                if self.pid != os.getpid():
                    self.reset()

    async def get(self):
        self._checkpid()
        async with self._lock:
            return self._available.pop()

    async def put(self, conn):
        self._checkpid()
        async with self._lock:
            self._available.append(conn)
"""


def test_a_sync_reset_that_recreates_the_asyncio_lock_is_no_thread_use() -> None:
    assert [f.code for f in lint(FORK_RESET) if f.code == "RC106"] == []


def test_a_sync_method_that_mutates_the_guarded_state_still_fires() -> None:
    source = (
        FORK_RESET
        + """
    def put_sync(self, conn):
        with self._fork_lock:
            self._available.append(conn)
"""
    )
    assert [f.code for f in lint(source) if f.code == "RC106"] == ["RC106"]


HELPER_UNDER_LOCK = """
import asyncio
import threading


class Pool:
    def __init__(self):
        self._fork_lock = threading.Lock()
        self._lock = asyncio.Lock()
        self._created = 0

    async def get(self):
        async with self._lock:
            if self._created >= 10:
                raise RuntimeError("too many connections")
            return self.make_connection()

    def make_connection(self):
        self._created += 1
        return Connection()
"""


def test_a_sync_helper_called_only_under_the_asyncio_lock_is_no_thread_use() -> None:
    # aioredis 2's make_connection() runs inside get_connection()'s `async with`
    assert [f.code for f in lint(HELPER_UNDER_LOCK) if f.code == "RC106"] == []


def test_the_same_helper_also_called_outside_the_lock_still_fires() -> None:
    source = (
        HELPER_UNDER_LOCK
        + """
    def warm_up(self):
        with self._fork_lock:
            self.make_connection()
"""
    )
    assert [f.code for f in lint(source) if f.code == "RC106"] == ["RC106"]


# ── RC103: a write replaced before anyone can read it loses nothing ────────
# databases' asyncpg backend: ``self._connection = await pool.release(self._connection)``
# and, on the next line, ``self._connection = None``.

DEAD_STORE = """
class Backend:
    async def release(self):
        assert self._connection is not None
        self._connection = await self._pool.release(self._connection)
        self._connection = None
"""


def test_a_write_overwritten_on_the_next_line_is_no_lost_update() -> None:
    assert [code for _, code in errors(DEAD_STORE)] == []


def test_a_write_that_is_read_back_is_still_a_lost_update() -> None:
    source = DEAD_STORE.replace(
        "        self._connection = None\n", "        return self._connection\n"
    )
    assert errors(source) == [(5, "RC103")]


# ── RC102: adding to a collection checked non-empty keeps it non-empty ──────
# aioredis 2's ``PubSub.on_connect``: ``if self.channels:`` re-subscribe them,
# and ``subscribe()`` adds them to ``self.channels`` after its await.

NON_EMPTY = """
class PubSub:
    async def on_connect(self, connection):
        if self.channels:
            channels = dict(self.channels)
            await self.subscribe(**channels)

    async def subscribe(self, **new):
        await self.execute_command("SUBSCRIBE", *new)
        self.channels.update(new)
"""


def test_adding_to_a_collection_checked_non_empty_is_no_check_then_act() -> None:
    assert errors(NON_EMPTY) == []


def test_filling_a_collection_checked_empty_still_fires() -> None:
    source = NON_EMPTY.replace("if self.channels:", "if not self.channels:")
    assert errors(source) == [(4, "RC102")]
