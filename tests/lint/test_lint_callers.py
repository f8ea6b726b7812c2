"""Callers resolved across the package (issue 14, fifth held-out round).

The one-module view takes every coroutine method for an operation that tasks
may run at once. On asyncua the false errors were methods the package itself
calls only from its start-up, reconnect or driver-task paths - in other modules
(``Subscription.restore`` from the client's ``_recreate_subscriptions``, a
dataset's ``on_state_change`` from a reader's one ``_timeout_task``, a
session's handshake step from ``connect``). Each such shape is written here as
a package on disk next to the partner that must stay an error: the same method
also called from an operation, handed on as a callback, or outside a package.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from racecheck.lint import lint_paths, lint_source
from racecheck.lint.severity import shape_severity

_SUB = """
class Subscription:
    async def restore(self):
        if self.sid is None:
            sid = await self._server.create(self.params)
            self.sid = sid
"""

_SESSION = """
class Session:
    async def activate(self, params):
        state = self._state
        self._state = "activating"
        try:
            await self._send(params)
        except Exception:
            self._state = state
            raise
"""

_DATASET = """
class Mirror:
    async def on_state_change(self, meta, state):
        if self._node is None:
            node = await self._parent.create_folder(meta.name)
            self._node = node
"""


def package(root: Path, files: dict[str, str], spawn: tuple[str, ...] = ()) -> Path:
    """The package on disk; ``spawn`` names methods a runner module fans out.

    Since the eleventh round an RC102/RC103 error needs evidence that the package
    runs the method in two tasks at once (``racecheck.lint.concurrency``): a
    partner that must stay an error has a caller the runner fans out, so what the
    test is about - the caller rule - is what decides.
    """
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in files.items():
        (pkg / name).write_text(textwrap.dedent(text))
    if spawn:
        (pkg / "runner.py").write_text(
            "import asyncio\n"
            + "".join(
                f"\n\nasync def run_{name}(objects):\n"
                f"    await asyncio.gather(*(o.{name}() for o in objects))\n"
                for name in spawn
            )
        )
    return pkg


def severities(pkg: Path, name: str) -> list[tuple[int, str, str]]:
    return [
        (f.line, f.code, shape_severity(f)) for f in lint_paths([pkg]) if Path(f.path).name == name
    ]


def not_excused(pkg: Path, name: str) -> list[tuple[int, str]]:
    """Findings no caller rule demoted: each reached the eleventh round's concurrency
    check as an error, and is a warning only because nothing in the package fans the
    method out (a callback, a string, no caller: nothing to follow to a task)."""
    found = [f for f in lint_paths([pkg]) if Path(f.path).name == name]
    assert all(
        shape_severity(f) == "warning" and "nothing in the package runs" in f.message for f in found
    ), [f.message for f in found]
    return [(f.line, f.code) for f in found]


# ── a reconnect routine ─────────────────────────────────────────────────────


def test_method_only_a_reconnect_routine_calls_is_a_warning(tmp_path: Path) -> None:
    pkg = package(
        tmp_path,
        {
            "sub.py": _SUB,
            "client.py": """
            class Client:
                async def reconnect(self):
                    await self._transport.open()
                    await self._recreate_subscriptions()

                async def _recreate_subscriptions(self):
                    for sub in self._subs:
                        await sub.restore()
            """,
        },
    )
    found = [f for f in lint_paths([pkg]) if f.code == "RC102"]
    assert [(f.line, shape_severity(f)) for f in found] == [(4, "warning")]
    assert "_recreate_subscriptions()" in found[0].message
    assert "client.py" in found[0].message


def test_method_an_operation_also_calls_stays_an_error(tmp_path: Path) -> None:
    pkg = package(
        tmp_path,
        {
            "sub.py": _SUB,
            "client.py": """
            class Client:
                async def _recreate_subscriptions(self):
                    for sub in self._subs:
                        await sub.restore()

                async def refresh(self, sub):
                    await sub.restore()
            """,
        },
        spawn=("refresh",),
    )
    assert severities(pkg, "sub.py") == [(4, "RC102", "error")]


def test_same_shape_outside_a_package_stays_an_error(tmp_path: Path) -> None:
    assert [(f.code, shape_severity(f)) for f in lint_source(textwrap.dedent(_SUB), "sub.py")] == [
        ("RC102", "error")
    ]
    (tmp_path / "sub.py").write_text(textwrap.dedent(_SUB))
    (tmp_path / "client.py").write_text("async def connect(s):\n    await s.restore()\n")
    # no __init__.py: a directory of scripts, not a package whose callers are all known
    assert [(f.code, shape_severity(f)) for f in lint_paths([tmp_path])] == [("RC102", "error")]


def test_private_connect_an_operation_calls_is_no_lifecycle_path(tmp_path: Path) -> None:
    # aiomysql: `ping()` reconnects through `_connect()`, so the handshake step
    # `_connect()` calls runs whenever two pings find the connection dropped
    pkg = package(
        tmp_path,
        {
            "sub.py": _SUB,
            "client.py": """
            class Client:
                async def ping(self):
                    if self._dropped:
                        await self._connect()

                async def _connect(self):
                    await self._sub.restore()
            """,
        },
        spawn=("ping",),
    )
    assert severities(pkg, "sub.py") == [(4, "RC102", "error")]


# ── a driver task's callback ────────────────────────────────────────────────

_READER = """
import asyncio

class Reader:
    async def start(self):
        self._task = asyncio.create_task(self._timeout_task())

    async def _timeout_task(self):
        await self._subscribed.on_state_change(self._cfg, "operational")
        while True:
            await asyncio.sleep(self._timeout)

    async def stop(self):
        self._task.cancel()
        await self._subscribed.on_state_change(self._cfg, "disabled")
"""


def test_callback_only_the_readers_kept_task_and_stop_call_is_a_warning(
    tmp_path: Path,
) -> None:
    pkg = package(tmp_path, {"dataset.py": _DATASET, "reader.py": _READER})
    assert severities(pkg, "dataset.py") == [(4, "RC102", "warning")]


def test_callback_a_message_handler_also_calls_stays_an_error(tmp_path: Path) -> None:
    handler = _READER + textwrap.indent(
        "\nasync def handle(self, msg):\n    await self._subscribed.on_state_change(msg, 'x')\n",
        "    ",
    )
    pkg = package(tmp_path, {"dataset.py": _DATASET, "reader.py": handler}, spawn=("handle",))
    assert severities(pkg, "dataset.py") == [(4, "RC102", "error")]


def test_a_sync_method_of_the_same_name_elsewhere_is_not_a_caller(tmp_path: Path) -> None:
    observer = """
    class Client:
        def _set_state(self, target):
            self._state = target
            self._notify(lambda: self.observer.on_state_change(target))
    """
    pkg = package(tmp_path, {"dataset.py": _DATASET, "reader.py": _READER, "obs.py": observer})
    assert severities(pkg, "dataset.py") == [(4, "RC102", "warning")]


# ── a handshake step, through a chain of callers ────────────────────────────


def test_handshake_step_reached_only_from_connect_is_a_warning(tmp_path: Path) -> None:
    client = """
    class Client:
        async def connect(self):
            await self._open_channel()
            await self._create_and_activate()

        async def _create_and_activate(self):
            await self.uaclient.activate(self._params)
    """
    pkg = package(tmp_path, {"session.py": _SESSION, "client.py": client})
    assert severities(pkg, "session.py") == [(9, "RC103", "warning")]


def test_handshake_step_handed_on_as_a_callback_stays_an_error(tmp_path: Path) -> None:
    client = """
    class Client:
        async def connect(self):
            await self.session.activate(self._params)

        def hooks(self):
            return [self.session.activate]
    """
    pkg = package(tmp_path, {"session.py": _SESSION, "client.py": client})
    assert not_excused(pkg, "session.py") == [(9, "RC103")]


def test_handshake_step_named_in_a_string_stays_an_error(tmp_path: Path) -> None:
    client = """
    class Client:
        async def connect(self):
            await self.session.activate(self._params)

        async def call(self, name):
            await getattr(self.session, "activate")(self._params)
    """
    pkg = package(tmp_path, {"session.py": _SESSION, "client.py": client})
    assert not_excused(pkg, "session.py") == [(9, "RC103")]


def test_method_nothing_in_the_package_calls_stays_an_error(tmp_path: Path) -> None:
    pkg = package(tmp_path, {"session.py": _SESSION, "client.py": "X = 1\n"})
    assert not_excused(pkg, "session.py") == [(9, "RC103")]


# ── a self-call in a class that cannot reach the method (eighth round) ──────
# faststream: the NATS subscribers' `_create_subscription()` runs only from the
# base class's `start()`; an MQTT subscriber, a sibling class, calls its own
# `_create_subscription()` from `__aiter__`. A `self.` call binds to the caller's
# class, its ancestors or its descendants - never to a sibling's method.

_NATS_SUB = """
from .base import Subscriber

class CoreSubscriber(Subscriber):
    async def _create_subscription(self):
        if self.subscription is None:
            self.subscription = await self.connection.subscribe(self.subject)


class ConcurrentCoreSubscriber(CoreSubscriber):
    async def _create_subscription(self):
        self.start_consume_task()
        await super()._create_subscription()
"""

_BASE = """
class Subscriber:
    async def start(self):
        await self._create_subscription()
"""


def _mqtt(base: str) -> str:
    return f"""
    from .base import Subscriber
    from .core import CoreSubscriber

    class MQTTSubscriber({base}):
        async def __aiter__(self):
            if self._subscription is None:
                await self._create_subscription()
            async for msg in self._subscription:
                yield msg

        async def _create_subscription(self):
            self._subscription = await self.client.subscribe(self.topic)
    """


def test_a_self_call_in_a_sibling_class_is_not_a_caller(tmp_path: Path) -> None:
    pkg = package(
        tmp_path, {"core.py": _NATS_SUB, "base.py": _BASE, "mqtt.py": _mqtt("Subscriber")}
    )
    found = [f for f in lint_paths([pkg]) if Path(f.path).name == "core.py"]
    assert [(f.line, f.code, shape_severity(f)) for f in found] == [(6, "RC102", "warning")]
    assert "start()" in found[0].message


def test_a_self_call_in_a_subclass_still_counts(tmp_path: Path) -> None:
    # the subclass's `__aiter__` runs the inherited method whenever it does not override it
    pkg = package(
        tmp_path,
        {"core.py": _NATS_SUB, "base.py": _BASE, "mqtt.py": _mqtt("CoreSubscriber")},
    )
    assert not_excused(pkg, "core.py") == [(6, "RC102")]


def test_a_call_on_another_object_still_counts_whatever_its_class(tmp_path: Path) -> None:
    # `other.m()` may be any class's object: only `self.` calls are bound by class
    other = """
    class Poller:
        async def poll(self, sub):
            await sub._create_subscription()
    """
    pkg = package(tmp_path, {"core.py": _NATS_SUB, "base.py": _BASE, "poller.py": other})
    assert not_excused(pkg, "core.py") == [(6, "RC102")]
