"""RC102 on a lazy fill is an error only on strong evidence (issue 14, lintprec3).

A check of an empty slot (``is None``, ``not self.x``, ``key not in``), an
await, and a store of the computed value: when two tasks race there, both do
the work and the later store wins. Whether that is a bug depends on what was
made. A connection, a subscription, a listener, a task or an open response
made twice leaks the one that is overwritten; a stream read twice loses what
the first reader took. A looked-up or computed value (a node found by name,
a host name, a version string) is stored twice and is the same value: double
work, reported as a warning. The canonical numeric check-then-act (a limit
and its counter, tokens) never was a fill, and stays an error.

Each fill that becomes a warning sits next to the partner that stays an error.
"""

from __future__ import annotations

import textwrap

from racecheck.lint import lint_source
from racecheck.lint.severity import shape_severity


def severities(source: str) -> list[tuple[int, str, str]]:
    return [
        (f.line, f.code, shape_severity(f)) for f in lint_source(textwrap.dedent(source), "t.py")
    ]


def rc102(source: str) -> list[tuple[int, str]]:
    return [(line, sev) for line, code, sev in severities(source) if code == "RC102"]


# ── a looked-up value cached lazily: double work, a warning ─────────────────
# (asyncua's `get_child("Read")`, aiosmtplib's local host name, slixmpp's disco)

_LOOKUP = """
class FileTransfer:
    async def read(self, size):
        if self._read_node is None:
            self._read_node = await self._file_node.get_child("Read")
        return await self._read_node.call(size)
"""


def test_a_looked_up_node_cached_lazily_is_a_warning() -> None:
    assert rc102(_LOOKUP) == [(4, "warning")]


def test_the_warning_says_why() -> None:
    [finding] = [f for f in lint_source(textwrap.dedent(_LOOKUP), "t.py") if f.code == "RC102"]
    assert "stores the same value twice" in finding.message


def test_a_value_computed_in_a_thread_and_cached_is_a_warning() -> None:
    source = """
    class SMTP:
        async def ehlo(self):
            if self.local_hostname is None:
                self.local_hostname = await self._get_default_local_hostname()
            return await self.execute_command(b"EHLO", self.local_hostname)
    """
    assert rc102(source) == [(4, "warning")]


def test_a_lookup_cached_under_a_key_is_a_warning() -> None:
    source = """
    class Disco:
        async def info(self, jid):
            if jid not in self._cache:
                result = await self._query_info(jid)
                self._cache[jid] = result
            return self._cache[jid]
    """
    assert rc102(source) == [(4, "warning")]


# ── partners: what is made twice leaks, or a stream is read twice ───────────


def test_a_connection_filled_lazily_stays_an_error() -> None:
    source = """
    class PubSub:
        async def execute(self, *args):
            if self.connection is None:
                self.connection = await self.pool.get_connection("pubsub")
            await self.connection.send(*args)
    """
    assert rc102(source) == [(4, "error")]


def test_a_subscription_filled_lazily_stays_an_error() -> None:
    source = """
    class Subscriber:
        async def get_one(self, timeout):
            if self._fetch_sub is None:
                self._fetch_sub = await self.client.subscribe(self.subject)
            return await self._fetch_sub.next_msg(timeout)
    """
    assert rc102(source) == [(4, "error")]


def test_a_listener_built_by_a_constructor_stays_an_error() -> None:
    source = """
    class Conn:
        async def agent(self, path):
            if self._agent_listener:
                return
            tempdir = await self._make_dir()
            self._agent_listener = AgentListener(tempdir, path)
    """
    assert rc102(source) == [(4, "error")]


def test_a_stream_read_into_the_cache_stays_an_error() -> None:
    source = """
    class Response:
        async def read(self):
            if self._body is None:
                self._body = await self.content.read()
            return self._body
    """
    assert rc102(source) == [(4, "error")]


def test_a_stream_read_into_a_local_then_cached_stays_an_error() -> None:
    # the value stored is a local; what made it is read from a stream in between
    source = """
    class Request:
        async def body(self):
            if self._read_bytes is None:
                body = bytearray()
                while True:
                    chunk = await self._payload.readany()
                    if not chunk:
                        break
                    body.extend(chunk)
                self._read_bytes = bytes(body)
            return self._read_bytes
    """
    assert rc102(source) == [(4, "error")]


def test_a_protocol_stored_in_a_pool_of_sockets_stays_an_error() -> None:
    source = """
    class Transport:
        async def connect(self, addr):
            if addr in self._sockets:
                return self._sockets[addr]
            _, protocol = await self.loop.create_datagram_endpoint(Proto, addr)
            self._sockets[addr] = protocol
            return protocol
    """
    assert rc102(source) == [(4, "error")]


def test_a_task_started_into_the_slot_stays_an_error() -> None:
    source = """
    class Pump:
        async def ensure(self):
            if self._reader is None:
                await self._handshake()
                task = asyncio.create_task(self._pump())
                self._reader = task
    """
    assert rc102(source) == [(4, "error")]


# ── the canonical shapes of issue 14 stay errors ────────────────────────────


def test_the_numeric_check_then_act_stays_an_error() -> None:
    source = """
    class Pool:
        async def acquire(self):
            if self.opened < self.max_size:
                await self._connect()
                self.opened += 1
    """
    assert rc102(source) == [(4, "error")]


def test_tokens_stay_an_error() -> None:
    source = """
    class Bucket:
        async def take(self):
            if self.tokens > 0:
                await self._refill_clock()
                self.tokens -= 1
    """
    assert rc102(source) == [(4, "error")]


def test_a_deletion_after_a_membership_check_stays_an_error() -> None:
    # the second remover's `del` raises KeyError: not a fill, no change
    source = """
    class Browser:
        async def remove(self, listener):
            if listener in self.browsers:
                await self.browsers[listener].cancel()
                del self.browsers[listener]
    """
    assert rc102(source) == [(4, "error")]


def test_a_making_call_on_a_later_line_of_the_store_stays_an_error() -> None:
    source = """
    class Client:
        async def channel(self):
            if self._channel is None:
                self._cfg = await self._load_config()
                self._chan_cache = (
                    await self.conn.open_channel(self._cfg)
                )
            return self._chan_cache
    """
    # the check is of `_channel`, the store of another slot: no RC102 at all
    assert rc102(source) == []
    source = source.replace("self._channel is None", "self._chan_cache is None")
    assert rc102(source) == [(4, "error")]


def test_words_of_an_acronym_name_are_split_like_any_other() -> None:
    # `HTTPResponse(...)`: the `response` in it is strong evidence (an open response)
    source = """
    class Fetcher:
        async def get(self):
            if self._last is None:
                raw = await self._fetch_raw()
                self._last = HTTPResponse(raw)
            return self._last
    """
    assert rc102(source) == [(4, "error")]
