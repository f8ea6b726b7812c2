"""Thirteenth held-out round (issue 14, lintprec8): 129 packages, 7 errors, 2 false.

Read after the rules were frozen (docs/lint.md, "Thirteenth held-out round");
both fixes below were made after reading the round, so the round's held-out
number is the one before them.

* RC101 took an augmented assignment for per-call data: aioice's
  ``self._protocols += host_protocols`` in a method gathered once per
  component, then ``self._protocols.append(...)`` after an await. ``+=``
  adds this call's part to what the object holds (a list grows in place);
  a concurrent call adds its own part beside it and overwrites nothing.
  A plain ``self.x = local`` read back after an await stays an error.
* RC102 on ``if k in self._held: return`` ... await ... ``self._held.add(k)``
  (cashews' lock transaction) is the same lazy fill as ``self._held[k] = v``:
  two racers both add the same key to a set, and the set ends as after one.
  It is a warning unless what runs between makes something a second copy of
  leaks, as for the item store (a ``subscribe`` there stays an error).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from racecheck.lint import lint_paths
from racecheck.lint.severity import shape_severity

_GATHERED = """
import asyncio


class Agent:
    async def gather_all(self, components):
        await asyncio.gather(*[self.component_candidates(c) for c in components])

    async def component_candidates(self, component):
        made = [await self._bind(component)]
        self._protocols += made
        relay = await self._relay(component)
        self._protocols.append(relay)
        return made
"""

_HELD = """
import asyncio


class LockingBackend:
    def __init__(self, backend):
        self._backend = backend
        self._held = set()

    async def run_all(self, keys):
        await asyncio.gather(*[self.hold(k) for k in keys])

    async def hold(self, key):
        if key in self._held:
            return
        if await self._backend.set_lock(key):
            self._held.add(key)
"""


def findings(root: Path, source: str, code: str) -> list[tuple[int, str, str]]:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "agent.py").write_text(textwrap.dedent(source))
    return [(f.line, shape_severity(f), f.message) for f in lint_paths([pkg]) if f.code == code]


def test_an_augmented_assignment_adds_to_shared_state_and_overwrites_nothing(
    tmp_path: Path,
) -> None:
    assert findings(tmp_path, _GATHERED, "RC101") == []


def test_a_plain_assignment_read_back_after_an_await_stays_an_error(tmp_path: Path) -> None:
    plain = _GATHERED.replace("self._protocols += made", "self._protocols = made")
    ((line, severity, message),) = findings(tmp_path, plain, "RC101")
    assert (line, severity) == (11, "error")
    assert "holds per-call data" in message


def test_an_augmented_value_read_back_after_an_await_stays_an_error(tmp_path: Path) -> None:
    # the value itself taken back out (`self.seq += 1`, await, `send(self.seq)`) may
    # hold another call's part: only adding more to the collection is exempt
    read_back = _GATHERED.replace("self._protocols.append(relay)", "relay.send(self._protocols)")
    ((line, severity, _),) = findings(tmp_path, read_back, "RC101")
    assert (line, severity) == (11, "error")


def test_a_key_added_to_a_set_after_a_membership_check_is_a_lazy_fill(tmp_path: Path) -> None:
    ((line, severity, message),) = findings(tmp_path, _HELD, "RC102")
    assert (line, severity) == (14, "warning")
    assert "lazy cache" in message


def test_a_set_fill_around_a_subscription_stays_an_error(tmp_path: Path) -> None:
    subscribing = _HELD.replace("self._backend.set_lock(key)", "self._backend.subscribe(key)")
    ((line, severity, message),) = findings(tmp_path, subscribing, "RC102")
    assert (line, severity) == (14, "error")
    assert "runs concurrently" in message or "fanned out" in message


def test_the_same_item_store_is_judged_alike(tmp_path: Path) -> None:
    # the dict form the weak-fill rule already knew: the set form now matches it
    stored = _HELD.replace("self._held = set()", "self._held = {}").replace(
        "self._held.add(key)", "self._held[key] = True"
    )
    ((line, severity, _),) = findings(tmp_path, stored, "RC102")
    assert (line, severity) == (14, "warning")
