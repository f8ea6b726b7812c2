"""trio-websocket 0.10.1: a message sent while our side closes leaks a wsproto error.

``aclose()`` sends the close frame and waits for the peer's; the connection's
close reason was only set when that handshake finished. A task that calls
``send_message()`` in between finds ``closed`` still ``None``, hands its message
to wsproto, which is in ``LOCAL_CLOSING`` by then, and gets wsproto's
``LocalProtocolError`` instead of trio-websocket's ``ConnectionClosed``
(upstream python-trio/trio-websocket issue 158, fixed in 0.10.2, which sets the
close reason before it sends the close frame).

The user test talks to its own server over a trio memory stream pair: no
network, trio's own tasks (each side's reader runs in the nursery).
"""

from __future__ import annotations

import pytest
from realcode_support import FailsItsUserTest

pytest.importorskip("trio_websocket")

USER_TEST = """
import pytest
import trio
import trio.testing
from trio_websocket import ConnectionClosed, wrap_client_stream, wrap_server_stream


@pytest.mark.racecheck(backend="trio")
async def test_a_message_sent_while_the_connection_closes_is_refused():
    client_stream, server_stream = trio.testing.memory_stream_pair()
    outcome = []
    async with trio.open_nursery() as nursery:

        async def serve():
            request = await wrap_server_stream(nursery, server_stream)
            server = await request.accept()
            try:
                while True:
                    await server.get_message()
            except ConnectionClosed:
                pass

        nursery.start_soon(serve)
        client = await wrap_client_stream(nursery, client_stream, "localhost", "/")

        async def say_goodbye():
            try:
                await client.send_message("goodbye")
                outcome.append("sent")
            except ConnectionClosed:
                outcome.append("refused")

        async with trio.open_nursery() as both:
            both.start_soon(say_goodbye)
            both.start_soon(client.aclose)
    assert outcome in (["sent"], ["refused"])
"""


class TestTrioWebsocket(FailsItsUserTest):
    library = "trio-websocket"
    module = "trio_websocket"
    user_test = USER_TEST
    symptom = "cannot be sent in state ConnectionState.LOCAL_CLOSING"
