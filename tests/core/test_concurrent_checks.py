"""Two explorations at once: serialised, never a false race, nothing left patched.

Threaded test runners and applications call ``racecheck.check`` from several
OS threads. Explorations patch process-wide state (threading, time.sleep,
queue, the loop factory, trio's scheduler hooks), so racecheck runs them one
at a time. Each trial runs in a fresh interpreter: a failure here must not
leave the test process itself patched.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import racecheck
from racecheck.errors import UsageError
from racecheck.schedule import Schedule, fingerprint, python_tag
from racecheck.session import default_label

SNAPSHOT = textwrap.dedent(
    """
    import asyncio, asyncio.events, asyncio.mixins, queue, sys, threading, time
    import concurrent.futures.thread as futures_thread

    def snapshot():
        watched = [
            (threading, "Lock"), (threading, "RLock"), (threading, "Condition"),
            (threading, "Semaphore"), (threading, "BoundedSemaphore"), (threading, "Event"),
            (threading, "Barrier"), (queue, "SimpleQueue"), (queue, "time"), (time, "sleep"),
            (asyncio, "new_event_loop"), (asyncio.events, "new_event_loop"),
            (futures_thread, "_global_shutdown_lock"),
            (threading, "_start_new_thread"), (threading, "_start_joinable_thread"),
            (asyncio.mixins._LoopBoundMixin, "_get_loop"),
        ]
        state = {f"{owner.__name__}.{name}": owner.__dict__.get(name) for owner, name in watched}
        for name in ("start", "join", "is_alive", "__init__", "__hash__"):
            state[f"Thread.{name}"] = threading.Thread.__dict__.get(name)
        try:
            import trio._core._run as run_module, trio._threads as threads_module
            state["trio._r"] = run_module._r
            state["trio._ALLOW"] = run_module._ALLOW_DETERMINISTIC_SCHEDULING
            state["trio.start_thread_soon"] = threads_module.start_thread_soon
        except ImportError:
            pass
        state["settrace"] = sys.gettrace()
        if sys.version_info >= (3, 12):
            state["monitoring"] = tuple(sys.monitoring.get_tool(i) for i in range(6))
        return state
    """
)

TARGETS = {
    "threads": """
        def target():
            box = {"n": 0}
            lock = threading.Lock()
            def bump():
                for _ in range(2):
                    with lock:
                        box["n"] += 1
            ts = [threading.Thread(target=bump) for _ in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            assert box["n"] == 4, box
        """,
    "asyncio": """
        async def target():
            box = {"n": 0}
            lock = asyncio.Lock()
            async def bump():
                for _ in range(2):
                    async with lock:
                        v = box["n"]
                        await asyncio.sleep(0)
                        box["n"] = v + 1
            await asyncio.gather(bump(), bump())
            assert box["n"] == 4, box
        """,
    "trio": """
        import trio
        async def target():
            box = {"n": 0}
            lock = trio.Lock()
            async def bump():
                for _ in range(2):
                    async with lock:
                        v = box["n"]
                        await trio.sleep(0)
                        box["n"] = v + 1
            async with trio.open_nursery() as nursery:
                nursery.start_soon(bump)
                nursery.start_soon(bump)
            assert box["n"] == 4, box
        """,
}


def _script(backend: str) -> str:
    return (
        SNAPSHOT
        + textwrap.dedent(TARGETS[backend])
        + textwrap.dedent(
            f"""
            import racecheck
            before = snapshot()
            failures = []
            for trial in range(6):
                start = threading.Barrier(2)
                def worker(index):
                    start.wait()
                    try:
                        report = racecheck.check(
                            target, backend={backend!r}, schedules=40, seed=index, watchdog=30
                        )
                        assert report.schedules_run >= 1
                    except BaseException as exc:
                        failures.append(f"trial {{trial}} worker {{index}}: {{exc!r}}"[:300])
                workers = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
                for w in workers:
                    w.start()
                for w in workers:
                    w.join(120)
                    if w.is_alive():
                        failures.append(f"trial {{trial}}: a check never returned")
            after = snapshot()
            dirty = sorted(k for k in before if after.get(k) != before[k])
            print("FAILURES", failures)
            print("DIRTY", dirty)
            leftover = [t.name for t in threading.enumerate() if t.name.startswith("racecheck")]
            print("LEFTOVER", leftover)
            """
        )
    )


@pytest.mark.parametrize("backend", ["threads", "asyncio", "trio"])
def test_two_simultaneous_checks_are_serialised_and_leave_nothing_patched(backend: str) -> None:
    if backend == "trio":
        pytest.importorskip("trio")
    result = subprocess.run(
        [sys.executable, "-c", _script(backend)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "FAILURES []" in result.stdout, result.stdout + result.stderr[-2000:]
    assert "DIRTY []" in result.stdout, result.stdout
    assert "LEFTOVER []" in result.stdout, result.stdout


def test_simultaneous_checks_on_different_backends_are_serialised() -> None:
    pytest.importorskip("trio")
    parts = [SNAPSHOT]
    for backend, source in TARGETS.items():
        parts.append(textwrap.dedent(source).replace("def target(", f"def target_{backend}("))
    parts.append(
        textwrap.dedent(
            """
            import racecheck
            before = snapshot()
            failures = []
            targets = {"threads": target_threads, "asyncio": target_asyncio, "trio": target_trio}
            for trial in range(3):
                start = threading.Barrier(3)
                def worker(backend):
                    start.wait()
                    try:
                        target = targets[backend]
                        racecheck.check(target, backend=backend, schedules=30, watchdog=30)
                    except BaseException as exc:
                        failures.append(f"trial {trial} {backend}: {exc!r}"[:300])
                workers = [threading.Thread(target=worker, args=(b,)) for b in targets]
                for w in workers:
                    w.start()
                for w in workers:
                    w.join(120)
            after = snapshot()
            print("FAILURES", failures)
            print("DIRTY", sorted(k for k in before if after.get(k) != before[k]))
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-c", "\n".join(parts)], capture_output=True, text=True, timeout=600
    )
    assert "FAILURES []" in result.stdout, result.stdout + result.stderr[-2000:]
    assert "DIRTY []" in result.stdout, result.stdout


def test_a_nested_check_from_inside_a_controlled_thread_is_a_usage_error() -> None:
    import threading

    seen: list[BaseException] = []

    def inner() -> None:
        pass

    def outer() -> None:
        def nested() -> None:
            try:
                racecheck.check(inner, schedules=1)
            except BaseException as exc:
                seen.append(exc)

        t = threading.Thread(target=nested)
        t.start()
        t.join()

    racecheck.check(outer, schedules=2, watchdog=20)
    assert seen, "the nested check was never attempted"
    assert all(isinstance(exc, UsageError) for exc in seen), seen
    assert "inside" in str(seen[0])


@pytest.mark.parametrize("backend", ["threads", "asyncio", "trio"])
def test_a_nested_check_from_the_target_is_a_usage_error(backend: str) -> None:
    if backend == "trio":
        pytest.importorskip("trio")
    seen: list[BaseException] = []

    def inner() -> None:
        pass

    def nested() -> None:
        try:
            racecheck.check(inner, schedules=1)
        except BaseException as exc:
            seen.append(exc)

    def plain() -> None:
        nested()

    async def coroutine() -> None:
        nested()

    target = plain if backend == "threads" else coroutine
    racecheck.check(target, backend=backend, schedules=2, watchdog=20)  # type: ignore[arg-type]
    assert seen, "the nested check was never attempted"
    assert all(isinstance(exc, UsageError) for exc in seen), seen
    assert "inside" in str(seen[0])


@pytest.mark.parametrize("backend", ["threads", "asyncio", "trio"])
def test_the_outer_check_raises_the_nested_usage_error(backend: str) -> None:
    """Not reported as a race: calling check() inside the target is a usage mistake."""
    if backend == "trio":
        pytest.importorskip("trio")

    def inner() -> None:
        pass

    def plain() -> None:
        racecheck.check(inner, schedules=1)

    async def coroutine() -> None:
        racecheck.check(inner, schedules=1)

    target = plain if backend == "threads" else coroutine
    with pytest.raises(UsageError, match="inside code that racecheck is exploring"):
        racecheck.check(target, backend=backend, schedules=2, watchdog=20)  # type: ignore[arg-type]


def test_a_nested_replay_is_a_usage_error() -> None:
    seen: list[BaseException] = []

    def inner() -> None:
        pass

    label = default_label(inner)
    token = Schedule("threads", "access", python_tag(), fingerprint(label), ()).encode()

    def plain() -> None:
        try:
            racecheck.replay(inner, token)
        except BaseException as exc:
            seen.append(exc)

    racecheck.check(plain, schedules=1, watchdog=20)
    assert seen and isinstance(seen[0], UsageError), seen
