"""Replay, schedule tokens, bad input and hygiene -- all through the public API.

* A token replays to the same kind, every time, on both backends.
* Malformed, truncated, corrupted, foreign (another target, another backend,
  another Python minor) tokens are refused with ``racecheck.TokenError`` (a
  ``racecheck.UsageError``) -- never a traceback from inside racecheck, never a
  silent success.
* Targets of the wrong shape are refused with ``racecheck.UsageError``.
* After every failing run, deadlock and bad-input error, nothing racecheck
  patched is left behind (threading, time.sleep, queue, asyncio's loop factory,
  sys.gettrace, sys.monitoring tool ids).
* A thread blocked outside racecheck's control becomes ``racecheck.StuckError``
  within the watchdog -- checked in a subprocess with a hard timeout, so a hang
  fails the test instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import zlib
from typing import Any

import pytest

import racecheck

# ----------------------------------------------------------------------------
# targets
# ----------------------------------------------------------------------------


async def async_lost_update() -> None:
    box = {"v": 0}

    async def bump() -> None:
        v = box["v"]
        await asyncio.sleep(0)
        box["v"] = v + 1

    await asyncio.gather(bump(), bump())
    assert box["v"] == 2, box


async def async_lost_update_other() -> None:
    box = {"v": 0}

    async def bump() -> None:
        v = box["v"]
        await asyncio.sleep(0)
        box["v"] = v + 1

    await asyncio.gather(bump(), bump())
    assert box["v"] == 2, box


async def async_deadlock() -> None:
    a, b = asyncio.Lock(), asyncio.Lock()

    async def one() -> None:
        async with a:
            await asyncio.sleep(0)
            async with b:
                pass

    async def two() -> None:
        async with b:
            await asyncio.sleep(0)
            async with a:
                pass

    await asyncio.gather(one(), two())


def thread_lost_update() -> None:
    box = {"v": 0}

    def bump() -> None:
        box["v"] += 1

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box["v"] == 2, box


def thread_deadlock() -> None:
    a, b = threading.Lock(), threading.Lock()

    def one() -> None:
        with a:
            time.sleep(0.01)
            with b:
                pass

    def two() -> None:
        with b:
            time.sleep(0.01)
            with a:
                pass

    threads = [threading.Thread(target=one), threading.Thread(target=two)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def thread_condition_if() -> None:
    cond = threading.Condition()
    items: list[int] = []

    def consumer() -> None:
        with cond:
            if not items:
                cond.wait()
            items.pop()

    def producer() -> None:
        for i in range(2):
            with cond:
                items.append(i)
                cond.notify_all()

    threads = [threading.Thread(target=consumer) for _ in range(2)]
    threads.append(threading.Thread(target=producer))
    for t in threads:
        t.start()
    for t in threads:
        t.join()


FAILING = [
    (async_lost_update, "exception"),
    (async_deadlock, "deadlock"),
    (thread_lost_update, "exception"),
    (thread_deadlock, "deadlock"),
    (thread_condition_if, "exception"),
]

_TOKENS: dict[str, racecheck.RaceFound] = {}


def found(target: Any, seed: int = 0, **options: Any) -> racecheck.RaceFound:
    key = f"{target.__name__}:{seed}:{sorted(options.items())}"
    if key not in _TOKENS:
        with pytest.raises(racecheck.RaceFound) as info:
            racecheck.check(target, strategy="pct", schedules=2000, seed=seed, **options)
        _TOKENS[key] = info.value
    return _TOKENS[key]


def _fields(token: str) -> list[str]:
    return token.split(":")


def _payload(decisions: list[tuple[int, int]]) -> str:
    """Encode a decision list the way the token format documents it (varints, zlib, b64url)."""
    raw = bytearray()

    def put(value: int) -> None:
        while True:
            byte = value & 0x7F
            value >>= 7
            if value:
                raw.append(byte | 0x80)
            else:
                raw.append(byte)
                return

    put(len(decisions))
    for n, choice in decisions:
        put(n)
        put(choice)
    return base64.urlsafe_b64encode(zlib.compress(bytes(raw), 9)).decode().rstrip("=")


def _with_payload(token: str, payload: str) -> str:
    parts = _fields(token)
    parts[5] = payload
    return ":".join(parts)


# ----------------------------------------------------------------------------
# replay is exact and repeatable
# ----------------------------------------------------------------------------


@pytest.mark.parametrize(("target", "kind"), FAILING, ids=lambda v: getattr(v, "__name__", v))
def test_replay_repeats_the_same_failure(rc: Any, target: Any, kind: str) -> None:
    exc = found(target)
    assert exc.kind == kind
    first = rc.assert_replays(target, exc.schedule, kind)
    for _ in range(4):
        again = rc.assert_replays(target, exc.schedule, kind)
        assert again.schedule == first.schedule
        if kind == "exception":
            assert type(again.cause) is type(first.cause)
            assert str(again.cause) == str(first.cause)


@pytest.mark.parametrize(("target", "kind"), FAILING, ids=lambda v: getattr(v, "__name__", v))
def test_original_unshrunk_schedule_replays_too(rc: Any, target: Any, kind: str) -> None:
    exc = found(target, seed=1)
    rc.assert_replays(target, exc.original_schedule, kind)


@pytest.mark.parametrize(("target", "kind"), FAILING, ids=lambda v: getattr(v, "__name__", v))
def test_token_is_one_line_and_mentioned_in_the_message(target: Any, kind: str) -> None:
    exc = found(target)
    token = exc.schedule
    assert "\n" not in token and " " not in token
    assert token in str(exc)
    fields = _fields(token)
    assert fields[0] == "rc1"
    assert fields[3] == f"py{sys.version_info.major}{sys.version_info.minor}"


def test_token_with_surrounding_whitespace_still_replays(rc: Any) -> None:
    exc = found(async_lost_update)
    rc.assert_replays(async_lost_update, f"  {exc.schedule}\n", "exception")


def test_label_binds_the_token(rc: Any) -> None:
    exc = found(async_lost_update, label="scenario[buggy]")
    with pytest.raises(racecheck.TokenError):
        racecheck.replay(async_lost_update, exc.schedule)
    rc.assert_pristine()
    rc.assert_replays(async_lost_update, exc.schedule, "exception", label="scenario[buggy]")


def test_empty_schedule_is_handled_cleanly(rc: Any) -> None:
    """A well-formed token with no decisions: a replay, a clean run, or a divergence."""
    exc = found(async_lost_update)
    token = _with_payload(exc.schedule, _payload([]))
    try:
        racecheck.replay(async_lost_update, token)
    except racecheck.RaceFound as again:
        assert again.kind == "exception"
    except racecheck.DivergenceError as div:
        assert div.step >= 1
    rc.assert_pristine()


def test_all_zero_schedule_is_the_natural_order(rc: Any) -> None:
    """The found schedule with every choice set to 0 is the uncontrolled order (FIFO)."""
    exc = found(async_lost_update)
    raw = zlib.decompress(base64.urlsafe_b64decode(_fields(exc.schedule)[5] + "=" * 4))
    count, rest = raw[0], raw[1:]
    decisions = [(rest[2 * i], 0) for i in range(count)]
    token = _with_payload(exc.schedule, _payload(decisions))
    # asyncio FIFO on this target: both tasks read 0 before either writes -> fails
    rc.assert_replays(async_lost_update, token, "exception")


# ----------------------------------------------------------------------------
# bad tokens
# ----------------------------------------------------------------------------

MALFORMED = [
    "",
    "   ",
    "garbage",
    "rc1",
    "rc1:",
    "rc1:asyncio:task:py311:deadbeef",
    "rc1:asyncio:task:py311:deadbeef:eNpj:extra",
    "rc9:asyncio:task:py311:deadbeef:eNpjZmIAQQAANAAK",
    "rc1:nosuchbackend:task:py311:deadbeef:eNpjZmIAQQAANAAK",
    "rc1:asyncio:nosuchgranularity:py311:deadbeef:eNpjZmIAQQAANAAK",
    "rc1:asyncio:task:py311:deadbeef:!!!!",
    "rc1:asyncio:task:py311:deadbeef:",
    "RC1:ASYNCIO:TASK:PY311:DEADBEEF:ENPJZMIAQQAANAAK",
    "rc1:asyncio:task:py311:deadbeef:eNpjZmIAQQAANAAK\x00",
    "x" * 10_000,
]


@pytest.mark.parametrize("token", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_token_is_a_token_error(rc: Any, token: str) -> None:
    with pytest.raises(racecheck.TokenError) as info:
        racecheck.replay(async_lost_update, token)
    assert isinstance(info.value, racecheck.UsageError)
    rc.assert_pristine()


@pytest.mark.parametrize("token", [None, 123, b"rc1:asyncio:task:py311:x:y", ["rc1"]])
def test_non_string_token_is_a_usage_error(rc: Any, token: Any) -> None:
    with pytest.raises(racecheck.UsageError):
        racecheck.replay(async_lost_update, token)
    rc.assert_pristine()


@pytest.mark.parametrize(("target", "kind"), FAILING, ids=lambda v: getattr(v, "__name__", v))
def test_truncated_token_is_a_token_error(rc: Any, target: Any, kind: str) -> None:
    token = found(target).schedule
    header_len = len(":".join(_fields(token)[:5])) + 1
    payload_len = len(token) - header_len
    cuts = {
        len(token) - 1,
        len(token) - 2,
        len(token) - 4,
        header_len + payload_len // 2,
        header_len,
        header_len - 1,
        len(token) // 2,
        4,
    }
    for cut in sorted(cuts):
        bad = token[:cut]
        try:
            racecheck.replay(target, bad)
        except racecheck.TokenError:
            pass
        except racecheck.RaceFound:
            # dropping base64 padding-only bits can leave the same bytes; only
            # acceptable if the payload really decodes to the same schedule
            assert cut >= len(token) - 1, f"truncated token {bad!r} was accepted"
        else:
            pytest.fail(f"truncated token {bad!r} was accepted")
        rc.assert_pristine()


@pytest.mark.parametrize(("target", "kind"), FAILING, ids=lambda v: getattr(v, "__name__", v))
def test_corrupted_payload_is_a_token_error(rc: Any, target: Any, kind: str) -> None:
    token = found(target).schedule
    parts = _fields(token)
    payload = parts[5]
    for i in (0, 1, len(payload) // 2, len(payload) - 3):
        ch = payload[i]
        swapped = "A" if ch != "A" else "B"
        parts[5] = payload[:i] + swapped + payload[i + 1 :]
        with pytest.raises(racecheck.TokenError):
            racecheck.replay(target, ":".join(parts))
        rc.assert_pristine()


def test_choice_out_of_range_is_a_token_error(rc: Any) -> None:
    token = found(async_lost_update).schedule
    with pytest.raises(racecheck.TokenError):
        racecheck.replay(async_lost_update, _with_payload(token, _payload([(2, 5)])))
    with pytest.raises(racecheck.TokenError):
        racecheck.replay(async_lost_update, _with_payload(token, _payload([(0, 0)])))
    rc.assert_pristine()


def test_trailing_bytes_in_payload_is_a_token_error(rc: Any) -> None:
    token = found(async_lost_update).schedule
    raw = zlib.decompress(base64.urlsafe_b64decode(_fields(token)[5] + "=" * 4))
    bad = base64.urlsafe_b64encode(zlib.compress(raw + b"\x01", 9)).decode().rstrip("=")
    with pytest.raises(racecheck.TokenError):
        racecheck.replay(async_lost_update, _with_payload(token, bad))
    rc.assert_pristine()


def test_well_formed_but_impossible_schedule_is_a_divergence(rc: Any) -> None:
    """Decisions that the run cannot take (7 actors enabled?) diverge, clearly."""
    token = found(async_lost_update).schedule
    bad = _with_payload(token, _payload([(7, 3)] * 5))
    with pytest.raises(racecheck.DivergenceError) as info:
        racecheck.replay(async_lost_update, bad)
    assert isinstance(info.value, racecheck.UsageError)
    assert info.value.step >= 1
    rc.assert_pristine()


def test_schedule_longer_than_the_run_is_a_divergence(rc: Any) -> None:
    token = found(thread_lost_update).schedule
    bad = _with_payload(token, _payload([(2, 0)] * 500))
    with pytest.raises((racecheck.DivergenceError, racecheck.RaceFound)) as info:
        racecheck.replay(thread_lost_update, bad)
    if isinstance(info.value, racecheck.RaceFound):
        # the natural prefix may already fail; that is a legitimate replay
        assert info.value.kind == "exception"
    rc.assert_pristine()


@pytest.mark.parametrize(
    ("recorded_for", "replayed_on"),
    [
        (async_lost_update, async_lost_update_other),
        (async_lost_update, async_deadlock),
        (thread_lost_update, thread_deadlock),
        (thread_deadlock, thread_condition_if),
    ],
    ids=["async-same-body", "async-other", "threads-other", "threads-other2"],
)
def test_token_from_another_target_is_a_token_error(
    rc: Any, recorded_for: Any, replayed_on: Any
) -> None:
    token = found(recorded_for).schedule
    with pytest.raises(racecheck.TokenError):
        racecheck.replay(replayed_on, token)
    rc.assert_pristine()


def test_token_from_another_backend_is_a_token_error(rc: Any) -> None:
    async_token = found(async_lost_update).schedule
    thread_token = found(thread_lost_update).schedule
    with pytest.raises(racecheck.TokenError):
        racecheck.replay(thread_lost_update, async_token)
    with pytest.raises(racecheck.TokenError):
        racecheck.replay(async_lost_update, thread_token)
    # same fingerprint, backend field edited
    parts = _fields(async_token)
    parts[1] = "threads"
    with pytest.raises(racecheck.TokenError):
        racecheck.replay(async_lost_update, ":".join(parts))
    rc.assert_pristine()


@pytest.mark.parametrize(("target", "kind"), FAILING, ids=lambda v: getattr(v, "__name__", v))
@pytest.mark.parametrize("python", ["py310", "py399", "py27", "py3", "pypy311", "py311x"])
def test_token_from_another_python_minor_is_a_token_error(
    rc: Any, target: Any, kind: str, python: str
) -> None:
    token = found(target).schedule
    here = f"py{sys.version_info.major}{sys.version_info.minor}"
    if python == here:
        python = "py312" if here != "py312" else "py311"
    parts = _fields(token)
    assert parts[3] == here
    parts[3] = python
    with pytest.raises(racecheck.TokenError):
        racecheck.replay(target, ":".join(parts))
    rc.assert_pristine()


def test_token_from_another_python_minor_via_other_interpreter(tmp_path: Any) -> None:
    """A token really recorded on another interpreter is refused here (and vice versa)."""
    others = [
        p
        for p in (
            "/root/.pyenv/versions/3.12.1/bin/python3.12",
            "/root/.pyenv/versions/3.13.0/bin/python3.13",
            "/root/.pyenv/versions/3.11.7/bin/python3.11",
        )
        if os.path.exists(p)
    ]
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    others = [p for p in others if here not in os.path.basename(p)]
    if not others:
        pytest.skip("no other interpreter")
    script = tmp_path / "record.py"
    here_dir = os.path.dirname(__file__)
    script.write_text(
        textwrap.dedent(
            f"""
            import sys, racecheck
            sys.path.insert(0, {here_dir!r})
            from test_replay_and_tokens import async_lost_update
            try:
                racecheck.check(async_lost_update, schedules=2000, seed=0)
            except racecheck.RaceFound as exc:
                print(exc.schedule)
            """
        )
    )
    out = subprocess.run(
        [others[0], str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    if out.returncode != 0 or not out.stdout.strip():
        pytest.skip(f"racecheck not usable on {others[0]}: {out.stderr[-500:]}")
    token = out.stdout.strip().splitlines()[-1]
    with pytest.raises(racecheck.TokenError) as info:
        racecheck.replay(async_lost_update, token)
    assert "py" in str(info.value)


# ----------------------------------------------------------------------------
# targets of the wrong shape, bad options
# ----------------------------------------------------------------------------


async def _a_coroutine_function() -> None:
    pass


async def _an_async_generator() -> Any:
    yield 1


BAD_TARGETS = {
    "int": lambda: 42,
    "str": lambda: "async_lost_update",
    "none": lambda: None,
    "list": lambda: [async_lost_update],
}


@pytest.mark.parametrize("make", BAD_TARGETS.values(), ids=BAD_TARGETS.keys())
def test_non_callable_target_is_a_usage_error(rc: Any, make: Any) -> None:
    target = make()
    with pytest.raises(racecheck.UsageError):
        racecheck.check(target, schedules=5)
    rc.assert_pristine()
    with pytest.raises(racecheck.UsageError):
        racecheck.replay(target, "rc1:asyncio:task:py311:deadbeef:eNpjZmIAQQAANAAK")
    rc.assert_pristine()


def test_coroutine_object_target_is_a_usage_error(rc: Any) -> None:
    coro = _a_coroutine_function()
    try:
        with pytest.raises(racecheck.UsageError):
            racecheck.check(coro, schedules=5)  # type: ignore[arg-type]
        rc.assert_pristine()
        with pytest.raises(racecheck.UsageError):
            racecheck.replay(coro, found(async_lost_update).schedule)  # type: ignore[arg-type]
        rc.assert_pristine()
    finally:
        coro.close()


def test_function_returning_a_coroutine_is_a_usage_error(rc: Any) -> None:
    with pytest.raises(racecheck.UsageError):
        racecheck.check(lambda: _a_coroutine_function(), schedules=5)
    rc.assert_pristine()


def test_async_generator_function_is_a_usage_error(rc: Any) -> None:
    """Its body would never run: silently reporting 'no failure' hides every bug."""
    with pytest.raises(racecheck.UsageError):
        racecheck.check(_an_async_generator, schedules=5)
    rc.assert_pristine()


BAD_OPTIONS = [
    {"strategy": "nope"},
    {"schedules": 0},
    {"schedules": -3},
    {"schedules": "10"},
    {"seed": "zero"},
    {"seed": 1.5},
    {"no_such_option": 1},
    {"backend": "nope"},
    {"backend": "asyncio"},  # on a plain def target
    {"granularity": "bogus"},
    {"max_steps": 0},
    {"watchdog": 0},
    {"watchdog": "soon"},
]


@pytest.mark.parametrize("options", BAD_OPTIONS, ids=[str(o) for o in BAD_OPTIONS])
def test_bad_options_are_usage_errors(rc: Any, options: dict[str, Any]) -> None:
    with pytest.raises(racecheck.UsageError):
        racecheck.check(thread_lost_update, **options)
    rc.assert_pristine()


def test_bad_granularity_on_async_target_is_a_usage_error(rc: Any) -> None:
    with pytest.raises(racecheck.UsageError):
        racecheck.check(async_lost_update, granularity="opcode")
    rc.assert_pristine()


def test_usage_errors_are_not_race_found() -> None:
    assert not issubclass(racecheck.UsageError, AssertionError)
    assert issubclass(racecheck.TokenError, racecheck.UsageError)
    assert issubclass(racecheck.StuckError, racecheck.UsageError)
    assert issubclass(racecheck.DivergenceError, racecheck.UsageError)
    assert issubclass(racecheck.RaceFound, AssertionError)


# ----------------------------------------------------------------------------
# hygiene after failing runs, deadlocks, errors
# ----------------------------------------------------------------------------


@pytest.mark.parametrize(("target", "kind"), FAILING, ids=lambda v: getattr(v, "__name__", v))
def test_nothing_left_patched_after_failures(rc: Any, target: Any, kind: str) -> None:
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(target, strategy="pct", schedules=2000, seed=2)
    rc.assert_pristine()
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(target, strategy="random", schedules=2000, seed=2)
    rc.assert_pristine()
    with pytest.raises(racecheck.RaceFound):
        racecheck.check(target, strategy="exhaustive", schedules=2000)
    rc.assert_pristine()
    # and the real primitives work afterwards, on this thread
    lock = threading.Lock()
    assert lock.acquire(timeout=1)
    lock.release()
    started = time.perf_counter()
    time.sleep(0.01)
    assert time.perf_counter() - started >= 0.009


def test_target_raising_keyboard_interrupt_leaves_nothing_patched(rc: Any) -> None:
    def interrupting() -> None:
        def boom() -> None:
            raise KeyboardInterrupt

        t = threading.Thread(target=boom)
        t.start()
        t.join()

    try:
        racecheck.check(interrupting, schedules=3)
    except (KeyboardInterrupt, racecheck.RaceFound):
        pass
    rc.assert_pristine()


def test_existing_tracer_survives(rc: Any) -> None:
    calls = []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        calls.append(event)
        return None

    sys.settrace(tracer)
    try:
        with pytest.raises(racecheck.RaceFound):
            racecheck.check(thread_lost_update, schedules=2000, seed=0)
        assert sys.gettrace() is tracer
        with pytest.raises(racecheck.RaceFound):
            racecheck.check(async_lost_update, schedules=2000, seed=0)
        assert sys.gettrace() is tracer
        racecheck.check(_a_coroutine_function, schedules=5)
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(None)
    rc.assert_pristine()


_TOOLS_TAKEN = textwrap.dedent(
    """
    import asyncio, json, queue, sys, threading, time
    import racecheck

    ORIG = dict(lock=threading.Lock, start=threading.Thread.start, sleep=time.sleep,
                sq=queue.SimpleQueue, nel=asyncio.new_event_loop)

    def lost_update():
        box = {"v": 0}
        def bump():
            box["v"] += 1
        ts = [threading.Thread(target=bump) for _ in range(2)]
        for t in ts: t.start()
        for t in ts: t.join()
        assert box["v"] == 2

    for tool in (3, 4):
        sys.monitoring.use_tool_id(tool, f"someone-else-{tool}")
    out = {}
    try:
        racecheck.check(lost_update, schedules=200, seed=0, watchdog=5)
        out["result"] = "report"
    except racecheck.RaceFound as exc:
        out["result"] = "race:" + exc.kind
    except racecheck.UsageError as exc:
        out["result"] = "usage"
    except BaseException as exc:
        out["result"] = "other:" + type(exc).__name__ + ": " + str(exc)[:200]
    now = dict(lock=threading.Lock, start=threading.Thread.start, sleep=time.sleep,
               sq=queue.SimpleQueue, nel=asyncio.new_event_loop)
    out["leftover"] = [k for k in ORIG if now[k] is not ORIG[k]]
    out["tools"] = [sys.monitoring.get_tool(t) for t in (3, 4)]
    print("RESULT " + json.dumps(out), flush=True)
    """
)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12+")
def test_monitoring_tools_taken_by_someone_else(tmp_path: Any) -> None:
    """Tool ids 3 and 4 both in use: racecheck must say so clearly and undo its patches.

    Run in a subprocess: a failure here poisons the interpreter for every later test.
    """
    script = tmp_path / "tools.py"
    script.write_text(_TOOLS_TAKEN)
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT ") :])
    assert not out["leftover"], f"left patched after a failed install: {out}"
    assert out["tools"] == ["someone-else-3", "someone-else-4"], out
    assert out["result"] in ("usage", "race:exception"), out


# ----------------------------------------------------------------------------
# StuckError, never a hang (subprocess with a hard timeout)
# ----------------------------------------------------------------------------

_STUCK_PRELUDE = textwrap.dedent(
    """
    import asyncio, json, queue, sys, threading, time, _thread
    import racecheck

    ORIG = dict(
        lock=threading.Lock, start=threading.Thread.start, sleep=time.sleep,
        sq=queue.SimpleQueue, nel=asyncio.new_event_loop, trace=sys.gettrace(),
    )

    def pristine():
        now = dict(
            lock=threading.Lock, start=threading.Thread.start, sleep=time.sleep,
            sq=queue.SimpleQueue, nel=asyncio.new_event_loop, trace=sys.gettrace(),
        )
        bad = [k for k in ORIG if now[k] is not ORIG[k]]
        if sys.version_info >= (3, 12):
            bad += [f"tool{t}" for t in (3, 4) if sys.monitoring.get_tool(t) is not None]
        return bad

    def lost_update():
        box = {"v": 0}
        def bump():
            box["v"] += 1
        ts = [threading.Thread(target=bump) for _ in range(2)]
        for t in ts: t.start()
        for t in ts: t.join()
        assert box["v"] == 2

    def report(target, **kw):
        started = time.monotonic()
        out = {}
        try:
            racecheck.check(target, schedules=50, seed=0, watchdog=1, **kw)
            out["result"] = "report"
        except racecheck.StuckError as exc:
            out["result"] = "stuck"
            out["message"] = str(exc)
        except racecheck.RaceFound as exc:
            out["result"] = "race:" + exc.kind
        except BaseException as exc:
            out["result"] = "other:" + type(exc).__name__ + ": " + str(exc)[:300]
        out["seconds"] = time.monotonic() - started
        out["leftover"] = pristine()
        # racecheck still works afterwards in the same process
        try:
            racecheck.check(lost_update, schedules=2000, seed=0, watchdog=5)
            out["after"] = "report"
        except racecheck.RaceFound as exc:
            out["after"] = "race:" + exc.kind
        except BaseException as exc:
            out["after"] = "other:" + type(exc).__name__ + ": " + str(exc)[:300]
        out["leftover_after"] = pristine()
        print("RESULT " + json.dumps(out), flush=True)
    """
)

STUCK_CASES = {
    "unreachable_lock_held_across_sleep": """
        HIDDEN = frozenset([threading.Lock()])   # in a frozenset: racecheck cannot adopt it

        def target():
            def holder():
                lock = next(iter(HIDDEN))
                with lock:
                    time.sleep(1)
            def waiter():
                time.sleep(0.1)
                lock = next(iter(HIDDEN))
                with lock:
                    pass
            ts = [threading.Thread(target=holder), threading.Thread(target=waiter)]
            for t in ts: t.start()
            for t in ts: t.join()

        report(target)
    """,
    "raw_thread_lock_acquired_twice": """
        def target():
            lock = _thread.allocate_lock()
            lock.acquire()
            lock.acquire()   # blocks in C forever

        report(target)
    """,
    "raw_lock_in_worker_thread": """
        def target():
            lock = _thread.allocate_lock()
            lock.acquire()
            def worker():
                lock.acquire()
            t = threading.Thread(target=worker)
            t.start()
            t.join()

        report(target)
    """,
    "async_target_blocks_on_real_event": """
        async def target():
            async def other():
                await asyncio.sleep(0)
            task = asyncio.create_task(other())
            threading.Event().wait()   # a real Event: the asyncio backend does not patch it
            await task

        report(target)
    """,
    "async_target_thread_never_calls_back": """
        async def target():
            loop = asyncio.get_running_loop()
            fut = loop.create_future()
            gate = _thread.allocate_lock()
            gate.acquire()
            def worker():
                gate.acquire()          # never released: never calls back
                loop.call_soon_threadsafe(fut.set_result, 1)
            threading.Thread(target=worker, daemon=True).start()
            await fut

        report(target)
    """,
}


@pytest.mark.parametrize("case", STUCK_CASES.keys())
def test_blocked_outside_control_is_stuck_error_not_a_hang(tmp_path: Any, case: str) -> None:
    script = tmp_path / f"{case}.py"
    script.write_text(_STUCK_PRELUDE + textwrap.dedent(STUCK_CASES[case]))
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case}: racecheck hung (no StuckError within 60 s)")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"{case}: no result (rc={proc.returncode}):\n{proc.stderr[-3000:]}"
    out = json.loads(lines[-1][len("RESULT ") :])
    assert out["result"] == "stuck", out
    assert out["seconds"] < 20, out
    assert not out["leftover"], out
    assert out["after"] == "race:exception", out
    assert not out["leftover_after"], out
    assert time.monotonic() - started < 60


def test_stuck_error_names_the_blocked_thread(tmp_path: Any) -> None:
    script = tmp_path / "named.py"
    script.write_text(
        _STUCK_PRELUDE
        + textwrap.dedent(
            """
            HIDDEN = frozenset([threading.Lock()])   # in a frozenset: racecheck cannot adopt it

            def target():
                def holder():
                    lock = next(iter(HIDDEN))
                    with lock:
                        time.sleep(1)
                def waiter():
                    time.sleep(0.1)
                    lock = next(iter(HIDDEN))
                    with lock:
                        pass
                ts = [threading.Thread(target=holder, name="the-holder"),
                      threading.Thread(target=waiter, name="the-waiter")]
                for t in ts: t.start()
                for t in ts: t.join()

            report(target)
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT ") :])
    assert out["result"] == "stuck", out
    assert "the-waiter" in out["message"], out["message"]


def test_a_lock_made_at_import_is_scheduled_in_a_fresh_process(tmp_path: Any) -> None:
    """The case that used to be a StuckError: made before racecheck patched threading."""
    script = tmp_path / "import_time.py"
    script.write_text(
        _STUCK_PRELUDE
        + textwrap.dedent(
            """
            IMPORT_LOCK = threading.Lock()   # created before racecheck patched threading

            def target():
                def holder():
                    with IMPORT_LOCK:
                        time.sleep(1)
                def waiter():
                    time.sleep(0.1)
                    with IMPORT_LOCK:
                        pass
                ts = [threading.Thread(target=holder), threading.Thread(target=waiter)]
                for t in ts: t.start()
                for t in ts: t.join()

            report(target)
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT ") :])
    assert out["result"] == "report", out
    assert not out["leftover"] and not out["leftover_after"], out


# ----------------------------------------------------------------------------
# determinism across processes (different hash seeds)
# ----------------------------------------------------------------------------

_CROSS = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, {here!r})
    import racecheck
    import test_replay_and_tokens as m
    mode, args = sys.argv[1], sys.argv[2:]
    results = dict()
    if mode == "check":
        # check SEED NAME...: each target in turn, in this order
        for name in args[1:]:
            try:
                racecheck.check(getattr(m, name), strategy="pct", schedules=2000,
                                seed=int(args[0]))
                results[name] = dict(result="report")
            except racecheck.RaceFound as exc:
                results[name] = dict(result=exc.kind, token=exc.schedule,
                                     runs=exc.schedules_run)
    else:
        # replay NAME=TOKEN...
        for pair in args:
            name, token = pair.split("=", 1)
            try:
                racecheck.replay(getattr(m, name), token)
                results[name] = dict(result="none")
            except racecheck.RaceFound as exc:
                results[name] = dict(result=exc.kind)
            except racecheck.UsageError as exc:
                results[name] = dict(result=type(exc).__name__, msg=str(exc))
    print("RESULT " + json.dumps(results))
    """
)


def pool_lost_update() -> None:
    from concurrent.futures import ThreadPoolExecutor

    box = {"v": 0}

    def bump() -> None:
        box["v"] += 1

    with ThreadPoolExecutor(max_workers=2) as pool:
        for f in [pool.submit(bump) for _ in range(2)]:
            f.result()
    assert box["v"] == 2, box


def _cross(tmp_path: Any, hashseed: str, *args: str) -> dict[str, Any]:
    script = tmp_path / "cross.py"
    script.write_text(_CROSS.format(here=os.path.dirname(__file__)))
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    proc = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


#: the targets checked in other processes: asyncio, threads, a condition, a pool
CROSS_TARGETS = (
    "async_lost_update",
    "thread_lost_update",
    "thread_condition_if",
    "pool_lost_update",
)


def test_same_seed_same_result_in_other_processes(tmp_path: Any) -> None:
    """Same seed, different processes and hash seeds: same schedules_run and token,
    and a token recorded in one process replays in another.

    One process per hash seed checks every target (a process each cost a
    second of start-up, twelve of them); the second process takes them in the
    reverse order, so a result that depended on what ran before it in the
    process would differ, and two of the targets run first in a fresh process.
    """
    first = _cross(tmp_path, "1", "check", "1", *CROSS_TARGETS)
    second = _cross(tmp_path, "2", "check", "1", *reversed(CROSS_TARGETS))
    tokens = []
    for name in CROSS_TARGETS:
        mine, other = first[name], second[name]
        assert mine["result"] in ("exception", "deadlock"), (name, mine)
        assert (mine["runs"], mine["token"]) == (other["runs"], other["token"]), (name, mine, other)
        tokens.append(f"{name}={mine['token']}")
    replayed = _cross(tmp_path, "3", "replay", *tokens)
    for name in CROSS_TARGETS:
        assert replayed[name]["result"] == first[name]["result"], (name, replayed[name])
