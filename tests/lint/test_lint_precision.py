"""False-positive shapes from the precision study (docs/lint.md): each one a
negative written before its fix, next to a positive that must keep firing."""

from __future__ import annotations

import textwrap

import pytest

from racecheck.lint import lint_source


def codes(source: str) -> list[str]:
    return [f.code for f in lint_source(textwrap.dedent(source), "t.py")]


NEGATIVE = [
    (
        # asyncpg's test fuzzer, redis-py's background scheduler: the thread makes
        # (or installs) the loop it then drives; nothing crosses a thread
        "rc106-thread-runs-its-own-loop",
        """
        import asyncio, threading

        class Proxy:
            def start(self):
                self.thread = threading.Thread(target=self._start_thread)
                self.thread.start()

            def _start_thread(self):
                self.loop = asyncio.new_event_loop()
                asyncio.set_event_loop(self.loop)
                self.connectivity = asyncio.Event()
                self.connectivity.set()
                self.loop.run_until_complete(self._main())

            async def _main(self):
                await self.connectivity.wait()
        """,
    ),
    (
        "rc106-thread-installs-a-given-loop",
        """
        import asyncio, threading

        def _run(event_loop, callback):
            asyncio.set_event_loop(event_loop)
            event_loop.call_soon(callback)
            try:
                event_loop.run_forever()
            finally:
                event_loop.run_until_complete(event_loop.shutdown_asyncgens())

        def start(callback):
            loop = asyncio.new_event_loop()
            threading.Thread(target=_run, args=(loop, callback), daemon=True).start()
        """,
    ),
    (
        # anyio's Lock/Semaphore fast path: checkpoint_if_cancelled either returns
        # at once or raises; it never resumes after another task ran
        "rc102-checkpoint-if-cancelled-does-not-suspend",
        """
        class Lock:
            async def acquire(self):
                task = current_task()
                if self._owner_task is None and not self._waiters:
                    await AsyncIOBackend.checkpoint_if_cancelled()
                    self._owner_task = task
                    return
        """,
    ),
    (
        # aiorwlock: a membership test keyed by the current task is the task's own
        "rc102-key-of-the-current-task",
        """
        import asyncio

        class RWLock:
            async def acquire_read(self):
                me = asyncio.current_task()
                if (me, "r") in self._owning:
                    self._owning.append((me, "r"))
                    return True
                fut = asyncio.get_running_loop().create_future()
                self._read_waiters.append(fut)
                await fut
                self._owning.append((me, "r"))
                return True
        """,
    ),
    (
        # redis-py's cluster pubsub: pop(key, None) does not rely on the key
        "rc102-pop-with-a-default",
        """
        class PubSub:
            async def move(self, old_name, channel):
                if old_name in self.mapping:
                    old = self.mapping[old_name]
                    await old.unsubscribe(channel)
                    self.mapping.pop(old_name, None)
        """,
    ),
    (
        # anyio's memory stream: the act is re-checked (a walrus) after the await,
        # and its key is an object this call made
        "rc102-walrus-recheck-after-the-await",
        """
        class Sender:
            async def send(self, item):
                if self._state.waiting_receivers:
                    return self._state.hand(item)
                send_event = Event()
                self._state.waiting_senders[send_event] = item
                try:
                    await send_event.wait()
                finally:
                    if pending := send_event in self._state.waiting_senders:
                        del self._state.waiting_senders[send_event]
        """,
    ),
    (
        # trio's own tests: a closure dict of a coroutine that is started once
        "rc101-closure-dict-of-a-coroutine-started-once",
        """
        async def test_parents():
            nurseries = {}

            async def parent():
                async with open_nursery() as nursery:
                    nurseries["parent"] = nursery
                    await nursery.start(child)
                assert nurseries["parent"].parent_task is not None

            async with open_nursery() as nursery:
                nursery.start_soon(parent)
        """,
    ),
    (
        # trio's memory stream: a ConflictDetector makes concurrent callers fail loudly
        "rc101-under-a-conflict-detector",
        """
        class Stream:
            async def send_all(self, data):
                with self._send_conflict_detector:
                    self._data += data
                    await self._wait_for(lambda: self._data == b"")
                    if self._data and self._receiver_closed:
                        raise BrokenResourceError
        """,
    ),
    (
        # redis-py's command parser: the act rebinds the whole table from fresh data
        "rc102-membership-then-rebind-the-container",
        """
        class Commands:
            async def initialize(self):
                commands = await self.node.execute_command("COMMAND")
                self.commands = {c.lower(): v for c, v in commands.items()}

            async def get_keys(self, name):
                if name not in self.commands:
                    await self.initialize()
                return self.commands.get(name)
        """,
    ),
    (
        # aiohttp's multipart reader: the check kept in a local
        "rc101-write-guarded-through-a-local",
        """
        class Reader:
            async def read_chunk(self, size):
                first_chunk = self._prev_chunk is None
                if first_chunk:
                    self._prev_chunk = b"\\r\\n" + await self._content.read(size)
                chunk = await self._content.read(size)
                window = self._prev_chunk + chunk
                self._prev_chunk = chunk
                return window
        """,
    ),
    (
        # aiohttp's websocket close(): `if self._closed: return` and the flag set
        # (in a helper) before the first await: the rest runs once per object
        "rc102-after-a-close-once-guard",
        """
        class WebSocket:
            def _set_closed(self):
                self._closed = True

            async def close(self, code):
                if self._closed:
                    return False
                self._set_closed()
                await self._writer.close(code)
                if self._close_code:
                    return True
                msg = await self._reader.read()
                self._close_code = msg.data
                return True
        """,
    ),
    (
        # httpcore's HTTP/2 settings change: a helper only ever awaited under the
        # caller's read lock
        "rc102-helper-always-called-under-a-lock",
        """
        class Connection:
            async def _receive_events(self):
                async with self._read_lock:
                    event = await self._read()
                    await self._settings_changed(event)

            async def _settings_changed(self, event):
                new = event.value
                if new and new != self._max_streams:
                    while new > self._max_streams:
                        await self._semaphore.release()
                        self._max_streams += 1
                    while new < self._max_streams:
                        await self._semaphore.acquire()
                        self._max_streams -= 1
        """,
    ),
    (
        # redis-py's pool: the helper's parameter holds what the caller passed;
        # reading it after an await is not reading the attribute again
        "rc101-parameter-is-not-the-attribute-again",
        """
        class Pool:
            async def update(self, handler):
                if handler:
                    self._handler = handler
                await self._update_connections(self._handler)

            async def _update_connections(self, handler):
                async with self._get_pool_lock():
                    for conn in list(self._free):
                        if handler:
                            conn.set_handler(handler)
        """,
    ),
    (
        # aiohttp's StreamResponse: prepare() returns early once _payload_writer is
        # set, and _start(), its only caller's helper, sets it before its first await
        "rc101-helper-behind-its-callers-once-guard",
        """
        class StreamResponse:
            async def prepare(self, request):
                if self._eof_sent:
                    return None
                if self._payload_writer is not None:
                    return self._payload_writer
                return await self._start(request)

            async def _start(self, request):
                self._req = request
                writer = self._payload_writer = request._payload_writer
                await self._prepare_headers()
                await self._write_headers()
                return writer

            async def _write_headers(self):
                request = self._req
                writer = self._payload_writer
                await writer.write_headers(request.version)
        """,
    ),
    (
        # redis-py's event dispatcher: writers hold a threading lock; the async side
        # only reads a snapshot under its asyncio lock
        "rc106-async-side-only-reads-what-locked-threads-write",
        """
        import asyncio, threading

        class Dispatcher:
            def __init__(self):
                self._mapping = {}
                self._lock = threading.RLock()
                self._async_lock = None

            def dispatch(self, event):
                with self._lock:
                    listeners = list(self._mapping.get(type(event), []))
                for listener in listeners:
                    listener(event)

            async def dispatch_async(self, event):
                if self._async_lock is None:
                    self._async_lock = asyncio.Lock()
                async with self._async_lock:
                    listeners = list(self._mapping.get(type(event), []))
                for listener in listeners:
                    await listener(event)

            def register(self, kind, listeners):
                with self._lock:
                    self._mapping[kind] = list(self._mapping.get(kind, [])) + listeners
        """,
    ),
]


@pytest.mark.parametrize(("name", "source"), NEGATIVE, ids=[n for n, _ in NEGATIVE])
def test_study_false_positive_shapes_are_quiet(name: str, source: str) -> None:
    found = codes(source)
    if name == "rc101-write-guarded-through-a-local":
        # lazy initialisation, not scratch space; filling it across an await is
        # RC102's canonical shape, which it stays
        assert "RC101" not in found and found == ["RC102"], found
    else:
        assert found == [], name


POSITIVE = [
    (
        "rc106-async-side-mutates-what-threads-touch",
        "RC106",
        """
        import asyncio, threading

        class Dispatcher:
            def __init__(self):
                self._mapping = {}
                self._lock = threading.RLock()
                self._async_lock = asyncio.Lock()

            def dispatch(self, event):
                with self._lock:
                    listeners = list(self._mapping.get(type(event), []))
                for listener in listeners:
                    listener(event)

            async def register_async(self, kind, listener):
                async with self._async_lock:
                    self._mapping.setdefault(kind, []).append(listener)
        """,
    ),
    (
        "rc101-helper-also-called-without-the-guard",
        "RC101",
        """
        class StreamResponse:
            async def prepare(self, request):
                if self._payload_writer is not None:
                    return self._payload_writer
                return await self._start(request)

            async def restart(self, request):
                return await self._start(request)

            async def _start(self, request):
                self._req = request
                writer = self._payload_writer = request._payload_writer
                await self._prepare_headers()
                await self._write_headers()
                return writer

            async def _write_headers(self):
                request = self._req
                await request.send()
        """,
    ),
    (
        # aiohttp's request.post(): the flag is set only on an early-return path;
        # the main path still fills it across an await
        "rc102-once-write-on-another-path",
        "RC102",
        """
        class Request:
            async def post(self):
                if self._post is not None:
                    return self._post
                if self._method not in self.POST_METHODS:
                    self._post = {}
                    return self._post
                out = await self._read_form()
                self._post = dict(out)
                return self._post
        """,
    ),
    (
        "rc102-helper-called-once-without-the-lock",
        "RC102",
        """
        class Connection:
            async def _receive_events(self):
                async with self._read_lock:
                    event = await self._read()
                    await self._settings_changed(event)

            async def apply(self, event):
                await self._settings_changed(event)

            async def _settings_changed(self, event):
                new = event.value
                if new and new != self._max_streams:
                    while new > self._max_streams:
                        await self._semaphore.release()
                        self._max_streams += 1
                    while new < self._max_streams:
                        await self._semaphore.acquire()
                        self._max_streams -= 1
        """,
    ),
    (
        "rc102-close-flag-set-only-after-an-await",
        "RC102",
        """
        class WebSocket:
            async def close(self, code):
                if self._closed:
                    return False
                await self._writer.close(code)
                self._closed = True
                if self._close_code:
                    return True
                msg = await self._reader.read()
                self._close_code = msg.data
                return True
        """,
    ),
    (
        "rc106-thread-touches-the-main-loop",
        "RC106",
        """
        import asyncio, threading

        class Bridge:
            def __init__(self, loop):
                self.loop = loop
                self.ready = asyncio.Event()

            def start(self):
                threading.Thread(target=self._work).start()

            def _work(self):
                self.loop.call_soon(print)
        """,
    ),
    (
        "rc101-closure-dict-of-coroutines-started-in-a-loop",
        "RC101",
        """
        async def run_all(steps):
            ctx = {}

            async def run_step(step):
                ctx["findings"] = step.inputs
                await step.agent.run(ctx)
                return ctx["findings"]

            async with open_nursery() as nursery:
                for step in steps:
                    nursery.start_soon(run_step, step)
        """,
    ),
    (
        "rc102-membership-keyed-by-a-parameter",
        "RC102",
        """
        class Owners:
            async def add(self, key):
                if key not in self._owning:
                    await self.fetch(key)
                    self._owning.append(key)
        """,
    ),
    (
        "rc102-pop-without-a-default",
        "RC102",
        """
        class PubSub:
            async def move(self, old_name, channel):
                if old_name in self.mapping:
                    await self.unsubscribe(channel)
                    self.mapping.pop(old_name)
        """,
    ),
    (
        "rc102-a-real-checkpoint-suspends",
        "RC102",
        """
        class Lock:
            async def acquire(self):
                task = current_task()
                if self._owner_task is None:
                    await checkpoint()
                    self._owner_task = task
        """,
    ),
    (
        "rc102-membership-then-insert-the-key",
        "RC102",
        """
        class Commands:
            async def get_keys(self, name):
                if name not in self.commands:
                    self.commands[name] = await self.node.execute_command("COMMAND", name)
                return self.commands[name]
        """,
    ),
]


@pytest.mark.parametrize(("name", "code", "source"), POSITIVE, ids=[n for n, _, _ in POSITIVE])
def test_the_canonical_shapes_next_to_them_still_fire(name: str, code: str, source: str) -> None:
    assert code in codes(source), name


def test_a_condition_local_built_from_itself_is_linted() -> None:
    # aiohttp's request parser: `found = found or ...` must not send the
    # condition-through-a-local lookup round in circles
    source = """
    class Parser:
        async def feed(self):
            found = self._buffer is None
            found = found or self._eof
            if found:
                self._buffer = await self._read()
            return self._buffer
    """
    assert codes(source) == ["RC102"]


def test_the_stale_hand_off_models_are_rc102_only_when_buggy() -> None:
    from pathlib import Path

    from racecheck.lint import lint_paths

    models = Path(__file__).parent.parent / "detect" / "handoff_models.py"
    lines = models.read_text().splitlines()
    found = [f for f in lint_paths([str(models)]) if f.code == "RC102"]
    assert len(found) == 2, found
    for finding in found:
        # the enclosing class of each finding is a buggy one
        owner = next(line for line in reversed(lines[: finding.line]) if line.startswith("class "))
        assert owner in ("class FifoLock:", "class RWLock:"), (owner, finding)
