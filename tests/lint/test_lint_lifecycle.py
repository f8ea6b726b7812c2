"""Precision on the held-out packages (issue 14): lifecycle drivers and repeated reports.

Every shape here was read by hand in a held-out package (hypercorn, uvicorn,
aiosqlite, aiomysql; see the table in docs/lint.md). Each calibrated shape is
next to the error shape it must not swallow.
"""

from __future__ import annotations

import textwrap

from racecheck.lint import lint_source
from racecheck.lint.findings import Finding
from racecheck.lint.severity import shape_severity


def lint(source: str) -> list[Finding]:
    return lint_source(textwrap.dedent(source), "t.py")


def severities(source: str) -> list[tuple[int, str, str]]:
    return [(f.line, f.code, shape_severity(f)) for f in lint(source)]


# ── one race, one report ────────────────────────────────────────────────────

_QUERY = """
class Conn:
    async def _send(self, sql):
        while self._result.has_next:
            await self._next_result()
        self._write(sql)

    async def _read_result(self):
        result = Result(self)
        await result.read()
        self._result = result

    async def query(self, sql):
        await self._send(sql)
        await self._read_result()
        return self._rows
"""


def test_a_race_inside_one_callee_is_reported_there_not_again_at_its_callers() -> None:
    # aiomysql: the check-then-act of query() was reported again at ping(),
    # _connect() (twice) and ping()'s reconnect: the same race, four more times
    source = (
        _QUERY
        + """
    async def reconnect(self):
        await self._open()
        await self.query("SET x")

    async def ping(self):
        if self._writer is None:
            await self.reconnect()
"""
    )
    assert severities(source) == [(14, "RC102", "error")]


def test_the_lowest_function_holding_check_and_act_still_reports_it() -> None:
    assert severities(_QUERY) == [(14, "RC102", "error")]


# ── lifecycle drivers: warnings, next to the operations that stay errors ────

_AWAITED = """
class Server:
    def __await__(self):
        return self.run().__await__()

    async def run(self):
        ssl = self.writer.get_extra_info("ssl_object") is not None
        self.protocol = Protocol(self.reader, ssl)
        await self.protocol.initiate()
        await self.protocol.handle(None)
"""


def test_a_method_started_only_by_awaiting_the_object_is_a_lifecycle_warning() -> None:
    # hypercorn's TCPServer (asyncio and trio), aiosqlite's Connection._connect
    [finding] = lint(_AWAITED)
    assert (finding.code, shape_severity(finding)) == ("RC101", "warning")
    assert "run()" in finding.message and "__await__" in finding.message


def test_the_same_method_also_called_as_an_operation_stays_an_error() -> None:
    source = (
        _AWAITED
        + """
    async def restart(self):
        await self.run()
"""
    )
    # not a driver; an RC101 is an error only when the module runs the method
    # concurrently (fourth held-out round), so this one is a plain warning
    [finding] = lint(source)
    assert (finding.code, shape_severity(finding)) == ("RC101", "warning")
    assert "drives the object's life" not in finding.message
    fanned = source + "\n\nasync def restart_all(servers):\n"
    fanned += "    await asyncio.gather(*(s.restart() for s in servers))\n"
    assert [(f.code, shape_severity(f)) for f in lint(fanned)] == [("RC101", "error")]


def test_a_service_started_with_task_status_is_a_lifecycle_warning() -> None:
    # hypercorn's trio UDPServer.run(task_status=...): nursery.start() runs it once
    source = """
    class UDPServer:
        async def run(self, task_status=trio.TASK_STATUS_IGNORED):
            task_status.started()
            server = self.socket.getsockname()
            self.protocol = QuicProtocol(self.config, server)
            data = await self.socket.recvfrom(65535)
            await self.protocol.handle(data)
    """
    assert [(f.code, shape_severity(f)) for f in lint(source)] == [("RC101", "warning")]


_SERVE_LOOP = """
class Dispatcher:
    async def {name}(self, receive):
        self.queues = {{path: asyncio.Queue() for path in self.mounts}}
        async with TaskGroup() as group:
            for path in self.mounts:
                group.spawn(self.apps[path], self.queues[path].get)
            while True:
                message = await receive()
                for queue in self.queues.values():
                    await queue.put(message)
                if message["type"] == "lifespan.shutdown":
                    break
{extra}"""


def test_set_up_then_serve_until_shutdown_is_a_lifecycle_warning() -> None:
    # hypercorn's lifespan dispatchers and UDP servers: wire a component, then
    # serve with it until the object shuts down
    source = _SERVE_LOOP.format(name="_handle_lifespan", extra="")
    assert [(f.code, shape_severity(f)) for f in lint(source)] == [("RC101", "warning")]


def test_a_serving_loop_started_as_a_pool_of_workers_stays_an_error() -> None:
    # several copies of one loop run at once: the crawler-worker shape
    extra = """
    async def start(self, receive):
        for _ in range(4):
            asyncio.create_task(self.work(receive))
"""
    source = _SERVE_LOOP.format(name="work", extra=extra)
    assert [(f.code, shape_severity(f)) for f in lint(source)] == [("RC101", "error")]


_MAIN = """
class Server:
    def run(self):
        return asyncio.run(self.serve())

    async def serve(self):
        await self._serve()

    async def _serve(self):
        config = self.config
        self.lifespan = Lifespan(config)
        await self.startup()
{extra}
    async def startup(self):
        await self.lifespan.startup()
        self.lifespan.check()
"""


def test_the_main_coroutine_of_an_event_loop_and_its_private_helpers_are_lifecycle() -> None:
    # uvicorn's Server.run() -> asyncio.run(serve()) -> _serve()
    findings = lint(_MAIN.format(extra=""))
    assert [(f.code, shape_severity(f)) for f in findings] == [("RC101", "warning")]
    assert "_serve()" in findings[0].message


def test_a_private_helper_also_reached_from_an_operation_stays_an_error() -> None:
    extra = """
    async def reload(self):
        await self._serve()
"""
    [finding] = lint(_MAIN.format(extra=extra))
    assert (finding.code, shape_severity(finding)) == ("RC101", "warning")
    assert "drives the object's life" not in finding.message  # an operation, not a driver


def test_a_helper_only_the_driver_task_calls_is_lifecycle() -> None:
    # hypercorn's H2Protocol._send_data: only its single sender task calls it
    source = """
    class H2:
        async def initiate(self):
            self.task_group.spawn(self.send_task)

        async def send_task(self):
            while not self.closed:
                stream_id = next(self.priority)
                await self._send_data(stream_id)

        async def _send_data(self, stream_id):
            data = await self.buffers[stream_id].pop()
            if self.buffers[stream_id].complete:
                await self._flush()
                self.buffers.pop(stream_id)
    """
    assert [(f.code, shape_severity(f)) for f in lint(source)] == [("RC102", "warning")]


def test_canonical_operations_stay_errors() -> None:
    source = """
    class Pool:
        async def acquire(self):
            if self.opened < self.max_size:
                conn = await self._connect()
                self.opened += 1
                return conn

    class Runtime:
        async def step(self, branch):
            self._current = branch.agent
            result = await self.model(branch)
            return self._current, result

    async def run_branches(runtime, branches):  # marsys runs one step per branch at once
        await asyncio.gather(*(runtime.step(branch) for branch in branches))
    """
    assert [(f.code, shape_severity(f)) for f in lint(source)] == [
        ("RC102", "error"),
        ("RC101", "error"),
    ]


# ── a lock taken with acquire() (aiosmtplib's connect lock) ─────────────────
# (the method is `send_hello`, not aiosmtplib's `connect`: a `connect()` that returns
# nothing and that nothing in the class calls is a start-up step, a warning since the
# fourth held-out round; these tests are about the lock.)

_ACQUIRED = """
class SMTP:
    async def send_hello(self, hostname):
        await self._connect_lock.acquire()
        try:
            if self.local_hostname is None:
                self.local_hostname = await self._default_hostname()
            await self._maybe_start_tls(hostname)
        except Exception:
            self.close()  # releases the lock
            raise
{release}
    async def _maybe_start_tls(self, hostname):
        if self._start_tls is None:
            await self._upgrade_transport()
            self._start_tls = hostname
{extra}"""


def test_a_lock_taken_with_acquire_guards_what_follows() -> None:
    # the lock is released in close(), not in this method: held to its end
    assert lint(_ACQUIRED.format(release="", extra="")) == []


def test_what_follows_release_is_unguarded_again() -> None:
    release = """        self._connect_lock.release()
        if self.greeting is None:
            self.greeting = await self._read_greeting()
"""
    found = [(f.code, shape_severity(f)) for f in lint(_ACQUIRED.format(release=release, extra=""))]
    assert found == [("RC102", "error")]


def test_a_helper_also_called_without_the_lock_stays_an_error() -> None:
    extra = """
    async def starttls(self, hostname):
        await self._maybe_start_tls(hostname)
"""
    found = [(f.code, shape_severity(f)) for f in lint(_ACQUIRED.format(release="", extra=extra))]
    assert found == [("RC102", "error")]
