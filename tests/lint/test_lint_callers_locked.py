"""Callers that hold a lock, across the package (issue 14, lintprec4).

The one-module view cannot see that a client's lazy ``create_connection`` is
only ever reached with a lock held by its callers in another module: the eighth
held-out round's tortoise-orm SQLite client is called from a connection
wrapper's ``__aenter__`` after ``await self._lock.acquire()``, through an
``ensure_connection()`` helper. The call-site index over the package now tells,
for each caller, whether the call line is inside ``async with <lock>:`` or
after an ``await <lock>.acquire()`` in the same block, and follows plain
coroutine callers up to three levels. Each demoted shape is written here next
to the partner that must stay an error: one caller without the lock, a context
manager that is no lock, a lock released before the call, a ``with`` block that
ended before the call, and a call handed to a task inside the lock region (the
task runs after the lock is released).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from racecheck.lint import lint_paths
from racecheck.lint.severity import shape_severity

_CLIENT = """
class Client:
    async def create_connection(self):
        if self._conn is None:
            conn = await self._driver.connect(self._dsn)
            self._conn = conn
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


def client_findings(pkg: Path) -> list[tuple[int, str, str, str]]:
    return [
        (f.line, f.code, shape_severity(f), f.message)
        for f in lint_paths([pkg])
        if Path(f.path).name == "client.py"
    ]


def severities(pkg: Path) -> list[tuple[int, str, str]]:
    return [(line, code, sev) for line, code, sev, _ in client_findings(pkg)]


def test_every_caller_inside_async_with_lock_is_a_warning(tmp_path: Path) -> None:
    pkg = package(
        tmp_path,
        {
            "client.py": _CLIENT,
            "pool.py": """
            class Pool:
                async def query(self, sql):
                    async with self._lock:
                        await self._client.create_connection()
                        return await self._client.run(sql)

                async def execute(self, sql):
                    async with self._pool_lock as held:
                        if held:
                            await self._client.create_connection()
            """,
        },
    )
    found = client_findings(pkg)
    assert [(line, code, sev) for line, code, sev, _ in found] == [(4, "RC102", "warning")]
    message = found[0][3]
    assert "self._lock" in message and "self._pool_lock" in message
    assert "pool.py" in message


def test_callers_after_acquire_through_a_helper_are_a_warning(tmp_path: Path) -> None:
    # tortoise-orm's shape: acquire in the entry, the lazy connect in a helper it awaits
    pkg = package(
        tmp_path,
        {
            "client.py": _CLIENT,
            "wrapper.py": """
            class Wrapper:
                async def ensure_connection(self):
                    if not self.connection:
                        await self.client.create_connection()
                        self.connection = self.client._conn

                async def run(self, sql):
                    await self._lock.acquire()
                    try:
                        await self.ensure_connection()
                        return await self.connection.execute(sql)
                    finally:
                        self._lock.release()
            """,
        },
    )
    found = client_findings(pkg)
    assert [(line, code, sev) for line, code, sev, _ in found] == [(4, "RC102", "warning")]
    assert "self._lock" in found[0][3]


def test_one_caller_without_the_lock_stays_an_error(tmp_path: Path) -> None:
    pkg = package(
        tmp_path,
        {
            "client.py": _CLIENT,
            "pool.py": """
            class Pool:
                async def query(self, sql):
                    async with self._lock:
                        await self._client.create_connection()

                async def warm_up_all(self):
                    await self._client.create_connection()
            """,
        },
        spawn=("warm_up_all",),
    )
    assert severities(pkg) == [(4, "RC102", "error")]


def test_a_context_manager_that_is_no_lock_stays_an_error(tmp_path: Path) -> None:
    pkg = package(
        tmp_path,
        {
            "client.py": _CLIENT,
            "pool.py": """
            class Pool:
                async def query(self, sql):
                    async with self._session:
                        await self._client.create_connection()
            """,
        },
        spawn=("query",),
    )
    assert severities(pkg) == [(4, "RC102", "error")]


def test_a_lock_released_before_the_call_stays_an_error(tmp_path: Path) -> None:
    pkg = package(
        tmp_path,
        {
            "client.py": _CLIENT,
            "pool.py": """
            class Pool:
                async def query(self, sql):
                    await self._lock.acquire()
                    self._count += 1
                    self._lock.release()
                    await self._client.create_connection()
            """,
        },
        spawn=("query",),
    )
    assert severities(pkg) == [(4, "RC102", "error")]


def test_a_with_block_that_ended_before_the_call_stays_an_error(tmp_path: Path) -> None:
    pkg = package(
        tmp_path,
        {
            "client.py": _CLIENT,
            "pool.py": """
            class Pool:
                async def query(self, sql):
                    async with self._lock:
                        self._count += 1
                    await self._client.create_connection()
            """,
        },
        spawn=("query",),
    )
    assert severities(pkg) == [(4, "RC102", "error")]


def test_an_acquire_in_a_branch_that_ended_stays_an_error(tmp_path: Path) -> None:
    pkg = package(
        tmp_path,
        {
            "client.py": _CLIENT,
            "pool.py": """
            class Pool:
                async def query(self, sql):
                    if self._strict:
                        await self._lock.acquire()
                    await self._client.create_connection()
            """,
        },
        spawn=("query",),
    )
    assert severities(pkg) == [(4, "RC102", "error")]


def test_a_call_handed_to_a_task_under_the_lock_stays_an_error(tmp_path: Path) -> None:
    # the task runs after `async with` has let go of the lock
    pkg = package(
        tmp_path,
        {
            "client.py": _CLIENT,
            "pool.py": """
            import asyncio

            class Pool:
                async def query(self, sql):
                    async with self._lock:
                        self._tasks.add(asyncio.create_task(self._client.create_connection()))
            """,
        },
    )
    assert severities(pkg) == [(4, "RC102", "error")]


def test_a_helper_one_of_whose_callers_holds_no_lock_stays_an_error(tmp_path: Path) -> None:
    pkg = package(
        tmp_path,
        {
            "client.py": _CLIENT,
            "wrapper.py": """
            class Wrapper:
                async def _ensure(self):
                    await self.client.create_connection()

                async def run(self, sql):
                    async with self._lock:
                        await self._ensure()

                async def peek(self):
                    await self._ensure()
            """,
        },
        spawn=("peek",),
    )
    assert severities(pkg) == [(4, "RC102", "error")]


def test_a_lock_in_an_enclosing_function_does_not_cover_a_nested_def(tmp_path: Path) -> None:
    # the inner coroutine is handed on and runs whenever its caller awaits it
    pkg = package(
        tmp_path,
        {
            "client.py": _CLIENT,
            "pool.py": """
            class Pool:
                async def query(self, sql):
                    async with self._lock:
                        async def later():
                            await self._client.create_connection()
                    return later
            """,
        },
        spawn=("query",),
    )
    assert severities(pkg) == [(4, "RC102", "error")]


def test_a_semaphore_is_no_lock_and_keeps_the_error(tmp_path: Path) -> None:
    # aioboto3's `_download_part` calls `get_object()` (whose first call sets up an S3
    # client) inside `async with semaphore:` - a limit of N downloads, N at once
    pkg = package(
        tmp_path,
        {
            "client.py": _CLIENT,
            "pool.py": """
            class Pool:
                async def query(self, sql, semaphore):
                    async with semaphore:
                        await self._client.create_connection()

                async def execute(self, sql):
                    await self._conn_sem.acquire()
                    await self._client.create_connection()
            """,
        },
        spawn=("query",),
    )
    assert severities(pkg) == [(4, "RC102", "error")]


def test_a_lock_released_in_a_finally_before_the_call_stays_an_error(tmp_path: Path) -> None:
    # the release sits in a block that ended before the call: it still let go
    pkg = package(
        tmp_path,
        {
            "client.py": _CLIENT,
            "pool.py": """
            class Pool:
                async def query(self, sql):
                    await self._lock.acquire()
                    try:
                        self._count += 1
                    finally:
                        self._lock.release()
                    await self._client.create_connection()
            """,
        },
        spawn=("query",),
    )
    assert severities(pkg) == [(4, "RC102", "error")]
