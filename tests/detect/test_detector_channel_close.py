"""A trio receiver that finds its channel closed waited for the closer (trio-websocket 0.10.2).

trio-websocket's reader task sets the connection's close reason, then closes the
message channel; ``get_message()`` turns the ``EndOfChannel`` it gets into
``ConnectionClosed(self._close_reason)``. A receiver parked in ``receive()`` is
woken by the close, and that wake-up carried the closer's clock. One that had a
message to take and came back for the next found the channel closed without
parking: nothing carried the clock, and its read of the close reason (which the
connection's ``__init__``, run by that same task, had set to ``None``) was
reported as "overwritten before read". The close now leaves its step's clock on
the channel for a send or receive that will fail on it.

The partner sets the reason after closing: the receiver may read it before the
store or after, and that stays reported.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

import racecheck


class Connection:
    def __init__(self, send: Any, receive: Any) -> None:
        self.close_reason: Any = None
        self.send_channel = send
        self.receive_channel = receive


def _serve(reason_after_close: bool) -> Any:
    async def target() -> None:
        seen: list[Any] = []

        async def reader(conn: Connection) -> None:
            await conn.send_channel.send("hello")
            if not reason_after_close:
                conn.close_reason = "going away"
            await conn.send_channel.aclose()
            if reason_after_close:
                conn.close_reason = "going away"

        async def serve(nursery: trio.Nursery) -> None:
            conn = Connection(*trio.open_memory_channel(1))
            nursery.start_soon(reader, conn)
            try:
                while True:
                    await conn.receive_channel.receive()
            except trio.EndOfChannel:
                seen.append(conn.close_reason)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve, nursery)

    return target


def test_a_reason_set_before_the_channel_closes_is_seen_by_its_receiver() -> None:
    report = racecheck.check(_serve(False), backend="trio", detect=True, schedules=100)
    assert report.schedules_run == 100 or report.exhausted


def test_a_reason_set_after_the_channel_closes_is_still_reported() -> None:
    with pytest.raises(racecheck.RaceFound) as info:
        racecheck.check(_serve(True), backend="trio", detect=True, schedules=100)
    finding: Any = info.value.cause.finding  # type: ignore[union-attr]
    assert finding.pattern == "overwritten before read", finding
    assert "conn.close_reason" in finding.message(), finding
