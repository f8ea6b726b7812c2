"""Eighteenth held-out round (lint19): its four errors, pinned as the frozen rules give them.

The round (docs/lint.md, "Eighteenth held-out round") was linted with the
rules frozen after lint19's severity-by-evidence changes (118b873). Each of
its four errors is reproduced here in the shape that made it, with the
round's verdict; nothing was fitted to them, so each test pins today's
severity, the false ones included, to show when a later change moves them.

* cognee's release test, FP: ``gather(*(user.register_and_login() for user
  in users))`` runs the method once on each user, an object of its own; the
  collection is a local list, which ``test_lint_heldout4``'s fan-out test
  keeps as evidence (only a collection of the object's own is left out).
* pydoll's ``Frame._world()``, TP (double work): a lazily created isolated
  world, reached from ``_resolve_frame()`` tasks the page starts per new frame
  with ``ensure_future``; two frames resolving at once each create a world.
* appdaemon's MQTT plugin, FP: ``self.mqtt_connect_event.clear()`` in a
  method run with ``run_in_executor`` while the loop awaits that very call,
  so nothing on the loop waits on the event meanwhile. (The real cross-thread
  ``set()``, in paho's ``on_connect`` callback, is not seen.)
* zendriver's ``Connection.aopen()``, TP (leak): every ``send()`` awaits
  ``aopen()``, whose ``if self.websocket is None`` connects; ``feed_cdp``
  starts ``send()`` with ``ensure_future``, so two first sends open two
  websockets and the first is never closed.
"""

from __future__ import annotations

from pathlib import Path

from test_lint_heldout16 import findings

_USERS = """
import asyncio


class User:
    def __init__(self, client, email):
        self.client = client
        self.email = email

    async def register_and_login(self):
        response = await self.client.post("/login", data={"username": self.email})
        self.client.headers["Authorization"] = response.json()["token"]


async def run_release_test(users):
    await asyncio.gather(*(user.register_and_login() for user in users))
"""

_FRAME = """
import asyncio

from cdp.page import create_isolated_world


class Frame:
    def __init__(self, page):
        self._page = page
        self._world_id = None

    async def _world(self):
        if self._world_id is None:
            response = await self._page.send(create_isolated_world(self))
            self._world_id = response["id"]
        return self._world_id

    async def element(self, object_id):
        world = await self._world()
        return await self._page.send("resolveNode", object_id, world)


class Page:
    def __init__(self):
        self._main_frame = Frame(self)

    def _frame_for_id(self, frame_id):
        asyncio.ensure_future(self._resolve_frame(frame_id))

    async def _resolve_frame(self, frame_id):
        return await self._main_frame.element(frame_id)

    async def send(self, *command):
        return {"id": 1}
"""

_PLUGIN = """
import asyncio


class MqttPlugin:
    def __init__(self, client):
        self.client = client
        self.connect_event = None

    async def get_updates(self):
        self.connect_event = asyncio.Event()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.start_service)
        await asyncio.wait_for(self.connect_event.wait(), 5.0)

    def start_service(self):
        self.connect_event.clear()
        self.client.connect_async()
        self.client.loop_start()
"""

_CONNECTION = """
import asyncio

import websockets


class Connection:
    def __init__(self, url):
        self.url = url
        self.websocket = None

    async def aopen(self):
        if self.websocket is None:
            self.websocket = await websockets.connect(self.url)

    async def send(self, message):
        await self.aopen()
        await self.websocket.send(message)

    def feed(self, message):
        asyncio.ensure_future(self.send(message))
"""


def test_cognee_a_fan_out_over_a_local_list_of_users_stays_an_error(tmp_path: Path) -> None:
    # FP on the round: each user is an object of its own
    ((line, severity, message),) = findings(tmp_path, {"users": _USERS}, "RC103")
    assert (line, severity) == (12, "error"), message
    assert "register_and_login() is fanned out in this module" in message


def test_pydoll_a_lazy_world_reached_from_a_spawned_resolver_is_an_error(tmp_path: Path) -> None:
    # TP on the round: two frames resolving at once create two isolated worlds
    ((line, severity, message),) = findings(tmp_path, {"frame": _FRAME}, "RC102")
    assert (line, severity) == (13, "error"), message
    assert "_world() runs concurrently (through element(), through _resolve_frame()" in message


def test_appdaemon_an_event_cleared_in_an_executor_job_is_an_error(tmp_path: Path) -> None:
    # FP on the round: the loop awaits this very job, nothing waits on the event
    ((line, severity, message),) = findings(tmp_path, {"plugin": _PLUGIN}, "RC106")
    assert (line, severity) == (17, "error"), message
    assert "connect_event.clear()" in message


def test_zendriver_a_lazy_connect_every_spawned_send_awaits_is_an_error(tmp_path: Path) -> None:
    # TP on the round: two first sends open two websockets, one never closed
    ((line, severity, message),) = findings(tmp_path, {"connection": _CONNECTION}, "RC102")
    assert (line, severity) == (13, "error"), message
    assert "aopen() runs concurrently (through send()" in message
