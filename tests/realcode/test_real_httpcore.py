"""httpcore 1.0.2 on trio: a request cancelled as its response is closed keeps its connection.

``pool.request()`` reads the body and closes the response; closing it tells the
HTTP/1.1 connection the exchange is over (``_response_closed``), under the
connection's state lock. On trio a lock's ``acquire`` is a cancellation point, so
a cancel that arrives while the body's last read is finishing is raised there:
the connection stays ``ACTIVE``, the pool keeps it, and with ``max_connections=1``
every later request waits for a connection that never comes (``PoolTimeout``,
the "pool timeouts after cancellations" reports against httpx). Upstream
encode/httpcore PR 880, "Fix support for async cancellations", released in 1.0.3,
shields the close and rewrote the pool's bookkeeping.

The user test runs the pool over httpcore's own mock network backend, read the
way trio reads a socket that has data waiting (a cancellation check, the read,
a schedule point that cannot be cancelled), and cancels one request from another
task, as a timeout or a user's abort would, at whatever moment it lands.
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest

pytest.importorskip("httpcore")
pytest.importorskip("trio")

USER_TEST = """
import httpcore
import pytest
import trio

RESPONSE = [b"HTTP/1.1 200 OK\\r\\n", b"Content-Length: 2\\r\\n", b"\\r\\n", b"ok"]


class SocketLikeStream(httpcore.AsyncMockStream):
    async def read(self, max_bytes, timeout=None):
        await trio.lowlevel.checkpoint_if_cancelled()
        data = await super().read(max_bytes, timeout)
        await trio.lowlevel.cancel_shielded_checkpoint()
        return data


class SocketLikeBackend(httpcore.AsyncMockBackend):
    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return SocketLikeStream(list(self._buffer))


@pytest.mark.racecheck(backend="trio")
async def test_a_cancelled_request_gives_its_connection_back():
    backend = SocketLikeBackend(RESPONSE * 3)
    async with httpcore.AsyncConnectionPool(max_connections=1, network_backend=backend) as pool:
        connected = trio.Event()
        impatient = trio.CancelScope()

        async def fetch():
            async with pool.stream("GET", "http://example.com/first") as response:
                connected.set()
                await response.aread()

        async def fetch_impatiently():
            await connected.wait()
            with impatient:
                await pool.request("GET", "http://example.com/impatient")

        async def give_up():
            await connected.wait()
            await trio.sleep(0)
            impatient.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fetch)
            nursery.start_soon(fetch_impatiently)
            nursery.start_soon(give_up)
        response = await pool.request(
            "GET", "http://example.com/last", extensions={"timeout": {"pool": 5}}
        )
        assert response.status == 200
"""


class TestHttpcore(FailsItsUserTest):
    library = "httpcore"
    module = "httpcore"
    user_test = USER_TEST
    symptom = "PoolTimeout"
