"""Shapes from real code the lint must see (issue 14): attribute access through
``getattr``/``setattr``, the numeric check-then-act, and the re-check loop that is the fix."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from racecheck.lint import lint_paths, lint_source

sys.path.insert(0, str(Path(__file__).parents[1] / "detect"))
import marsys_getattr


def codes(source: str) -> list[str]:
    return [f.code for f in lint_source(textwrap.dedent(source), "t.py")]


def test_marsys_getattr_shape_is_rc101_on_the_write_naming_the_read() -> None:
    findings = lint_paths([marsys_getattr.__file__])
    rc101 = [f for f in findings if f.code == "RC101"]
    assert len(rc101) == 1, findings
    assert rc101[0].line == marsys_getattr.marked("write")
    # the read is in the awaited callee: the message names its line
    assert f"read back (line {marsys_getattr.marked('read')} in _translate())" in rc101[0].message
    assert "self._current_instance" in rc101[0].message


def test_getattr_read_after_plain_write() -> None:
    assert codes(
        """
        class Runtime:
            async def step(self, branch):
                self._current = branch.agent
                await self.model(branch)
                return getattr(self, "_current", None)
        """
    ) == ["RC101"]


def test_getattr_check_then_setattr_across_await() -> None:
    assert codes(
        """
        class Pool:
            async def conn(self, url):
                if getattr(self, "_conn", None) is None:
                    conn = await connect(url)
                    setattr(self, "_conn", conn)
                return self._conn
        """
    ) == ["RC102"]


def test_getattr_with_a_computed_name_is_not_an_attribute() -> None:
    assert (
        codes(
            """
            class Runtime:
                async def step(self, name, branch):
                    self._current = branch.agent
                    await self.model(branch)
                    return getattr(self, name, None)
            """
        )
        == []
    )


# -- the numeric check-then-act, and the re-check loop that fixes it -------------------


def test_pool_size_check_then_increment_across_connect() -> None:
    source = """
        class Pool:
            async def acquire(self):
                if self.opened < self.max_size:
                    conn = await self._connect()
                    self.opened += 1
                    return conn
                return await self._wait_for_idle()
        """
    (finding,) = lint_source(textwrap.dedent(source), "t.py")
    assert (finding.code, finding.line, finding.end_line) == ("RC102", 4, 6)
    assert "`self.opened`" in finding.message


def test_token_check_then_decrement_across_await() -> None:
    assert codes(
        """
        class Bucket:
            async def take(self):
                if self.tokens > 0:
                    await self._audit()
                    self.tokens -= 1
                    return True
                return False
        """
    ) == ["RC102"]


def test_numeric_check_and_act_with_no_await_between_is_clean() -> None:
    assert (
        codes(
            """
            class Bucket:
                async def take(self):
                    await self._audit()
                    if self.tokens > 0:
                        self.tokens -= 1
                        return True
                    return False
            """
        )
        == []
    )


RECHECK_LOOPS = {
    "idle-list": """
        class Pool:
            async def get(self):
                if not self.idle:
                    while not self.idle:
                        await self.cond.wait()
                    return self.idle.pop()
                return self.idle.pop()
        """,
    "counter": """
        class Pool:
            async def acquire(self):
                if self.opened >= self.max_size:
                    while self.opened >= self.max_size:
                        await self.released.wait()
                    self.opened += 1
        """,
    "guard-then-loop": """
        class Bucket:
            async def take(self):
                if self.tokens <= 0:
                    await self.refill()
                    while self.tokens <= 0:
                        await self.refilled.wait()
                    self.tokens -= 1
        """,
}


def test_while_loop_that_rechecks_after_the_await_is_the_fix() -> None:
    for name, source in RECHECK_LOOPS.items():
        assert codes(source) == [], name


def test_a_while_loop_left_by_break_does_not_recheck() -> None:
    assert codes(
        """
        class Pool:
            async def get(self):
                if not self.idle:
                    while not self.idle:
                        await self.cond.wait()
                        break
                    return self.idle.pop()
                return None
        """
    ) == ["RC102"]


# -- RC107 and RC102's fix agree --------------------------------------------------------


def test_rc102s_recommended_lock_in_init_is_not_rc107() -> None:
    from racecheck.lint import RULES

    assert "asyncio.Lock" in RULES["RC102"].fix
    fixed = """
        import asyncio

        class Cache:
            def __init__(self):
                self._data = {}
                self._lock = asyncio.Lock()

            async def get(self, key):
                async with self._lock:
                    if key not in self._data:
                        self._data[key] = await self._load(key)
                    return self._data[key]
        """
    assert codes(fixed) == []


def test_rc107_still_reports_a_lock_when_the_module_sees_several_loops() -> None:
    source = """
        import asyncio

        class Executor:
            def __init__(self):
                self._lock = asyncio.Lock()

            async def execute(self):
                async with self._lock:
                    pass

        class LoopScoped:
            def _get_lock(self):
                loop = asyncio.get_running_loop()
                if self._lock_loop is not loop:
                    self._lock = asyncio.Lock()
                    self._lock_loop = loop
                return self._lock
        """
    assert codes(source) == ["RC107"]
