"""Each lint rule on small positive and negative examples (``lint_source``, no files)."""

from __future__ import annotations

import textwrap

import pytest

from racecheck.lint import RULES, lint_source
from racecheck.lint.severity import shape_severity


def codes(source: str, select: list[str] | None = None) -> list[str]:
    return [f.code for f in lint_source(textwrap.dedent(source), "t.py", select=select)]


# Each entry: (id, code, source). Positives must report `code`; negatives must report nothing.
POSITIVE = [
    (
        "rc101-return-after-await",
        "RC101",
        """
        class Runtime:
            async def step(self, branch):
                self._current = branch.agent
                await self.model(branch)
                return self._current
        """,
    ),
    (
        "rc101-read-in-awaited-method",
        "RC101",
        """
        class Runtime:
            async def step(self, branch):
                agent = branch.agent
                self._current = agent
                result = await self.model(branch)
                return await self._translate(result)

            async def _translate(self, result):
                return self._current.check(result)
        """,
    ),
    (
        "rc101-global",
        "RC101",
        """
        current = None

        async def handle(request):
            global current
            current = request
            await send(request)
            return current
        """,
    ),
    (
        "rc101-closure-dict-slot",
        "RC101",
        """
        def build():
            state = {"request": None}

            async def handler(message):
                state["request"] = message
                await work()
                return state["request"]

            return handler
        """,
    ),
    (
        "rc102-cache-fill",
        "RC102",
        """
        class Cache:
            async def get(self, key):
                if key not in self._data:
                    self._data[key] = await self._load(key)
                return self._data[key]
        """,
    ),
    (
        "rc102-lazy-init-guard",
        "RC102",
        """
        class Client:
            async def session(self):
                if self._session is not None:
                    return self._session
                session = await open_session()
                self._session = session
                return session
        """,
    ),
    (
        "rc102-get-is-none",
        "RC102",
        """
        class Registry:
            async def ensure(self, name):
                if self._items.get(name) is None:
                    item = await build(name)
                    self._items[name] = item
        """,
    ),
    (
        "rc102-lock-taken-after-check",
        "RC102",
        """
        class Client:
            async def connect(self):
                if self._conn is None:
                    async with self._lock:
                        self._conn = await dial()
        """,
    ),
    (
        "rc103-augmented-await",
        "RC103",
        """
        class Account:
            async def deposit(self, n):
                self.balance += await convert(n)
        """,
    ),
    (
        "rc103-local-copy",
        "RC103",
        """
        class Counter:
            async def hit(self):
                value = self.count
                await asyncio.sleep(0)
                self.count = value + 1
        """,
    ),
    (
        "rc104-gather-shared-context",
        "RC104",
        """
        import asyncio

        async def run_step(step, ctx):
            ctx["findings"] = step
            await agent(step, ctx)

        async def run_group(group, ctx):
            await asyncio.gather(*(run_step(step, ctx) for step in group))
        """,
    ),
    (
        "rc104-create-task-closure",
        "RC104",
        """
        import asyncio

        async def main(urls):
            seen = []

            async def fetch(url):
                seen.append(url)
                await get(url)
                print(seen[-1])

            for url in urls:
                asyncio.create_task(fetch(url))
        """,
    ),
    (
        "rc104-executor-submit",
        "RC104",
        """
        from concurrent.futures import ThreadPoolExecutor

        def count(words, totals):
            for word in words:
                totals[word] = totals.get(word, 0) + 1

        def main(chunks):
            totals = {}
            with ThreadPoolExecutor() as pool:
                for chunk in chunks:
                    pool.submit(count, chunk, totals)
        """,
    ),
    (
        "rc105-augmented-without-lock",
        "RC105",
        """
        import threading

        class Counter:
            def __init__(self):
                self._lock = threading.Lock()
                self.n = 0

            def hit(self):
                self.n += 1
        """,
    ),
    (
        "rc105-check-then-set-thread-target",
        "RC105",
        """
        import threading

        class Loader:
            def start(self):
                threading.Thread(target=self._run).start()

            def _run(self):
                if self.cache is None:
                    self.cache = load()
        """,
    ),
    (
        "rc105-iterate-while-mutated",
        "RC105",
        """
        import threading

        class Registry:
            def __init__(self):
                self._lock = threading.Lock()
                self.items = set()

            def add(self, item):
                with self._lock:
                    self.items.add(item)

            def close(self):
                for item in self.items:
                    item.close()
        """,
    ),
    (
        "rc106-event-set-from-thread",
        "RC106",
        """
        import asyncio
        import threading

        class Bridge:
            def __init__(self):
                self._done = asyncio.Event()

            def start(self):
                threading.Thread(target=self._work).start()

            def _work(self):
                compute()
                self._done.set()
        """,
    ),
    (
        "rc106-queue-from-executor-closure",
        "RC106",
        """
        import asyncio

        async def main(loop):
            queue = asyncio.Queue()

            def produce():
                queue.put_nowait(1)

            await loop.run_in_executor(None, produce)
        """,
    ),
    (
        "rc106-create-task-from-subscribe",
        "RC106",
        """
        class Stream:
            def wire(self, source):
                source.subscribe(on_next=self._on_item)

            def _on_item(self, item):
                self._loop.create_task(self.handle(item))

            async def handle(self, item):
                pass
        """,
    ),
    (
        "rc107-future-in-init",
        "RC107",
        """
        import asyncio

        class Executor:
            def __init__(self):
                self._done = asyncio.Future()

            async def execute(self, message):
                await handle(message)
                self._done.set_result(message)
        """,
    ),
    (
        "rc107-lock-in-init-module-switches-loops",
        "RC107",
        """
        import asyncio

        class Executor:
            def __init__(self):
                self._lock = asyncio.Lock()

            async def execute(self, message):
                async with self._lock:
                    await handle(message)

        class Scoped:
            def _lock_for_loop(self):
                if self._loop is not asyncio.get_running_loop():
                    self._lock = asyncio.Lock()
                return self._lock
        """,
    ),
    (
        "rc107-inherited-async",
        "RC107",
        """
        import asyncio

        class Base:
            async def run(self):
                pass

        class Child(Base):
            def __init__(self):
                self._waiter = asyncio.Future()
        """,
    ),
]

NEGATIVE = [
    (
        # the lock RC102's fix recommends: fine while the object lives in one loop
        "rc107-lock-in-init-one-loop",
        """
        import asyncio

        class Executor:
            def __init__(self):
                self._lock = asyncio.Lock()
                self._queue = asyncio.Queue()

            async def execute(self, message):
                async with self._lock:
                    await self._queue.put(message)
        """,
    ),
    (
        "rc101-lock-encloses-all",
        """
        class Runtime:
            async def step(self, branch):
                async with self._lock:
                    self._current = branch.agent
                    await self.model(branch)
                    return self._current
        """,
    ),
    (
        "rc101-local-variable",
        """
        class Runtime:
            async def step(self, branch):
                current = branch.agent
                await self.model(branch)
                return current
        """,
    ),
    (
        "rc101-constant-state",
        """
        class Conn:
            async def close(self):
                self._state = "closing"
                await self._transport.aclose()
                return self._state
        """,
    ),
    (
        "rc101-written-only-in-init",
        """
        class Runtime:
            def __init__(self, agent):
                self._agent = agent

            async def step(self, branch):
                await self.model(branch)
                return self._agent
        """,
    ),
    (
        "rc101-lazy-init-once",
        """
        class Conn:
            async def request(self, req):
                async with self._lock:
                    if self._conn is None:
                        stream = await dial()
                        self._conn = Connection(stream)
                return await self._conn.send(req)
        """,
    ),
    (
        "rc101-exclusive-branches",
        """
        class Runtime:
            async def step(self, branch, fast):
                if fast:
                    self._current = branch.agent
                else:
                    await self.model(branch)
                    return self._current
        """,
    ),
    (
        "rc101-write-then-return",
        """
        class Runtime:
            async def step(self, branch):
                if branch.done:
                    self._current = branch.agent
                    return None
                await self.model(branch)
                return self._current
        """,
    ),
    (
        "rc102-double-checked",
        """
        class Client:
            async def connect(self):
                if self._conn is None:
                    async with self._lock:
                        if self._conn is None:
                            self._conn = await dial()
                return self._conn
        """,
    ),
    (
        "rc102-no-await-between",
        """
        class Cache:
            async def put(self, key, value):
                if key not in self._data:
                    self._data[key] = value
                await self.flush()
        """,
    ),
    (
        "rc102-flag-flip",
        """
        class Request:
            async def body(self):
                if self._consumed:
                    raise RuntimeError("consumed")
                data = await self._receive()
                self._consumed = True
                return data
        """,
    ),
    (
        "rc103-await-first",
        """
        class Account:
            async def deposit(self, n):
                amount = await convert(n)
                self.balance += amount
        """,
    ),
    (
        "rc103-locked",
        """
        class Counter:
            async def hit(self):
                async with self._lock:
                    value = self.count
                    await asyncio.sleep(0)
                    self.count = value + 1
        """,
    ),
    (
        "rc104-own-copies",
        """
        import asyncio

        async def run_step(step, ctx):
            ctx["findings"] = step
            await agent(step, ctx)

        async def run_group(group, ctx):
            await asyncio.gather(*(run_step(step, dict(ctx)) for step in group))
        """,
    ),
    (
        "rc104-disjoint-keys",
        """
        import asyncio

        async def main(urls):
            results = {}

            async def fetch(url):
                results[url] = await get(url)

            await asyncio.gather(*(fetch(url) for url in urls))
        """,
    ),
    (
        "rc104-mutation-after-last-await",
        """
        import asyncio

        class Orchestrator:
            def __init__(self):
                self.events = []

            async def tick(self, branch):
                step = await self.runtime.step(branch)
                self.events.append(step)

            async def run(self, branches):
                for branch in branches:
                    asyncio.create_task(self.tick(branch))
        """,
    ),
    (
        "rc105-held-lock",
        """
        import threading

        class Counter:
            def __init__(self):
                self._lock = threading.Lock()
                self.n = 0

            def hit(self):
                with self._lock:
                    self.n += 1
        """,
    ),
    (
        "rc105-no-threads",
        """
        class Counter:
            def hit(self):
                self.n += 1
                if self.cache is None:
                    self.cache = {}
        """,
    ),
    (
        "rc105-helper-called-under-lock",
        """
        import threading

        class Pool:
            def __init__(self):
                self._lock = threading.Lock()

            def get(self):
                with self._lock:
                    return self._take()

            def _take(self):
                if self._idle is None:
                    self._idle = []
                return self._idle
        """,
    ),
    (
        "rc106-threadsafe-handoff",
        """
        import asyncio
        import threading

        class Bridge:
            def __init__(self, loop):
                self._loop = loop
                self._done = asyncio.Event()

            def start(self):
                threading.Thread(target=self._work).start()

            def _work(self):
                compute()
                self._loop.call_soon_threadsafe(self._done.set)
        """,
    ),
    (
        "rc107-lazy-per-loop",
        """
        import asyncio

        class Executor:
            def __init__(self):
                self._lock = None
                self._lock_loop = None

            def _get_lock(self):
                loop = asyncio.get_running_loop()
                if self._lock is None or self._lock_loop is not loop:
                    self._lock = asyncio.Lock()
                    self._lock_loop = loop
                return self._lock

            async def execute(self, message):
                async with self._get_lock():
                    await handle(message)
        """,
    ),
    (
        "rc107-no-async-methods",
        """
        import asyncio

        class Holder:
            def __init__(self):
                self.lock = asyncio.Lock()
        """,
    ),
]


@pytest.mark.parametrize(
    ("code", "source"), [p[1:] for p in POSITIVE], ids=[p[0] for p in POSITIVE]
)
def test_positive(code: str, source: str) -> None:
    assert code in codes(source), codes(source)


@pytest.mark.parametrize("source", [n[1] for n in NEGATIVE], ids=[n[0] for n in NEGATIVE])
def test_negative(source: str) -> None:
    assert codes(source) == []


def test_every_rule_has_a_positive_and_a_negative_example() -> None:
    covered = {code for _id, code, _src in POSITIVE}
    assert covered == set(RULES)
    negative_rules = {name.split("-")[0].upper() for name, _src in NEGATIVE}
    assert negative_rules == set(RULES)


def test_rc107_is_an_error_when_the_module_runs_several_loops() -> None:
    source = textwrap.dedent(
        """
        import asyncio

        class Executor:
            def __init__(self):
                self._lock = asyncio.Lock()

            async def execute(self):
                async with self._lock:
                    pass

        executor = Executor()
        asyncio.run(executor.execute())
        asyncio.run(executor.execute())
        """
    )
    (finding,) = lint_source(source, "t.py")
    assert (finding.code, shape_severity(finding)) == ("RC107", "error")
    # one loop: the lock made in __init__ is what RC102's fix recommends, not a finding
    assert lint_source(source.replace("asyncio.run(executor.execute())\n", "", 1), "t.py") == []


def test_findings_point_at_the_write_and_name_the_read() -> None:
    source = textwrap.dedent(POSITIVE[0][2])
    (finding,) = lint_source(source, "t.py")
    assert (finding.line, finding.col, finding.end_line) == (4, 9, 6)
    assert "`self._current`" in finding.message and "line 5" in finding.message


def test_rules_registry_is_complete() -> None:
    for code, rule in RULES.items():
        assert rule.code == code and code.startswith("RC1")
        assert rule.severity in {"error", "warning"}
        assert rule.summary and rule.why and rule.example and rule.fix
