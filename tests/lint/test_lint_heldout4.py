"""False-positive classes of the fourth held-out round (issue 14; table in docs/lint.md).

Each shape was read by hand in a package no rule had been fitted to (grpclib,
aioesphomeapi, asyncmy, aiosmtpd, arq, nats-py, psycopg-pool). Each quiet (or
calibrated) shape sits next to the error shape it must not swallow.
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


def found(source: str) -> list[tuple[int, str, str]]:
    return [(f.line, f.code, shape_severity(f)) for f in lint(source)]


# ── leaving `async with <lock>` does not suspend ────────────────────────────
# grpclib's ``Channel.__connect__``: the connection is stored under the lock and
# read back after the block; asyncio's, trio's and anyio's lock ``__aexit__``
# only release, so no other task runs between the write and the read.

LOCKED_CONNECT = """
import asyncio


class Channel:
    def __init__(self):
        self._protocol = None
        self._connect_lock = asyncio.Lock()

    @property
    def _connected(self):
        return self._protocol is not None and not self._protocol.lost

    async def __connect__(self):
        if not self._connected:
            async with self._connect_lock:
                if not self._connected:
                    self._protocol = await self._create()
        return self._protocol
"""


def test_leaving_a_lock_block_is_no_suspension() -> None:
    assert errors(LOCKED_CONNECT) == []


def test_leaving_another_async_context_still_suspends() -> None:
    # `async with self._tracer():`: its __aexit__ is arbitrary code and may await
    source = LOCKED_CONNECT.replace("self._connect_lock:", "self._tracer():")
    assert (18, "RC101") in [(f.line, f.code) for f in lint(source)]


# ── the check's slot is claimed before the first await ───────────────────────
# aioesphomeapi's ``singleton``: a future is stored under the key before the
# call awaits, so a second caller fails the check; the later store of the result
# replaces this caller's own future. This is the fix RC102's text recommends.

CLAIMED = """
import asyncio

_CACHE = {}


async def cached(key, func):
    if key not in _CACHE:
        future = asyncio.get_running_loop().create_future()
        _CACHE[key] = future
        try:
            result = await func()
        except Exception as exc:
            future.set_exception(exc)
            del _CACHE[key]
            raise
        _CACHE[key] = result
        future.set_result(result)
        return result
    return await _CACHE[key]
"""


def test_a_slot_claimed_before_the_await_is_no_check_then_act() -> None:
    assert errors(CLAIMED) == []


def test_without_the_claim_the_check_then_act_still_fires() -> None:
    source = CLAIMED.replace("        _CACHE[key] = future\n", "")
    # a memoised value computed twice: reported, as a warning since the strong-evidence
    # policy for lazy fills (tests/lint/test_lint_strong_evidence.py)
    assert found(source) == [(8, "RC102", "warning")]


# ── a slot stored from a value the whole collection was handed to ───────────
# asyncmy's ``BinLogStream._read``: ``self._table_map`` is passed to a packet
# parser, the packet is awaited, and a new key is stored: no earlier slot value
# is written back, so no other task's update is lost.

SLOT_FROM_WHOLE = """
class Stream:
    def __init__(self):
        self._table_map = {}

    async def read(self):
        packet = Packet(await self._conn.read(), self._table_map)
        await packet.init()
        if packet.kind == 19:
            self._table_map[packet.table_id] = packet.table
        return packet
"""


def test_a_slot_stored_from_a_parser_given_the_whole_map_is_no_lost_update() -> None:
    assert errors(SLOT_FROM_WHOLE) == []


def test_a_slot_stored_from_its_own_old_value_still_fires() -> None:
    source = """
    class Counter:
        async def hit(self, key):
            n = self.counts[key]
            await self._log(key)
            self.counts[key] = n + 1
    """
    assert errors(source) == [(6, "RC103")]


# ── a check of one field, an act on another field of the same object ───────
# aiosmtpd's ``smtp_DATA``: ``if not self.envelope.rcpt_tos: return`` ...
# ``self.envelope.content = content``; and nats' ``next_msg``: ``if self._sub and
# self._sub._jsi:`` ... ``self._sub._jsi._fcr = None``. The act cannot make the
# check false for another task.

OTHER_FIELD = """
class Session:
    async def data(self, arg):
        if not self.envelope.rcpt_tos:
            await self.push("503 need RCPT")
            return
        content = await self._read_body()
        self.envelope.content = content
"""


def test_an_act_on_another_field_of_the_checked_object_is_not_governed() -> None:
    assert errors(OTHER_FIELD) == []


def test_a_set_of_the_checked_field_itself_still_fires() -> None:
    source = OTHER_FIELD.replace(
        "self.envelope.content = content", "self.envelope.rcpt_tos = content"
    )
    assert errors(source) == [(4, "RC102")]


def test_a_sub_object_checked_for_truth_is_not_changed_by_setting_its_fields() -> None:
    source = """
    class Sub:
        async def next_msg(self):
            msg = await self._sub.next_msg()
            if self._sub and self._sub._jsi:
                fc = await self._conn.flush()
                self._sub._jsi._fcr = fc
            return msg
    """
    assert errors(source) == []


# ── the object's own task, stored on it ─────────────────────────────────────
# arq's ``Worker.main``: ``self.main_task = self.loop.create_task(self.main())``
# in ``run()``/``async_run()``. The worker runs one main task; two are a program
# starting one worker twice (a lifecycle race, a warning like the others).

MAIN_TASK = """
import asyncio


class Worker:
    def run(self):
        self.main_task = self.loop.create_task(self.main())
        self.loop.run_until_complete(self.main_task)

    async def async_run(self):
        self.main_task = self.loop.create_task(self.main())
        await self.main_task

    async def main(self):
        if self._pool is None:
            self._pool = await create_pool()
        await self._poll()
"""


def test_a_task_stored_on_the_object_drives_it() -> None:
    assert found(MAIN_TASK) == [(15, "RC102", "warning")]


def test_tasks_started_in_a_loop_are_workers_and_stay_errors() -> None:
    source = MAIN_TASK.replace(
        "        self.main_task = self.loop.create_task(self.main())\n        await",
        "        self.tasks = [self.loop.create_task(self.main()) for _ in range(4)]\n"
        "        await",
    ).replace("await self.main_task", "await asyncio.gather(*self.tasks)")
    assert errors(source) == [(15, "RC102")]


# ── start-up methods: connect(), start(), open() nobody in the class calls ──
# nats' ``Service.start`` (run by ``add_service`` on the service it just built),
# ``WebSocketTransport.connect_tls``, the ``connect()`` handshake: a start-up
# step, run once per object by whoever builds it. A lazy connect that the
# object's own operations call is an operation, and stays an error.

STARTUP = """
class Service:
    async def start(self):
        if self._subscriptions:
            return
        for key, subject in self._subjects():
            self._subscriptions[key] = await self._client.subscribe(subject)
        await self._client.flush()
"""


def test_a_start_up_method_no_operation_calls_is_a_warning() -> None:
    assert found(STARTUP) == [(4, "RC102", "warning")]
    assert "start-up" in lint(STARTUP)[0].message


def test_a_start_up_method_an_operation_calls_lazily_stays_an_error() -> None:
    source = STARTUP + textwrap.indent(
        textwrap.dedent(
            """
            async def request(self, subject):
                await self.start()
                return await self._client.request(subject)
            """
        ),
        "    ",
    )
    assert errors(source) == [(4, "RC102")]


def test_an_operation_named_otherwise_stays_an_error() -> None:
    assert errors(STARTUP.replace("def start(", "def subscribe_all(")) == [(4, "RC102")]


# ── an override called only by a base class in another module ───────────────
# psycopg-pool's ``AsyncNullConnectionPool._get_ready_connection``: the base
# class (pool_async.py) calls it inside ``async with self._lock:``; this module
# never calls it, so the lint cannot see its caller's lock.

OVERRIDE = """
from .base import BasePool


class NullPool(BasePool):
    async def _get_ready_connection(self, timeout):
        if self._nconns < self.max_size:
            conn = await self._connect(timeout)
            self._nconns += 1
            return conn
"""


def test_a_private_override_no_code_here_calls_is_a_warning() -> None:
    assert found(OVERRIDE) == [(7, "RC102", "warning")]


def test_the_same_override_called_here_without_a_lock_stays_an_error() -> None:
    source = OVERRIDE + textwrap.indent(
        textwrap.dedent(
            """
            async def getconn(self, timeout):
                return await self._get_ready_connection(timeout)
            """
        ),
        "    ",
    )
    assert errors(source) == [(7, "RC102")]


# ── RC107: a class that runs the loop it keeps ──────────────────────────────
# arq's ``Worker``: ``self.loop = asyncio.get_event_loop()`` (a new loop when
# there is none) in ``__init__``, and every coroutine runs on it
# (``self.loop.run_until_complete(...)``, ``self.loop.create_task(...)``).

OWN_LOOP = """
import asyncio


class Worker:
    def __init__(self):
        self.sem = asyncio.BoundedSemaphore(10)
        try:
            self.loop = asyncio.get_event_loop()
        except RuntimeError:
            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)

    def run(self):
        self.loop.run_until_complete(self.main())

    async def main(self):
        async with self.sem:
            await self.work()
"""


def test_a_class_that_runs_the_loop_it_keeps_is_bound_to_it_by_design() -> None:
    assert [f for f in lint(OWN_LOOP) if f.code == "RC107"] == []


def test_a_kept_loop_the_class_does_not_run_still_fires() -> None:
    source = OWN_LOOP.replace(
        "self.loop.run_until_complete(self.main())", "asyncio.run(self.main())"
    )
    assert [
        f.line for f in lint(source) if f.code == "RC107" and shape_severity(f) == "error"
    ] != []


# ── RC101 is an error only when the module runs the method concurrently ────
# asyncua's ``StateMachine.install``: options stored on the object, an await, read
# back - a set-up step, not per-call scratch space. On the held-out rounds 2 of 29
# RC101 errors were true; the marsys shape, whose orchestrator runs one step per
# branch at once, keeps its error.

SET_UP = """
class Machine:
    async def install(self, optionals):
        self._optionals = optionals
        self._node = await self._parent.add_object(self._name)
        if self._optionals:
            await self._node.add_property("TransitionTime")
"""


def test_a_write_read_back_that_nothing_here_runs_concurrently_is_a_warning() -> None:
    assert found(SET_UP) == [(4, "RC101", "warning")]
    assert "nothing in this module runs install() concurrently" in lint(SET_UP)[0].message


def test_a_write_read_back_the_module_fans_out_stays_an_error() -> None:
    fanned = SET_UP + textwrap.dedent(
        """

        async def install_all(machines):
            await asyncio.gather(*(m.install(True) for m in machines))
        """
    )
    assert found(fanned) == [(4, "RC101", "error")]


def test_a_write_read_back_in_a_task_started_per_item_stays_an_error() -> None:
    # one hop: the fanned-out coroutine calls the method (marsys' _tick -> step)
    fanned = SET_UP + textwrap.dedent(
        """

        class Orchestrator:
            async def run(self, branches):
                for branch in branches:
                    asyncio.create_task(self._tick(branch))

            async def _tick(self, branch):
                await self.machine.install(branch.optionals)
        """
    )
    assert found(fanned) == [(4, "RC101", "error")]
