"""Shared fixtures for the CLI / loader / plugin tests.

``fake_engine`` stands in for ``racecheck.check`` / ``racecheck.replay`` so the
front ends can be tested on their own contract (exit codes, precedence,
messages) independently of the exploration engine; other tests use the real
engine.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import racecheck
from racecheck.outcome import RaceFound, Report

# The CLI tests call racecheck.cli.main in this process and the plugin tests
# run pytest in it (pytester): without this, runs repeated in one directory
# would replay each other's saved failures (.racecheck/). The failure database's
# own tests turn it back on.
os.environ.setdefault("RACECHECK_DB", "none")

# A target makes the fake engine report a deadlock / step-limit by raising an
# exception of a class with this name (scenario files define their own).
FAKE_DEADLOCK = "FakeDeadlock"
FAKE_STEP_LIMIT = "FakeStepLimit"


def _token(label: str, backend: str = "asyncio", failing_at: int = 3) -> str:
    from racecheck.schedule import Schedule, fingerprint, python_tag

    return Schedule(
        backend, "task", python_tag(), fingerprint(label), ((2, 1), (3, failing_at % 3))
    ).encode()


@dataclass
class FakeEngine:
    calls: list[dict[str, Any]] = field(default_factory=list)
    replays: list[dict[str, Any]] = field(default_factory=list)
    #: schedules a failing target "needs" before it fails
    fail_after: int = 3

    def _run_once(self, target: Callable[[], Any]) -> BaseException | None:
        try:
            if inspect.iscoroutinefunction(target):
                asyncio.run(target())
            else:
                target()
        except Exception as exc:
            return exc
        return None

    def _raise(self, exc: BaseException, label: str, options: dict[str, Any], run: int) -> None:
        kind = "exception"
        if type(exc).__name__ == FAKE_DEADLOCK:
            kind = "deadlock"
        elif type(exc).__name__ == FAKE_STEP_LIMIT:
            kind = "step-limit"
        raise RaceFound(
            kind=kind,
            schedule=_token(label),
            schedules_run=run,
            cause=exc if kind == "exception" else None,
            trace=None,
            strategy=str(options.get("strategy", "pct")),
            seed=int(options.get("seed", 0)),
            detail=str(exc) if kind != "exception" else "",
        )

    def check(self, target: Callable[[], Any], **options: Any) -> Report:
        if not callable(target):
            raise racecheck.UsageError("target must be callable")
        self.calls.append(dict(options, target=target))
        label = options.get("label") or getattr(target, "__qualname__", "target")
        progress = options.get("progress")
        schedules = int(options.get("schedules", 1000))
        exc = self._run_once(target)
        if exc is not None:
            if progress:
                progress(min(self.fail_after, schedules), schedules)
            self._raise(exc, label, options, min(self.fail_after, schedules))
        if progress:
            progress(schedules, schedules)
        return Report(
            schedules_run=schedules,
            exhausted=options.get("strategy") == "exhaustive",
            strategy=str(options.get("strategy", "pct")),
            seed=int(options.get("seed", 0)),
            backend="asyncio",
        )

    def replay(self, target: Callable[[], Any], token: str, **options: Any) -> None:
        from racecheck.schedule import Schedule, fingerprint

        self.replays.append(dict(options, target=target, token=token))
        sched = Schedule.decode(token)
        label = options.get("label") or getattr(target, "__qualname__", "target")
        if sched.target != fingerprint(label):
            raise racecheck.TokenError("schedule token was recorded for another target")
        exc = self._run_once(target)
        if exc is not None:
            self._raise(exc, label, options, 1)


@pytest.fixture
def fake_engine(monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    engine = FakeEngine()
    monkeypatch.setattr(racecheck, "check", engine.check)
    monkeypatch.setattr(racecheck, "replay", engine.replay)
    return engine


_WORKS: dict[str, bool] = {}


def engine_works(backend: str = "asyncio") -> bool:
    """True once the real engine runs ``backend`` (it is built alongside these front ends)."""
    if backend not in _WORKS:
        _WORKS[backend] = _probe(backend)
    return _WORKS[backend]


def _probe(backend: str) -> bool:

    async def async_target() -> None:
        pass

    def sync_target() -> None:
        pass

    target: Callable[[], Any] = async_target if backend in ("asyncio", "trio") else sync_target
    try:
        racecheck.check(target, schedules=1, backend=backend)
    except (NotImplementedError, ImportError):
        return False
    except Exception:
        return True
    return True


@pytest.fixture
def real_engine() -> None:
    if not engine_works("asyncio"):
        pytest.skip("the exploration engine is not implemented yet")


@pytest.fixture
def threads_engine() -> None:
    if not engine_works("threads"):
        pytest.skip("the threads backend is not implemented yet")


@pytest.fixture
def make_token() -> Callable[[str], str]:
    """``make_token(label)``: a well-formed token recorded for ``label``."""
    return _token


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, whose inner runs set pytest-asyncio's fixture loop scope.

    An inner project without it gets pytest-asyncio's deprecation warning on
    every run, burying the warnings the tests are about. The option is added
    to runs that load pytest-asyncio (under ``-p no:asyncio`` nobody knows it).
    """
    if importlib.util.find_spec("pytest_asyncio") is None:
        return pytester

    def scoped(run: Callable[..., Any]) -> Callable[..., Any]:
        def with_scope(*args: Any, **kwargs: Any) -> Any:
            if not any("no:asyncio" in str(arg) for arg in args):
                args = (*args, "-o", "asyncio_default_fixture_loop_scope=function")
            return run(*args, **kwargs)

        return with_scope

    for name in ("runpytest_inprocess", "runpytest_subprocess", "inline_run"):
        monkeypatch.setattr(pytester, name, scoped(getattr(pytester, name)))
    return pytester
