"""Sixteenth held-out round (issue 14, lintprec11): 66 large concurrency-heavy packages.

Read after the rules were frozen (docs/lint.md, "Sixteenth held-out round");
the fixes below were made after reading the round, so the round's held-out
number is the one before them.

* A local condition that names another local that names it back
  (``text = text or before`` after ``before = text or before`` in a loop,
  pydantic-ai's agent graph) sent ``checked_keys`` round the cycle until
  Python's recursion limit, and the whole package was refused as "nested too
  deeply". A name already being expanded is not expanded again.
* The evidence that a method runs in two tasks at once followed callers up
  through one that claims the call first: Home Assistant's
  ``Entity.async_device_update`` opens with ``if self._update_staged:
  return`` and sets ``self._update_staged = True`` before its first await,
  resetting it in a ``finally``, so one entity's ``async_update`` never runs
  twice at once; eleven of the round's sixty errors were ``async_update``
  check-then-acts named as concurrent "through async_device_update()". A
  reference inside such a claimed stretch runs once at a time per object and
  is no path to a spawn; a claim made after an await (itself a race) is none.
* RC106 counted an attribute as changed under the asyncio lock when the
  change also held a ``threading.Lock`` (wandb's asyncio manager: an
  ``asyncio.Condition`` only to wake the loop, ``_remaining_tasks`` changed
  under ``with self._lock`` on the loop and in the sync ``_schedule``). Both
  sides hold the threading lock, which does exclude threads: no finding.
* RC101 took ``self._upload_bytes += len(data)``, an await, and
  ``self._upload_bytes -= len(data)`` for per-call data read back (modal's
  upload budget and its ``_ByteBudget``). Both are relative updates of a
  shared total: the second takes back this call's part whatever other calls
  added meanwhile, and reads no per-call value out. A read of the value
  itself after the ``+=`` (``send(self.seq)``) stays RC101.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from racecheck.lint import lint_paths, lint_source
from racecheck.lint.severity import shape_severity

_CONDITION_CYCLE = """
class Stream:
    async def parts(self, chunks):
        text = ''
        before = ''
        for chunk in chunks:
            before = text or before
            text = ''
            text = text or before
            if text:
                await chunk.flush()
        if self._client is None:
            client = await self.connect()
            self._client = client
        return self._client
"""


_ENTITY = """
class Entity:
    def __init__(self, api):
        self._api = api
        self._update_staged = False

    async def async_device_update(self):
        if self._update_staged:
            return
        self._update_staged = True
        try:
            await self.async_update()
        finally:
            self._update_staged = False

    async def async_update_ha_state(self):
        await self.async_device_update()
"""

_SENSOR = """
from pkg.entity import Entity


class Sensor(Entity):
    device = None

    async def async_update(self):
        self.device = await self._api.get_sensor(self.device)
"""

_MANAGER = """
import asyncio
import threading


class Manager:
    def __init__(self):
        self._lock = threading.Lock()
        self._remaining = 0
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._thread.start()

    def schedule(self, fn):
        with self._lock:
            self._remaining += 1
        return asyncio.run_coroutine_threadsafe(self._wrap(fn), self._loop)

    async def _wrap(self, fn):
        try:
            return await fn()
        finally:
            async with self._finished:
                with self._lock:
                    self._remaining -= 1
                self._finished.notify_all()

    def _main(self):
        asyncio.run(self._main_async())

    async def _main_async(self):
        self._loop = asyncio.get_running_loop()
        self._finished = asyncio.Condition()
        async with self._finished:
            await self._finished.wait_for(lambda: self._remaining <= 0)
"""

_BUDGET = """
import asyncio


class Uploader:
    def __init__(self):
        self._upload_bytes = 0
        self._room = asyncio.Condition()

    async def put(self, data):
        async with self._room:
            await self._room.wait_for(lambda: self._upload_bytes < 100)
            self._upload_bytes += len(data)
        try:
            await self._send(data)
        finally:
            async with self._room:
                self._upload_bytes -= len(data)
                self._room.notify_all()

    async def _send(self, data):
        await asyncio.sleep(0)

    async def put_all(self, values):
        await asyncio.gather(*(self.put(value) for value in values))
"""

_RUNNER = """
import asyncio


async def update_all(entities):
    await asyncio.gather(*(entity.async_update_ha_state() for entity in entities))
"""


def findings(root: Path, modules: dict[str, str], code: str) -> list[tuple[int, str, str]]:
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for name, source in modules.items():
        (pkg / f"{name}.py").write_text(textwrap.dedent(source))
    return [(f.line, shape_severity(f), f.message) for f in lint_paths([pkg]) if f.code == code]


def entity_package(entity: str = _ENTITY) -> dict[str, str]:
    """Home Assistant's shape: the claim in a base class, the update in a subclass
    of another module, the spawn in a third."""
    return {"entity": entity, "sensor": _SENSOR, "runner": _RUNNER}


def test_locals_whose_conditions_name_each_other_are_linted_not_refused() -> None:
    found = lint_source(textwrap.dedent(_CONDITION_CYCLE), "stream.py")
    # the lazy connect after the loop is still seen: the cycle stops one test, not the file
    assert [(f.code, f.line) for f in found] == [("RC102", 12)]


def test_a_method_reached_only_through_a_claimed_call_is_a_warning(tmp_path: Path) -> None:
    ((line, severity, message),) = findings(tmp_path, entity_package(), "RC103")
    assert (line, severity) == (9, "warning"), message


def test_without_the_claim_the_spawn_the_package_shows_keeps_the_error(tmp_path: Path) -> None:
    unclaimed = _ENTITY.replace("        if self._update_staged:\n            return\n", "")
    ((line, severity, message),) = findings(tmp_path, entity_package(unclaimed), "RC103")
    assert (line, severity) == (9, "error"), message
    assert "through async_device_update()" in message


def test_a_claim_made_after_an_await_claims_nothing(tmp_path: Path) -> None:
    late = _ENTITY.replace(
        "        self._update_staged = True\n",
        "        await self._api.ready()\n        self._update_staged = True\n",
    )
    ((line, severity, message),) = findings(tmp_path, entity_package(late), "RC103")
    assert (line, severity) == (9, "error"), message


def test_state_changed_under_a_threading_lock_on_both_sides_is_no_rc106(tmp_path: Path) -> None:
    assert findings(tmp_path, {"manager": _MANAGER}, "RC106") == []


def test_the_same_state_changed_without_the_threading_lock_keeps_the_error(
    tmp_path: Path,
) -> None:
    unlocked = _MANAGER.replace(
        "                with self._lock:\n                    self._remaining -= 1\n",
        "                self._remaining -= 1\n",
    )
    ((line, severity, message),) = findings(tmp_path, {"manager": unlocked}, "RC106")
    assert (line, severity) == (31, "error"), message  # the Condition's creation
    assert "`_remaining`" in message and "schedule()" in message


def test_a_shared_total_taken_back_with_a_relative_update_is_no_rc101(tmp_path: Path) -> None:
    assert findings(tmp_path, {"uploader": _BUDGET}, "RC101") == []


def test_the_total_read_back_as_a_value_stays_rc101(tmp_path: Path) -> None:
    read_back = _BUDGET.replace(
        "                self._upload_bytes -= len(data)\n",
        "                print(self._upload_bytes)\n",
    )
    ((line, severity, _),) = findings(tmp_path, {"uploader": read_back}, "RC101")
    assert (line, severity) == (13, "error")
