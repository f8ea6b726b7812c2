"""Tenth held-out round (issue 14, lintprec4): aiomisc, aiounifi, asgiref, huey,
mautrix, pyatv, pymemcache, telethon, tornado, zigpy.

Read after the rules were frozen (docs/lint.md, "Tenth held-out round"). Each
class fixed after reading is a reduced snippet next to the partner that stays an
error; these fixes are fitted to the round and are not counted in its number.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from racecheck.lint import lint_paths, lint_source
from racecheck.lint.severity import shape_severity


def severities(source: str) -> list[tuple[int, str, str]]:
    return [
        (f.line, f.code, shape_severity(f)) for f in lint_source(textwrap.dedent(source), "t.py")
    ]


# ── a caller that claims the object with a plain acquire() ─────────────────
# pyatv's `stream_file()` calls `self.playback_manager.acquire()` (which raises
# "already streaming" when set) before it awaits `setup()`, the one caller of
# that lazy session set-up. The claim is a statement named acquire(), on an
# object whose name is no lock's.

_MANAGER = """
class Manager:
    async def setup(self):
        if self._client is None:
            conn = await self._connect()
            self._client = conn
        return self._client
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


def manager_findings(pkg: Path) -> list[tuple[int, str, str]]:
    return [
        (f.line, f.code, shape_severity(f))
        for f in lint_paths([pkg])
        if Path(f.path).name == "manager.py"
    ]


def test_a_caller_that_acquires_the_manager_first_makes_it_a_warning(tmp_path: Path) -> None:
    pkg = package(
        tmp_path,
        {
            "manager.py": _MANAGER,
            "stream.py": """
            class Streamer:
                async def stream_file(self, path):
                    self.playback_manager.acquire()
                    try:
                        client = await self.playback_manager.setup()
                        await client.send(path)
                    finally:
                        await self.playback_manager.teardown()
            """,
        },
    )
    assert manager_findings(pkg) == [(4, "RC102", "warning")]


def test_an_acquire_whose_result_is_kept_is_no_claim(tmp_path: Path) -> None:
    # `conn = await pool.acquire()` takes a connection out of a pool: nothing is held
    pkg = package(
        tmp_path,
        {
            "manager.py": _MANAGER,
            "stream.py": """
            class Streamer:
                async def stream_file(self, path):
                    conn = await self.pool.acquire()
                    client = await self.playback_manager.setup()
                    await client.send(path, conn)
            """,
        },
        spawn=("stream_file",),
    )
    assert manager_findings(pkg) == [(4, "RC102", "error")]


def test_a_caller_that_released_its_claim_keeps_the_error(tmp_path: Path) -> None:
    pkg = package(
        tmp_path,
        {
            "manager.py": _MANAGER,
            "stream.py": """
            class Streamer:
                async def stream_file(self, path):
                    self.playback_manager.acquire()
                    self.playback_manager.release()
                    client = await self.playback_manager.setup()
            """,
        },
        spawn=("stream_file",),
    )
    assert manager_findings(pkg) == [(4, "RC102", "error")]


# ── RC107 on an object only ever made inside a coroutine ────────────────────
# aiomisc's pytest plugin makes loops of its own (`new_event_loop`), so RC107 is
# an error in that module; but `TCPProxyClient` (a stored loop, a future, and two
# `Delay`s with a lock each) is made only in the server's `_handle_client`
# coroutine, on the loop that then serves that connection.

_PROXY = """
import asyncio

class Delay:
    def __init__(self):
        self.lock = asyncio.Lock()

    async def wait(self):
        async with self.lock:
            await asyncio.sleep(0)

class ProxyClient:
    def __init__(self, reader):
        self.loop = asyncio.get_event_loop()
        self.delay = Delay()
        self.closing = self.loop.create_future()

    async def run(self):
        await self.closing

class Proxy:
    async def _handle_client(self, reader, writer):
        client = ProxyClient(reader)
        await client.run()

def make_loop():
    return asyncio.new_event_loop()
"""


def test_objects_made_only_inside_coroutines_are_warnings() -> None:
    found = severities(_PROXY)
    assert [code for _, code, _ in found] == ["RC107", "RC107", "RC107"]
    assert {sev for _, _, sev in found} == {"warning"}


def test_a_construction_outside_a_coroutine_keeps_the_error() -> None:
    source = _PROXY + "\nSHARED = Delay()\n"
    found = severities(source)
    assert (6, "RC107", "error") in found  # the module-level Delay outlives any loop
    # ProxyClient is still made only in a coroutine
    assert (14, "RC107", "warning") in found


def test_a_class_made_in_a_plain_function_that_runs_no_loop_is_a_warning() -> None:
    # the eleventh round's cut: several loops in the module say that *some* object
    # meets two, not that this one does; `serve()` hands the client to its caller,
    # whose loop the lint cannot see
    source = _PROXY.replace(
        "def make_loop():",
        "def serve(reader):\n    return ProxyClient(reader)\n\ndef make_loop():",
    )
    found = severities(source)
    assert found and {sev for _, _, sev in found} == {"warning"}
    assert all(
        "nothing here shows" in f.message
        for f in lint_source(textwrap.dedent(source), "t.py")
        if f.line > 12
    )


def test_a_class_made_where_loops_are_run_twice_is_an_error() -> None:
    # one client made, then run on two loops in turn: its future and its delays'
    # locks meet the second loop
    source = _PROXY.replace(
        "def make_loop():",
        "def serve(reader):\n"
        "    client = ProxyClient(reader)\n"
        "    asyncio.run(client.run())\n"
        "    asyncio.run(client.run())\n\n"
        "def make_loop():",
    )
    found = severities(source)
    assert {sev for line, _, sev in found if line > 12} == {"error"}
    in_a_loop = _PROXY.replace(
        "def make_loop():",
        "def serve(readers):\n"
        "    client = ProxyClient(readers[0])\n"
        "    for _ in readers:\n"
        "        asyncio.run(client.run())\n\n"
        "def make_loop():",
    )
    assert {sev for line, _, sev in severities(in_a_loop) if line > 12} == {"error"}


def test_a_class_made_for_the_one_loop_a_function_runs_is_a_warning() -> None:
    # saq's `start()` (eleventh round): a new loop, a worker, the worker run on it
    source = _PROXY.replace(
        "def make_loop():",
        "def serve(reader):\n"
        "    loop = asyncio.new_event_loop()\n"
        "    client = ProxyClient(reader)\n"
        "    loop.run_until_complete(client.run())\n\n"
        "def make_loop():",
    )
    found = severities(source)
    assert found and {sev for line, _, sev in found if line > 12} == {"warning"}


def test_a_class_nothing_here_makes_is_a_warning() -> None:
    # made by users, or elsewhere: on which loop, the lint cannot see - no evidence
    # that one object meets two loops (held-out: zeroconf, aiogram, python-telegram-bot)
    source = _PROXY.replace("client = ProxyClient(reader)", "client = self._factory(reader)")
    found = severities(source)
    assert found and {sev for _, _, sev in found} == {"warning"}


def test_annotations_and_isinstance_tests_make_nothing() -> None:
    # aiomisc names its client in `self.clients: set[TCPProxyClient]` and `delay: Delay`
    source = _PROXY.replace(
        "class Proxy:\n",
        "class Proxy:\n"
        "    clients: set[ProxyClient]\n\n"
        "    def check(self, d: Delay) -> ProxyClient | None:\n"
        "        return d if isinstance(d, (ProxyClient, Delay)) else None\n\n",
    )
    found = severities(source)
    assert [code for _, code, _ in found] == ["RC107", "RC107", "RC107"]
    assert {sev for _, _, sev in found} == {"warning"}


# ── a finding inside __aenter__ ──────────────────────────────────────────────
# telethon's `Conversation.__aenter__` and `_ChatAction.__aenter__` resolve the chat
# they were given (`self._chat = await get_input_entity(self._chat)`), aiomisc's
# `TCPProxy.__aenter__` starts its server when it has none: entering one such
# object twice at once is starting it twice, a lifecycle race. A lock's or a
# limiter's `__aenter__` is entered by many tasks at once by design and keeps it.

_CONVERSATION = """
class Conversation:
    async def __aenter__(self):
        self._input_chat = await self._client.get_input_entity(self._input_chat)
        return self

    async def __aexit__(self, *exc):
        pass
"""

_RWLOCK = """
class WriterLock:
    async def __aenter__(self):
        if self._writers == 0:
            await self._readers_done.wait()
            self._writers += 1
        return self

    async def __aexit__(self, *exc):
        self._writers -= 1
"""


def test_a_race_inside_an_objects_aenter_is_a_lifecycle_warning() -> None:
    found = severities(_CONVERSATION)
    assert [(code, sev) for _, code, sev in found] == [("RC103", "warning")]


def test_the_same_race_in_a_plain_method_stays_an_error() -> None:
    found = severities(_CONVERSATION.replace("__aenter__", "resolve"))
    assert [(code, sev) for _, code, sev in found] == [("RC103", "error")]


def test_a_lock_classes_aenter_keeps_the_error() -> None:
    found = severities(_RWLOCK)
    assert found and {sev for _, _, sev in found} == {"error"}
    limiter = _RWLOCK.replace("WriterLock", "RateLimiter")
    assert {sev for _, _, sev in severities(limiter)} == {"error"}
